// The C API against a real cluster and mount: runs capi_test_prog (C, linked only with
// libstria.so) case by case, and checks through the mount what it wrote natively, and the
// other way round.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

Cluster* g_cluster = nullptr;

class CapiEnv : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!HaveFuse()) return;
    ClusterOptions o;
    o.tag = "capi";
    cluster_ = std::make_unique<Cluster>(o);
    Status st = cluster_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    g_cluster = cluster_.get();
  }
  void TearDown() override {
    g_cluster = nullptr;
    cluster_.reset();
  }

 private:
  std::unique_ptr<Cluster> cluster_;
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new CapiEnv);

// The byte at offset i of every test file (as capi_test_prog.c's pattern()).
uint8_t PatternByte(uint64_t i) { return static_cast<uint8_t>((i * 131u) ^ (i >> 12)); }

class CapiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse";
    ASSERT_NE(g_cluster, nullptr) << "cluster did not start";
    mnt_ = g_cluster->mount_point(0);
  }
  CommandResult Prog(const std::string& which, const std::string& arg = "") {
    std::vector<std::string> argv = {CAPI_TEST_PROG, g_cluster->device(), which};
    if (!arg.empty()) argv.push_back(arg);
    return RunCommand(argv);
  }
  std::string mnt_;
};

#define EXPECT_PROG_OK(r) \
  EXPECT_EQ((r).exit_code, 0) << "stdout:\n" << (r).out << "stderr:\n" << (r).err

TEST_F(CapiTest, NamespaceDataLayoutsAndBadInput) { EXPECT_PROG_OK(Prog("basic")); }

TEST_F(CapiTest, QueueKeepsItsDepthInFlightAndCompletesEveryRequest) {
  EXPECT_PROG_OK(Prog("queue"));
}

TEST_F(CapiTest, WrittenNativelyReadThroughTheMount) {
  const uint64_t size = 700 * 1024 + 3;
  EXPECT_PROG_OK(Prog("write", "/native.bin " + std::to_string(size) +
                                   " -E 128K -c 1 -S 64K -E -1 -c 2 -S 64K"));
  std::ifstream in(mnt_ + "/native.bin", std::ios::binary);
  ASSERT_TRUE(in.good());
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(got.size(), size);
  for (uint64_t i = 0; i < size; ++i) {
    ASSERT_EQ(static_cast<uint8_t>(got[i]), PatternByte(i)) << "offset " << i;
  }
  // The layout asked for natively is the one the mount's lfs shows.
  CommandResult gs = RunCommand({BinPath("lfs"), "getstripe", mnt_ + "/native.bin"});
  ASSERT_EQ(gs.exit_code, 0) << gs.err;
  EXPECT_NE(gs.out.find("lcm_entry_count:   2"), std::string::npos) << gs.out;
  EXPECT_NE(gs.out.find("lmm_stripe_count:  2"), std::string::npos) << gs.out;
}

TEST_F(CapiTest, WrittenThroughTheMountReadNatively) {
  const uint64_t size = 3 * 1024 * 1024 + 999;
  std::vector<uint8_t> data(size);
  for (uint64_t i = 0; i < size; ++i) data[i] = PatternByte(i);
  ASSERT_EQ(WriteFile(mnt_ + "/mounted.bin", data), 0);
  EXPECT_PROG_OK(Prog("read", "/mounted.bin " + std::to_string(size)));
}

TEST_F(CapiTest, DataOnMdtFileRoundTrips) {
  const uint64_t size = 10'000;
  EXPECT_PROG_OK(Prog("write", "/dom.bin " + std::to_string(size) + " -E 64K -L mdt -E -1 -c 1"));
  EXPECT_PROG_OK(Prog("read", "/dom.bin " + std::to_string(size)));
  CommandResult gs = RunCommand({BinPath("lfs"), "getstripe", "-I1", mnt_ + "/dom.bin"});
  EXPECT_NE(gs.out.find("lmm_pattern:       mdt"), std::string::npos) << gs.out;
  struct stat st;
  ASSERT_EQ(stat((mnt_ + "/dom.bin").c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), size);
}

TEST_F(CapiTest, TheMdsChecksTheCallersCredentials) {
  const std::string priv = mnt_ + "/private";
  ASSERT_EQ(WriteFile(priv, std::vector<uint8_t>(100, 1)), 0);
  ASSERT_EQ(chmod(priv.c_str(), 0600), 0);
  ASSERT_EQ(chmod(mnt_.c_str(), 0755), 0);
  EXPECT_PROG_OK(Prog("as-nobody", "/private"));
}

// Last: stops every daemon under a connected program, then restarts them.
TEST_F(CapiTest, ServerGoneIsAnErrnoNotACrash) {
  const std::string marker = g_cluster->dir() + "/gone-marker";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = g_cluster->dir() + "/gone.out";
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    const std::string dev = g_cluster->device();
    execl(CAPI_TEST_PROG, CAPI_TEST_PROG, dev.c_str(), "server-gone", marker.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {
    ready = access((marker + ".ready").c_str(), F_OK) == 0;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(ready);
  for (int i = 0; i < g_cluster->options().num_oss; ++i) {
    EXPECT_TRUE(g_cluster->KillOss(i, SIGKILL).ok());
  }
  EXPECT_TRUE(g_cluster->KillMds(SIGKILL).ok());
  { std::ofstream go(marker + ".go"); }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::ifstream log(g_cluster->dir() + "/gone.out");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(WIFEXITED(status)) << "the program died of a signal:\n" << text;
  EXPECT_EQ(WEXITSTATUS(status), 0) << text;
  EXPECT_TRUE(g_cluster->RestartAll(SIGKILL).ok());
}

}  // namespace
}  // namespace stria::testing
