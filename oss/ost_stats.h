// The statistics of one OST, in Lustre's obdfilter names: `obdfilter.FS-OSTxxxx.stats`
// (lprocfs counters: read_bytes/write_bytes with samples [bytes] min max sum sumsq, and the
// latency in usecs of every request kind) and `obdfilter.FS-OSTxxxx.job_stats` (the same
// counters per JOBID the client sent). Counted by OssService's handlers for every request
// that reached a served OST; bytes only when the transfer succeeded.
// Thread-safety: as StatsSet and JobStats (relaxed atomics; no lock on the hot path but the
// job table's reader lock).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/stats.h"

namespace stria::oss {

// Indexes into kOstCounters, in Lustre's ofd_stats_counter_init order.
enum OstCounter : size_t {
  kOstReadBytes,
  kOstWriteBytes,
  kOstRead,
  kOstWrite,
  kOstGetattr,
  kOstSetattr,
  kOstPunch,
  kOstSync,
  kOstDestroy,
  kOstCreate,
  kOstStatfs,
  kOstGetInfo,
  kOstSetInfo,
};

inline constexpr CounterSpec kOstCounters[] = {
    {"read_bytes", StatUnit::kBytes, true}, {"write_bytes", StatUnit::kBytes, true},
    {"read", StatUnit::kUsecs},             {"write", StatUnit::kUsecs},
    {"getattr", StatUnit::kUsecs},          {"setattr", StatUnit::kUsecs},
    {"punch", StatUnit::kUsecs},            {"sync", StatUnit::kUsecs},
    {"destroy", StatUnit::kUsecs},          {"create", StatUnit::kUsecs},
    {"statfs", StatUnit::kUsecs},           {"get_info", StatUnit::kUsecs},
    {"set_info", StatUnit::kUsecs},
};

struct OstStats {
  StatsSet stats{kOstCounters};
  JobStats jobs{kOstCounters};

  // One request of kind `op` that began at `start`, from job `jobid`; `bytes` >= 0 also
  // counts a transfer in counter `bytes_op`.
  void Count(std::string_view jobid, OstCounter op, std::chrono::steady_clock::time_point start,
             OstCounter bytes_op = kOstReadBytes, int64_t bytes = -1) {
    const uint64_t us = UsecsSince(start);
    stats.Add(op, us);
    jobs.Add(jobid, op, us);
    if (bytes >= 0) {
      stats.Add(bytes_op, static_cast<uint64_t>(bytes));
      jobs.Add(jobid, bytes_op, static_cast<uint64_t>(bytes));
    }
  }
};

}  // namespace stria::oss
