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
// Fault additions: an OSS can run in its own network namespace (ClusterOptions::netns_oss),
// reached over a veth pair on a private /30 of 10.211.0.0/16, so CutOss/HealOss can partition
// it from the MDS and the mounts while it keeps running; an OST can live on a small tmpfs
// (ClusterOptions::tmpfs_ost_bytes) so it fills up. Namespaces, veths and tmpfs mounts are
// removed by the destructor and, if the test process dies, by the watchdog.
//
// Forks: starting daemons and mounts, RunCommand and the netns set-up fork children that
// close the descriptors they inherit. Closing a descriptor of a file inside a FUSE mount
// sends FLUSH, which waits for that file's pending writes; so while this process holds files
// open in a mount with writes that cannot finish (an OSS down or cut off), do not start
// processes from it: run such writers in child processes (as fault_kill9_load_test does).
// CutOss/HealOss do not fork and are safe at any time.
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
  // OSS indexes run under `ip netns exec` in a namespace of their own (needs root and
  // NetnsUsable()); the MDS then listens on 0.0.0.0 so they can register over the veth.
  std::vector<int> netns_oss;
  // OST index -> size in bytes of a tmpfs mounted on its directory before the OSS formats it.
  std::vector<std::pair<int, uint64_t>> tmpfs_ost_bytes;
  std::vector<std::string> oss_args;      // extra arguments for every stria-oss
  // The network of every NID the daemons and mounts are given ("tcp" or "o2ib"). With
  // "o2ib" on a host without an RDMA device, pass --lnet-fallback tcp in mds_args and
  // oss_args and lnet_fallback=tcp in fuse_options (tests/o2ib_fallback_test.cc).
  std::string net = "tcp";
  // A cluster key (docs/security.md): Start() writes one to key_file() and every daemon,
  // mount (unless its options name another key_file=) and harness client uses it.
  bool cluster_key = false;
};

// The result of running a command to completion.
struct CommandResult {
  int exit_code = -1;   // the exit status; 128+signal when killed by a signal
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs argv (argv[0] is a path) with the given stdin text, captures stdout and stderr.
CommandResult RunCommand(const std::vector<std::string>& argv, std::string_view input = {});

// Forks and execs argv (argv[0] is a path) with stdin from /dev/null and stdout+stderr
// appended to `log`; the child gets SIGKILL when this process dies (PR_SET_PDEATHSIG).
Result<pid_t> SpawnLogged(const std::vector<std::string>& argv, const std::string& log);

// True when this process may create network namespaces and veth pairs (root, iproute2, a
// kernel with netns and veth). `why` says what failed.
bool NetnsUsable(std::string* why);

// iproute2's `ip`, and running it (an error carries its stderr). Used by the netns support
// (tests/harness/cluster_faults.cc).
extern const char* const kIpPath;
Status RunIp(const std::vector<std::string>& args);

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

  // ---- network partitions (OSSes in ClusterOptions::netns_oss) ----
  // Takes the host side of OSS i's veth down: nothing reaches it and it reaches nothing,
  // while its process keeps running. HealOss brings the link back. Neither forks (ioctl).
  Status CutOss(int i);
  Status HealOss(int i);
  bool InNetns(int i) const;

  // ---- mounts ----
  // Mounts mount point m (stria-fuse DEVICE <dir>/mntM -f) and waits until it is mounted.
  Status Mount(int m = 0);
  // The same with more -o options for this mount only (e.g. {"timeout=3"}).
  Status Mount(int m, const std::vector<std::string>& extra_fuse_options);
  // Unmounts mount point m and waits for its stria-fuse to exit.
  Status Unmount(int m = 0);
  Status Remount(int m = 0);
  bool Mounted(int m = 0) const;

  // ---- names ----
  const ClusterOptions& options() const { return options_; }
  // Changed options apply to the daemons and mounts started from now on (mds_args, ...).
  ClusterOptions& mutable_options() { return options_; }
  int num_osts() const { return options_.num_oss * options_.osts_per_oss; }
  const std::string& dir() const { return dir_; }
  std::string mount_point(int m = 0) const;
  uint16_t mgs_port() const { return mds_port_; }
  std::string mgs_nid() const;   // "127.0.0.1@tcp:PORT" (@o2ib with net = "o2ib")
  std::string device() const;    // "127.0.0.1@tcp:PORT:/fsname"
  std::string ost_dir(int ost_idx) const;
  std::string key_file() const { return dir_ + "/cluster.key"; }  // with options.cluster_key
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

  struct Netns {
    int oss = -1;
    std::string name;       // the namespace
    std::string host_if;    // veth end in our namespace
    std::string ns_if;      // veth end inside
    std::string host_addr;  // e.g. 10.211.3.9
    std::string ns_addr;    // e.g. 10.211.3.10
    bool up = false;        // created
  };

  Status StartOssLocked(int i);
  Status SetUpNetns();
  Status SetUpTmpfs();
  const Netns* NetnsOf(int i) const;
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
  std::vector<Netns> netns_;  // one per ClusterOptions::netns_oss
  std::vector<std::string> tmpfs_mounts_;  // OST dirs with a tmpfs we mounted
  bool netns_ready_ = false;
  bool tmpfs_ready_ = false;
};

}  // namespace stria::testing
