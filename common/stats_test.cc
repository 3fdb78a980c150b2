#include "common/stats.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "common/metrics_server.h"
#include "common/prom_text.h"

namespace stria {
namespace {

constexpr CounterSpec kSpecs[] = {
    {"read_bytes", StatUnit::kBytes, true},
    {"write_bytes", StatUnit::kBytes, true},
    {"punch", StatUnit::kUsecs},
    {"statfs", StatUnit::kReqs},
};

TEST(StatsTest, CounterKeepsSamplesMinMaxSumSumsq) {
  StatsSet s(kSpecs);
  s.Add(1, 4096);
  s.Add(1, 1 << 20);
  s.Add(1, 100);
  const StatCounter::Snapshot c = s.counter(1).Read();
  EXPECT_EQ(c.samples, 3u);
  EXPECT_EQ(c.min, 100u);
  EXPECT_EQ(c.max, 1u << 20);
  EXPECT_EQ(c.sum, 4096u + (1u << 20) + 100u);
  EXPECT_EQ(c.sumsq, 4096ull * 4096 + (1ull << 40) + 100 * 100);
  EXPECT_EQ(s.counter(1).hist().bucket(12), 1u);  // 4096
  EXPECT_EQ(s.counter(1).hist().bucket(20), 1u);  // 1 MiB
  EXPECT_EQ(s.counter(1).hist().bucket(6), 1u);   // 100
  EXPECT_EQ(s.counter(0).Read().samples, 0u);
}

TEST(StatsTest, ConcurrentAddsAreExact) {
  StatsSet s(kSpecs);
  std::vector<std::thread> t;
  for (int i = 0; i < 4; ++i) {
    t.emplace_back([&] {
      for (int k = 1; k <= 10000; ++k) s.Add(0, static_cast<uint64_t>(k));
    });
  }
  for (auto& th : t) th.join();
  const StatCounter::Snapshot c = s.counter(0).Read();
  EXPECT_EQ(c.samples, 40000u);
  EXPECT_EQ(c.sum, 4u * 10000 * 10001 / 2);
  EXPECT_EQ(c.min, 1u);
  EXPECT_EQ(c.max, 10000u);
}

TEST(StatsTest, FormatIsLprocfsShape) {
  StatsSet s(kSpecs);
  s.Add(0, 10);
  s.Add(0, 30);
  s.Add(3, 1);
  const std::string text = s.Format();
  EXPECT_NE(text.find("snapshot_time                       "), std::string::npos) << text;
  EXPECT_NE(text.find(" secs.nsecs\nstart_time"), std::string::npos) << text;
  EXPECT_NE(text.find("elapsed_time"), std::string::npos) << text;
  EXPECT_NE(text.find("read_bytes                          2 samples [bytes] 10 30 40 1000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("statfs                              1 samples [reqs] 1 1 1 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("write_bytes"), std::string::npos) << "no samples, no line";
  s.Clear();
  EXPECT_EQ(s.Format().find("read_bytes"), std::string::npos);
}

TEST(StatsTest, JobStatsYaml) {
  JobStats js(kSpecs);
  js.Add("", 0, 5);  // no jobid: not kept
  js.Add("1234", 0, 4096);
  js.Add("1234", 2, 7);
  js.Add("cp.0", 3, 1);
  const std::string y = js.Format();
  EXPECT_EQ(y.rfind("job_stats:\n- job_id:          1234\n  snapshot_time:   ", 0), 0u) << y;
  EXPECT_NE(y.find("  read_bytes:      { samples:           1, unit: bytes, min:     4096, "
                   "max:     4096, sum:             4096, sumsq:           16777216, "
                   "hist: { 4K: 1 } }\n"),
            std::string::npos)
      << y;
  EXPECT_NE(y.find("  statfs:          { samples:           1, unit:  reqs }\n"),
            std::string::npos)
      << y;
  EXPECT_NE(y.find("- job_id:          cp.0\n"), std::string::npos) << y;
  js.Add("a b", 3, 1);
  EXPECT_NE(js.Format().find("- job_id:          \"a\\x20b\"\n"), std::string::npos);
  js.Clear();
  EXPECT_EQ(js.Format(), "job_stats:\n");
}

TEST(StatsTest, JobStatsBounded) {
  JobStats js(kSpecs, 2);
  js.Add("a", 3, 1);
  js.Add("b", 3, 1);
  js.Add("c", 3, 1);
  EXPECT_EQ(js.dropped(), 1u);
  EXPECT_EQ(js.Format().find("job_id:          c"), std::string::npos);
}

TEST(StatsTest, PromTextGroupsFamilies) {
  StatsSet a(kSpecs), b(kSpecs);
  a.Add(0, 100);
  a.Add(2, 3);
  b.Add(0, 50);
  PromText p;
  p.AddStats("stria_ost", a, {{"ost", "OST0000"}});
  p.AddStats("stria_ost", b, {{"ost", "OST0001"}});
  const std::string t = p.str();
  EXPECT_NE(t.find("# TYPE stria_ost_bytes_total counter\n"
                   "stria_ost_bytes_total{ost=\"OST0000\",op=\"read\"} 100\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("stria_ost_bytes_total{ost=\"OST0001\",op=\"read\"} 50\n"), std::string::npos);
  EXPECT_NE(t.find("stria_ost_latency_usecs_bucket{ost=\"OST0000\",op=\"punch\",le=\"3\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("stria_ost_latency_usecs_count{ost=\"OST0000\",op=\"punch\"} 1\n"),
            std::string::npos);
  // One TYPE line per family.
  EXPECT_EQ(t.find("# TYPE stria_ost_bytes_total"), t.rfind("# TYPE stria_ost_bytes_total"));
}

// A real HTTP GET against the civetweb server.
std::string HttpGet(uint16_t port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: x\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) return "";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST(MetricsServerTest, ServesMetricsOnly) {
  MetricsServer m;
  ASSERT_TRUE(m.Start("127.0.0.1:0", [] { return std::string("stria_up 1\n"); }).ok());
  ASSERT_NE(m.port(), 0);
  const std::string ok = HttpGet(m.port(), "/metrics");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200", 0), 0u) << ok;
  EXPECT_NE(ok.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(ok.find("\r\n\r\nstria_up 1\n"), std::string::npos) << ok;
  EXPECT_NE(HttpGet(m.port(), "/other").find(" 404 "), std::string::npos);
  EXPECT_EQ(m.Start("127.0.0.1:99999", nullptr).code(), Code::kInval);
}

}  // namespace
}  // namespace stria
