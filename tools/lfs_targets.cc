// lfs osts, lfs mdts, lfs check: the targets of the filesystems mounted here, as Lustre's.
//
//   lfs osts [PATH]    "OBDS:" then "INDEX: FSNAME-OSTxxxx_UUID ACTIVE|INACTIVE" per OST
//   lfs mdts [PATH]    "MDTS:" then "0: FSNAME-MDT0000_UUID ACTIVE"
//   lfs check osts|mds|mgts|servers [PATH]
//                      pings each target (OP_PING) and prints "NAME active." or
//                      "NAME inactive." (FSNAME-OSTxxxx-osc, FSNAME-MDT0000-mdc, MGC<nid>)
// Without PATH: every Stria mount. Exit 0 unless a mount cannot be reached at all.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "tools/config_view.h"
#include "tools/fs_connect.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"

namespace stria::tools {
namespace {

// The mounts a command covers: the one under PATH, or all.
Result<std::vector<StriaPath>> Mounts(int argc, char** argv) {
  std::vector<StriaPath> out;
  if (argc >= 1) {
    STRIA_ASSIGN_OR_RETURN(StriaPath where, LocatePath(argv[0]));
    out.push_back(std::move(where));
    return out;
  }
  STRIA_ASSIGN_OR_RETURN(std::vector<MountEntry> mounts, ListStriaMounts());
  for (const MountEntry& m : mounts) {
    auto dev = ParseDevice(m.source);
    if (!dev.ok()) continue;
    StriaPath where;
    where.mount = m;
    where.device = *dev;
    where.abs_path = m.mount_point;
    where.fs_path = "/";
    out.push_back(std::move(where));
  }
  if (out.empty()) return Status(Code::kNoDev, "no Stria filesystem is mounted");
  return out;
}

// One OP_PING to `nid`, failing within a few seconds.
bool Answers(const std::string& nid_text) {
  auto nid = lnet::Nid::Parse(nid_text);
  if (!nid.ok()) return false;
  lnet::ClientOptions opts;
  opts.connect_timeout_ms = 3000;
  opts.rpc_timeout_ms = 3000;
  opts.retry_deadline_ms = 3000;
  opts.max_connections = 1;
  UseToolKey(&opts);
  lnet::RpcClient rpc(*nid, opts);
  proto::Ping req;
  req.set_payload("lfs check");
  proto::Ping rep;
  return rpc.Call(proto::OP_PING, req, &rep).ok() && rep.payload() == req.payload();
}

}  // namespace

int LfsTargets(int argc, char** argv) {
  const std::string cmd = argv[0];
  if (argc > 2) return UsageError(cmd.c_str(), "at most one PATH");
  auto mounts = Mounts(argc - 1, argv + 1);
  if (!mounts.ok()) {
    std::fprintf(stderr, "lfs %s: %s\n", cmd.c_str(), mounts.status().message().c_str());
    return ExitCode(mounts.status());
  }
  ToolSession session;
  int rc = 0;
  for (const StriaPath& where : *mounts) {
    auto c = session.ClientFor(where);
    auto config = c.ok() ? (*c)->GetConfig(/*refresh=*/true) : Result<proto::FsConfig>(c.status());
    if (!config.ok()) {
      std::fprintf(stderr, "lfs %s: %s: %s\n", cmd.c_str(), where.mount.mount_point.c_str(),
                   config.status().ToString().c_str());
      if (rc == 0) rc = ExitCode(config.status());
      continue;
    }
    const std::string& fs = config->fsname();
    if (cmd == "mdts") {
      std::printf("MDTS:\n0: %s-MDT0000_UUID ACTIVE\n", fs.c_str());
      continue;
    }
    std::printf("OBDS:\n");
    for (const proto::OstInfo& o : config->osts()) {
      std::printf("%u: %s-OST%04x_UUID %s\n", o.index(), fs.c_str(), o.index(),
                  OstActive(*config, o) ? "ACTIVE" : "INACTIVE");
    }
  }
  return rc;
}

int LfsCheck(int argc, char** argv) {
  if (argc < 2 || argc > 3) return UsageError("check", "give osts, mds, mgts or servers");
  const std::string what = argv[1];
  const bool osts = what == "osts" || what == "servers" || what == "all";
  const bool mds = what == "mds" || what == "mdts" || what == "servers" || what == "all";
  const bool mgs = what == "mgts" || what == "mgs" || what == "all";
  if (!osts && !mds && !mgs) {
    return UsageError("check", ("unrecognized option '" + what + "'").c_str());
  }
  auto mounts = Mounts(argc - 2, argv + 2);
  if (!mounts.ok()) {
    std::fprintf(stderr, "lfs check: %s\n", mounts.status().message().c_str());
    return ExitCode(mounts.status());
  }
  ToolSession session;
  int rc = 0;
  for (const StriaPath& where : *mounts) {
    const std::string first_nid = where.device.nids.substr(0, where.device.nids.find(','));
    auto say = [](const std::string& name, bool up) {
      std::printf("%s %s.\n", name.c_str(), up ? "active" : "inactive");
    };
    if (mgs) say("MGC" + first_nid, Answers(first_nid));
    if (mds) say(where.device.fsname + "-MDT0000-mdc", Answers(first_nid));
    if (!osts) continue;
    auto c = session.ClientFor(where);
    auto config = c.ok() ? (*c)->GetConfig(/*refresh=*/true) : Result<proto::FsConfig>(c.status());
    if (!config.ok()) {
      std::fprintf(stderr, "lfs check: %s: %s\n", where.mount.mount_point.c_str(),
                   config.status().ToString().c_str());
      if (rc == 0) rc = ExitCode(config.status());
      continue;
    }
    for (const proto::OstInfo& o : config->osts()) {
      char name[64];
      std::snprintf(name, sizeof(name), "-OST%04x-osc", o.index());
      say(config->fsname() + name, Answers(o.nid()));
    }
  }
  return rc;
}

}  // namespace stria::tools
