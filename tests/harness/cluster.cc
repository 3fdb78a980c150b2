#include "tests/harness/cluster.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "proto/stria.pb.h"

#ifndef STRIA_BIN_DIR
#define STRIA_BIN_DIR "bin"
#endif

namespace stria::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kStopGraceMs = 20'000;  // SIGTERM grace before SIGKILL
constexpr int kPollMs = 20;
constexpr int kUnmountBusyMs = 15'000;  // how long EBUSY from fusermount3 -u is retried

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

int64_t MsSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// The last `lines` lines of a file.
std::string Tail(const std::string& path, int lines) {
  std::ifstream in(path);
  if (!in) return "(no log " + path + ")\n";
  std::deque<std::string> q;
  std::string line;
  while (std::getline(in, line)) {
    q.push_back(line);
    if (static_cast<int>(q.size()) > lines) q.pop_front();
  }
  std::string out;
  for (auto& l : q) out += "    " + l + "\n";
  return out;
}

void AppendToFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app);
  out << text;
}

// Forks and execs argv with stdin from /dev/null and stdout+stderr appended to `log`.
// The child dies with us (PR_SET_PDEATHSIG).
Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::string cmdline;
  for (auto& a : argv) cmdline += a + " ";
  AppendToFile(log, "=== harness: exec " + cmdline + "\n");
  int logfd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (logfd < 0) return ErrnoStatus("open " + log, errno);
  int nullfd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    ::close(logfd);
    ::close(nullfd);
    return ErrnoStatus("fork", e);
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(nullfd, 0);
    dup2(logfd, 1);
    dup2(logfd, 2);
    // Descriptors the test holds (files open inside a mount) must not leak into daemons.
    close_range(3, ~0u, 0);
    execv(cargv[0], cargv.data());
    dprintf(2, "exec %s: %s\n", cargv[0], strerror(errno));
    _exit(127);
  }
  ::close(logfd);
  ::close(nullfd);
  return pid;
}

// Non-blocking check whether pid has exited; reaps it and returns true if so.
bool Exited(pid_t pid, int* status) {
  int st = 0;
  pid_t r = waitpid(pid, &st, WNOHANG);
  if (r == pid) {
    if (status) *status = st;
    return true;
  }
  return r < 0 && errno == ECHILD;
}

std::string DescribeWait(int st) {
  if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return std::string("signal ") + strsignal(WTERMSIG(st));
  return "status " + std::to_string(st);
}

// True when /proc/self/mountinfo lists `path` as a mount point.
bool IsMountPoint(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, devno, root, mnt;
    ls >> id >> parent >> devno >> root >> mnt;
    if (mnt == path) return true;
  }
  return false;
}

// What holds a busy mount: processes with a descriptor or cwd inside it, and the FUSE
// connection's count of requests waiting for the daemon.
std::string BusyReport(const std::string& mnt) {
  std::string out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, devno, root, point;
    ls >> id >> parent >> devno >> root >> point;
    if (point != mnt) continue;
    std::string minor = devno.substr(devno.find(':') + 1);
    std::ifstream w("/sys/fs/fuse/connections/" + minor + "/waiting");
    std::string waiting;
    if (w >> waiting) out += " fuse requests waiting: " + waiting + ";";
  }
  std::error_code ec;
  for (const auto& p : fs::directory_iterator("/proc", ec)) {
    std::string pid = p.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec2;
    std::string cwd = fs::read_symlink(p.path() / "cwd", ec2).string();
    if (!ec2 && cwd.rfind(mnt, 0) == 0) out += " pid " + pid + " has cwd " + cwd + ";";
    for (const auto& fd : fs::directory_iterator(p.path() / "fd", ec2)) {
      std::error_code ec3;
      std::string target = fs::read_symlink(fd.path(), ec3).string();
      if (!ec3 && target.rfind(mnt, 0) == 0) {
        out += " pid " + pid + " has open " + target + ";";
      }
    }
  }
  return out.empty() ? " (no holder found)" : out;
}

}  // namespace

