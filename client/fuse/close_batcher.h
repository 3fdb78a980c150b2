// CloseBatcher: closes that report no write to the MDS, gathered and sent together.
//
// Every close(2) ends in a RELEASE, and every release of an MDS open handle in a CLOSE
// request. Most report no write (a file that was read, with the read's atime when relatime
// asks for one; a file created and closed without a write; a file whose size went with its
// flush): their CLOSE only drops the handle, and at most sets an atime. The release already
// does not wait for it, but each one costs an RPC of MDS and client CPU, and on two cores a
// create loop spent a quarter of its time on them. Such closes wait here for up to the gather time (10 ms by default), or until
// kMaxBatch are waiting, and go in one OP_MDS_CLOSE_BATCH.
//
// What the delay changes: the MDS sees the handle open for up to the gather time more. An
// unlinked file's objects then go that much later; an operation that a writer refuses (lfs migrate,
// mirror split) first asks every mount to Flush (LeaseRevokeRequest.flush_closes), so it never
// fails for a handle already closed — which is why a handle opened for writing is gathered
// only while the mount's leases (and so its callback) work (StriaFs::ReportSize).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client {

class CloseBatcher {
 public:
  static constexpr size_t kMaxBatch = 256;  // closes per request (the MDS takes up to 1024)

  // send: one OP_MDS_CLOSE_BATCH (Metadata::CloseBatch), from the batcher's thread. gather:
  // how long the first close of a batch waits for others (the mount's close_gather_ms).
  using SendFn = std::function<Result<proto::CloseBatchReply>(const proto::CloseBatchRequest&)>;
  CloseBatcher(std::chrono::milliseconds gather, SendFn send);
  ~CloseBatcher();  // sends what is left
  CloseBatcher(const CloseBatcher&) = delete;
  CloseBatcher& operator=(const CloseBatcher&) = delete;

  void Add(proto::CloseRequest close);
  // Returns once every close added before the call has been sent (answered or failed).
  void Flush();

  struct Counters {
    uint64_t gathered = 0;  // closes added
    uint64_t batches = 0;   // OP_MDS_CLOSE_BATCH requests sent
    uint64_t failed = 0;    // closes the MDS did not do, or whose batch failed
    uint64_t flushes = 0;   // Flush calls (an MDS asking, an unmount)
  };
  Counters counters() const;

 private:
  void Run();
  // Sends what is pending (the lock is released meanwhile). REQUIRES mu_ held by `lock`.
  void SendPendingLocked(std::unique_lock<std::mutex>& lock);

  const std::chrono::milliseconds gather_;
  const SendFn send_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // the thread: work, a flush or stop
  std::condition_variable sent_cv_;  // Flush: sent_seq_ moved
  proto::CloseBatchRequest pending_;  // GUARDED_BY(mu_)
  uint64_t added_seq_ = 0;            // GUARDED_BY(mu_): closes ever added
  uint64_t sent_seq_ = 0;             // GUARDED_BY(mu_): closes ever sent
  bool flush_ = false;                // GUARDED_BY(mu_)
  bool stop_ = false;                 // GUARDED_BY(mu_)
  Counters counters_;                 // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace stria::client
