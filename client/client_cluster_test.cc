// libstria against a real cluster: a stria-mds and a stria-oss with four OSTs started from
// this build's bin/ on free ports in a temp dir. Creates files through MdsCall and drives
// striped writes and reads of awkward sizes, sparse files, truncate and glimpse.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "common/layout.h"

#ifndef STRIA_BIN_DIR
#error "STRIA_BIN_DIR must name the directory holding stria-mds and stria-oss"
#endif

namespace stria::client {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr uint64_t kS = 64 << 10;  // stripe size used by the tests
constexpr int kOsts = 4;

pid_t Spawn(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    std::perror("execv");
    _exit(127);
  }
  return pid;
}

// Waits (generously: this is not a timing assertion) for a daemon's port file.
int WaitPort(const fs::path& file, pid_t pid) {
  for (int i = 0; i < 600; ++i) {
    std::ifstream in(file);
    int port = 0;
    if (in >> port && port > 0) return port;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) return -1;  // it died
    std::this_thread::sleep_for(50ms);
  }
  return -1;
}

std::string ReadLog(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/stria-client-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const std::string bin = STRIA_BIN_DIR;
    mds_pid_ = Spawn({bin + "/stria-mds", "--fsname", "ctest", "--data", (dir_ / "mds").string(),
                      "--listen", "127.0.0.1@tcp:0", "--port-file",
                      (dir_ / "mds.port").string()},
                     dir_ / "mds.log");
    const int mds_port = WaitPort(dir_ / "mds.port", mds_pid_);
    ASSERT_GT(mds_port, 0) << "stria-mds did not start:\n" << ReadLog(dir_ / "mds.log");
    mgs_nid_ = "127.0.0.1@tcp:" + std::to_string(mds_port);
    oss_pid_ = Spawn(OssArgs(), dir_ / "oss.log");
    ASSERT_GT(WaitPort(dir_ / "oss.port", oss_pid_), 0)
        << "stria-oss did not start:\n" << ReadLog(dir_ / "oss.log");

    ClientConfig cfg;
    cfg.mgs_nids = {*lnet::Nid::Parse(mgs_nid_)};
    cfg.fsname = "ctest";
    cfg.rpc.retry_deadline_ms = 30'000;
    auto c = Client::Connect(cfg);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = c->release();
    // The OSS registers its OSTs right after binding; wait until the MGS lists them all.
    int osts = 0;
    for (int i = 0; i < 600 && osts < kOsts; ++i) {
      auto conf = client_->GetConfig(true);
      ASSERT_TRUE(conf.ok()) << conf.status().ToString();
      osts = conf->osts_size();
      if (osts < kOsts) std::this_thread::sleep_for(50ms);
    }
    ASSERT_EQ(osts, kOsts) << ReadLog(dir_ / "oss.log");
  }

  static void TearDownTestSuite() {
    delete client_;
    client_ = nullptr;
    for (pid_t pid : {oss_pid_, mds_pid_}) {
      if (pid > 0) {
        kill(pid, SIGTERM);
        int status;
        waitpid(pid, &status, 0);
      }
    }
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Creates /name with the given striping; returns its entry (attr + layout).
  proto::EntryReply Create(const std::string& name, int stripe_count) {
    proto::CreateRequest req;
    *req.mutable_cred() = ProcessCredentials();
    req.set_parent(1);
    req.set_name(name);
    req.set_mode(S_IFREG | 0644);
    req.set_exclusive(true);
    proto::Layout* l = req.mutable_layout();
    l->set_pattern(proto::PATTERN_RAID0);
    l->set_stripe_size(kS);
    l->set_stripe_count(stripe_count);
    l->set_stripe_offset(-1);
    proto::EntryReply rep;
    Status st = client_->MdsCall(proto::OP_MDS_CREATE, req, &rep);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return rep;
  }

  static std::vector<uint8_t> Pattern(size_t n, uint64_t seed) {
    std::vector<uint8_t> v(n);
    std::mt19937_64 rng(seed);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    return v;
  }

  static std::vector<std::string> OssArgs() {
    std::vector<std::string> oss = {std::string(STRIA_BIN_DIR) + "/stria-oss", "--mgs",
                                    mgs_nid_, "--listen", "127.0.0.1@tcp:0", "--port-file",
                                    (dir_ / "oss.port").string()};
    for (int i = 0; i < kOsts; ++i) {
      oss.push_back("--ost");
      oss.push_back(std::to_string(i) + ":" + (dir_ / ("ost" + std::to_string(i))).string());
    }
    return oss;
  }

  static inline fs::path dir_;
  static inline pid_t mds_pid_ = -1, oss_pid_ = -1;
  static inline std::string mgs_nid_;
  static inline Client* client_ = nullptr;
};