Result<pid_t> SpawnLogged(const std::vector<std::string>& argv, const std::string& log) {
  return Spawn(argv, log);
}

std::string BinPath(std::string_view name) {
  const char* env = getenv("STRIA_BIN_DIR");
  std::string dir = env && *env ? env : STRIA_BIN_DIR;
  return dir + "/" + std::string(name);
}

CommandResult RunCommand(const std::vector<std::string>& argv, std::string_view input) {
  CommandResult res;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
    res.err = std::string("pipe: ") + strerror(errno);
    return res;
  }
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close_range(3, ~0u, 0);
    execv(cargv[0], cargv.data());
    dprintf(2, "exec %s: %s\n", cargv[0], strerror(errno));
    _exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    res.err = std::string("fork: ") + strerror(errno);
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return res;
  }
  // Feed stdin and drain stdout/stderr together so neither side blocks.
  size_t in_off = 0;
  int infd = in_pipe[1];
  if (input.empty()) {
    ::close(infd);
    infd = -1;
  } else {
    fcntl(infd, F_SETFL, O_NONBLOCK);
  }
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    pollfd pfd[3];
    int n = 0;
    if (out_open) pfd[n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) pfd[n++] = {err_pipe[0], POLLIN, 0};
    if (infd >= 0) pfd[n++] = {infd, POLLOUT, 0};
    if (poll(pfd, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (!pfd[i].revents) continue;
      if (pfd[i].fd == infd) {
        ssize_t w = write(infd, input.data() + in_off, input.size() - in_off);
        if (w > 0) in_off += w;
        if (w < 0 && errno != EAGAIN) in_off = input.size();
        if (in_off >= input.size()) {
          ::close(infd);
          infd = -1;
        }
        continue;
      }
      ssize_t r = read(pfd[i].fd, buf, sizeof(buf));
      if (r > 0) {
        (pfd[i].fd == out_pipe[0] ? res.out : res.err).append(buf, r);
      } else if (r == 0 || errno != EINTR) {
        if (pfd[i].fd == out_pipe[0]) out_open = false;
        else err_open = false;
      }
    }
  }
  if (infd >= 0) ::close(infd);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  res.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return res;
}

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)) {
  // The daemons and mounts run with exactly the options the tests give: no config file
  // (/etc/stria/stria.conf of this host) unless a test names one with --config.
  setenv("STRIA_CONFIG", "", 1);
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/stria-" + options_.tag + "-XXXXXX";
  std::vector<char> b(tmpl.begin(), tmpl.end());
  b.push_back('\0');
  if (mkdtemp(b.data()) == nullptr) {
    fprintf(stderr, "mkdtemp %s: %s\n", tmpl.c_str(), strerror(errno));
    abort();
  }
  dir_ = fs::canonical(b.data()).string();
  fs::create_directories(dir_ + "/mds");
  fs::create_directories(dir_ + "/logs");
  oss_.resize(options_.num_oss);
  mounts_.resize(std::max(1, options_.num_mounts));
  for (int o = 0; o < num_osts(); ++o) fs::create_directories(ost_dir(o));
  for (int i : options_.netns_oss) {
    Netns n;
    n.oss = i;
    const std::string id = std::to_string(getpid()) + "x" + std::to_string(i);
    n.name = "stria-" + options_.tag + "-" + id;
    n.host_if = "st" + id + "h";  // at most 15 characters
    n.ns_if = "st" + id + "n";
    netns_.push_back(n);
  }
  StartWatchdog();
}

