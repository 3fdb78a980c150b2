// Statistics in Lustre's names and output shapes (lprocfs_stats, obd_histogram, job_stats).
//
// StatCounter is one lprocfs counter: samples, min, max, sum, sum of squares and a log2
// histogram of the values. StatsSet is a fixed table of counters (obdfilter.*.stats,
// mdt.*.md_stats, llite.*.stats) with the time it was last cleared; Format() prints it as
// `lctl get_param` shows lprocfs stats. JobStats keeps one StatsSet per JOBID and prints
// Lustre's job_stats YAML. Histogram is Lustre's obd_histogram (osc.*.rpc_stats).
//
// Cost on the hot path: Add() is a handful of relaxed atomic read-modify-writes on the
// counter's own fields; no lock. JobStats::Add takes a shared (reader) lock on its job table
// to find the job's set; the exclusive lock is taken only to add a job or to clear.
// A snapshot taken while others add is not atomic across fields (as in Lustre): samples and
// sum may differ by the adds in flight; every field is exact once the adds have returned.
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>

namespace stria {

enum class StatUnit { kReqs, kBytes, kUsecs };
std::string_view StatUnitName(StatUnit u);

// One counter of a StatsSet: its Lustre name, unit, and whether job_stats prints its
// histogram (Lustre's LPROCFS_CNTR_HISTOGRAM, set on OFD read_bytes/write_bytes).
struct CounterSpec {
  const char* name;
  StatUnit unit;
  bool show_hist = false;
};

inline constexpr int kHistBuckets = 32;  // Lustre's OBD_HIST_MAX

// Lustre's obd_histogram: kHistBuckets buckets of relaxed atomics.
class Histogram {
 public:
  // Adds one to bucket `i` (clamped to the last bucket).
  void Tally(uint64_t i) {
    buckets_[i < kHistBuckets ? i : kHistBuckets - 1].fetch_add(1, std::memory_order_relaxed);
  }
  // Adds one to bucket floor(log2(v)) (0 for v <= 1), Lustre's lprocfs_oh_tally_log2.
  void TallyLog2(uint64_t v);
  uint64_t bucket(int i) const { return buckets_[i].load(std::memory_order_relaxed); }
  uint64_t Sum() const;
  void Clear();

 private:
  std::atomic<uint64_t> buckets_[kHistBuckets] = {};
};

class StatCounter {
 public:
  struct Snapshot {
    uint64_t samples = 0, min = 0, max = 0, sum = 0, sumsq = 0;  // min/max 0 without samples
  };
  void Add(uint64_t v);
  Snapshot Read() const;
  const Histogram& hist() const { return hist_; }
  void Clear();

 private:
  std::atomic<uint64_t> samples_{0}, sum_{0}, sumsq_{0}, min_{UINT64_MAX}, max_{0};
  Histogram hist_;
};

// Seconds since the epoch as Lustre prints them: "1700000000.123456789".
std::string SecsNsecs(std::chrono::nanoseconds t);
std::chrono::nanoseconds WallNow();

class StatsSet {
 public:
  explicit StatsSet(std::span<const CounterSpec> specs);
  StatsSet(const StatsSet&) = delete;
  StatsSet& operator=(const StatsSet&) = delete;

  void Add(size_t idx, uint64_t v) { counters_[idx].Add(v); }
  size_t size() const { return specs_.size(); }
  const CounterSpec& spec(size_t idx) const { return specs_[idx]; }
  const StatCounter& counter(size_t idx) const { return counters_[idx]; }
  std::chrono::nanoseconds start_time() const {
    return std::chrono::nanoseconds(start_ns_.load(std::memory_order_relaxed));
  }
  // Zeroes every counter and restarts the clock (lctl set_param X.stats=clear).
  void Clear();

  // As lprocfs_stats_seq_show: the snapshot/start/elapsed header, then one line per counter
  // with samples: "NAME  N samples [UNIT] MIN MAX SUM SUMSQ" (names padded to 35).
  std::string Format() const;

 private:
  std::span<const CounterSpec> specs_;
  std::unique_ptr<StatCounter[]> counters_;
  std::atomic<int64_t> start_ns_;
};

// Per-JOBID statistics (obdfilter.*.job_stats, mdt.*.job_stats). At most max_jobs jobs are
// kept; the adds of further jobs are counted in dropped() until a clear.
class JobStats {
 public:
  explicit JobStats(std::span<const CounterSpec> specs, size_t max_jobs = 4096)
      : specs_(specs), max_jobs_(max_jobs) {}

  // Adds v to counter idx of job `jobid` (nothing for an empty jobid).
  void Add(std::string_view jobid, size_t idx, uint64_t v);
  void Clear();
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  // Lustre's job_stats YAML: "job_stats:" then "- job_id: ID" and one flow mapping per counter.
  std::string Format() const;

  // Calls fn(jobid, set) for each job, under the reader lock.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    std::shared_lock lock(mu_);
    for (const auto& [id, job] : jobs_) fn(id, job->stats);
  }

 private:
  struct Job {
    explicit Job(std::span<const CounterSpec> specs) : stats(specs) {}
    StatsSet stats;
    std::atomic<int64_t> latest_ns{0};
  };
  std::span<const CounterSpec> specs_;
  const size_t max_jobs_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::unique_ptr<Job>, std::less<>> jobs_;  // GUARDED_BY(mu_)
  std::atomic<uint64_t> dropped_{0};
};

// Microseconds since `start` on the steady clock, for latency counters.
inline uint64_t UsecsSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
}

}  // namespace stria
