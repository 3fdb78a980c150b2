// Mirrored files (lfs mirror create -N2) over two OSS processes, through a real mount, with
// real faults:
//   1. kill -9 of one OSS during a stream of write+fsync+rename checkpoints: no call fails,
//      every acknowledged file reads back exact while the OSS is down, the files written
//      then show a stale mirror (lfs getstripe, lfs mirror verify, lctl get_param), and
//      after the OSS is restarted the MDS resyncs them by itself until lfs mirror verify
//      finds every file's mirrors identical;
//   2. a bit flipped in one mirror's object on disk: reads return the right bytes, the
//      damage is reported and repaired from the other mirror, and lctl scrub then finds
//      nothing; a bit flipped in the other mirror, which no read meets, is found by
//      lctl scrub --repair and repaired the same way;
//   3. both OSSes killed: a write+fsync to a mirrored file fails as one to an unmirrored file
//      does (EIO after the mount's timeout), and every file acknowledged before reads back
//      exact once they return;
//   4. lfs mirror extend of a file a reader keeps reading (no error, right bytes, the new
//      mirror identical), then lfs mirror split into two files that read the same;
//   5. (where `ip netns` works) one OSS cut off by a network partition longer than the
//      mirror timeout while a file is written: no error to the writer, the bytes exact, and
//      the resync after the heal makes the mirrors identical.
// The writers are child processes: the test process holds no file open in the mount while it
// forks daemons (tests/harness/cluster.h). Waits for the background resync poll with a
// generous bound; nothing asserts on how long anything took.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "lnet/auth.h"
#include "proto/layout_mirrors.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

constexpr int kFiles = 12;   // checkpoints in the stream
constexpr int kKillAt = 3;   // OSS 1 dies after this many are acknowledged
constexpr int kWaitS = 90;   // bound on waiting for the background resync

// What the writer child shares with the test: progress and the first failure.
struct Shared {
  std::atomic<int> acked{0};   // checkpoints whose write, fsync, close and rename returned 0
  std::atomic<int> killed{0};  // the test killed the OSS
  std::atomic<int> err{0};     // errno of the first failure
  std::atomic<int> step{-1};   // the checkpoint it failed on
  std::atomic<int> errs[2];    // test 3: errnos of the mirrored and unmirrored writes
};

std::vector<uint8_t> Checkpoint(int i) { return Pattern(300'000 + 4'099 * i, 100 + i); }

// Progress on stderr, with the seconds since the first call (where the time goes).
void Note(const char* what) {
  static const auto t0 = std::chrono::steady_clock::now();
  fprintf(stderr, "mirror: %6.1f s  %s\n",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), what);
}

class MirrorFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
    // With a cluster key and OSS capabilities: the MDS grants them for every mirror's
    // objects, and its resync writes under its own.
    char tmpl[] = "/tmp/stria-mirror-key.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    key_dir_ = tmpl;
    const std::string capa_key = key_dir_ + "/capa.key";
    ASSERT_TRUE(lnet::WriteNewKeyFile(capa_key, false).ok());
    ClusterOptions o;
    o.tag = "mirror";
    o.fsname = "mirrorfs";
    o.num_oss = 2;
    o.osts_per_oss = 1;
    o.num_mounts = 2;
    o.fuse_options = {"mirror_timeout=1"};
    o.cluster_key = true;
    o.mds_args = {"--capa-key-file", capa_key};
    o.oss_args = {"--capa-key-file", capa_key};
    Status st = StartWithClient(o, &cluster_, &client_);
    ASSERT_TRUE(st.ok()) << st.ToString();
    setenv("STRIA_KEY_FILE", cluster_->key_file().c_str(), 1);  // for lfs and lctl
    void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    shared_ = new (mem) Shared();
  }
  void TearDown() override {
    if (shared_ != nullptr) munmap(shared_, sizeof(Shared));
    unsetenv("STRIA_KEY_FILE");
    cluster_.reset();
    if (!key_dir_.empty()) std::filesystem::remove_all(key_dir_);
  }

  std::string P(const std::string& rel, int m = 0) const {
    return cluster_->mount_point(m) + "/" + rel;
  }
  static CommandResult Lfs(std::vector<std::string> args) {
    args.insert(args.begin(), BinPath("lfs"));
    return RunCommand(args);
  }
  CommandResult Lctl(std::vector<std::string> args) const {
    args.insert(args.begin(), {BinPath("lctl"), "--mgs", cluster_->mgs_nid()});
    return RunCommand(args);
  }
  std::string ResyncParam() const {
    return Lctl({"get_param", "-n", "mdt.*.mirror_resync"}).out;
  }
  // Polls `done` every 200 ms for at most kWaitS seconds.
  static bool WaitFor(const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(kWaitS);
    while (std::chrono::steady_clock::now() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return done();
  }
  // Runs fn in a child process and waits for it; its exit status.
  static int InChild(const std::function<int()>& fn) {
    const pid_t pid = fork();
    if (pid == 0) _exit(fn());
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<client::Client> client_;
  Shared* shared_ = nullptr;
  std::string key_dir_;
};

TEST_F(MirrorFaultTest, KillingOneOssLosesNothingAndTheMirrorsResyncByThemselves) {
  Note("cluster up");
  ASSERT_EQ(mkdir(P("ckpt").c_str(), 0755), 0);
  CommandResult r = Lfs({"mirror", "create", "-N2", "-S", "1M", P("ckpt")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The checkpoint stream: write, fsync, close, rename; every call must succeed.
  Shared* sh = shared_;
  const std::string dir = P("ckpt");
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    for (int i = 0; i < kFiles; ++i) {
      while (i == kKillAt && sh->killed.load() == 0) usleep(10'000);
      const std::string tmp = dir + "/.tmp." + std::to_string(i);
      int e = WriteFile(tmp, Checkpoint(i), 64 << 10, /*fsync_it=*/true);
      if (e == 0 && rename(tmp.c_str(), (dir + "/step." + std::to_string(i)).c_str()) != 0) {
        e = errno;
      }
      if (e != 0) {
        sh->err = e;
        sh->step = i;
        _exit(1);
      }
      sh->acked = i + 1;
    }
    _exit(0);
  }
  while (sh->acked.load() < kKillAt) usleep(10'000);
  ASSERT_TRUE(cluster_->KillOss(1, SIGKILL).ok());
  sh->killed = 1;
  int status = 0;
  waitpid(writer, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "checkpoint " << sh->step.load() << " failed with one mirror's OSS down: "
      << strerror(sh->err.load());
  ASSERT_EQ(sh->acked.load(), kFiles);
  Note("checkpoints written with OSS 1 killed");

  // While OSS 1 is down: every acknowledged checkpoint reads back exact.
  for (int i = 0; i < kFiles; ++i) {
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(P("ckpt/step." + std::to_string(i)), &got), 0) << i;
    EXPECT_EQ(FirstDiff(got, Checkpoint(i)), -1) << "checkpoint " << i;
  }
  Note("checkpoints read back while OSS 1 is down");
  // The degraded state is visible: a stale mirror, a file lfs mirror verify calls unhealthy,
  // and the MDS's resync list.
  const std::string last = P("ckpt/step." + std::to_string(kFiles - 1));
  r = Lfs({"getstripe", last});
  Note("lfs getstripe");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("lcm_mirror_count:  2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stale"), std::string::npos) << r.out;
  r = Lfs({"mirror", "verify", last});
  Note("lfs mirror verify");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("is stale"), std::string::npos) << r.out;
  EXPECT_EQ(ResyncParam().find("stale_files: 0"), std::string::npos) << ResyncParam();
  Note("lctl get_param");
  r = Lfs({"find", P("ckpt"), "--mirror-state", "wp"});
  EXPECT_NE(r.out.find("step." + std::to_string(kFiles - 1)), std::string::npos) << r.out;

  // OSS 1 comes back: the MDS resyncs every stale range by itself.
  Note("degraded state shown");
  ASSERT_TRUE(cluster_->StartOss(1).ok());
  ASSERT_TRUE(cluster_->WaitForOsts().ok());
  Note("OSS 1 restarted");
  std::vector<std::string> files;
  for (int i = 0; i < kFiles; ++i) files.push_back(P("ckpt/step." + std::to_string(i)));
  std::vector<std::string> verify = {"mirror", "verify"};
  verify.insert(verify.end(), files.begin(), files.end());
  const bool synced = WaitFor([&] { return Lfs(verify).exit_code == 0; });
  r = Lfs(verify);
  EXPECT_TRUE(synced) << "the mirrors were not resynced:\n" << r.out << r.err << "\n"
                      << ResyncParam();
  Note("mirrors verified identical");
  EXPECT_NE(ResyncParam().find("stale_files: 0"), std::string::npos) << ResyncParam();
  r = Lfs({"find", P("ckpt"), "--mirror-state", "ro", "--mirror-count", "2"});
  for (int i = 0; i < kFiles; ++i) {
    EXPECT_NE(r.out.find("step." + std::to_string(i) + "\n"), std::string::npos) << r.out;
  }
  // The mirror on the OSS that was down holds every byte now.
  for (int i = kKillAt; i < kFiles; ++i) {
    auto e = Resolve(*client_, "/ckpt/step." + std::to_string(i));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    uint32_t on_killed = 0;
    for (const proto::LayoutComponent& c : e->layout().components()) {
      for (const proto::StripeObject& o : c.layout().objects()) {
        if (o.ost_idx() == 1) on_killed = MirrorIdOf(c.id());
      }
    }
    ASSERT_NE(on_killed, 0u) << "checkpoint " << i << " has no mirror on the killed OSS";
    r = Lfs({"mirror", "read", "--mirror-id", std::to_string(on_killed), files[i]});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<uint8_t> want = Checkpoint(i);
    EXPECT_EQ(r.out, std::string(want.begin(), want.end()))
        << "mirror " << on_killed << " of checkpoint " << i;
  }
}

TEST_F(MirrorFaultTest, AFlippedBitIsReadAroundRepairedAndScrubbedClean) {
  ASSERT_EQ(mkdir(P("m").c_str(), 0755), 0);
  CommandResult r = Lfs({"mirror", "create", "-N2", "-S", "1M", P("m")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<uint8_t> data = Pattern((1 << 20) + 12'345, 7);
  ASSERT_EQ(WriteFile(P("m/victim"), data, 1 << 20, /*fsync_it=*/true), 0);
  // Damage mirror 1's object, which serves the file's first MiB.
  auto e = Resolve(*client_, "/m/victim");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(MirrorCount(e->layout()), 2u);
  const proto::StripeObject obj = MirrorView(e->layout(), 1).components(0).layout().objects(0);
  ASSERT_EQ(FlipBit(ObjectFilePath(cluster_->ost_dir(obj.ost_idx()), obj.object_id()),
                    ObjectFileOffset(200'000)),
            0);
  ASSERT_TRUE(cluster_->Remount().ok());  // nothing from the client's cache

  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("m/victim"), &got), 0) << "a damaged mirror made the read fail";
  EXPECT_EQ(FirstDiff(got, data), -1);
  // (this filesystem's mount only: other tests' mounts may be on this host too)
  r = Lctl({"get_param", "-n", "llite.mirrorfs-*.mirror_stats"});
  EXPECT_NE(r.out.find("damaged_reads: "), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("damaged_reads: 0\n"), std::string::npos) << r.out;
  // The damage was reported, and the MDS rewrites it from mirror 2: scrub ends up clean.
  const bool clean = WaitFor([&] { return Lctl({"scrub"}).exit_code == 0; });
  r = Lctl({"scrub"});
  EXPECT_TRUE(clean) << "scrub still finds damage:\n" << r.out << r.err << ResyncParam();
  EXPECT_EQ(ResyncParam().find("damage_reports: 0"), std::string::npos) << ResyncParam();
  r = Lfs({"mirror", "read", "--mirror-id", "1", P("m/victim")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(data.begin(), data.end())) << "mirror 1 was not repaired";
  r = Lfs({"mirror", "verify", P("m/victim")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  // Damage no read meets (mirror 2's copy) is found by the scrub, and --repair hands it to
  // the same resync.
  const proto::StripeObject obj2 = MirrorView(e->layout(), 2).components(0).layout().objects(0);
  ASSERT_EQ(
      FlipBit(ObjectFilePath(cluster_->ost_dir(obj2.ost_idx()), obj2.object_id()),
              ObjectFileOffset(300'000)),
      0);
  r = Lctl({"scrub", "--repair"});
  EXPECT_EQ(r.exit_code, EIO) << r.out << r.err;
  EXPECT_NE(r.out.find("mirror 2 handed to the resync"), std::string::npos) << r.out << r.err;
  const bool repaired = WaitFor([&] { return Lctl({"scrub"}).exit_code == 0; });
  EXPECT_TRUE(repaired) << Lctl({"scrub"}).out << ResyncParam();
  r = Lfs({"mirror", "read", "--mirror-id", "2", P("m/victim")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(data.begin(), data.end())) << "mirror 2 was not repaired";
}

TEST_F(MirrorFaultTest, BothOssesDownFailLikeAnUnmirroredFileAndLoseNothing) {
  Note("cluster up");
  ASSERT_TRUE(cluster_->Mount(1, {"timeout=3"}).ok());
  ASSERT_EQ(mkdir(P("m").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("u").c_str(), 0755), 0);
  CommandResult r = Lfs({"mirror", "create", "-N2", P("m")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<uint8_t> a = Pattern(200'000, 1), u = Pattern(200'000, 2);
  ASSERT_EQ(WriteFile(P("m/a", 1), a, 1 << 20, true), 0);
  ASSERT_EQ(WriteFile(P("u/a", 1), u, 1 << 20, true), 0);
  ASSERT_TRUE(cluster_->KillOss(0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->KillOss(1, SIGKILL).ok());
  Note("both OSSes killed");
  // With every copy unreachable, the mirrored file fails as the unmirrored one does.
  Shared* sh = shared_;
  const std::string m_b = P("m/b", 1), u_b = P("u/b", 1);
  InChild([&] {
    sh->errs[0] = WriteFile(m_b, Pattern(100'000, 3), 1 << 20, true);
    sh->errs[1] = WriteFile(u_b, Pattern(100'000, 4), 1 << 20, true);
    return 0;
  });
  Note("writes failed");
  EXPECT_EQ(sh->errs[1].load(), EIO) << strerror(sh->errs[1].load());
  EXPECT_EQ(sh->errs[0].load(), sh->errs[1].load())
      << "mirrored: " << strerror(sh->errs[0].load())
      << ", unmirrored: " << strerror(sh->errs[1].load());
  ASSERT_TRUE(cluster_->StartOss(0).ok());
  ASSERT_TRUE(cluster_->StartOss(1).ok());
  ASSERT_TRUE(cluster_->WaitForOsts().ok());
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("m/a", 1), &got), 0);
  EXPECT_EQ(FirstDiff(got, a), -1);
  ASSERT_EQ(ReadFile(P("u/a", 1), &got), 0);
  EXPECT_EQ(FirstDiff(got, u), -1);
  // (a write slowed past mirror_timeout by a loaded machine may have marked a mirror; the
  // resync then makes it identical again)
  EXPECT_TRUE(WaitFor([&] { return Lfs({"mirror", "verify", P("m/a")}).exit_code == 0; }))
      << Lfs({"mirror", "verify", P("m/a")}).out;
  Note("files read back");
}

TEST_F(MirrorFaultTest, ExtendUnderAReaderThenSplitIntoTwoFiles) {
  ASSERT_EQ(mkdir(P("p").c_str(), 0755), 0);
  const std::vector<uint8_t> data = Pattern(3 << 20, 21);
  ASSERT_EQ(WriteFile(P("p/f"), data, 1 << 20, /*fsync_it=*/true), 0);
  // A reader in a child process reads the file over and over while it gains a mirror.
  Shared* sh = shared_;
  const std::string f = P("p/f");
  const pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    while (sh->killed.load() == 0) {
      std::vector<uint8_t> got;
      const int e = ReadFile(f, &got);
      if (e != 0 || FirstDiff(got, data) != -1) {
        sh->err = e != 0 ? e : EILSEQ;
        _exit(1);
      }
      sh->acked.fetch_add(1);
    }
    _exit(0);
  }
  while (sh->acked.load() < 2) usleep(10'000);
  CommandResult r = Lfs({"mirror", "extend", "-N", f});
  const int reads_at_extend = sh->acked.load();
  while (sh->acked.load() < reads_at_extend + 2 && sh->err.load() == 0) usleep(10'000);
  sh->killed = 1;
  int status = 0;
  waitpid(reader, &status, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the reader failed during the extend: " << strerror(sh->err.load());
  r = Lfs({"getstripe", f});
  EXPECT_NE(r.out.find("lcm_mirror_count:  2"), std::string::npos) << r.out;
  r = Lfs({"mirror", "verify", "-v", f});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("identical on mirrors 1 2"), std::string::npos) << r.out;

  // Split the original copy off into a file of its own: both read the same bytes.
  r = Lfs({"mirror", "split", "--mirror-id", "1", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(f, &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);
  ASSERT_EQ(ReadFile(P("p/f.mirror~1"), &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);
  r = Lfs({"getstripe", f});
  EXPECT_NE(r.out.find("lcm_mirror_count:  1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lcme_mirror_id:      2"), std::string::npos) << r.out;
  // The last mirror cannot be split away.
  r = Lfs({"mirror", "split", "--mirror-id", "2", "-d", f});
  EXPECT_NE(r.exit_code, 0);
}

TEST(MirrorPartitionTest, APartitionLongerThanTheMirrorTimeoutCostsTheWriterNothing) {
  if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
  std::string why;
  if (!NetnsUsable(&why)) GTEST_SKIP() << why;
  ClusterOptions o;
  o.tag = "mirrorpart";
  o.fsname = "mpartfs";
  o.num_oss = 2;
  o.osts_per_oss = 1;
  o.netns_oss = {1};
  o.fuse_options = {"mirror_timeout=1"};
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<client::Client> client;
  Status st = StartWithClient(o, &cluster, &client);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const std::string dir = cluster->mount_point() + "/p";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  CommandResult r = RunCommand({BinPath("lfs"), "mirror", "create", "-N2", "-S", "1M", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  Shared* sh = new (mem) Shared();
  const std::vector<uint8_t> data = Pattern(3 << 20, 11);
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    const int fd = open((dir + "/a").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) _exit(errno);
    int e = PWriteAll(fd, data.data(), 1 << 20, 0);
    if (e == 0 && fsync(fd) != 0) e = errno;
    sh->acked = 1;
    while (e == 0 && sh->killed.load() == 0) usleep(10'000);
    if (e == 0) e = PWriteAll(fd, data.data() + (1 << 20), data.size() - (1 << 20), 1 << 20);
    if (e == 0 && fsync(fd) != 0) e = errno;
    if (close(fd) != 0 && e == 0) e = errno;
    _exit(e);
  }
  while (sh->acked.load() == 0) usleep(10'000);
  ASSERT_TRUE(cluster->CutOss(1).ok());
  sh->killed = 1;  // cut: the writer carries on
  int status = 0;
  waitpid(writer, &status, 0);
  const int werr = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::vector<uint8_t> got;
  const int rerr = ReadFile(dir + "/a", &got);
  ASSERT_TRUE(cluster->HealOss(1).ok());
  ASSERT_EQ(werr, 0) << "the writer failed across the partition: " << strerror(werr);
  ASSERT_EQ(rerr, 0);
  EXPECT_EQ(FirstDiff(got, data), -1);
  // After the heal the MDS resyncs the mirror that missed the writes.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(kWaitS);
  auto verify = [&] {
    return RunCommand({BinPath("lfs"), "mirror", "verify", dir + "/a"});
  };
  while (verify().exit_code != 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  r = verify();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  munmap(mem, sizeof(Shared));
}

}  // namespace
}  // namespace stria::testing