// The watchdog is a child that blocks reading a pipe whose only write end we hold. When this
// process dies in any way (a crash, a ctest timeout's SIGKILL), the read returns 0 and the
// watchdog lazily unmounts every mount point, so no dead FUSE mount outlives the test. Our
// daemons die with us on their own (PR_SET_PDEATHSIG). Everything the child needs is built
// before fork: after it, only async-signal-safe calls.
void Cluster::StartWatchdog() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  // Every command is built before fork: after it, only async-signal-safe calls. First the
  // mounts, then the tmpfs OST dirs, then the network namespaces (their veths go with them).
  std::vector<std::vector<std::string>> cmds;
  for (size_t m = 0; m < mounts_.size(); ++m) {
    cmds.push_back({"/bin/umount", "-l", mount_point(static_cast<int>(m))});
  }
  for (auto& [idx, bytes] : options_.tmpfs_ost_bytes) {
    cmds.push_back({"/bin/umount", "-l", ost_dir(idx)});
  }
  for (auto& n : netns_) cmds.push_back({kIpPath, "netns", "del", n.name});
  std::vector<std::vector<char*>> argvs;
  for (auto& c : cmds) {
    std::vector<char*> a;
    for (auto& w : c) a.push_back(w.data());
    a.push_back(nullptr);
    argvs.push_back(std::move(a));
  }
  pid_t pid = fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (pid == 0) {
    ::close(fds[1]);
    int devnull = ::open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    if (fds[0] != 3) {
      dup2(fds[0], 3);
    }
    close_range(4, ~0u, 0);
    char c;
    while (read(3, &c, 1) < 0 && errno == EINTR) {
    }
    for (auto& argv : argvs) {
      pid_t u = fork();
      if (u == 0) {
        execv(argv[0], argv.data());
        _exit(127);
      }
      if (u > 0) {
        int st;
        waitpid(u, &st, 0);
      }
    }
    _exit(0);
  }
  ::close(fds[0]);
  watchdog_pid_ = pid;
  watchdog_fd_ = fds[1];
}

Cluster::~Cluster() { Cleanup(); }

