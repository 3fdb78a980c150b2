// What a libstria Client measures and tunes per OST connection, in Lustre's osc names:
//
// OscStats: `osc.FS-OSTxxxx-osc-CLIENT.rpc_stats`: the pages-per-RPC and RPCs-in-flight
// histograms of bulk reads and writes (obd_histogram; a page is 4 KiB), and the RPCs in
// flight now. Counted by the Client around every OP_OST_READ/OP_OST_WRITE it sends.
//
// InflightGate: osc.*.max_rpcs_in_flight: at most that many bulk RPCs (reads and writes
// together, as Lustre) to one OST at a time; further ones wait on the calling thread.
//
// ClientTunables: the client's tunables (common/tunables.h) as atomics the I/O path reads:
// applied from the MGS's params whenever the Client fetches its configuration, or set
// locally (lctl set_param without -P on a mount). A value applies to every OST: the most
// specific stored name wins (the longest, as mds/params.h), whatever its instance glob.
//
// Thread-safety: all thread-safe; the hot path is relaxed atomics (the gate's mutex is
// taken only when an RPC must wait or wake a waiter).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/stats.h"
#include "common/status.h"
#include "common/tunables.h"

namespace stria::client {

inline constexpr uint64_t kOscPageSize = 4096;

struct OscStats {
  Histogram read_pages, write_pages;  // log2 buckets of pages per RPC
  Histogram read_rif, write_rif;      // RPCs in flight (this one included) when each is sent
  std::atomic<int> reads_in_flight{0}, writes_in_flight{0};
  std::atomic<int64_t> start_ns{WallNow().count()};

  void Clear();
  // Lustre's osc rpc_stats text (lproc_osc.c osc_rpc_stats_seq_show).
  std::string Format() const;
};

class InflightGate {
 public:
  // Waits until fewer than `limit` RPCs are in flight, then counts this one in.
  void Enter(int limit);
  void Leave();

 private:
  std::atomic<int> n_{0};
  std::atomic<int> waiters_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

class ClientTunables {
 public:
  ClientTunables();

  int64_t Get(std::string_view tunable) const;  // by TunableSpec::name; 0 if unknown
  std::string jobid_var() const;

  // Sets one tunable by its parameter name (osc.*.checksums, jobid_var): EINVAL for a bad
  // value, kNoEnt for a name that is not a client tunable.
  Status Set(std::string_view name, std::string_view value);
  // Applies the MGS's params: each tunable takes its most specific stored value, or its
  // default when none is stored.
  void Apply(const std::map<std::string, std::string>& params);

  // Called (outside any lock) with the new value when max_read_ahead_mb changes.
  void set_on_read_ahead(std::function<void(int64_t)> fn);

 private:
  void Store(size_t i, int64_t v);

  std::atomic<int64_t> values_[8];  // by index in ClientTunables()
  mutable std::mutex mu_;
  std::string jobid_var_;                    // GUARDED_BY(mu_)
  std::function<void(int64_t)> on_read_ahead_;  // GUARDED_BY(mu_)
};

}  // namespace stria::client
