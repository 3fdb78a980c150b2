// Statistics, tunables and /metrics against real daemons and a real mount: known work is
// done (N writes of K bytes through libstria, mkdirs through the mount) and the counters
// lctl reads live from the daemons must match it exactly; set_param of a tunable changes
// what the client does (max_rpcs_in_flight=1 in rpc_stats); an unknown parameter is
// refused; stats=clear zeroes; the MDS and OSS /metrics pages parse with
// python3-prometheus-client and carry the same numbers.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/jobid.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

constexpr int kN = 8;
constexpr uint64_t kK = 64 << 10;

std::string PortFile(const char* what) {
  return "/tmp/stria-stats-test-" + std::to_string(getpid()) + "." + what;
}

class StatsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ClusterOptions o;
    o.tag = "stats";
    o.fsname = "stfs";
    o.num_oss = 1;
    o.osts_per_oss = 2;
    // A short lease: the mount keepalives (and so notices param changes) every 500 ms.
    o.mds_args = {"--metrics-addr", "127.0.0.1:0", "--metrics-port-file", PortFile("mds"),
                  "--client-lease-ms", "2000"};
    o.oss_args = {"--metrics-addr", "127.0.0.1:0", "--metrics-port-file", PortFile("oss")};
    cluster_ = new Cluster(o);
    Status st = cluster_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto c = ConnectClient(*cluster_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = c->release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete cluster_;
    unlink(PortFile("mds").c_str());
    unlink(PortFile("oss").c_str());
  }

  static CommandResult Lctl(std::vector<std::string> args) {
    args.insert(args.begin(), {BinPath("lctl"), "--mgs", cluster_->mgs_nid()});
    return RunCommand(args);
  }

  // Creates /name striped over `count` OSTs (64 KiB stripes).
  static proto::EntryReply Create(const std::string& name, int count) {
    proto::CreateRequest req;
    *req.mutable_cred() = RootCred();
    req.set_parent(1);
    req.set_name(name);
    req.set_mode(S_IFREG | 0644);
    req.mutable_layout()->set_stripe_count(count);
    req.mutable_layout()->set_stripe_size(kK);
    proto::EntryReply rep;
    Status st = client_->MdsCall(proto::OP_MDS_CREATE, req, &rep);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return rep;
  }

  // Sums "NAME N samples [bytes] MIN MAX SUM SUMSQ" lines of `counter` in lctl's output.
  static std::pair<uint64_t, uint64_t> SamplesAndSum(const std::string& text,
                                                      const std::string& counter) {
    std::regex line("(^|\n)" + counter + " +([0-9]+) samples \\[[a-z]+\\] [0-9]+ [0-9]+ ([0-9]+)");
    uint64_t samples = 0, sum = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line);
         it != std::sregex_iterator(); ++it) {
      samples += std::stoull((*it)[2]);
      sum += std::stoull((*it)[3]);
    }
    return {samples, sum};
  }

  static Cluster* cluster_;
  static client::Client* client_;
};
Cluster* StatsTest::cluster_ = nullptr;
client::Client* StatsTest::client_ = nullptr;

