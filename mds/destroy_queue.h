// DestroyQueue: frees the OST objects of files whose last link went away.
//
// Unlink and rename put the objects of a removed regular file under a Q<seq> key in the
// same WriteBatch as the namespace change (mds/txn.cc). This queue's thread scans the Q
// records, waits until they are durable (an unlink may be answered before its sync, and its
// objects must not go before it is on disk: the committer's next sync, or one of its own
// when no committer runs), sends OP_OST_DESTROY to each OST
// through the OstGateway with the objects of all records of the pass (at most
// kObjectsPerRpc per RPC), and deletes a record once all its objects are gone (rewriting it
// with the rest when only some OSTs answered). After a kick it waits kGatherMs so a burst
// of unlinks is freed by one pass.
// Failures are retried on the next pass (every interval, or sooner after Kick()). Because
// the queue lives in RocksDB, a crash at any point leaves the record to be replayed: OSTs
// treat destroying a missing object as success, so replays are harmless.
//
// Thread-safety: Start/Stop from one thread; Kick and RunOnce from any. RunOnce calls are
// serialized by an internal mutex (never held with the Namespace mutex).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

#include "common/status.h"
#include "mds/namespace.h"
#include "mds/ost_gateway.h"

namespace stria::mds {

class DestroyQueue {
 public:
  static constexpr size_t kObjectsPerRpc = 1024;
  static constexpr int kGatherMs = 20;

  DestroyQueue(Namespace* ns, OstGateway* gateway, int interval_ms = 2000);
  ~DestroyQueue();  // Stop()s
  DestroyQueue(const DestroyQueue&) = delete;
  DestroyQueue& operator=(const DestroyQueue&) = delete;

  void Start();
  void Stop();
  // Wakes the thread for a pass now.
  void Kick();

  // One pass over every queued record; returns how many records were completed (deleted).
  Result<size_t> RunOnce() { return RunPass(/*from_cursor=*/false); }

  // One pass over the records added since the last pass (a kick after an unlink). Deleted
  // records leave RocksDB tombstones until compaction, so rescanning from the start on every
  // unlink would cost O(records ever queued); the timed passes do the full rescan.
  Result<size_t> RunPass(bool from_cursor);
  // The number of records waiting.
  Result<size_t> Pending() const;

 private:
  void Loop();
  bool NeedsRescan();

  Namespace* ns_;
  OstGateway* gateway_;
  const int interval_ms_;
  std::mutex run_mu_;  // serializes passes
  std::string cursor_;  // GUARDED_BY(run_mu_): the key after the last one a pass visited
  bool rescan_ = true;  // GUARDED_BY(run_mu_): a record may sit before cursor_ (failed)

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;   // GUARDED_BY(mu_)
  bool kicked_ = false; // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace stria::mds
