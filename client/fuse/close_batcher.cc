#include "client/fuse/close_batcher.h"

#include <algorithm>
#include <utility>

#include "common/log.h"

namespace stria::client {

CloseBatcher::CloseBatcher(std::chrono::milliseconds gather, SendFn send)
    : gather_(gather), send_(std::move(send)) {
  thread_ = std::thread([this] { Run(); });
}

CloseBatcher::~CloseBatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // the thread sends what is left before it returns
}

void CloseBatcher::Add(proto::CloseRequest close) {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    *pending_.add_closes() = std::move(close);
    ++added_seq_;
    ++counters_.gathered;
    first = pending_.closes_size() == 1;
    if (static_cast<size_t>(pending_.closes_size()) >= kMaxBatch) first = true;
  }
  if (first) cv_.notify_all();  // the first starts the gathering; a full batch ends it
}

void CloseBatcher::Flush() {
  std::unique_lock lock(mu_);
  ++counters_.flushes;
  const uint64_t target = added_seq_;
  if (sent_seq_ >= target) return;
  flush_ = true;
  cv_.notify_all();
  sent_cv_.wait(lock, [&] { return sent_seq_ >= target; });
}

CloseBatcher::Counters CloseBatcher::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

void CloseBatcher::SendPendingLocked(std::unique_lock<std::mutex>& lock) {
  // At most kMaxBatch, oldest first: closes added while a batch was on the wire may have
  // piled up beyond what one request may carry (the MDS refuses more than 1024).
  proto::CloseBatchRequest batch;
  const int n = std::min(pending_.closes_size(), static_cast<int>(kMaxBatch));
  if (n == pending_.closes_size()) {
    batch.Swap(&pending_);
  } else {
    for (int i = 0; i < n; ++i) batch.add_closes()->Swap(pending_.mutable_closes(i));
    pending_.mutable_closes()->DeleteSubrange(0, n);
  }
  const uint64_t upto = sent_seq_ + static_cast<uint64_t>(n);
  if (pending_.closes_size() == 0) flush_ = false;  // a flush waits for the rest otherwise
  lock.unlock();
  Result<proto::CloseBatchReply> rep = send_(batch);
  lock.lock();
  ++counters_.batches;
  if (!rep.ok()) {
    // The handles stay open at the MDS until it evicts this client; nothing is lost.
    LOG_WARN("{} gathered closes not sent: {}", batch.closes_size(), rep.status().ToString());
    counters_.failed += static_cast<uint64_t>(batch.closes_size());
  } else {
    counters_.failed += rep->failed();
  }
  sent_seq_ = upto;
  sent_cv_.notify_all();
}

void CloseBatcher::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || pending_.closes_size() > 0; });
    if (pending_.closes_size() == 0) return;  // stopping with nothing left
    // Gather: until the window passes, the batch fills, a flush is asked for or we stop.
    const auto until = std::chrono::steady_clock::now() + gather_;
    cv_.wait_until(lock, until, [&] {
      return stop_ || flush_ ||
             static_cast<size_t>(pending_.closes_size()) >= kMaxBatch;
    });
    SendPendingLocked(lock);
  }
}

}  // namespace stria::client
