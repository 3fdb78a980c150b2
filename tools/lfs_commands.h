// The lfs subcommands. Each takes argv as getopt_long sees it (argv[0] is the subcommand's
// name), prints Lustre-shaped output on stdout and errors on stderr, and returns the exit
// status: 0, the errno of a failed operation, or kUsageError (EINVAL, as lfs's CMD_HELP)
// after printing the usage to stderr. Thread-safety: run from main only (getopt state).
#pragma once

namespace stria::tools {

inline constexpr int kUsageError = 22;  // EINVAL, as Lustre's lfs exits on CMD_HELP

int LfsSetstripe(int argc, char** argv);
int LfsGetstripe(int argc, char** argv);
int LfsDf(int argc, char** argv);
int LfsFind(int argc, char** argv);
int LfsPath2fid(int argc, char** argv);
int LfsFid2path(int argc, char** argv);
int LfsTargets(int argc, char** argv);  // lfs osts, lfs mdts
int LfsCheck(int argc, char** argv);
int LfsMigrate(int argc, char** argv);
int LfsSwapLayouts(int argc, char** argv);
int LfsDataVersion(int argc, char** argv);
int LfsManifest(int argc, char** argv);  // create / verify
int LfsMirror(int argc, char** argv);    // create, extend, split, resync, verify, read, write

// The usage text of a subcommand ("" when unknown).
const char* LfsUsage(const char* command);

// After a usage error: "lfs COMMAND: WHY" and the command's usage on stderr; returns
// kUsageError.
int UsageError(const char* command, const char* why);

}  // namespace stria::tools
