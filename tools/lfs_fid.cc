// lfs path2fid and lfs fid2path: between paths and FIDs (common/fid.h), as Lustre's.
//
//   lfs path2fid [--parents] PATH...     one path: "[0x200000400:0x3:0x0]"; several:
//                                        "PATH: [FID]"; --parents: "[PARENT_FID]/NAME" for
//                                        each name of the file, tab-separated
//   lfs fid2path [--print-fid|-f] [--print-link|-c] [--link|-l N] FSNAME|MOUNT FID...
//                                        every name of each FID, one per line: under MOUNT
//                                        as absolute paths, under FSNAME relative to the
//                                        filesystem root ("/" for the root itself)
#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/fid.h"
#include "tools/fs_connect.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"

namespace stria::tools {
namespace {

Result<proto::Fid2PathReply> Names(client::Client* c, const proto::Credentials& cred,
                                   uint64_t ino) {
  return client::Metadata(c).Fid2Path(cred, ino);
}

}  // namespace

int LfsPath2fid(int argc, char** argv) {
  static const option kLong[] = {
      {"parents", no_argument, nullptr, 'p'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  bool parents = false;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'p':
        parents = true;
        break;
      case 'h':
        std::fputs(LfsUsage("path2fid"), stdout);
        return 0;
      default:
        return UsageError("path2fid",
                          (std::string("unrecognized option '") + argv[optind - 1] + "'").c_str());
    }
  }
  if (optind >= argc) return UsageError("path2fid", "FILE... must be specified");
  const bool many = argc - optind > 1;
  ToolSession session;
  int rc = 0;
  for (int i = optind; i < argc; ++i) {
    const std::string path = argv[i];
    auto fail = [&](const Status& st) {
      std::fprintf(stderr, "lfs path2fid: cannot get fid for '%s': %s\n", path.c_str(),
                   st.ToString().c_str());
      if (rc == 0) rc = ExitCode(st);
    };
    auto pc = session.Locate(path);
    if (!pc.ok()) {
      fail(pc.status());
      continue;
    }
    client::Client* const cl = pc->client;
    auto r = session.Resolve(cl, pc->where.fs_path);
    if (!r.ok()) {
      fail(r.status());
      continue;
    }
    if (!parents) {
      std::printf("%s%s%s\n", many ? path.c_str() : "", many ? ": " : "",
                  FormatFid(FidOfIno(r->attr.ino())).c_str());
      continue;
    }
    auto names = Names(cl, session.cred(), r->attr.ino());
    if (!names.ok()) {
      fail(names.status());
      continue;
    }
    if (many) std::printf("%s: ", path.c_str());
    for (int n = 0; n < names->names_size(); ++n) {
      const auto& name = names->names(n);
      std::printf("%s%s/%s", n > 0 ? "\t" : "", FormatFid(FidOfIno(name.parent())).c_str(),
                  name.name().c_str());
    }
    std::printf("\n");
  }
  return rc;
}

int LfsFid2path(int argc, char** argv) {
  static const option kLong[] = {
      {"print-fid", no_argument, nullptr, 'f'},
      {"print-link", no_argument, nullptr, 'c'},
      {"link", required_argument, nullptr, 'l'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  bool print_fid = false, print_link = false;
  int only_link = -1;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":fcl:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'f':
        print_fid = true;
        break;
      case 'c':
        print_link = true;
        break;
      case 'l': {
        char* end = nullptr;
        errno = 0;
        const long v = std::strtol(optarg, &end, 10);
        if (errno != 0 || end == optarg || *end != '\0' || v < 0 || v > 1'000'000) {
          return UsageError("fid2path", (std::string("invalid linkno '") + optarg + "'").c_str());
        }
        only_link = static_cast<int>(v);
        break;
      }
      case 'h':
        std::fputs(LfsUsage("fid2path"), stdout);
        return 0;
      case ':':
        return UsageError(
            "fid2path",
            (std::string("option '") + argv[optind - 1] + "' requires an argument").c_str());
      default:
        return UsageError("fid2path",
                          (std::string("unrecognized option '") + argv[optind - 1] + "'").c_str());
    }
  }
  if (argc - optind < 2) return UsageError("fid2path", "give FSNAME|ROOT and at least one FID");
  const std::string root = argv[optind];
  // A mount point (absolute path) prints absolute paths; a filesystem name, paths from its
  // root.
  StriaPath where;
  const bool by_mount = !root.empty() && root[0] == '/';
  if (by_mount) {
    auto w = LocatePath(root);
    if (!w.ok()) {
      std::fprintf(stderr, "lfs fid2path: cannot resolve mount point for '%s': %s\n", root.c_str(),
                   w.status().message().c_str());
      return ExitCode(w.status());
    }
    where = *w;
  } else {
    auto mounts = ListStriaMounts();
    bool found = false;
    if (mounts.ok()) {
      for (const MountEntry& m : *mounts) {
        auto dev = ParseDevice(m.source);
        if (dev.ok() && dev->fsname == root) {
          where.mount = m;
          where.device = *dev;
          found = true;
          break;
        }
      }
    }
    if (!found) {
      std::fprintf(stderr, "lfs fid2path: cannot resolve mount point for '%s': %s\n", root.c_str(),
                   std::strerror(ENODEV));
      return ENODEV;
    }
  }
  ToolSession session;
  auto cl = session.ClientFor(where);
  if (!cl.ok()) {
    std::fprintf(stderr, "lfs fid2path: cannot connect to '%s': %s\n", where.mount.source.c_str(),
                 cl.status().ToString().c_str());
    return ExitCode(cl.status());
  }
  std::string mnt = where.mount.mount_point;
  while (mnt.size() > 1 && mnt.back() == '/') mnt.pop_back();
  int rc = 0;
  for (int i = optind + 1; i < argc; ++i) {
    const std::string fid_text = argv[i];
    auto fid = ParseFid(fid_text);
    if (!fid.ok()) {
      std::fprintf(stderr, "lfs fid2path: invalid FID '%s'\n", fid_text.c_str());
      if (rc == 0) rc = EINVAL;
      continue;
    }
    Result<proto::Fid2PathReply> names = Status(Code::kInval, "");
    auto ino = InoOfFid(*fid);
    names =
        ino.ok() ? Names(*cl, session.cred(), *ino) : Result<proto::Fid2PathReply>(ino.status());
    if (!names.ok()) {
      // A FID this filesystem never handed out is "no such file", as Lustre answers.
      const Status st = ino.ok() ? names.status() : Status(Code::kNoEnt, ino.status().message());
      std::fprintf(stderr, "lfs fid2path: cannot find %s %s: %s\n", root.c_str(), fid_text.c_str(),
                   st.ToString().c_str());
      if (rc == 0) rc = ExitCode(st);
      continue;
    }
    if (only_link >= names->names_size()) {
      std::fprintf(stderr, "lfs fid2path: cannot find %s %s: %s\n", root.c_str(), fid_text.c_str(),
                   std::strerror(ENOENT));
      if (rc == 0) rc = ENOENT;
      continue;
    }
    for (int n = 0; n < names->names_size(); ++n) {
      if (only_link >= 0 && n != only_link) continue;
      const std::string& path = names->names(n).path();
      if (print_fid) std::printf("%s ", fid_text.c_str());
      if (print_link) std::printf("%d ", n);
      if (by_mount) {
        std::printf("%s/%s\n", mnt.c_str(), path.c_str());
      } else {
        std::printf("%s%s\n", path.empty() ? "/" : "", path.c_str());
      }
    }
  }
  return rc;
}

}  // namespace stria::tools