TEST_F(ClusterTest, ConfigListsOsts) {
  auto conf = client_->GetConfig();
  ASSERT_TRUE(conf.ok());
  EXPECT_EQ(conf->fsname(), "ctest");
  for (uint32_t i = 0; i < kOsts; ++i) EXPECT_TRUE(client_->Ost(i).ok()) << i;
  EXPECT_EQ(client_->Ost(99).status().code(), Code::kNoOst);
  auto df = client_->OstStatfs();
  ASSERT_TRUE(df.ok());
  EXPECT_EQ(df->size(), static_cast<size_t>(kOsts));
}

TEST_F(ClusterTest, WrongFsnameRefused) {
  ClientConfig cfg;
  cfg.mgs_nids = {*lnet::Nid::Parse(mgs_nid_)};
  cfg.fsname = "other";
  cfg.rpc.retry_deadline_ms = 5'000;
  auto c = Client::Connect(cfg);
  EXPECT_FALSE(c.ok());
}

TEST_F(ClusterTest, StripedRoundTripAwkwardSizes) {
  for (int count : {1, 2, kOsts}) {
    const std::string name = "awkward" + std::to_string(count);
    proto::EntryReply e = Create(name, count);
    const proto::Layout& layout = e.layout();
    ASSERT_EQ(layout.objects_size(), count);
    std::vector<uint8_t> model;
    uint64_t off = 0;
    for (uint64_t len : {uint64_t{0}, uint64_t{1}, kS - 1, kS, kS + 1, 3 * kS + 7,
                         uint64_t(count) * kS * 3 + 11, uint64_t{1} << 20}) {
      const auto data = Pattern(len, len * 31 + count);
      Status st = client_->Write(layout, off, data);
      ASSERT_TRUE(st.ok()) << st.ToString();
      model.resize(std::max<uint64_t>(model.size(), off + len));
      std::copy(data.begin(), data.end(), model.begin() + off);
      off += len;
    }
    auto size = client_->GlimpseSize(layout);
    ASSERT_TRUE(size.ok()) << size.status().ToString();
    EXPECT_EQ(*size, model.size());
    std::vector<uint8_t> back(model.size() + 4096, 0xAB);
    auto n = client_->Read(layout, model.size(), 0, back);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, model.size());
    back.resize(model.size());
    EXPECT_TRUE(back == model) << name;
    // Unaligned reads inside.
    for (uint64_t o : {uint64_t{1}, kS - 1, 2 * kS + 5}) {
      std::vector<uint8_t> part(kS + 3);
      auto m = client_->Read(layout, model.size(), o, part);
      ASSERT_TRUE(m.ok());
      ASSERT_EQ(*m, part.size());
      EXPECT_TRUE(std::equal(part.begin(), part.end(), model.begin() + o)) << name << " @" << o;
    }
  }
}

TEST_F(ClusterTest, SparseFileReadsZeros) {
  proto::EntryReply e = Create("sparse", kOsts);
  const uint64_t far = 10 * kS * kOsts + 123;
  const auto tail = Pattern(100, 9);
  ASSERT_TRUE(client_->Write(e.layout(), far, tail).ok());
  auto size = client_->GlimpseSize(e.layout());
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, far + 100);
  std::vector<uint8_t> back(far + 100, 0xCD);
  auto n = client_->Read(e.layout(), far + 100, 0, back);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, far + 100);
  for (uint64_t i = 0; i < far; ++i) ASSERT_EQ(back[i], 0) << "byte " << i;
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), back.begin() + far));
  // Reads clamp to the file size given.
  EXPECT_EQ(*client_->Read(e.layout(), far + 100, far + 100, back), 0u);
  EXPECT_EQ(*client_->Read(e.layout(), far + 100, far + 50, back), 50u);
}

