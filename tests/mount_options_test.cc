// Lustre's client mount options through real mounts (client/fuse/mount_options.h), each
// shown to take effect, and mount.stria's exit codes (mount(8)'s).
//   flock        (the default) fcntl and flock locks exclude each other across mounts
//   localflock   locks work within one mount but another mount never sees them
//   noflock      flock(2), F_SETLK and F_GETLK fail with ENOSYS
//   nouser_xattr user.* get/set/remove fail with EOPNOTSUPP and listxattr leaves them out,
//                while a user_xattr mount of the same file sees them
//   lazystatfs / nolazystatfs  with the link to OSS 1 cut (it runs in a network namespace):
//                a lazystatfs mount answers statfs with OST 0's space alone, while a
//                nolazystatfs mount's statfs waits and answers both OSTs' once it is healed
//   splice_writes / nosplice_writes  the data of a write reaches stria-fuse through a pipe
//                (counted in llite stats as spliced_write_bytes) or read whole, and either
//                way lands intact, as the other mount reads it back
//   unlink_writeback / nounlink_writeback  a mount answers its unlinks in a directory the
//                MDS granted it, and sends them behind (counted in llite.*.unlink_writeback),
//                or every unlink waits for the MDS; the other mount sees them gone either way
//   io_uring / noio_uring  requests come over io_uring (counted as ring_requests) where the
//                kernel has it, or through /dev/fuse; data written and read either way is
//                the same bytes, and lock waiters beyond the ring's entries cannot starve
//                the CPU queues they came from
//   unknown options are refused as Lustre's client refuses them ("won't mount"), or dropped
//                with a warning under mount -s
// Skips (with the reason) where there is no /dev/fuse, or, for the statfs test only, where
// `ip netns` cannot be used.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

// Longer than the MDS's 3 s statfs timeout per OST, so a statfs that gives up on OST 1 the
// way the MDS does returns while the link is still cut.
constexpr int kCutMs = 5'000;

// F_SETLK of the whole file by a child process (fcntl locks belong to processes): 0 or the
// errno.
int ChildSetlk(const std::string& path) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(path.c_str(), O_RDWR);
    if (fd < 0) _exit(100);
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    _exit(fcntl(fd, F_SETLK, &fl) == 0 ? 0 : errno);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
}

int Setlk(int fd, short type) {  // NOLINT(runtime/int)
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  return fcntl(fd, F_SETLK, &fl) == 0 ? 0 : errno;
}

int Flock(int fd, int op) { return flock(fd, op) == 0 ? 0 : errno; }

class MountOptionsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveFuse()) return;
    ClusterOptions o;
    o.tag = "mntopts";
    o.fsname = "optfs";
    o.num_oss = 2;
    o.osts_per_oss = 1;
    o.num_mounts = 2;
    o.mount = false;
    // A fresh MDS holds new lock requests for one lease (its recovery window): keep it short.
    o.mds_args = {"--client-lease-ms", "3000"};
    std::string why;
    if (NetnsUsable(&why)) {
      o.netns_oss = {1};
    } else {
      netns_why_ = why;
    }
    cluster_ = new Cluster(o);
    Status st = cluster_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
    ASSERT_NE(cluster_, nullptr);
  }
  void TearDown() override {
    for (int m = 0; m < 2; ++m) {
      if (cluster_->Mounted(m)) {
        EXPECT_TRUE(cluster_->Unmount(m).ok());
      }
    }
  }

  static std::string P(int m, const std::string& rel) {
    return cluster_->mount_point(m) + "/" + rel;
  }
  // Opens `name` (created by mount 0) on mount m.
  static int Open(int m, const std::string& name) {
    const int fd = open(P(m, name).c_str(), O_RDWR | O_CREAT, 0644);
    EXPECT_GE(fd, 0) << P(m, name) << ": " << strerror(errno);
    return fd;
  }

  // Mount m's local parameter `param` (llite.*.NAME), read from its root as lctl does; empty
  // when the mount has no such parameter.
  static std::string LliteParam(int m, const std::string& param) {
    const std::string root = cluster_->mount_point(m);
    const std::string attr = "user.stria.lctl.get.llite.*." + param;
    std::string buf(65536, '\0');
    const ssize_t n = getxattr(root.c_str(), attr.c_str(), buf.data(), buf.size());
    buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return buf;
  }

  // The sum of `counter` in mount m's llite stats (0 when it has no samples), read from the
  // mount's root as lctl does (client/fuse/llite_params.h).
  static uint64_t LliteSum(int m, const std::string& counter) {
    const std::string root = cluster_->mount_point(m);
    const char* attr = "user.stria.lctl.get.llite.*.stats";
    // The text may grow between the two calls (the first is counted as a getxattr, and a
    // count can gain a digit): room to spare, and again on ERANGE.
    ssize_t n = -1;
    std::string buf;
    for (int attempt = 0; attempt < 3 && n < 0; ++attempt) {
      const ssize_t need = getxattr(root.c_str(), attr, nullptr, 0);
      EXPECT_GT(need, 0) << strerror(errno);
      if (need <= 0) return 0;
      buf.assign(static_cast<size_t>(need) + 4096, '\0');
      n = getxattr(root.c_str(), attr, buf.data(), buf.size());
      if (n < 0 && errno != ERANGE) break;
    }
    EXPECT_GT(n, 0) << strerror(errno);
    buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
    std::smatch match;
    // "NAME SAMPLES samples [bytes] MIN MAX SUM SUMSQ" (common/stats.h)
    const std::regex line("(^|\n)" + counter +
                          " +[0-9]+ samples \\[[a-z]+\\] [0-9]+ [0-9]+ ([0-9]+)");
    if (!std::regex_search(buf, match, line)) return 0;
    return std::stoull(match[2]);
  }

  static inline Cluster* cluster_ = nullptr;
  static inline std::string netns_why_;
};