void Cluster::Cleanup() {
  bool failed = ::testing::UnitTest::GetInstance() != nullptr &&
                (::testing::Test::HasFailure() || ::testing::UnitTest::GetInstance()->Failed());
  if (failed) DumpLogs();
  for (size_t m = 0; m < mounts_.size(); ++m) {
    if (mounts_[m].pid > 0 || Mounted(m)) {
      Status st = Unmount(static_cast<int>(m));
      if (!st.ok()) fprintf(stderr, "harness: %s\n", st.ToString().c_str());
    }
  }
  for (size_t i = 0; i < oss_.size(); ++i) {
    if (oss_[i].pid > 0) StopProc(oss_[i], SIGTERM, "stria-oss").IgnoreError();
  }
  if (mds_.pid > 0) StopProc(mds_, SIGTERM, "stria-mds").IgnoreError();
  for (const std::string& d : tmpfs_mounts_) {
    CommandResult r = RunCommand({"/bin/umount", d});
    if (r.exit_code != 0) RunCommand({"/bin/umount", "-l", d});
  }
  tmpfs_mounts_.clear();
  for (Netns& n : netns_) {
    if (n.up) RunIp({"netns", "del", n.name}).IgnoreError();  // the veth goes with it
    n.up = false;
  }
  if (watchdog_fd_ >= 0) {
    ::close(watchdog_fd_);  // the watchdog finds nothing mounted and exits
    watchdog_fd_ = -1;
    int st;
    waitpid(watchdog_pid_, &st, 0);
  }
  bool any_mounted = false;
  for (size_t m = 0; m < mounts_.size(); ++m) any_mounted |= Mounted(static_cast<int>(m));
  const char* keep = getenv("STRIA_TEST_KEEP");
  if (any_mounted) {
    fprintf(stderr, "harness: a mount is still present; leaving %s in place\n", dir_.c_str());
  } else if (keep && *keep && std::string(keep) != "0") {
    fprintf(stderr, "harness: keeping %s\n", dir_.c_str());
  } else {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

std::string Cluster::mount_point(int m) const { return dir_ + "/mnt" + std::to_string(m); }
std::string Cluster::mgs_nid() const {
  return "127.0.0.1@" + options_.net + ":" + std::to_string(mds_port_);
}
std::string Cluster::device() const { return mgs_nid() + ":/" + options_.fsname; }
std::string Cluster::ost_dir(int ost_idx) const {
  return dir_ + "/ost" + std::to_string(ost_idx);
}
std::string Cluster::mds_log() const { return dir_ + "/logs/mds.log"; }
std::string Cluster::oss_log(int i) const {
  return dir_ + "/logs/oss" + std::to_string(i) + ".log";
}
std::string Cluster::fuse_log(int m) const {
  return dir_ + "/logs/fuse" + std::to_string(m) + ".log";
}

void Cluster::DumpLogs(int lines) const {
  std::string out = "==== stria cluster logs (" + dir_ + ") ====\n";
  out += "--- " + mds_log() + "\n" + Tail(mds_log(), lines);
  for (size_t i = 0; i < oss_.size(); ++i) {
    out += "--- " + oss_log(i) + "\n" + Tail(oss_log(i), lines);
  }
  for (size_t m = 0; m < mounts_.size(); ++m) {
    if (fs::exists(fuse_log(m))) out += "--- " + fuse_log(m) + "\n" + Tail(fuse_log(m), lines);
  }
  fprintf(stderr, "%s", out.c_str());
}

Status Cluster::Start() {
  if (options_.cluster_key && access(key_file().c_str(), F_OK) != 0) {
    STRIA_RETURN_IF_ERROR(lnet::WriteNewKeyFile(key_file(), /*force=*/false));
  }
  STRIA_RETURN_IF_ERROR(SetUpTmpfs());
  STRIA_RETURN_IF_ERROR(SetUpNetns());
  STRIA_RETURN_IF_ERROR(StartMds());
  for (int i = 0; i < options_.num_oss; ++i) STRIA_RETURN_IF_ERROR(StartOss(i));
  STRIA_RETURN_IF_ERROR(WaitForOsts());
  if (options_.mount) STRIA_RETURN_IF_ERROR(Mount(0));
  return Status::Ok();
}

Status Cluster::WaitForPortFile(const std::string& path, const Proc& p, std::string_view what,
                                uint16_t* port) {
  auto t0 = Clock::now();
  while (true) {
    std::ifstream in(path);
    unsigned long v = 0;
    if (in && (in >> v) && v > 0 && v < 65536) {
      *port = static_cast<uint16_t>(v);
      return Status::Ok();
    }
    int st = 0;
    if (Exited(p.pid, &st)) {
      return Status(Code::kInternal, std::string(what) + " exited (" + DescribeWait(st) +
                                         ") before writing " + path);
    }
    if (MsSince(t0) > options_.start_timeout_ms) {
      return Status(Code::kTimeout, std::string(what) + " wrote no port file " + path);
    }
    SleepMs(kPollMs);
  }
}

Status Cluster::StartMds() {
  if (mds_.pid > 0) return Status(Code::kBusy, "stria-mds already running");
  std::string port_file = dir_ + "/mds.port";
  unlink(port_file.c_str());
  const std::string listen = (netns_.empty() ? "127.0.0.1@" : "0.0.0.0@") + options_.net + ":" +
                             std::to_string(mds_port_);
  std::vector<std::string> argv = {BinPath("stria-mds"), "--fsname", options_.fsname,
                                   "--data", dir_ + "/mds", "--listen", listen,
                                   "--port-file", port_file};
  argv.insert(argv.end(), options_.mds_args.begin(), options_.mds_args.end());
  if (options_.cluster_key) argv.insert(argv.end(), {"--key-file", key_file()});
  STRIA_ASSIGN_OR_RETURN(mds_.pid, Spawn(argv, mds_log()));
  uint16_t port = 0;
  Status st = WaitForPortFile(port_file, mds_, "stria-mds", &port);
  if (!st.ok()) {
    if (Exited(mds_.pid, nullptr)) mds_.pid = -1;
    return Status(st.code(), st.message() + "\n" + Tail(mds_log(), 30));
  }
  if (mds_port_ != 0 && port != mds_port_) {
    return Status(Code::kInternal, "stria-mds came back on port " + std::to_string(port) +
                                       ", not " + std::to_string(mds_port_));
  }
  mds_port_ = port;
  return Status::Ok();
}

Status Cluster::KillMds(int sig) { return StopProc(mds_, sig, "stria-mds"); }

Status Cluster::StartOss(int i) {
  if (i < 0 || i >= options_.num_oss) return Status(Code::kInval, "no OSS " + std::to_string(i));
  if (mds_port_ == 0) return Status(Code::kNotReady, "start the MDS first");
  return StartOssLocked(i);
}

Status Cluster::StartOssLocked(int i) {
  Proc& p = oss_[i];
  if (p.pid > 0) return Status(Code::kBusy, "stria-oss " + std::to_string(i) + " running");
  std::string port_file = dir_ + "/oss" + std::to_string(i) + ".port";
  unlink(port_file.c_str());
  const Netns* ns = NetnsOf(i);
  std::vector<std::string> argv;
  if (ns) {
    // `nsenter --net` execs the OSS in place (same pid, so signals and PDEATHSIG still work);
    // it reaches the MGS and is reached over the veth. Not `ip netns exec`: that also gives
    // the OSS a private copy of every mount of the moment, FUSE mounts of other tests
    // included, and a mount copied so outlives its unmount (the kernel never ends the
    // connection, and that mount's stria-fuse never exits).
    argv = {"/usr/bin/nsenter", "--net=/run/netns/" + ns->name, "--", BinPath("stria-oss"),
            "--mgs", ns->host_addr + "@tcp:" + std::to_string(mds_port_),
            "--listen", ns->ns_addr + "@tcp:" + std::to_string(p.port)};
  } else {
    argv = {BinPath("stria-oss"), "--mgs", mgs_nid(),
            "--listen", "127.0.0.1@" + options_.net + ":" + std::to_string(p.port)};
  }
  argv.push_back("--port-file");
  argv.push_back(port_file);
  for (const auto& a : options_.oss_args) argv.push_back(a);
  if (options_.cluster_key) argv.insert(argv.end(), {"--key-file", key_file()});
  for (int k = 0; k < options_.osts_per_oss; ++k) {
    int idx = i * options_.osts_per_oss + k;
    argv.push_back("--ost");
    argv.push_back(std::to_string(idx) + ":" + ost_dir(idx));
  }
  STRIA_ASSIGN_OR_RETURN(p.pid, Spawn(argv, oss_log(i)));
  uint16_t port = 0;
  Status st = WaitForPortFile(port_file, p, "stria-oss " + std::to_string(i), &port);
  if (!st.ok()) {
    if (Exited(p.pid, nullptr)) p.pid = -1;
    return Status(st.code(), st.message() + "\n" + Tail(oss_log(i), 30));
  }
  p.port = port;
  return Status::Ok();
}

Status Cluster::KillOss(int i, int sig) {
  if (i < 0 || i >= options_.num_oss) return Status(Code::kInval, "no OSS " + std::to_string(i));
  return StopProc(oss_[i], sig, "stria-oss " + std::to_string(i));
}

Status Cluster::StopProc(Proc& p, int sig, std::string_view what) {
  if (p.pid <= 0) return Status::Ok();
  int st = 0;
  if (Exited(p.pid, &st)) {
    p.pid = -1;
    return Status(Code::kInternal,
                  std::string(what) + " had already exited (" + DescribeWait(st) + ")");
  }
  kill(p.pid, sig);
  auto t0 = Clock::now();
  while (!Exited(p.pid, &st)) {
    if (MsSince(t0) > kStopGraceMs) {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, &st, 0);
      p.pid = -1;
      return Status(Code::kTimeout, std::string(what) + " ignored signal " +
                                        std::to_string(sig) + " for 20 s; killed");
    }
    SleepMs(kPollMs);
  }
  p.pid = -1;
  if (sig == SIGTERM || sig == SIGINT) {
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      return Status(Code::kInternal,
                    std::string(what) + " did not exit cleanly on SIGTERM: " + DescribeWait(st));
    }
  }
  return Status::Ok();
}

