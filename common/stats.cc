#include "common/stats.h"

#include <fmt/format.h>

#include <bit>
#include <mutex>

namespace stria {

std::string_view StatUnitName(StatUnit u) {
  switch (u) {
    case StatUnit::kBytes:
      return "bytes";
    case StatUnit::kUsecs:
      return "usecs";
    case StatUnit::kReqs:
      break;
  }
  return "reqs";
}

void Histogram::TallyLog2(uint64_t v) {
  Tally(v <= 1 ? 0 : static_cast<uint64_t>(63 - std::countl_zero(v)));
}

uint64_t Histogram::Sum() const {
  uint64_t s = 0;
  for (int i = 0; i < kHistBuckets; ++i) s += bucket(i);
  return s;
}

void Histogram::Clear() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
}

void StatCounter::Add(uint64_t v) {
  samples_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  sumsq_.fetch_add(v * v, std::memory_order_relaxed);
  uint64_t cur = min_.load(std::memory_order_relaxed);
  while (v < cur && !min_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
  cur = max_.load(std::memory_order_relaxed);
  while (v > cur && !max_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
  hist_.TallyLog2(v);
}

StatCounter::Snapshot StatCounter::Read() const {
  Snapshot s;
  s.samples = samples_.load(std::memory_order_relaxed);
  if (s.samples == 0) return s;
  s.sum = sum_.load(std::memory_order_relaxed);
  s.sumsq = sumsq_.load(std::memory_order_relaxed);
  s.min = min_.load(std::memory_order_relaxed);
  s.max = max_.load(std::memory_order_relaxed);
  if (s.min == UINT64_MAX) s.min = 0;
  return s;
}

void StatCounter::Clear() {
  samples_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  sumsq_.store(0, std::memory_order_relaxed);
  min_.store(UINT64_MAX, std::memory_order_relaxed);
  max_.store(0, std::memory_order_relaxed);
  hist_.Clear();
}

std::chrono::nanoseconds WallNow() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now().time_since_epoch());
}

std::string SecsNsecs(std::chrono::nanoseconds t) {
  const int64_t ns = t.count() < 0 ? 0 : t.count();
  return fmt::format("{}.{:09d}", ns / 1'000'000'000, ns % 1'000'000'000);
}

namespace {

// lprocfs_stats_header: snapshot_time, start_time, elapsed_time.
void Header(std::string* out, std::chrono::nanoseconds now, std::chrono::nanoseconds start,
            int width, std::string_view colon, std::string_view prefix) {
  for (auto [field, t] : {std::pair<const char*, std::chrono::nanoseconds>{"snapshot_time", now},
                          {"start_time", start},
                          {"elapsed_time", now - start}}) {
    *out += fmt::format("{}{:<{}} {} secs.nsecs\n", prefix, std::string(field) + std::string(colon),
                        width, SecsNsecs(t));
  }
}

// A job_stats histogram: "1: 2, 4K: 3, 1M: 5" (Lustre's BIT(j), K, M, G suffixes).
std::string HistText(const Histogram& h) {
  std::string out;
  for (int j = 0; j < kHistBuckets; ++j) {
    const uint64_t v = h.bucket(j);
    if (v == 0) continue;
    if (!out.empty()) out += ", ";
    if (j < 10) {
      out += fmt::format("{}: {}", 1ull << j, v);
    } else if (j < 20) {
      out += fmt::format("{}K: {}", 1ull << (j - 10), v);
    } else if (j < 30) {
      out += fmt::format("{}M: {}", 1ull << (j - 20), v);
    } else {
      out += fmt::format("{}G: {}", 1ull << (j - 30), v);
    }
  }
  return out;
}

}  // namespace

StatsSet::StatsSet(std::span<const CounterSpec> specs)
    : specs_(specs),
      counters_(std::make_unique<StatCounter[]>(specs.size())),
      start_ns_(WallNow().count()) {}

void StatsSet::Clear() {
  for (size_t i = 0; i < specs_.size(); ++i) counters_[i].Clear();
  start_ns_.store(WallNow().count(), std::memory_order_relaxed);
}

std::string StatsSet::Format() const {
  std::string out;
  Header(&out, WallNow(), start_time(), 35, "", "");
  for (size_t i = 0; i < specs_.size(); ++i) {
    const StatCounter::Snapshot s = counters_[i].Read();
    if (s.samples == 0) continue;
    out += fmt::format("{:<35} {} samples [{}] {} {} {} {}\n", specs_[i].name, s.samples,
                       StatUnitName(specs_[i].unit), s.min, s.max, s.sum, s.sumsq);
  }
  return out;
}

void JobStats::Add(std::string_view jobid, size_t idx, uint64_t v) {
  if (jobid.empty()) return;
  const int64_t now = WallNow().count();
  {
    std::shared_lock lock(mu_);
    auto it = jobs_.find(jobid);
    if (it != jobs_.end()) {
      it->second->stats.Add(idx, v);
      it->second->latest_ns.store(now, std::memory_order_relaxed);
      return;
    }
  }
  std::unique_lock lock(mu_);
  auto it = jobs_.find(jobid);
  if (it == jobs_.end()) {
    if (jobs_.size() >= max_jobs_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    it = jobs_.emplace(std::string(jobid), std::make_unique<Job>(specs_)).first;
  }
  it->second->stats.Add(idx, v);
  it->second->latest_ns.store(now, std::memory_order_relaxed);
}

void JobStats::Clear() {
  std::unique_lock lock(mu_);
  jobs_.clear();
  dropped_.store(0, std::memory_order_relaxed);
}

std::string JobStats::Format() const {
  std::string out = "job_stats:\n";
  std::shared_lock lock(mu_);
  for (const auto& [id, job] : jobs_) {
    // Lustre quotes and escapes a JOBID with characters outside [A-Za-z0-9.@-_:/].
    std::string escaped;
    bool quote = !id.empty() && id[0] == '@';
    for (unsigned char c : id) {
      if (std::isalnum(c) || std::string_view(".@-_:/").find(static_cast<char>(c)) !=
                                 std::string_view::npos) {
        escaped += static_cast<char>(c);
        if (c == ':') quote = true;
      } else {
        escaped += fmt::format("\\x{:02X}", c);
        quote = true;
      }
    }
    const char* q = quote ? "\"" : "";
    out += fmt::format("- {:<16} {}{}{}\n", "job_id:", q, escaped, q);
    Header(&out, std::chrono::nanoseconds(job->latest_ns.load(std::memory_order_relaxed)),
           job->stats.start_time(), 16, ":", "  ");
    for (size_t i = 0; i < job->stats.size(); ++i) {
      const CounterSpec& spec = job->stats.spec(i);
      const StatCounter::Snapshot s = job->stats.counter(i).Read();
      const std::string name = spec.name;
      out += fmt::format("  {}:{} {{ samples: {:>11}, unit: {:>5}", name,
                         std::string(name.size() < 15 ? 15 - name.size() : 0, ' '), s.samples,
                         StatUnitName(spec.unit));
      if (spec.unit != StatUnit::kReqs) {
        out += fmt::format(", min: {:>8}, max: {:>8}, sum: {:>16}, sumsq: {:>18}", s.min, s.max,
                           s.sum, s.sumsq);
      }
      if (spec.show_hist) out += ", hist: { " + HistText(job->stats.counter(i).hist()) + " }";
      out += " }\n";
    }
  }
  return out;
}

}  // namespace stria