TEST_F(StatsTest, ObdfilterStatsAndJobStatsCountWritesExactly) {
  ASSERT_EQ(Lctl({"set_param", "obdfilter.*.stats=clear", "obdfilter.*.job_stats=clear"})
                .exit_code, 0);
  proto::EntryReply f = Create("written", 2);
  std::vector<uint8_t> data(kK, 0x5a);
  {
    client::ScopedJobId job("job-stats-1");
    for (int i = 0; i < kN; ++i) {
      ASSERT_TRUE(client_->Write(f.layout(), i * kK, data).ok());
    }
  }
  CommandResult r = Lctl({"get_param", "obdfilter.*.stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("obdfilter.stfs-OST0000.stats=\nsnapshot_time"), std::string::npos)
      << r.out;
  auto [samples, sum] = SamplesAndSum(r.out, "write_bytes");
  EXPECT_EQ(samples, static_cast<uint64_t>(kN)) << r.out;
  EXPECT_EQ(sum, kN * kK) << r.out;
  EXPECT_EQ(SamplesAndSum(r.out, "write").first, static_cast<uint64_t>(kN)) << r.out;

  r = Lctl({"get_param", "-n", "obdfilter.*.job_stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("- job_id:          job-stats-1\n"), std::string::npos) << r.out;
  std::regex jw("write_bytes: +\\{ samples: +([0-9]+), unit: bytes, min: +[0-9]+, max: +[0-9]+, "
                "sum: +([0-9]+)");
  uint64_t js = 0, jsum = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), jw); it != std::sregex_iterator();
       ++it) {
    js += std::stoull((*it)[1]);
    jsum += std::stoull((*it)[2]);
  }
  EXPECT_EQ(js, static_cast<uint64_t>(kN));
  EXPECT_EQ(jsum, kN * kK);

  // Names only, and clear.
  r = Lctl({"get_param", "-N", "obdfilter.*"});
  EXPECT_NE(r.out.find("obdfilter.stfs-OST0001.job_stats\n"), std::string::npos) << r.out;
  ASSERT_EQ(Lctl({"set_param", "obdfilter.*.stats=clear"}).exit_code, 0);
  r = Lctl({"get_param", "obdfilter.*.stats"});
  EXPECT_EQ(SamplesAndSum(r.out, "write_bytes").first, 0u) << r.out;
}

// The sum over every OST of `key: N` lines in lctl's object_pool output.
uint64_t PoolSum(const std::string& text, const std::string& key) {
  std::regex line("(^|\n)" + key + ": ([0-9]+)");
  uint64_t sum = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it) {
    sum += std::stoull((*it)[2]);
  }
  return sum;
}