Status Cluster::RestartAll(int sig) {
  Status first;
  for (int i = 0; i < options_.num_oss; ++i) {
    Status st = KillOss(i, sig);
    if (!st.ok() && first.ok()) first = st;
  }
  Status st = KillMds(sig);
  if (!st.ok() && first.ok()) first = st;
  STRIA_RETURN_IF_ERROR(StartMds());
  for (int i = 0; i < options_.num_oss; ++i) STRIA_RETURN_IF_ERROR(StartOss(i));
  STRIA_RETURN_IF_ERROR(WaitForOsts());
  return first;
}

Status Cluster::WaitForOsts() {
  auto nid = lnet::Nid::Parse(mgs_nid());
  if (!nid.ok()) return nid.status();
  lnet::ClientOptions opts;
  opts.fsname = options_.fsname;
  opts.connect_timeout_ms = 1'000;
  opts.rpc_timeout_ms = 5'000;
  opts.retry_deadline_ms = 2'000;
  if (options_.cluster_key) {
    STRIA_ASSIGN_OR_RETURN(opts.keys, lnet::LoadKeyRing({key_file()}));
  }
  lnet::RpcClient rpc(*nid, opts);
  auto t0 = Clock::now();
  std::string last = "no reply";
  while (true) {
    proto::GetConfigRequest req;
    proto::FsConfig cfg;
    Status st = rpc.Call(proto::OP_MGS_GET_CONFIG, req, &cfg);
    if (st.ok()) {
      std::vector<bool> seen(num_osts(), false);
      for (const auto& o : cfg.osts()) {
        if (o.index() < seen.size() && o.active() && !o.nid().empty()) seen[o.index()] = true;
      }
      int n = 0;
      for (bool b : seen) n += b;
      if (n == num_osts()) return Status::Ok();
      last = "MGS lists " + std::to_string(n) + " of " + std::to_string(num_osts()) +
             " OSTs active: " + cfg.ShortDebugString();
    } else {
      last = st.ToString();
    }
    if (mds_.pid > 0 && Exited(mds_.pid, nullptr)) {
      mds_.pid = -1;
      return Status(Code::kInternal, "stria-mds died while waiting for OSTs\n" +
                                         Tail(mds_log(), 30));
    }
    if (MsSince(t0) > options_.start_timeout_ms) {
      return Status(Code::kTimeout, "MGS never listed every OST: " + last);
    }
    SleepMs(100);
  }
}

