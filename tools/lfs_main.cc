// lfs: the user's command for a Stria filesystem, in Lustre's words (docs/lfs.md).
//
//   lfs setstripe [--stripe-count|-c N] [--stripe-size|-S SIZE] [--stripe-index|-i IDX]
//                 [--pool|-p NAME] PATH...
//   lfs setstripe -d DIR...
//   lfs getstripe [-c|-S|-i|-p|-g|-L|-d|-q|-r] PATH...
//   lfs df [-h] [-i] [PATH]
//   lfs find DIR [--type f|d|l] [--name GLOB] [--stripe-count [+-]N] [--maxdepth N]
//   lfs help [COMMAND], lfs --version
#include <cstdio>
#include <cstring>
#include <string>

#include "common/log.h"
#include "common/version.h"
#include "tools/lfs_commands.h"

namespace stria::tools {

namespace {



void PrintHelp(FILE* out) {
  std::fputs("lfs: the Stria filesystem's user command (Lustre's lfs).\n"
             "Commands:\n"
             "  setstripe   set a directory's default layout or create a file with a layout\n"
             "  getstripe   show the layout of files and directories\n"
             "  df          show the space and inodes of each MDT and OST\n"
             "  find        find files and directories by type, name or layout\n"
             "  path2fid    show the FID of files\n"
             "  fid2path    show every path of FIDs\n"
             "  osts, mdts  list the targets and whether each is active\n"
             "  check       ping the servers: check osts|mds|mgts|servers\n"
             "  migrate     restripe files online (same inode, FID and bytes)\n"
             "  swap_layouts  exchange two files' layouts (and bytes)\n"
             "  data_version  a number that changes when a file's bytes change\n"
             "  manifest    create or verify a dataset's SHA-256 manifest\n"
             "  mirror      mirrored files: create, extend, split, resync, verify, read, write\n"
             "  help        show a command's usage\n"
             "  --version   show the version\n"
             "Run 'lfs help COMMAND' for a command's options.\n",
             out);
}

int Help(int argc, char** argv) {
  if (argc < 2) {
    PrintHelp(stdout);
    return 0;
  }
  const char* usage = LfsUsage(argv[1]);
  if (*usage == '\0') {
    std::fprintf(stderr, "lfs help: unknown command '%s'\n", argv[1]);
    return kUsageError;
  }
  std::fputs(usage, stdout);
  return 0;
}

}  // namespace
}  // namespace stria::tools

int main(int argc, char** argv) {
  using namespace stria::tools;
  stria::InitLogging("lfs", "warn");
  if (argc < 2) {
    PrintHelp(stderr);
    return kUsageError;
  }
  if (std::string(argv[1]) == "--key-file" && argc >= 4) {
    setenv("STRIA_KEY_FILE", argv[2], 1);  // read by UseToolKey (tools/fs_connect.h)
    argv += 2;
    argc -= 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version" || cmd == "version") {
    std::printf("lfs %s (Stria)\n", stria::kVersion);
    return 0;
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") return Help(argc - 1, argv + 1);
  if (cmd == "setstripe") return LfsSetstripe(argc - 1, argv + 1);
  if (cmd == "getstripe") return LfsGetstripe(argc - 1, argv + 1);
  if (cmd == "df") return LfsDf(argc - 1, argv + 1);
  if (cmd == "find") return LfsFind(argc - 1, argv + 1);
  if (cmd == "path2fid") return LfsPath2fid(argc - 1, argv + 1);
  if (cmd == "fid2path") return LfsFid2path(argc - 1, argv + 1);
  if (cmd == "osts" || cmd == "mdts") return LfsTargets(argc - 1, argv + 1);
  if (cmd == "check") return LfsCheck(argc - 1, argv + 1);
  if (cmd == "migrate") return LfsMigrate(argc - 1, argv + 1);
  if (cmd == "swap_layouts") return LfsSwapLayouts(argc - 1, argv + 1);
  if (cmd == "data_version") return LfsDataVersion(argc - 1, argv + 1);
  if (cmd == "manifest") return LfsManifest(argc - 1, argv + 1);
  if (cmd == "mirror") return LfsMirror(argc - 1, argv + 1);
  std::fprintf(stderr, "lfs: unknown command '%s'; try 'lfs help'\n", cmd.c_str());

  return kUsageError;
}