TEST_F(MountOptionsTest, FlockLocksAreCoherentAcrossMounts) {
  ASSERT_TRUE(cluster_->Mount(0, {"flock"}).ok());
  ASSERT_TRUE(cluster_->Mount(1).ok());  // the default is flock
  const int a = Open(0, "coherent");
  const int b = Open(1, "coherent");
  ASSERT_EQ(Flock(a, LOCK_EX), 0);
  EXPECT_EQ(Flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK) << "flock not seen by the other mount";
  ASSERT_EQ(Flock(a, LOCK_UN), 0);
  EXPECT_EQ(Flock(b, LOCK_EX | LOCK_NB), 0);
  ASSERT_EQ(Setlk(a, F_WRLCK), 0);
  EXPECT_EQ(Setlk(b, F_WRLCK), EAGAIN) << "fcntl lock not seen by the other mount";
  close(a);
  close(b);
}

TEST_F(MountOptionsTest, LocalflockLocksStayOnTheirMount) {
  ASSERT_TRUE(cluster_->Mount(0, {"localflock"}).ok());
  ASSERT_TRUE(cluster_->Mount(1, {"localflock"}).ok());
  const int a = Open(0, "local");
  const int a2 = Open(0, "local");
  const int b = Open(1, "local");
  ASSERT_EQ(Flock(a, LOCK_EX), 0);
  // Within the mount, locks work: another open file description waits ...
  EXPECT_EQ(Flock(a2, LOCK_EX | LOCK_NB), EWOULDBLOCK);
  // ... but the other mount (another node) never hears of them.
  EXPECT_EQ(Flock(b, LOCK_EX | LOCK_NB), 0) << "a localflock lock reached the cluster";
  ASSERT_EQ(Setlk(a, F_WRLCK), 0);
  EXPECT_EQ(ChildSetlk(P(0, "local")), EAGAIN) << "fcntl locks do not work within the mount";
  EXPECT_EQ(ChildSetlk(P(1, "local")), 0) << "a localflock fcntl lock reached the cluster";
  close(a);
  close(a2);
  close(b);
}

