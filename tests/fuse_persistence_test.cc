// Durability through a real mount: striped files written through stria-fuse must come back
// byte for byte after an unmount/remount, after every daemon is stopped with SIGTERM and
// started again, and after kill -9 of the MDS and each OSS once the data was fsync'ed. The
// directory "dom" keeps each file's first 64 KiB on the MDS (Data-on-MDT) and the rest on
// two OSTs, so the same checks hold for bytes kept by the MDS.
// The tests run in order on one cluster and each verifies every file written so far.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

constexpr uint64_t kS = 64 << 10;

class FusePersistenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveFuse()) return;
    ClusterOptions o;
    o.tag = "persist";
    o.fsname = "persistfs";
    cluster_ = new Cluster(o);
    Status st = cluster_->Start();
    if (!st.ok()) {
      start_error_ = st.ToString();
      return;
    }
    auto cl = ConnectClient(*cluster_);
    if (!cl.ok()) {
      start_error_ = cl.status().ToString();
      return;
    }
    std::unique_ptr<client::Client> c = std::move(cl).value();
    for (int count : {1, 2, 4}) {
      std::string d = "/s" + std::to_string(count);
      if (mkdir((cluster_->mount_point() + d).c_str(), 0755) != 0) {
        start_error_ = "mkdir " + d + ": " + strerror(errno);
        return;
      }
      st = SetDirLayout(*c, d, Raid0(count, kS));
      if (!st.ok()) {
        start_error_ = st.ToString();
        return;
      }
    }
    // -E 64K -L mdt -E -1 -c 2
    if (mkdir((cluster_->mount_point() + "/dom").c_str(), 0755) != 0) {
      start_error_ = std::string("mkdir /dom: ") + strerror(errno);
      return;
    }
    proto::Layout dom;
    proto::LayoutComponent* first = dom.add_components();
    first->set_end(kS);
    first->mutable_layout()->set_pattern(proto::PATTERN_MDT);
    proto::LayoutComponent* rest = dom.add_components();
    rest->set_start(kS);
    rest->set_end(UINT64_MAX);
    *rest->mutable_layout() = Raid0(2, kS);
    st = SetDirLayout(*c, "/dom", dom);
    if (!st.ok()) {
      start_error_ = st.ToString();
      return;
    }
    ready_ = true;
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
    files_.clear();
  }

  void SetUp() override {
    if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
    ASSERT_TRUE(ready_) << "cluster did not start: " << start_error_;
    // A failed test may have left the daemons or the mount down: bring them back.
    Status st;
    if (!cluster_->MdsRunning()) st = cluster_->StartMds();
    for (int i = 0; st.ok() && i < cluster_->options().num_oss; ++i) {
      if (!cluster_->OssRunning(i)) st = cluster_->StartOss(i);
    }
    if (st.ok() && !cluster_->Mounted()) st = cluster_->Mount();
    ASSERT_TRUE(st.ok()) << "cannot restore the cluster: " << st.ToString();
  }

  std::string P(const std::string& rel) const { return cluster_->mount_point() + "/" + rel; }

  // Writes a set of striped files of odd sizes named with `tag`, remembering their bytes.
  void WriteFiles(const std::string& tag, bool do_fsync) {
    int i = 0;
    for (std::string dir : {"s1", "s2", "s4", "dom"}) {
      for (uint64_t size : {uint64_t{1}, kS - 1, kS + 1, 9 * kS - 1, uint64_t{3 << 20} + 5}) {
        std::string rel = dir + "/" + tag + "-" + std::to_string(i);
        auto data = Pattern(size, std::hash<std::string>()(rel));
        ASSERT_EQ(WriteFile(P(rel), data, 128 << 10, do_fsync), 0) << rel;
        files_[rel] = std::move(data);
        ++i;
      }
    }
  }

  // Every file written so far has its exact size and bytes.
  void VerifyAll(const std::string& when) {
    SCOPED_TRACE(when);
    ASSERT_FALSE(files_.empty());
    for (const auto& [rel, want] : files_) {
      struct stat st {};
      ASSERT_EQ(stat(P(rel).c_str(), &st), 0) << rel << ": " << strerror(errno);
      EXPECT_EQ(static_cast<size_t>(st.st_size), want.size()) << rel;
      std::vector<uint8_t> got;
      ASSERT_EQ(ReadFile(P(rel), &got), 0) << rel;
      EXPECT_EQ(FirstDiff(got, want), -1) << rel << " differs";
    }
  }

  static Cluster* cluster_;
  static bool ready_;
  static std::string start_error_;
  static std::map<std::string, std::vector<uint8_t>> files_;
};

