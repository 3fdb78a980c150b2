// ThreadPool: a fixed set of worker threads running queued tasks, and ParallelFor, which
// spreads the items of one call over the pool while the calling thread works too.
//
// Invariants: tasks never block waiting for other tasks of the pool, so the pool cannot
// deadlock; ParallelFor returns only after every item it claimed has finished, and helpers
// that start after that touch nothing of the caller's (they find no item left).
// Thread-safety: Submit and ParallelFor may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"

namespace stria::client::internal {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();  // runs what is queued, then joins
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> task);
  int size() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

// Runs fn(0..n-1), items in parallel on `pool` (at most pool->size() helpers) and on the
// calling thread. Returns the first non-OK status by item index, or OK. With n <= 1 or a
// null pool everything runs on the caller.
Status ParallelFor(ThreadPool* pool, size_t n, const std::function<Status(size_t)>& fn);

}  // namespace stria::client::internal
