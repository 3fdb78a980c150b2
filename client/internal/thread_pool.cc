#include "client/internal/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>

namespace stria::client::internal {

ThreadPool::ThreadPool(int threads) {
  threads = std::max(1, threads);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

namespace {

// Shared between the caller of ParallelFor and its helpers; helpers hold it by shared_ptr
// so one that starts late (after the caller returned) only reads `next` and leaves.
struct ForState {
  explicit ForState(size_t n_items) : n(n_items), results(n_items) {}
  const size_t n;
  std::atomic<size_t> next{0};
  std::vector<Status> results;  // slot i written only by the claimer of item i
  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0;  // guarded by mu
  const std::function<Status(size_t)>* fn = nullptr;  // valid while done < n

  void Work() {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= n) return;
      results[i] = (*fn)(i);
      std::lock_guard lock(mu);
      if (++done == n) cv.notify_all();
    }
  }
};

}  // namespace

Status ParallelFor(ThreadPool* pool, size_t n, const std::function<Status(size_t)>& fn) {
  if (n == 0) return Status::Ok();
  if (n == 1 || pool == nullptr) {
    for (size_t i = 0; i < n; ++i) STRIA_RETURN_IF_ERROR(fn(i));
    return Status::Ok();
  }
  auto state = std::make_shared<ForState>(n);
  state->fn = &fn;
  const size_t helpers = std::min<size_t>(n - 1, static_cast<size_t>(pool->size()));
  for (size_t h = 0; h < helpers; ++h) {
    pool->Submit([state] { state->Work(); });
  }
  state->Work();
  {
    std::unique_lock lock(state->mu);
    state->cv.wait(lock, [&] { return state->done == state->n; });
  }
  for (auto& st : state->results) {
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace stria::client::internal