bool Cluster::Mounted(int m) const { return IsMountPoint(mount_point(m)); }

Status Cluster::Mount(int m) { return Mount(m, {}); }

Status Cluster::Mount(int m, const std::vector<std::string>& extra_fuse_options) {
  if (m < 0 || m >= static_cast<int>(mounts_.size())) {
    return Status(Code::kInval, "no mount point " + std::to_string(m));
  }
  Proc& p = mounts_[m];
  std::string mnt = mount_point(m);
  if (p.pid > 0 && Exited(p.pid, nullptr)) p.pid = -1;  // a crashed stria-fuse
  if (p.pid > 0 || Mounted(m)) return Status(Code::kBusy, mnt + " already mounted");
  fs::create_directories(mnt);
  std::vector<std::string> argv = {BinPath("stria-fuse"), device(), mnt, "-f"};
  std::vector<std::string> fuse_options = options_.fuse_options;
  fuse_options.insert(fuse_options.end(), extra_fuse_options.begin(), extra_fuse_options.end());
  if (options_.cluster_key &&
      std::none_of(fuse_options.begin(), fuse_options.end(),
                   [](const std::string& o) { return o.rfind("key_file=", 0) == 0; })) {
    fuse_options.push_back("key_file=" + key_file());
  }
  if (!fuse_options.empty()) {
    std::string o;
    for (auto& x : fuse_options) o += (o.empty() ? "" : ",") + x;
    argv.push_back("-o");
    argv.push_back(o);
  }
  STRIA_ASSIGN_OR_RETURN(p.pid, Spawn(argv, fuse_log(m)));
  auto t0 = Clock::now();
  while (!IsMountPoint(mnt)) {
    int st = 0;
    if (Exited(p.pid, &st)) {
      p.pid = -1;
      return Status(Code::kInternal, "stria-fuse exited (" + DescribeWait(st) +
                                         ") before mounting " + mnt + "\n" +
                                         Tail(fuse_log(m), 30));
    }
    if (MsSince(t0) > options_.start_timeout_ms) {
      return Status(Code::kTimeout, "stria-fuse did not mount " + mnt + "\n" +
                                        Tail(fuse_log(m), 30));
    }
    SleepMs(kPollMs);
  }
  return Status::Ok();
}

