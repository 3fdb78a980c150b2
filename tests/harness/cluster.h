// Cluster: a whole Stria filesystem on loopback for one test (the CTest "cluster simulation").
//
// A Cluster owns a fresh temporary directory holding an MDS data dir, one directory per OST,
// port files, daemon logs and mount points. Start() runs a real `stria-mds` (port 0, then
// the port it bound is reused on every restart so OSSes and mounts keep finding it), N real
// `stria-oss` processes each serving M OSTs, waits until the MGS lists every OST, and
// optionally mounts `stria-fuse` in the foreground as a child process. Faults are injected by
// killing and restarting those processes (any signal, kill -9 included).
//
// Invariants: every process and mount this object started is stopped and unmounted by the
// destructor, whatever happened in the test (fusermount3 -u, then umount -l as a fallback);
// children also get PR_SET_PDEATHSIG so a crashed test leaves no daemons behind, and a
// watchdog child lazily unmounts the mount points if the test process dies (even by
// SIGKILL). When a test has failed, the destructor prints the tail of each daemon's log.
// Set STRIA_TEST_KEEP=1 to keep the temporary directory.
//
// Thread-safety: none; drive a Cluster from one thread (the test's).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stria::testing {

struct ClusterOptions {
  std::string fsname = "testfs";
  int num_oss = 2;          // stria-oss processes
  int osts_per_oss = 2;     // OSTs served by each; OST indexes are oss*osts_per_oss + k
  int num_mounts = 1;       // how many mount points to prepare (mnt0, mnt1, ...)
  bool mount = true;        // Start() also mounts mount point 0
  std::string tag = "cluster";  // part of the temporary directory's name
  std::vector<std::string> fuse_options;  // extra -o options for stria-fuse
  std::vector<std::string> mds_args;      // extra stria-mds arguments (--client-lease-ms 2000)
  int start_timeout_ms = 60'000;          // how long to wait for a daemon or mount to come up
};

// The result of running a command to completion.
struct CommandResult {
  int exit_code = -1;   // the exit status; 128+signal when killed by a signal
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs argv (argv[0] is a path) with the given stdin text, captures stdout and stderr.
CommandResult RunCommand(const std::vector<std::string>& argv, std::string_view input = {});

// The path of a Stria binary in the build's bin dir ("stria-mds", "lfs", ...). The
// STRIA_BIN_DIR environment variable overrides the compiled-in directory.
std::string BinPath(std::string_view name);

class Cluster {
 public:
  explicit Cluster(ClusterOptions options = {});
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Starts the MDS, every OSS, waits for the MGS to list all OSTs, and mounts mount point 0
  // when options.mount is set.
  Status Start();

  // ---- processes ----
  Status StartMds();
  // Sends `sig` to the MDS and waits for it to exit (SIGKILL after a grace period).
  Status KillMds(int sig = SIGTERM);
  Status StartOss(int i);
  Status KillOss(int i, int sig = SIGTERM);
  // Kills every daemon with `sig` (OSSes first, then the MDS), starts them again and waits
  // for the MGS to list every OST. Mounts are left alone.
  Status RestartAll(int sig = SIGTERM);
  // Waits until the MGS answers OP_MGS_GET_CONFIG listing every OST as active.
  Status WaitForOsts();
  bool MdsRunning() const { return mds_.pid > 0; }
  bool OssRunning(int i) const { return oss_[i].pid > 0; }
  pid_t mds_pid() const { return mds_.pid; }
  pid_t oss_pid(int i) const { return oss_[i].pid; }
  pid_t fuse_pid(int m = 0) const { return mounts_[m].pid; }

  // ---- mounts ----
  // Mounts mount point m (stria-fuse DEVICE <dir>/mntM -f) and waits until it is mounted.
  Status Mount(int m = 0);
  // Unmounts mount point m and waits for its stria-fuse to exit.
  Status Unmount(int m = 0);
  Status Remount(int m = 0);
  bool Mounted(int m = 0) const;

  // ---- names ----
  const ClusterOptions& options() const { return options_; }
  int num_osts() const { return options_.num_oss * options_.osts_per_oss; }
  const std::string& dir() const { return dir_; }
  std::string mount_point(int m = 0) const;
  uint16_t mgs_port() const { return mds_port_; }
  std::string mgs_nid() const;   // "127.0.0.1@tcp:PORT"
  std::string device() const;    // "127.0.0.1@tcp:PORT:/fsname"
  std::string ost_dir(int ost_idx) const;
  std::string mds_log() const;
  std::string oss_log(int i) const;
  std::string fuse_log(int m = 0) const;

  // Prints the last `lines` lines of every log to stderr.
  void DumpLogs(int lines = 40) const;

 private:
  struct Proc {
    pid_t pid = -1;
    uint16_t port = 0;  // bound port, reused on restart
  };

  Status StartOssLocked(int i);
  Status StopProc(Proc& p, int sig, std::string_view what);
  Status WaitForPortFile(const std::string& path, const Proc& p, std::string_view what,
                         uint16_t* port);
  void Cleanup();
  void StartWatchdog();

  ClusterOptions options_;
  std::string dir_;
  Proc mds_;
  uint16_t mds_port_ = 0;
  std::vector<Proc> oss_;
  std::vector<Proc> mounts_;  // pid of each stria-fuse (-f) child
  pid_t watchdog_pid_ = -1;   // unmounts everything if this process dies (StartWatchdog)
  int watchdog_fd_ = -1;      // the write end of its pipe
};

}  // namespace stria::testing