TEST_F(StatsTest, ObjectPoolCountsNewObjectsAndKeepsDestroyedFiles) {
  ASSERT_EQ(Lctl({"set_param", "obdfilter.*.object_pool_stats=clear"}).exit_code, 0);
  const std::string dir = cluster_->mount_point();  // no mkdir: MdStats counts the mount's
  constexpr int kFiles = 6;
  const std::string data(4096, 'p');
  for (int i = 0; i < kFiles; ++i) {
    std::ofstream(dir + "/pool-f" + std::to_string(i)) << data;
  }
  CommandResult r = Lctl({"get_param", "obdfilter.*.object_pool_stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("obdfilter.stfs-OST0001.object_pool_stats=\nlimit: 4096\n"),
            std::string::npos)
      << r.out;
  // Every new object took a pooled file or made its own: one file's object each.
  EXPECT_EQ(PoolSum(r.out, "new_from_pool") + PoolSum(r.out, "new_created"),
            static_cast<uint64_t>(kFiles))
      << r.out;

  // Unlinked, their objects' files come back to the pools (the MDS destroys them in the
  // background).
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(unlink((dir + "/pool-f" + std::to_string(i)).c_str()), 0);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    r = Lctl({"get_param", "-n", "obdfilter.*.object_pool_stats"});
    if (PoolSum(r.out, "destroyed_kept") == kFiles) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(PoolSum(r.out, "destroyed_kept"), static_cast<uint64_t>(kFiles)) << r.out;
  EXPECT_GE(PoolSum(r.out, "ready"), static_cast<uint64_t>(kFiles)) << r.out;

  // The next objects come from the pools, and clear zeroes the counters only.
  ASSERT_EQ(Lctl({"set_param", "obdfilter.*.object_pool_stats=clear"}).exit_code, 0);
  for (int i = 0; i < kFiles; ++i) {
    std::ofstream(dir + "/pool-g" + std::to_string(i)) << data;
  }
  r = Lctl({"get_param", "-n", "obdfilter.*.object_pool_stats"});
  EXPECT_EQ(PoolSum(r.out, "new_from_pool"), static_cast<uint64_t>(kFiles)) << r.out;
  EXPECT_EQ(PoolSum(r.out, "new_created"), 0u) << r.out;
  ASSERT_EQ(Lctl({"set_param", "obdfilter.*.object_pool_stats=clear"}).exit_code, 0);
  r = Lctl({"get_param", "-n", "obdfilter.*.object_pool_stats"});
  EXPECT_EQ(PoolSum(r.out, "new_from_pool"), 0u) << r.out;
  EXPECT_EQ(PoolSum(r.out, "limit"), 2u * 4096) << r.out;
}

TEST_F(StatsTest, MdStatsCountMkdirsThroughTheMount) {
  ASSERT_EQ(Lctl({"set_param", "mdt.*.md_stats=clear"}).exit_code, 0);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(mkdir((cluster_->mount_point() + "/d" + std::to_string(i)).c_str(), 0755), 0);
  }
  CommandResult r = Lctl({"get_param", "mdt.*.md_stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(SamplesAndSum(r.out, "mkdir").first, 3u) << r.out;
  EXPECT_EQ(SamplesAndSum(r.out, "rmdir").first, 0u) << r.out;
  // The mount's own statistics, through lctl on this host.
  r = Lctl({"get_param", "llite.stfs-*.stats"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(SamplesAndSum(r.out, "mkdir").first, 3u) << r.out;
}

TEST_F(StatsTest, UnknownOrOutOfRangeParameterIsRefused) {
  CommandResult r = Lctl({"set_param", "-P", "osc.*.no_such_tunable=1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("unknown parameter"), std::string::npos) << r.err;
  r = Lctl({"set_param", "-P", "osc.*.max_rpcs_in_flight=0"});
  EXPECT_NE(r.exit_code, 0);
  r = Lctl({"get_param", "osc.*.no_such_tunable"});
  EXPECT_NE(r.exit_code, 0) << r.out;
}

TEST_F(StatsTest, MaxRpcsInFlightShowsInRpcStats) {
  proto::EntryReply f = Create("parallel", 1);
  std::vector<uint8_t> data(1 << 20, 0x11);
  // 8 threads writing 1 MiB pieces of one single-stripe file: RPCs to one OST at once.
  auto write_all = [&] {
    std::vector<std::thread> threads;
    std::atomic<int> failed{0};
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 4; ++i) {
          if (!client_->Write(f.layout(), (t * 4 + i) * data.size(), data).ok()) failed++;
        }
      });
    }
    for (auto& th : threads) th.join();
    return failed.load() == 0;
  };
  auto max_bucket = [](client::OscStats* s) {
    int m = 0;
    for (int i = 1; i < kHistBuckets; ++i) {
      if (s->write_rif.bucket(i) != 0) m = i;
    }
    return m;
  };
  auto worst = [&] {
    int m = 0;
    for (auto& [idx, s] : client_->OscStatsByOst()) m = std::max(m, max_bucket(s));
    return m;
  };
  auto clear = [&] {
    for (auto& [idx, s] : client_->OscStatsByOst()) s->Clear();
  };
  // Default (8): 32 MiB in 64 KiB stripes over 2 OSTs goes out as many RPCs at once.
  clear();
  ASSERT_TRUE(write_all());
  EXPECT_GE(worst(), 2);
  ASSERT_EQ(Lctl({"set_param", "-P", "osc.*.max_rpcs_in_flight=1"}).exit_code, 0);
  ASSERT_TRUE(client_->GetConfig(/*refresh=*/true).ok());  // applies the MGS's params
  EXPECT_EQ(client_->tunables().Get("max_rpcs_in_flight"), 1);
  clear();
  ASSERT_TRUE(write_all());
  EXPECT_EQ(worst(), 1);
  // The mount learns it from its keepalive (config generation) and shows it.
  bool seen = false;
  for (int i = 0; i < 50 && !seen; ++i) {
    CommandResult r = Lctl({"get_param", "osc.stfs-*.max_rpcs_in_flight"});
    seen = std::regex_search(r.out, std::regex("osc\\.stfs-OST0000-osc-[0-9a-f]+\\.max_rpcs_in_flight=1\n"));
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(seen);
  ASSERT_EQ(Lctl({"set_param", "-P", "osc.*.max_rpcs_in_flight="}).exit_code, 0);
  ASSERT_TRUE(client_->GetConfig(/*refresh=*/true).ok());
  EXPECT_EQ(client_->tunables().Get("max_rpcs_in_flight"), 8);
}

TEST_F(StatsTest, MetricsParseAndAgreeWithLctl) {
  ASSERT_EQ(Lctl({"set_param", "obdfilter.*.stats=clear", "mdt.*.md_stats=clear"}).exit_code, 0);
  proto::EntryReply f = Create("scraped", 1);
  std::vector<uint8_t> data(kK, 1);
  for (int i = 0; i < kN; ++i) ASSERT_TRUE(client_->Write(f.layout(), i * kK, data).ok());
  auto port = [](const char* what) {
    std::ifstream in(PortFile(what));
    int p = 0;
    in >> p;
    return p;
  };
  const std::string script = std::string(STRIA_SOURCE_DIR) + "/tests/metrics_scrape.py";
  CommandResult oss = RunCommand(
      {"/usr/bin/python3", script, "http://127.0.0.1:" + std::to_string(port("oss")) + "/metrics"});
  ASSERT_EQ(oss.exit_code, 0) << oss.err;
  std::regex wb("stria_ost_bytes_total\\{fs=\"stfs\",op=\"write\",ost=\"OST000[01]\"\\} ([0-9]+)");
  uint64_t bytes = 0;
  for (auto it = std::sregex_iterator(oss.out.begin(), oss.out.end(), wb);
       it != std::sregex_iterator(); ++it) {
    bytes += std::stoull((*it)[1]);
  }
  EXPECT_EQ(bytes, kN * kK) << oss.out;
  EXPECT_NE(oss.out.find("stria_ost_space_bytes{fs=\"stfs\",kind=\"total\",ost=\"OST0000\"}"),
            std::string::npos);
  EXPECT_NE(oss.out.find("stria_rpc_active_requests{service=\"ost\"}"), std::string::npos);
  CommandResult mds = RunCommand(
      {"/usr/bin/python3", script, "http://127.0.0.1:" + std::to_string(port("mds")) + "/metrics"});
  ASSERT_EQ(mds.exit_code, 0) << mds.err;
  EXPECT_NE(mds.out.find("stria_mdt_ops_total{fs=\"stfs\",mdt=\"MDT0000\",op=\"mknod\"} 1"),
            std::string::npos)
      << mds.out;
}

// The Grafana dashboard shipped in docs/ queries only metrics the daemons really export:
// after OST writes and MDT creates under a job id, every stria_* name in its queries is on
// the MDS's or the OSS's /metrics page (tests/metrics_scrape.py --dashboard).
TEST_F(StatsTest, GrafanaDashboardQueriesExportedMetrics) {
  proto::EntryReply f = Create("dashboard", 1);
  {
    client::ScopedJobId job("job-dashboard");
    std::vector<uint8_t> data(kK, 2);
    ASSERT_TRUE(client_->Write(f.layout(), 0, data).ok());
  }
  proto::CreateRequest req;  // a metadata operation under a job id: mdt job_stats
  *req.mutable_cred() = RootCred();
  req.mutable_cred()->set_jobid("job-dashboard");
  req.set_parent(1);
  req.set_name("dashboard-dir");
  req.set_mode(S_IFDIR | 0755);
  proto::EntryReply rep;
  ASSERT_TRUE(client_->MdsCall(proto::OP_MDS_CREATE, req, &rep).ok());
  auto url = [](const char* what) {
    std::ifstream in(PortFile(what));
    int p = 0;
    in >> p;
    return "http://127.0.0.1:" + std::to_string(p) + "/metrics";
  };
  const std::string src = STRIA_SOURCE_DIR;
  CommandResult r = RunCommand({"/usr/bin/python3", src + "/tests/metrics_scrape.py",
                                "--dashboard", src + "/docs/grafana-stria.json", url("mds"),
                                url("oss")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" metrics queried"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace stria::testing