Status Cluster::Unmount(int m) {
  if (m < 0 || m >= static_cast<int>(mounts_.size())) {
    return Status(Code::kInval, "no mount point " + std::to_string(m));
  }
  Proc& p = mounts_[m];
  std::string mnt = mount_point(m);
  Status result;
  if (IsMountPoint(mnt)) {
    // EBUSY can be transient (a release still in flight to the daemon): retry a while.
    auto t0 = Clock::now();
    CommandResult r;
    while (true) {
      r = RunCommand({"/usr/bin/fusermount3", "-u", mnt});
      if (r.exit_code == 0 || r.err.find("busy") == std::string::npos ||
          MsSince(t0) > kUnmountBusyMs) {
        break;
      }
      SleepMs(100);
    }
    if (r.exit_code != 0) {
      result = Status(Code::kBusy, "fusermount3 -u " + mnt + " failed for " +
                                       std::to_string(MsSince(t0)) + " ms: " + r.err +
                                       "busy because:" + BusyReport(mnt));
      RunCommand({"/bin/umount", "-l", mnt});
    } else if (MsSince(t0) > 1000) {
      fprintf(stderr, "harness: %s was busy for %lld ms before it unmounted\n", mnt.c_str(),
              static_cast<long long>(MsSince(t0)));
    }
  }
  if (p.pid > 0) {
    auto t0 = Clock::now();
    int st = 0;
    bool exited = false;
    while (!(exited = Exited(p.pid, &st)) && MsSince(t0) < kStopGraceMs) SleepMs(kPollMs);
    if (!exited) {
      kill(p.pid, SIGTERM);
      t0 = Clock::now();
      while (!(exited = Exited(p.pid, &st)) && MsSince(t0) < 5'000) SleepMs(kPollMs);
      if (!exited) {
        kill(p.pid, SIGKILL);
        waitpid(p.pid, &st, 0);
      }
      if (result.ok()) result = Status(Code::kTimeout, "stria-fuse did not exit after unmount");
    } else if (result.ok() && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      result = Status(Code::kInternal, "stria-fuse exited with " + DescribeWait(st) +
                                           " after unmount\n" + Tail(fuse_log(m), 20));
    }
    p.pid = -1;
  }
  if (IsMountPoint(mnt)) RunCommand({"/bin/umount", "-l", mnt});
  return result;
}

Status Cluster::Remount(int m) {
  STRIA_RETURN_IF_ERROR(Unmount(m));
  return Mount(m);
}

}  // namespace stria::testing