TEST_F(ClusterTest, TruncateGlimpseAndCloseReportsSize) {
  proto::EntryReply e = Create("trunc", 3);
  const auto data = Pattern(7 * kS + 9, 4);
  ASSERT_TRUE(client_->Write(e.layout(), 0, data, /*sync=*/true).ok());
  ASSERT_TRUE(client_->SyncObjects(e.layout()).ok());
  ASSERT_TRUE(client_->TruncateObjects(e.layout(), 2 * kS + 1).ok());
  EXPECT_EQ(*client_->GlimpseSize(e.layout()), 2 * kS + 1);
  std::vector<uint8_t> back(2 * kS + 1);
  ASSERT_EQ(*client_->Read(e.layout(), back.size(), 0, back), back.size());
  EXPECT_TRUE(std::equal(back.begin(), back.end(), data.begin()));
  // Extend by truncate: the new bytes are zeros.
  ASSERT_TRUE(client_->TruncateObjects(e.layout(), 6 * kS).ok());
  EXPECT_EQ(*client_->GlimpseSize(e.layout()), 6 * kS);
  std::vector<uint8_t> big(6 * kS, 0xEE);
  ASSERT_EQ(*client_->Read(e.layout(), big.size(), 0, big), big.size());
  EXPECT_TRUE(std::all_of(big.begin() + 2 * kS + 1, big.end(), [](uint8_t b) { return b == 0; }));
  ASSERT_TRUE(client_->TruncateObjects(e.layout(), 0).ok());
  EXPECT_EQ(*client_->GlimpseSize(e.layout()), 0u);

  // A writer's CLOSE reports its size; the MDS keeps the max.
  proto::CloseRequest cr;
  *cr.mutable_cred() = ProcessCredentials();
  cr.set_ino(e.attr().ino());
  cr.set_wrote(true);
  cr.set_size(12345);
  proto::AttrReply ar;
  ASSERT_TRUE(client_->MdsCall(proto::OP_MDS_CLOSE, cr, &ar).ok());
  EXPECT_EQ(ar.attr().size(), 12345u);
  auto resolved = client_->ResolvePath(ProcessCredentials(), "/trunc");
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->attr().ino(), e.attr().ino());
  EXPECT_EQ(resolved->attr().size(), 12345u);
  EXPECT_EQ(client_->ResolvePath(ProcessCredentials(), "/nope").status().code(), Code::kNoEnt);
  EXPECT_EQ(client_->ResolvePath(ProcessCredentials(), "/")->attr().ino(), 1u);
}

TEST_F(ClusterTest, ParallelWritersDisjointRanges) {
  // The N-to-1 pattern: several threads write disjoint 1 MiB blocks of one striped file.
  proto::EntryReply e = Create("n_to_1", kOsts);
  constexpr int kThreads = 4, kBlocks = 4;
  constexpr uint64_t kBlock = 1 << 20;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBlocks; ++b) {
        const uint64_t idx = static_cast<uint64_t>(b) * kThreads + t;
        const auto data = Pattern(kBlock, idx);
        if (!client_->Write(e.layout(), idx * kBlock, data).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  const uint64_t total = kThreads * kBlocks * kBlock;
  std::vector<uint8_t> back(total);
  ASSERT_EQ(*client_->Read(e.layout(), total, 0, back), total);
  for (uint64_t idx = 0; idx < kThreads * kBlocks; ++idx) {
    const auto want = Pattern(kBlock, idx);
    ASSERT_TRUE(std::equal(want.begin(), want.end(), back.begin() + idx * kBlock)) << idx;
  }
}

TEST_F(ClusterTest, OssRestartOnNewPortIsFollowed) {
  // Runs last: restarts the OSS. Its new port reaches the MGS when it re-registers; the
  // client's next OST RPC fails, refreshes the OST table and is resent to the new port.
  proto::EntryReply e = Create("moved", kOsts);
  const auto data = Pattern(5 * kS + 3, 77);
  ASSERT_TRUE(client_->Write(e.layout(), 0, data, /*sync=*/true).ok());
  const std::string old_port = ReadLog(dir_ / "oss.port");
  kill(oss_pid_, SIGTERM);
  int status;
  waitpid(oss_pid_, &status, 0);
  fs::remove(dir_ / "oss.port");
  oss_pid_ = Spawn(OssArgs(), dir_ / "oss2.log");
  ASSERT_GT(WaitPort(dir_ / "oss.port", oss_pid_), 0) << ReadLog(dir_ / "oss2.log");
  EXPECT_NE(ReadLog(dir_ / "oss.port"), old_port);
  std::vector<uint8_t> back(data.size());
  auto n = client_->Read(e.layout(), data.size(), 0, back);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, data.size());
  EXPECT_TRUE(back == data);
  ASSERT_TRUE(client_->Write(e.layout(), data.size(), data).ok());
  EXPECT_EQ(*client_->GlimpseSize(e.layout()), 2 * data.size());
}

}  // namespace
}  // namespace stria::client
