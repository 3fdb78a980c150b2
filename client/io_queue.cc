// IoQueue (see io_queue.h).
#include "client/io_queue.h"

#include <algorithm>
#include <chrono>

namespace stria::client {

Result<std::unique_ptr<IoQueue>> IoQueue::Create(unsigned depth) {
  if (depth == 0 || depth > kMaxDepth) {
    return Status(Code::kInval, "queue depth must be 1 to " + std::to_string(kMaxDepth));
  }
  return std::unique_ptr<IoQueue>(new IoQueue(depth));
}

IoQueue::IoQueue(unsigned depth) : depth_(depth) {
  const unsigned n = std::min(depth, kMaxWorkers);
  workers_.reserve(n);
  for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { Work(); });
}

IoQueue::~IoQueue() {
  {
    std::unique_lock lock(mu_);
    // Requests in flight finish (their buffers are the caller's until reaped).
    done_cv_.wait(lock, [&] { return pending_.empty() && done_.size() == outstanding_; });
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

Result<size_t> IoQueue::Submit(std::span<const IoRequest> reqs) {
  size_t queued = 0;
  {
    std::lock_guard lock(mu_);
    for (const IoRequest& r : reqs) {
      if (outstanding_ >= depth_) break;
      if (r.file == nullptr || (r.op != IoRequest::Op::kFsync && r.buf == nullptr && r.length)) {
        if (queued == 0) return Status(Code::kInval, "request without a file or a buffer");
        break;
      }
      pending_.push_back(r);
      ++outstanding_;
      ++queued;
    }
  }
  if (queued == 0 && !reqs.empty()) return Status(Code::kAgain, "the queue is full");
  if (queued == 1) {
    work_cv_.notify_one();
  } else if (queued > 1) {
    work_cv_.notify_all();
  }
  return queued;
}

std::vector<IoCompletion> IoQueue::Reap(size_t min_complete, size_t max, int timeout_ms) {
  std::unique_lock lock(mu_);
  const size_t want = std::min(min_complete, outstanding_);
  auto ready = [&] { return done_.size() >= want; };
  if (timeout_ms < 0) {
    done_cv_.wait(lock, ready);
  } else {
    done_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  }
  std::vector<IoCompletion> out;
  const size_t n = std::min(max, done_.size());
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(done_.front());
    done_.pop_front();
  }
  outstanding_ -= n;
  if (n > 0) done_cv_.notify_all();  // the destructor may wait for outstanding_ to drop
  return out;
}

size_t IoQueue::outstanding() const {
  std::lock_guard lock(mu_);
  return outstanding_;
}

void IoQueue::Work() {
  for (;;) {
    IoRequest r;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping
      r = pending_.front();
      pending_.pop_front();
    }
    IoCompletion c;
    c.user_data = r.user_data;
    switch (r.op) {
      case IoRequest::Op::kRead: {
        Result<size_t> n =
            r.file->Pread(r.offset, std::span<uint8_t>(static_cast<uint8_t*>(r.buf), r.length));
        c.result = n.ok() ? static_cast<int64_t>(*n) : -n.status().ToErrno();
        break;
      }
      case IoRequest::Op::kWrite: {
        Result<size_t> n = r.file->Pwrite(
            r.offset, std::span<const uint8_t>(static_cast<const uint8_t*>(r.buf), r.length));
        c.result = n.ok() ? static_cast<int64_t>(*n) : -n.status().ToErrno();
        break;
      }
      case IoRequest::Op::kFsync: {
        Status st = r.file->Fsync();
        c.result = st.ok() ? 0 : -st.ToErrno();
        break;
      }
    }
    {
      std::lock_guard lock(mu_);
      done_.push_back(c);
    }
    done_cv_.notify_all();
  }
}

}  // namespace stria::client
