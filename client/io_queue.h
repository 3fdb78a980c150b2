// IoQueue: an asynchronous submit/complete interface over NativeFile, in the spirit of
// io_uring and 3FS's USRBIO, so that one application thread keeps many reads and writes in
// flight (each of which runs all its stripes in parallel too).
//
// Requests are submitted in batches and complete in any order; each completion carries the
// request's user_data and its result: the bytes transferred, or a negative errno. At most
// `depth` requests are outstanding (submitted and not yet reaped): Submit takes what fits
// and EAGAIN when nothing does, as a full submission ring would. The requests run on the
// queue's own `depth` worker threads (capped at kMaxWorkers), which wait for an RPC reply
// each; the OST RPCs of one request go out in parallel on the Client's I/O pool.
//
// The caller keeps each buffer and NativeFile alive until its completion is reaped.
// Thread-safety: Submit and Reap may be called from any threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "client/native.h"
#include "common/status.h"

namespace stria::client {

struct IoRequest {
  enum class Op : uint8_t { kRead, kWrite, kFsync };
  Op op = Op::kRead;
  NativeFile* file = nullptr;
  uint64_t offset = 0;
  void* buf = nullptr;   // kRead: filled; kWrite: sent
  size_t length = 0;
  uint64_t user_data = 0;
};

struct IoCompletion {
  uint64_t user_data = 0;
  int64_t result = 0;  // bytes transferred (kFsync: 0), or -errno
};

class IoQueue {
 public:
  static constexpr unsigned kMaxDepth = 4096;
  static constexpr unsigned kMaxWorkers = 256;

  // EINVAL unless 1 <= depth <= kMaxDepth.
  static Result<std::unique_ptr<IoQueue>> Create(unsigned depth);
  ~IoQueue();  // waits for the requests in flight, then stops the workers
  IoQueue(const IoQueue&) = delete;
  IoQueue& operator=(const IoQueue&) = delete;

  // Queues as many of `reqs` as fit; returns how many (EAGAIN if none fit, EINVAL for a
  // request without a file or buffer, which is then not queued, nor any after it).
  Result<size_t> Submit(std::span<const IoRequest> reqs);
  // Waits until at least `min_complete` completions are ready (capped at what is
  // outstanding) or timeout_ms passes (< 0: no limit), then returns at most `max`.
  std::vector<IoCompletion> Reap(size_t min_complete, size_t max, int timeout_ms);
  // Submitted and not yet reaped.
  size_t outstanding() const;
  unsigned depth() const { return depth_; }

 private:
  explicit IoQueue(unsigned depth);
  void Work();

  const unsigned depth_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // pending_ or stop_
  std::condition_variable done_cv_;  // done_ grew
  std::deque<IoRequest> pending_;    // GUARDED_BY(mu_)
  std::deque<IoCompletion> done_;    // GUARDED_BY(mu_)
  size_t outstanding_ = 0;           // GUARDED_BY(mu_): pending + running + done
  bool stop_ = false;                // GUARDED_BY(mu_)
  std::vector<std::thread> workers_;
};

}  // namespace stria::client
