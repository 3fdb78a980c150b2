// Advisory locks across clients: fcntl byte-range locks and flock through three mounts of
// one filesystem (three clients, as Lustre's sanityn runs two), coordinated by the MDS.
// Covers: exclusion and sharing across mounts, F_GETLK's answer, F_SETLKW waiting for the
// holder, POSIX's release at any close and at process death, flock independence, release
// when a whole client dies (lease expiry), and locks and open-unlinked files surviving a
// kill -9 of the MDS (replay within the recovery window).
// The MDS runs with a 3 s client lease so expiry and recovery are quick.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/shared_cluster_env.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kLeaseMs = 3000;

Cluster* g_cluster = nullptr;
client::Client* g_client = nullptr;

ClusterOptions LockEnvOptions() {
  ClusterOptions o;
  o.tag = "locks";
  o.fsname = "lockfs";
  o.num_mounts = 3;
  o.mds_args = {"--client-lease-ms", std::to_string(kLeaseMs)};
  return o;
}

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(
    new SharedClusterEnv(LockEnvOptions(), &g_cluster, &g_client));

// Opens that the mounts' OPENs took from their lookups (llite.*.open_intents `used`).
uint64_t OpenIntentsUsed() {
  CommandResult r = RunCommand({BinPath("lctl"), "--mgs", g_cluster->mgs_nid(), "get_param", "-n",
                                "llite.lockfs-*.open_intents"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  uint64_t sum = 0;
  for (size_t at = r.out.find("used: "); at != std::string::npos;
       at = r.out.find("used: ", at + 1)) {
    sum += std::stoull(r.out.substr(at + 6));
  }
  return sum;
}

// F_SETLK/F_SETLKW of [start, start+len) (len 0: to EOF); 0 or the errno.
int SetLock(int fd, short type, off_t start, off_t len, bool wait = false) {  // NOLINT
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  return fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl) == 0 ? 0 : errno;
}

// Retries a non-blocking F_SETLK until it succeeds or `timeout` passes; the last result.
int SetLockWithin(int fd, short type, std::chrono::milliseconds timeout) {  // NOLINT
  const auto end = Clock::now() + timeout;
  int rc = SetLock(fd, type, 0, 0);
  while (rc != 0 && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rc = SetLock(fd, type, 0, 0);
  }
  return rc;
}

// A child process that runs `hold` (which takes locks), tells the parent, then waits for
// the parent's word (or death) before exiting.
class Holder {
 public:
  template <typename Fn>
  explicit Holder(Fn hold) {
    int up[2], down[2];
    EXPECT_EQ(pipe(up), 0);
    EXPECT_EQ(pipe(down), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(up[0]);
      close(down[1]);
      const char rc = static_cast<char>(hold());
      if (write(up[1], &rc, 1) != 1) _exit(3);
      char c;
      if (read(down[0], &c, 1) < 0) _exit(4);
      _exit(0);
    }
    close(up[1]);
    close(down[0]);
    up_ = up[0];
    down_ = down[1];
    char rc = 1;
    EXPECT_EQ(read(up_, &rc, 1), 1);
    hold_rc_ = rc;
  }
  ~Holder() {
    Release();
    close(up_);
  }
  int hold_rc() const { return hold_rc_; }
  pid_t pid() const { return pid_; }
  // Lets the child exit and reaps it.
  void Release() {
    if (pid_ <= 0) return;
    if (down_ >= 0) close(down_);
    down_ = -1;
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  void Kill() {
    kill(pid_, SIGKILL);
    Release();
  }

 private:
  pid_t pid_ = -1;
  int up_ = -1, down_ = -1;
  int hold_rc_ = 1;
};

class FuseLockTest : public MountedClusterTest {
 protected:
  FuseLockTest() : MountedClusterTest(&g_cluster, &g_client) {}

  void SetUp() override {
    MountedClusterTest::SetUp();
    if (IsSkipped()) return;
    for (int m = 1; m < 3; ++m) {
      if (!g_cluster->Mounted(m)) {
        Status st = g_cluster->Mount(m);
        ASSERT_TRUE(st.ok()) << st.ToString();
      }
    }
  }

  std::string Q(int m, const std::string& rel) const {
    return g_cluster->mount_point(m) + "/" + rel;
  }

  // Creates `rel` with some bytes and opens it read-write on mounts 0 and 1.
  void OpenOnTwoMounts(const std::string& rel, int* fd0, int* fd1) {
    ASSERT_EQ(WriteFile(P(rel), Pattern(4096, 7), 4096, false), 0);
    *fd0 = open(P(rel).c_str(), O_RDWR);
    *fd1 = open(Q(1, rel).c_str(), O_RDWR);
    ASSERT_GE(*fd0, 0) << strerror(errno);
    ASSERT_GE(*fd1, 0) << strerror(errno);
  }
};

TEST_F(FuseLockTest, FcntlWriteLockExcludesTheOtherMount) {
  int a, b;
  OpenOnTwoMounts("excl", &a, &b);
  ASSERT_EQ(SetLock(a, F_WRLCK, 0, 100), 0);
  EXPECT_EQ(SetLock(b, F_WRLCK, 50, 10), EAGAIN);
  EXPECT_EQ(SetLock(b, F_RDLCK, 99, 1), EAGAIN) << "last byte of the range is locked";
  EXPECT_EQ(SetLock(b, F_WRLCK, 100, 100), 0) << "the next byte is free";

  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 10;
  fl.l_len = 5;
  ASSERT_EQ(fcntl(b, F_GETLK, &fl), 0) << strerror(errno);
  EXPECT_EQ(fl.l_type, F_WRLCK);
  EXPECT_EQ(fl.l_start, 0);
  EXPECT_EQ(fl.l_len, 100);
  EXPECT_EQ(fl.l_pid, getpid());

  ASSERT_EQ(SetLock(a, F_UNLCK, 0, 50), 0);
  EXPECT_EQ(SetLock(b, F_WRLCK, 0, 50), 0) << "unlocked half";
  EXPECT_EQ(SetLock(b, F_WRLCK, 50, 1), EAGAIN) << "still-locked half";
  fl.l_type = F_RDLCK;
  fl.l_start = 300;
  fl.l_len = 0;
  ASSERT_EQ(fcntl(b, F_GETLK, &fl), 0);
  EXPECT_EQ(fl.l_type, F_UNLCK) << "nothing conflicts past byte 200";
  close(a);
  close(b);
}

TEST_F(FuseLockTest, ReadLocksShareAndBlockWriters) {
  int a, b;
  OpenOnTwoMounts("share", &a, &b);
  ASSERT_EQ(SetLock(a, F_RDLCK, 0, 0), 0);
  EXPECT_EQ(SetLock(b, F_RDLCK, 0, 0), 0);
  EXPECT_EQ(SetLock(b, F_WRLCK, 0, 0), EAGAIN);
  EXPECT_EQ(SetLock(a, F_WRLCK, 0, 0), EAGAIN) << "upgrade blocked by the other reader";
  ASSERT_EQ(SetLock(b, F_UNLCK, 0, 0), 0);
  EXPECT_EQ(SetLock(a, F_WRLCK, 0, 0), 0) << "upgrade once alone";
  close(a);
  close(b);
}

TEST_F(FuseLockTest, SetlkwWaitsUntilTheHolderUnlocks) {
  int a, b;
  OpenOnTwoMounts("wait", &a, &b);
  close(a);
  Holder holder([&] {
    int fd = open(P("wait").c_str(), O_RDWR);
    return fd >= 0 ? SetLock(fd, F_WRLCK, 0, 0) : errno;
  });
  ASSERT_EQ(holder.hold_rc(), 0);
  std::atomic<bool> done{false};
  std::atomic<int> rc{-1};
  std::thread waiter([&] {
    rc = SetLock(b, F_WRLCK, 0, 0, /*wait=*/true);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(done.load()) << "F_SETLKW returned while the holder still held the lock";
  holder.Release();  // the holder exits: its lock goes with its descriptors
  waiter.join();
  EXPECT_EQ(rc.load(), 0);
  close(b);
}

// Many processes of one mount wait for the same range: each gets it in turn, alone, round
// after round. The client's mirror of its granted locks once refused a grant that came
// while another owner's release was on its way back, forgot the lock, and so never
// released it at close: the other waiters waited for ever. And each waiter once held a
// ring entry that its thread kept after the wait; by the third round a thread blocked in a
// wait while the holder's close sat in one of its other entries.
TEST_F(FuseLockTest, ManyWaitersForOneRangeEachGetItInTurnAlone) {
  ASSERT_EQ(WriteFile(P("queue"), Pattern(4096, 3), 4096, false), 0);
  // Shared with the waiters: how many hold the lock now, the most at once, how many had it.
  auto* shared = static_cast<std::atomic<int>*>(mmap(nullptr, 3 * sizeof(std::atomic<int>),
                                                     PROT_READ | PROT_WRITE,
                                                     MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  constexpr int kWaiters = 12;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int k = 0; k < 3; ++k) shared[k] = 0;
    Holder holder([&] {
      int fd = open(P("queue").c_str(), O_RDWR);
      return fd >= 0 ? SetLock(fd, F_WRLCK, 0, 0) : errno;
    });
    ASSERT_EQ(holder.hold_rc(), 0);
    std::vector<pid_t> waiters;
    for (int w = 0; w < kWaiters; ++w) {
      const pid_t pid = fork();
      if (pid == 0) {
        // Not the holder's pipe: its child exits when the parent closes its end.
        close_range(3, ~0U, 0);
        const int fd = open(P("queue").c_str(), O_RDWR);
        if (fd < 0 || SetLock(fd, F_WRLCK, 0, 0, /*wait=*/true) != 0) _exit(1);
        const int inside = shared[0].fetch_add(1) + 1;
        int most = shared[1].load();
        while (inside > most && !shared[1].compare_exchange_weak(most, inside)) {
        }
        shared[0].fetch_sub(1);
        shared[2].fetch_add(1);
        _exit(close(fd) == 0 ? 0 : 2);  // the close drops the lock
      }
      waiters.push_back(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(shared[2].load(), 0) << "a waiter got the lock while the holder had it";
    holder.Release();
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    for (pid_t pid : waiters) {
      int status = 0;
      pid_t r = 0;
      while ((r = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (r == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
      }
      EXPECT_TRUE(r == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "a waiter did not get the lock within 60 s of the holder's exit";
    }
    EXPECT_EQ(shared[2].load(), kWaiters);
    EXPECT_EQ(shared[1].load(), 1) << "two processes held one write lock at once";
    if (HasFailure()) break;
  }
  munmap(shared, 3 * sizeof(std::atomic<int>));
}

// A signal ends an F_SETLKW wait with EINTR, and the interrupted waiter holds nothing.
TEST_F(FuseLockTest, ASignalEndsAnSetlkwWaitWithEintr) {
  ASSERT_EQ(WriteFile(P("intr"), Pattern(4096, 4), 4096, false), 0);
  Holder holder([&] {
    int fd = open(P("intr").c_str(), O_RDWR);
    return fd >= 0 ? SetLock(fd, F_WRLCK, 0, 0) : errno;
  });
  ASSERT_EQ(holder.hold_rc(), 0);
  int result[2];
  ASSERT_EQ(pipe(result), 0);
  const pid_t waiter = fork();
  if (waiter == 0) {
    // Nothing inherited but its end of `result` (the holder's pipe would keep it alive).
    if (result[1] > 3) close_range(3, result[1] - 1, 0);
    close_range(result[1] + 1, ~0U, 0);
    struct sigaction sa {};
    sa.sa_handler = [](int) {};  // no SA_RESTART: the wait ends
    sigaction(SIGALRM, &sa, nullptr);
    const int fd = open(P("intr").c_str(), O_RDWR);
    alarm(1);
    const int rc = fd >= 0 ? SetLock(fd, F_WRLCK, 0, 0, /*wait=*/true) : -1;
    const char c = static_cast<char>(rc);
    if (write(result[1], &c, 1) != 1) _exit(3);
    pause();  // keeps its descriptor: whatever it holds stays held
    _exit(0);
  }
  close(result[1]);
  char rc = 0;
  ASSERT_EQ(read(result[0], &rc, 1), 1) << "the waiter never returned";
  EXPECT_EQ(rc, EINTR);
  holder.Release();
  const int fd = open(P("intr").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(SetLockWithin(fd, F_WRLCK, std::chrono::milliseconds(3000)), 0)
      << "the interrupted waiter holds the lock";
  close(fd);
  kill(waiter, SIGKILL);
  waitpid(waiter, nullptr, 0);
  close(result[0]);
}

TEST_F(FuseLockTest, ClosingAnyDescriptorDropsTheProcessLocks) {
  int a, b;
  OpenOnTwoMounts("anyclose", &a, &b);
  close(a);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  Holder holder([&] {
    int fd = open(P("anyclose").c_str(), O_RDWR);
    if (fd < 0 || SetLock(fd, F_WRLCK, 0, 0) != 0) return 1;
    // A second descriptor of the same file, closed: POSIX drops every lock of the process.
    int other = open(P("anyclose").c_str(), O_RDONLY);
    if (other < 0) return 2;
    close(other);
    return 0;  // fd stays open
  });
  ASSERT_EQ(holder.hold_rc(), 0);
  EXPECT_EQ(SetLock(b, F_WRLCK, 0, 0), 0);
  close(b);
}

TEST_F(FuseLockTest, KilledProcessReleasesItsLocks) {
  int a, b;
  OpenOnTwoMounts("killed", &a, &b);
  close(a);
  Holder holder([&] {
    int fd = open(P("killed").c_str(), O_RDWR);
    return fd >= 0 ? SetLock(fd, F_WRLCK, 0, 0) : errno;
  });
  ASSERT_EQ(holder.hold_rc(), 0);
  ASSERT_EQ(SetLock(b, F_WRLCK, 0, 0), EAGAIN);
  holder.Kill();
  EXPECT_EQ(SetLockWithin(b, F_WRLCK, std::chrono::seconds(5)), 0);
  close(b);
}

TEST_F(FuseLockTest, FlockExcludesAcrossMountsIndependentlyOfFcntl) {
  int a, b;
  OpenOnTwoMounts("flock", &a, &b);
  ASSERT_EQ(flock(a, LOCK_EX), 0) << strerror(errno);
  errno = 0;
  EXPECT_EQ(flock(b, LOCK_EX | LOCK_NB), -1);
  EXPECT_EQ(errno, EWOULDBLOCK);
  EXPECT_EQ(flock(b, LOCK_SH | LOCK_NB), -1);
  EXPECT_EQ(SetLock(b, F_WRLCK, 0, 0), 0) << "fcntl locks do not see flock locks";
  ASSERT_EQ(flock(a, LOCK_SH), 0) << "conversion to shared";
  EXPECT_EQ(flock(b, LOCK_SH | LOCK_NB), 0);
  ASSERT_EQ(flock(b, LOCK_UN), 0);
  // The last close of a's open file description drops its flock. The kernel sends that
  // release to the client asynchronously, so it lands shortly after close(2) returns.
  close(a);
  const auto end = Clock::now() + std::chrono::seconds(5);
  int rc = flock(b, LOCK_EX | LOCK_NB);
  while (rc != 0 && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rc = flock(b, LOCK_EX | LOCK_NB);
  }
  EXPECT_EQ(rc, 0) << strerror(errno);
  close(b);
}

TEST_F(FuseLockTest, LocksOfADeadClientGoWhenItsLeaseExpires) {
  int a, b;
  OpenOnTwoMounts("deadclient", &a, &b);
  close(b);
  const std::string on_mount2 = Q(2, "deadclient");
  Holder holder([&] {
    int fd = open(on_mount2.c_str(), O_RDWR);
    return fd >= 0 ? SetLock(fd, F_WRLCK, 0, 0) : errno;
  });
  ASSERT_EQ(holder.hold_rc(), 0);
  ASSERT_EQ(SetLock(a, F_WRLCK, 0, 0), EAGAIN);
  // The whole client dies: no close, no unlock ever reaches the MDS.
  ASSERT_EQ(kill(g_cluster->fuse_pid(2), SIGKILL), 0);
  EXPECT_EQ(SetLockWithin(a, F_WRLCK, std::chrono::milliseconds(4 * kLeaseMs)), 0)
      << "the dead client's lock outlived its lease";
  holder.Kill();
  // The dead daemon's mount fails fusermount3 and is detached lazily.
  g_cluster->Unmount(2).IgnoreError();
  EXPECT_FALSE(g_cluster->Mounted(2));
  close(a);
}

TEST_F(FuseLockTest, LocksAndOpenUnlinkedFilesSurviveAnMdsKill) {
  int a, b;
  OpenOnTwoMounts("replayed", &a, &b);
  ASSERT_EQ(SetLock(a, F_WRLCK, 0, 0), 0);
  // An open file unlinked on another client: its data must outlive the restart.
  const auto data = Pattern(3 << 20, 99);
  ASSERT_EQ(WriteFile(P("orphan"), data, 1 << 20, /*do_fsync=*/true), 0);
  int orphan = open(P("orphan").c_str(), O_RDONLY);
  ASSERT_GE(orphan, 0);
  ASSERT_EQ(unlink(Q(1, "orphan").c_str()), 0);
  // The same for a file that mount 1 opened with the open its lookup brought (the open
  // intent, client/fuse/pre_opens.h): that handle is replayed too. Reads of two other files
  // of the directory first, so that its lookups carry the intent.
  ASSERT_EQ(mkdir(P("pre").c_str(), 0755), 0) << strerror(errno);
  const auto pre_data = Pattern(200'000, 98);
  for (const char* f : {"pre/a", "pre/b", "pre/orphan"}) {
    ASSERT_EQ(WriteFile(P(f), pre_data, 1 << 20, /*do_fsync=*/true), 0);
  }
  for (const char* f : {"pre/a", "pre/b"}) {
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(Q(1, f), &got), 0);
  }
  const uint64_t used0 = OpenIntentsUsed();
  int pre_orphan = open(Q(1, "pre/orphan").c_str(), O_RDONLY);
  ASSERT_GE(pre_orphan, 0) << strerror(errno);
  EXPECT_EQ(OpenIntentsUsed(), used0 + 1) << "the OPEN took the open its lookup brought";
  ASSERT_EQ(unlink(P("pre/orphan").c_str()), 0);

  Status st = g_cluster->KillMds(SIGKILL);
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = g_cluster->StartMds();
  ASSERT_TRUE(st.ok()) << st.ToString();
  // Past the recovery window (one lease) and the orphan reaping that ends it.
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * kLeaseMs));

  EXPECT_EQ(SetLock(b, F_WRLCK, 0, 0), EAGAIN) << "the lock was not replayed";
  std::vector<uint8_t> got(data.size());
  ASSERT_EQ(pread(orphan, got.data(), got.size(), 0), static_cast<ssize_t>(got.size()))
      << strerror(errno);
  EXPECT_EQ(FirstDiff(got, data), -1) << "the open-unlinked file lost data in the restart";
  close(orphan);
  got.assign(pre_data.size(), 0);
  ASSERT_EQ(pread(pre_orphan, got.data(), got.size(), 0), static_cast<ssize_t>(got.size()))
      << strerror(errno);
  EXPECT_EQ(FirstDiff(got, pre_data), -1) << "the pre-opened orphan lost data in the restart";
  close(pre_orphan);
  ASSERT_EQ(SetLock(a, F_UNLCK, 0, 0), 0);
  EXPECT_EQ(SetLock(b, F_WRLCK, 0, 0), 0);
  close(a);
  close(b);
}

}  // namespace
}  // namespace stria::testing