TEST_F(MountOptionsTest, NoflockFailsLocksWithEnosys) {
  ASSERT_TRUE(cluster_->Mount(0, {"noflock"}).ok());
  ASSERT_TRUE(cluster_->Mount(1).ok());
  const int a = Open(0, "nolocks");
  EXPECT_EQ(Flock(a, LOCK_EX), ENOSYS);
  EXPECT_EQ(Flock(a, LOCK_SH | LOCK_NB), ENOSYS);
  EXPECT_EQ(Setlk(a, F_WRLCK), ENOSYS);
  struct flock fl {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  EXPECT_EQ(fcntl(a, F_GETLK, &fl), -1);
  EXPECT_EQ(errno, ENOSYS);
  // The same file on a mount with locks: they work, and nothing was left held.
  const int b = Open(1, "nolocks");
  EXPECT_EQ(Flock(b, LOCK_EX | LOCK_NB), 0);
  EXPECT_EQ(Setlk(b, F_WRLCK), 0);
  close(a);
  close(b);
}

TEST_F(MountOptionsTest, NouserXattrRefusesUserAttributes) {
  ASSERT_TRUE(cluster_->Mount(0, {"user_xattr"}).ok());
  ASSERT_TRUE(cluster_->Mount(1, {"nouser_xattr"}).ok());
  const int fd = Open(0, "attrs");
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string f0 = P(0, "attrs"), f1 = P(1, "attrs");
  ASSERT_EQ(setxattr(f0.c_str(), "user.color", "blue", 4, 0), 0) << strerror(errno);
  ASSERT_EQ(setxattr(f0.c_str(), "trusted.origin", "mount0", 6, 0), 0) << strerror(errno);
  char buf[256];
  EXPECT_EQ(getxattr(f0.c_str(), "user.color", buf, sizeof(buf)), 4);

  EXPECT_EQ(getxattr(f1.c_str(), "user.color", buf, sizeof(buf)), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(setxattr(f1.c_str(), "user.size", "big", 3, 0), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(removexattr(f1.c_str(), "user.color"), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  // Other namespaces still work there.
  ASSERT_EQ(getxattr(f1.c_str(), "trusted.origin", buf, sizeof(buf)), 6) << strerror(errno);
  EXPECT_EQ(std::string(buf, 6), "mount0");
  // listxattr leaves user.* out, and its size query agrees.
  const ssize_t need = listxattr(f1.c_str(), nullptr, 0);
  const ssize_t n = listxattr(f1.c_str(), buf, sizeof(buf));
  ASSERT_GT(n, 0) << strerror(errno);
  EXPECT_EQ(need, n);
  const std::string names1(buf, n);
  EXPECT_EQ(names1.find("user."), std::string::npos) << names1;
  EXPECT_NE(names1.find("trusted.origin"), std::string::npos) << names1;
  const ssize_t n0 = listxattr(f0.c_str(), buf, sizeof(buf));
  ASSERT_GT(n0, 0);
  EXPECT_NE(std::string(buf, n0).find("user.color"), std::string::npos);
  // Nothing changed behind the user_xattr mount's back.
  EXPECT_EQ(getxattr(f0.c_str(), "user.color", buf, sizeof(buf)), 4);
  EXPECT_EQ(getxattr(f0.c_str(), "user.size", buf, sizeof(buf)), -1);
  EXPECT_EQ(errno, ENODATA);
}

TEST_F(MountOptionsTest, SplicedAndCopiedWritesLandIntact) {
  // Splicing is for requests read from /dev/fuse: over io_uring the kernel copies a write
  // into the ring entry itself.
  ASSERT_TRUE(cluster_->Mount(0, {"noio_uring"}).ok());  // splice_writes is the default
  ASSERT_TRUE(cluster_->Mount(1, {"noio_uring", "nosplice_writes"}).ok());
  constexpr size_t kChunk = 1 << 20;
  constexpr int kChunks = 6;
  std::vector<uint8_t> data(kChunk * kChunks);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 7919) >> 5);
  const uint64_t spliced0 = LliteSum(0, "spliced_write_bytes");
  for (int m = 0; m < 2; ++m) {
    const std::string name = "written-by-" + std::to_string(m);
    const int fd = open(P(m, name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0) << strerror(errno);
    // 1 MiB writes (the second offset by a page, so requests straddle stripes), then a
    // small tail write that the kernel sends too short to splice.
    for (int c = 0; c < kChunks - 1; ++c) {
      const off_t off = c == 0 ? 0 : static_cast<off_t>(c * kChunk - (c == 1 ? 4096 : 0));
      const size_t len = c == 1 ? kChunk + 4096 : kChunk;
      ASSERT_EQ(pwrite(fd, data.data() + off, len, off), static_cast<ssize_t>(len));
    }
    const off_t tail = static_cast<off_t>((kChunks - 1) * kChunk);
    ASSERT_EQ(pwrite(fd, data.data() + tail, 100, tail), 100);
    ASSERT_EQ(pwrite(fd, data.data() + tail + 100, kChunk - 100, tail + 100),
              static_cast<ssize_t>(kChunk - 100));
    ASSERT_EQ(fsync(fd), 0) << strerror(errno);
    ASSERT_EQ(close(fd), 0) << strerror(errno);
    // Read back through the other mount: what each wrote is on the OSTs, byte for byte.
    const int rfd = open(P(1 - m, name).c_str(), O_RDONLY);
    ASSERT_GE(rfd, 0) << strerror(errno);
    std::vector<uint8_t> back(data.size() + 1);
    size_t got = 0;
    for (ssize_t r; (r = read(rfd, back.data() + got, back.size() - got)) > 0;) got += r;
    close(rfd);
    ASSERT_EQ(got, data.size()) << name;
    back.resize(got);
    EXPECT_TRUE(back == data) << name << " differs from what was written";
  }
  // Mount 0 took its big writes through the pipe; mount 1 none (and never counts any).
  EXPECT_GE(LliteSum(0, "spliced_write_bytes") - spliced0, 4 * kChunk);
  EXPECT_EQ(LliteSum(1, "spliced_write_bytes"), 0u);
  EXPECT_GE(LliteSum(1, "write_bytes"), data.size());
}

TEST_F(MountOptionsTest, NoUnlinkWritebackMakesEveryUnlinkWaitForTheMds) {
  ASSERT_TRUE(cluster_->Mount(0).ok());  // unlink_writeback is the default
  ASSERT_TRUE(cluster_->Mount(1, {"nounlink_writeback"}).ok());
  for (int m = 0; m < 2; ++m) {
    const std::string dir = "unlinks-" + std::to_string(m);
    ASSERT_EQ(mkdir(P(m, dir).c_str(), 0755), 0) << strerror(errno);
    for (int i = 0; i < 20; ++i) {
      const int fd = open(P(m, dir + "/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0644);
      ASSERT_GE(fd, 0) << strerror(errno);
      close(fd);
    }
    for (int i = 0; i < 20; ++i) {
      ASSERT_EQ(unlink(P(m, dir + "/f" + std::to_string(i)).c_str()), 0) << strerror(errno);
    }
    for (int i = 0; i < 20; ++i) {
      struct stat st {};
      EXPECT_NE(lstat(P(1 - m, dir + "/f" + std::to_string(i)).c_str(), &st), 0);
    }
  }
  // Mount 0 answered all but its first unlink itself (client/fuse/unlink_writeback.h);
  // mount 1 has no write-back at all.
  const std::string wb = LliteParam(0, "unlink_writeback");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(wb, match, std::regex("queued: ([0-9]+)"))) << wb;
  EXPECT_GE(std::stoull(match[1]), 19u) << wb;
  EXPECT_EQ(LliteParam(1, "unlink_writeback"), "");
}

// Writes `data` to `path` in uneven pieces, fsyncs and closes.
void WriteInPieces(const std::string& path, const std::vector<uint8_t>& data) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << path << ": " << strerror(errno);
  for (size_t off = 0, step = 300'000; off < data.size(); off += step, step += 4096) {
    const size_t len = std::min(step, data.size() - off);
    ASSERT_EQ(pwrite(fd, data.data() + off, len, static_cast<off_t>(off)),
              static_cast<ssize_t>(len));
  }
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  ASSERT_EQ(close(fd), 0) << strerror(errno);
}

std::vector<uint8_t> ReadWhole(const std::string& path) {
  std::vector<uint8_t> back(8 << 20);
  const int fd = open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << path << ": " << strerror(errno);
  if (fd < 0) return {};
  size_t got = 0;
  for (ssize_t r; (r = read(fd, back.data() + got, back.size() - got)) > 0;) got += r;
  close(fd);
  back.resize(got);
  return back;
}

TEST_F(MountOptionsTest, RequestsGoOverIoUringWhereTheKernelHasIt) {
  const bool kernel_has = access("/sys/module/fuse/parameters/enable_uring", F_OK) == 0;
  ASSERT_TRUE(cluster_->Mount(0).ok());  // io_uring is the default
  ASSERT_TRUE(cluster_->Mount(1, {"noio_uring", "ring_threads=2"}).ok());
  std::vector<uint8_t> data(3 * (1 << 20) + 12'345);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  // Each mount writes one file and reads the other's, which it has no pages of: the READs
  // go to stria-fuse (over the ring on mount 0, whose replies are read into the entries).
  ASSERT_NO_FATAL_FAILURE(WriteInPieces(P(0, "ring-written"), data));
  ASSERT_NO_FATAL_FAILURE(WriteInPieces(P(1, "dev-written"), data));
  EXPECT_TRUE(ReadWhole(P(1, "ring-written")) == data);
  EXPECT_TRUE(ReadWhole(P(0, "dev-written")) == data);
  ASSERT_EQ(rename(P(0, "ring-written").c_str(), P(0, "ring-renamed").c_str()), 0)
      << strerror(errno);
  struct stat st {};
  ASSERT_EQ(stat(P(1, "ring-renamed").c_str(), &st), 0) << strerror(errno);
  EXPECT_EQ(st.st_size, static_cast<off_t>(data.size()));

  // More lock waiters on mount 0 than its ring has entries (2 CPU queues x 4 threads on a
  // 2-CPU host): each waits in the mount's lock waiters while its thread arms another
  // entry, so the holder's unlock, and anything else, still gets through.
  const std::string lockfile = P(0, "ring-lock");
  close(Open(0, "ring-lock"));
  int ready[2], release[2], acquired[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  ASSERT_EQ(pipe2(acquired, O_NONBLOCK), 0);
  auto whole = [](short type) {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    return fl;
  };
  const pid_t holder = fork();
  if (holder == 0) {
    const int fd = open(lockfile.c_str(), O_RDWR);
    struct flock fl = whole(F_WRLCK);
    if (fd < 0 || fcntl(fd, F_SETLK, &fl) != 0) _exit(1);
    char c = 'h';
    if (write(ready[1], &c, 1) != 1 || read(release[0], &c, 1) != 1) _exit(2);
    _exit(close(fd) == 0 ? 0 : 3);  // the close drops the lock
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  constexpr int kWaiters = 12;
  std::vector<pid_t> waiters;
  for (int w = 0; w < kWaiters; ++w) {
    const pid_t pid = fork();
    if (pid == 0) {
      // Each waiter its own byte, so that all are granted at the holder's release and
      // all 12 wait at once until then (fuse_lock_test has many waiters for one range).
      const int fd = open(lockfile.c_str(), O_RDWR);
      struct flock fl = whole(F_WRLCK);
      fl.l_start = w;
      fl.l_len = 1;
      if (fd < 0 || fcntl(fd, F_SETLKW, &fl) != 0) _exit(1);
      char one = 'w';
      if (write(acquired[1], &one, 1) != 1) _exit(2);
      _exit(close(fd) == 0 ? 0 : 3);
    }
    waiters.push_back(pid);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(read(acquired[0], &c, 1), -1) << "a waiter got the lock while it was held";
  // Exit status of `pid`, waiting until `deadline`; -1 (and the child killed) past it.
  auto reap = [](pid_t pid, std::chrono::steady_clock::time_point deadline) {
    int status = 0;
    pid_t r = 0;
    while ((r = waitpid(pid, &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (r == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  };
  // The waiters' CPUs still serve everything else (a child, so that a starved queue
  // fails the test rather than hanging it).
  const pid_t prober = fork();
  if (prober == 0) {
    struct stat pst {};
    _exit(stat(lockfile.c_str(), &pst) == 0 && ReadWhole(P(0, "dev-written")) == data ? 0 : 1);
  }
  EXPECT_EQ(reap(prober, std::chrono::steady_clock::now() + std::chrono::seconds(20)), 0)
      << "with the lock waiters pending, a stat and a read did not get through";
  ASSERT_EQ(write(release[1], "r", 1), 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  EXPECT_EQ(reap(holder, deadline), 0) << "the holder could not let go of the lock";
  for (pid_t pid : waiters) EXPECT_EQ(reap(pid, deadline), 0) << "a lock waiter failed";
  int got = 0;
  while (read(acquired[0], &c, 1) == 1) ++got;
  EXPECT_EQ(got, kWaiters);
  for (int fd : {ready[0], ready[1], release[0], release[1], acquired[0], acquired[1]}) close(fd);

  if (kernel_has) {
    EXPECT_GT(LliteSum(0, "ring_requests"), 0u) << "this kernel has FUSE over io_uring";
  } else {
    EXPECT_EQ(LliteSum(0, "ring_requests"), 0u);
  }
  EXPECT_EQ(LliteSum(1, "ring_requests"), 0u) << "noio_uring took requests over io_uring";
}

TEST_F(MountOptionsTest, LazystatfsDoesNotWaitForAnUnreachableOst) {
  if (!netns_why_.empty()) GTEST_SKIP() << netns_why_;
  ASSERT_TRUE(cluster_->Mount(0, {"lazystatfs"}).ok());
  ASSERT_TRUE(cluster_->Mount(1, {"nolazystatfs"}).ok());
  struct statvfs full0 {}, full1 {};
  ASSERT_EQ(statvfs(cluster_->mount_point(0).c_str(), &full0), 0) << strerror(errno);
  ASSERT_EQ(statvfs(cluster_->mount_point(1).c_str(), &full1), 0) << strerror(errno);
  // Both OSTs' space (both directories are on this host's disk: the same f_blocks each).
  EXPECT_EQ(full0.f_blocks, full1.f_blocks);
  ASSERT_GT(full0.f_blocks, 0u);

  ASSERT_TRUE(cluster_->CutOss(1).ok());
  struct statvfs strict {};
  int strict_rc = -1;
  std::thread waiter([&] {
    strict_rc = statvfs(cluster_->mount_point(1).c_str(), &strict) == 0 ? 0 : errno;
  });
  struct statvfs lazy {};
  const int lazy_rc = statvfs(cluster_->mount_point(0).c_str(), &lazy) == 0 ? 0 : errno;
  // The link stays cut well past any short timeout; a statfs that gave up on OST 1 has
  // returned by now without its space, one that waits answers with it after the heal.
  std::this_thread::sleep_for(std::chrono::milliseconds(kCutMs));
  ASSERT_TRUE(cluster_->HealOss(1).ok());
  waiter.join();

  ASSERT_EQ(lazy_rc, 0) << strerror(lazy_rc);
  EXPECT_LT(lazy.f_blocks, full0.f_blocks) << "lazystatfs counted the unreachable OST";
  EXPECT_GT(lazy.f_blocks, 0u) << "lazystatfs lost the reachable OST too";
  ASSERT_EQ(strict_rc, 0) << strerror(strict_rc);
  EXPECT_EQ(strict.f_blocks, full1.f_blocks)
      << "nolazystatfs answered without the unreachable OST instead of waiting for it";
}

// mount.stria: mount(8)'s exit codes, unknown options as Lustre's client, -s, -f, and a
// real background mount whose option takes effect.
TEST_F(MountOptionsTest, MountHelperExitCodesAndOptions) {
  const std::string helper = BinPath("mount.stria");
  const std::string dev = cluster_->device();
  const std::string mnt = cluster_->mount_point(1);
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), helper);
    return RunCommand(args);
  };
  CommandResult r = run({});
  EXPECT_EQ(r.exit_code, 1) << "no arguments: incorrect invocation\n" << r.err;
  r = run({"--bogus-flag", dev, mnt});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  r = run({"not-a-device", mnt});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  r = run({"--config", "/nonexistent/stria.conf", dev, mnt});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  r = run({dev, cluster_->dir() + "/no-such-dir"});
  EXPECT_EQ(r.exit_code, 32) << "a missing mount point is a mount failure\n" << r.err;
  r = run({dev, mnt, "-o", "noatime,acl"});
  EXPECT_EQ(r.exit_code, 32) << r.err;
  EXPECT_NE(r.err.find("unknown option 'acl', won't mount"), std::string::npos) << r.err;
  r = run({dev, mnt, "-o", "io_threads=0"});
  EXPECT_EQ(r.exit_code, 32) << r.err;
  r = run({"127.0.0.1@tcp:1:/optfs", mnt, "-o", "connect_timeout=1"});
  EXPECT_EQ(r.exit_code, 32) << "an MGS that does not answer\n" << r.err;
  EXPECT_NE(r.err.find("did not answer"), std::string::npos) << r.err;
  // -f checks and mounts nothing; -s drops unknown options with a warning.
  r = run({"-f", dev, mnt, "-o", "localflock,nouser_xattr,nolazystatfs,_netdev"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run({"-f", "-s", dev, mnt, "-o", "acl,flock"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ignoring unknown option 'acl'"), std::string::npos) << r.err;
  EXPECT_FALSE(cluster_->Mounted(1));

  // A real mount, as mount(8) runs it for an fstab line with noflock: it returns once
  // mounted, in the background, and the option holds.
  r = run({dev, mnt, "-o", "rw,_netdev,noflock,log=" + cluster_->dir() + "/logs/helper.log"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(cluster_->Mounted(1));
  const int fd = Open(1, "helper-mounted");
  EXPECT_EQ(Flock(fd, LOCK_EX), ENOSYS);
  close(fd);
  CommandResult u = RunCommand({"/usr/bin/fusermount3", "-u", mnt});
  EXPECT_EQ(u.exit_code, 0) << u.err;
}

}  // namespace
}  // namespace stria::testing