Cluster* FusePersistenceTest::cluster_ = nullptr;
bool FusePersistenceTest::ready_ = false;
std::string FusePersistenceTest::start_error_;
std::map<std::string, std::vector<uint8_t>> FusePersistenceTest::files_;

TEST_F(FusePersistenceTest, SurvivesRemount) {
  WriteFiles("remount", /*do_fsync=*/false);
  VerifyAll("before remount");
  Status st = cluster_->Remount();
  ASSERT_TRUE(st.ok()) << st.ToString();
  VerifyAll("after remount");
}

TEST_F(FusePersistenceTest, SurvivesSigtermOfEveryDaemon) {
  WriteFiles("term", /*do_fsync=*/false);
  Status st = cluster_->Unmount();
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = cluster_->RestartAll(SIGTERM);
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = cluster_->Mount();
  ASSERT_TRUE(st.ok()) << st.ToString();
  VerifyAll("after SIGTERM restart of all daemons");
}

TEST_F(FusePersistenceTest, SurvivesKill9AfterFsync) {
  WriteFiles("kill9", /*do_fsync=*/true);
  // One more file that is fsync'ed but still open when the daemons die: fsync alone must
  // have made its data and size durable on the OSTs and the MDS.
  std::string open_rel = "s4/open-at-crash";
  auto data = Pattern(5 * kS + 11, 77);
  int fd = open(P(open_rel).c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(PWriteAll(fd, data.data(), data.size(), 0), 0);
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  files_[open_rel] = data;
  // The same for a file whose bytes all live on the MDS.
  std::string dom_rel = "dom/open-at-crash";
  auto dom_data = Pattern(kS - 7, 78);
  int dom_fd = open(P(dom_rel).c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(dom_fd, 0) << strerror(errno);
  ASSERT_EQ(PWriteAll(dom_fd, dom_data.data(), dom_data.size(), 0), 0);
  ASSERT_EQ(fsync(dom_fd), 0) << strerror(errno);
  files_[dom_rel] = dom_data;

  // kill -9 with the mount still up, as a power cut of the servers would.
  Status st = cluster_->KillMds(SIGKILL);
  EXPECT_TRUE(st.ok()) << st.ToString();
  for (int i = 0; i < cluster_->options().num_oss; ++i) {
    st = cluster_->KillOss(i, SIGKILL);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  st = cluster_->StartMds();
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int i = 0; i < cluster_->options().num_oss; ++i) {
    st = cluster_->StartOss(i);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  st = cluster_->WaitForOsts();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(close(fd), 0) << "close after the servers came back: " << strerror(errno);
  EXPECT_EQ(close(dom_fd), 0) << "close after the servers came back: " << strerror(errno);

  st = cluster_->Remount();
  ASSERT_TRUE(st.ok()) << st.ToString();
  VerifyAll("after kill -9 of every daemon and a remount");
}

TEST_F(FusePersistenceTest, MountKeepsWorkingAcrossOssRestart) {
  // The client reconnects by itself: a daemon restart under a live mount is invisible
  // to the application apart from the wait.
  Status st = cluster_->KillOss(1, SIGKILL);
  ASSERT_TRUE(st.ok()) << st.ToString();
  // lfs check sees the dead OSS's OSTs inactive and the others active.
  CommandResult check = RunCommand({BinPath("lfs"), "check", "osts", cluster_->mount_point()});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("-osc inactive.\n"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("-osc active.\n"), std::string::npos) << check.out;
  st = cluster_->StartOss(1);
  ASSERT_TRUE(st.ok()) << st.ToString();
  WriteFiles("live", /*do_fsync=*/true);
  st = cluster_->Remount();
  ASSERT_TRUE(st.ok()) << st.ToString();
  VerifyAll("after an OSS restart under a live mount");
}

TEST_F(FusePersistenceTest, MountKeepsWorkingAcrossMdsKill9) {
  Status st = cluster_->KillMds(SIGKILL);
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = cluster_->StartMds();
  ASSERT_TRUE(st.ok()) << st.ToString();
  // Namespace operations through the same mount, without a remount.
  ASSERT_EQ(mkdir(P("s2/after-mds-crash").c_str(), 0755), 0) << strerror(errno);
  auto data = Pattern(3 * kS + 1, 99);
  ASSERT_EQ(WriteFile(P("s2/after-mds-crash/f"), data), 0);
  files_["s2/after-mds-crash/f"] = data;
  VerifyAll("after an MDS kill -9 under a live mount");
  st = cluster_->Remount();
  ASSERT_TRUE(st.ok()) << st.ToString();
  VerifyAll("after an MDS kill -9 and a remount");
}

}  // namespace
}  // namespace stria::testing
