// lfs df: space and inodes of each MDT and OST, and the filesystem summary.
#include <getopt.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tools/df_format.h"
#include "tools/fs_connect.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"

namespace stria::tools {
namespace {

int Usage(const char* why) {
  if (why != nullptr && *why != '\0') std::fprintf(stderr, "lfs df: %s\n", why);
  std::fputs(LfsUsage("df"), stderr);
  return kUsageError;
}

std::string TargetUuid(const std::string& fsname, const char* type, uint32_t index) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "-%s%04x_UUID", type, index);
  return fsname + buf;
}

// One mount's table. Returns the exit status.
// `pool` (FSNAME.POOL or POOL, may be empty): only that pool's OSTs, as lfs df --pool.
int DfMount(ToolSession& session, const StriaPath& where, uint32_t flags,
            const std::string& pool) {
  auto c = session.ClientFor(where);
  if (!c.ok()) {
    std::fprintf(stderr, "lfs df: cannot connect to '%s': %s\n", where.mount.source.c_str(),
                 c.status().ToString().c_str());
    return ExitCode(c.status());
  }
  auto config = (*c)->GetConfig(/*refresh=*/true);
  if (!config.ok()) {
    std::fprintf(stderr, "lfs df: cannot get configuration: %s\n",
                 config.status().ToString().c_str());
    return ExitCode(config.status());
  }
  const std::string& fsname = config->fsname();
  std::vector<DfTarget> targets;
  std::optional<std::set<uint32_t>> members;  // the pool's OSTs, when one was asked for
  if (!pool.empty()) {
    std::string name = pool;
    if (const size_t dot = name.find('.'); dot != std::string::npos) {
      if (name.substr(0, dot) != fsname) return 0;  // another filesystem's pool
      name = name.substr(dot + 1);
    }
    for (const proto::PoolInfo& p : config->pools()) {
      if (p.name() == name) members.emplace(p.osts().begin(), p.osts().end());
    }
    if (!members) {
      std::fprintf(stderr, "lfs df: pool %s.%s does not exist\n", fsname.c_str(), name.c_str());
      return ENOENT;
    }
  }

  // The MDT: its inodes and its own space (the MDS's data directory).
  DfTarget mdt;
  mdt.uuid = TargetUuid(fsname, "MDT", 0);
  mdt.type = "MDT";
  mdt.index = 0;
  auto srep = client::Metadata(*c).Statfs(session.cred());
  if (srep.ok()) {
    mdt.bsize = srep->bsize() ? srep->bsize() : 4096;
    mdt.blocks = srep->mdt_blocks();
    mdt.bfree = srep->mdt_bfree();
    mdt.bavail = srep->mdt_bavail();
    mdt.files = srep->files();
    mdt.ffree = srep->ffree();
  } else {
    mdt.error = std::strerror(srep.status().ToErrno());
  }
  targets.push_back(mdt);

  // The OSTs, in index order; one that did not answer shows as inactive.
  std::map<uint32_t, proto::OstStatfsReply> answers;
  auto ost = (*c)->OstStatfs();
  if (ost.ok()) {
    for (const auto& r : *ost) answers[r.ost_idx()] = r;
  }
  std::map<uint32_t, bool> known;
  for (const proto::OstInfo& info : config->osts()) known[info.index()] = info.active();
  for (const auto& [idx, r] : answers) known.emplace(idx, true);
  for (const auto& [idx, active] : known) {
    if (members && members->count(idx) == 0) continue;
    DfTarget t;
    t.uuid = TargetUuid(fsname, "OST", idx);
    t.type = "OST";
    t.index = idx;
    auto it = answers.find(idx);
    if (it == answers.end()) {
      t.error = "inactive device";
    } else {
      t.bsize = it->second.bsize();
      t.blocks = it->second.blocks();
      t.bfree = it->second.bfree();
      t.bavail = it->second.bavail();
      t.files = it->second.files();
      t.ffree = it->second.ffree();
    }
    targets.push_back(t);
  }
  std::fputs(FormatDf(targets, where.mount.mount_point, flags).c_str(), stdout);
  return 0;
}

}  // namespace

int LfsDf(int argc, char** argv) {
  static const option kLong[] = {
      {"human-readable", no_argument, nullptr, 'h'},
      {"inodes", no_argument, nullptr, 'i'},
      {"lazy", no_argument, nullptr, 'l'},
      {"verbose", no_argument, nullptr, 'v'},
      {"pool", required_argument, nullptr, 'p'},
      {nullptr, 0, nullptr, 0},
  };
  uint32_t flags = 0;
  std::string pool;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":hilp:v", kLong, nullptr)) != -1) {
    switch (c) {
      case 'p':
        pool = optarg;
        if (pool.empty() || pool.back() == '.') return Usage("--pool takes [FSNAME.]POOL");
        break;
      case ':':
        return Usage((std::string("option '") + argv[optind - 1] + "' requires an argument")
                         .c_str());
      case 'h': flags |= kDfHuman; break;
      case 'i': flags |= kDfInodes; break;
      case 'l':
      case 'v': break;  // accepted for compatibility; every target is always shown
      default:
        return Usage((std::string("unrecognized option '") + argv[optind - 1] + "'").c_str());
    }
  }
  if (argc - optind > 1) return Usage("at most one PATH");
  ToolSession session;
  if (optind < argc) {
    auto where = LocatePath(argv[optind]);
    if (!where.ok()) {
      std::fprintf(stderr, "lfs df: invalid path '%s': %s\n", argv[optind],
                   where.status().message().c_str());
      return ExitCode(where.status());
    }
    return DfMount(session, *where, flags, pool);
  }
  // Every Stria mount.
  auto mounts = ListStriaMounts();
  if (!mounts.ok()) {
    std::fprintf(stderr, "lfs df: %s\n", mounts.status().ToString().c_str());
    return ExitCode(mounts.status());
  }
  if (mounts->empty()) {
    std::fprintf(stderr, "lfs df: no Stria filesystem is mounted\n");
    return ENODEV;
  }
  int rc = 0;
  for (const MountEntry& m : *mounts) {
    StriaPath where;
    where.mount = m;
    auto dev = ParseDevice(m.source);
    if (!dev.ok()) continue;
    where.device = *dev;
    where.abs_path = m.mount_point;
    where.fs_path = "/";
    int r = DfMount(session, where, flags, pool);
    if (rc == 0) rc = r;
  }
  return rc;
}

}  // namespace stria::tools
