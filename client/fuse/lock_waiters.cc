// LockWaiters (see lock_waiters.h).
#include "client/fuse/lock_waiters.h"

#include <algorithm>
#include <utility>

namespace stria::client::fuse {

namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(2);
constexpr auto kMaxBackoff = std::chrono::milliseconds(100);

Status Unmounted() { return Status(Code::kIntr, "lock wait ended by the unmount"); }

}  // namespace

void LockWaiters::Add(Waiter w) {
  {
    std::lock_guard lock(mu_);
    if (!stopped_) {
      pending_.push_back(Pending{std::move(w), Clock::now() + kFirstBackoff, kFirstBackoff});
      if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
      cv_.notify_one();
      return;
    }
  }
  w.done(Unmounted());
}

size_t LockWaiters::size() const {
  std::lock_guard lock(mu_);
  return pending_.size() + trying_;
}

void LockWaiters::Run() {
  std::unique_lock lock(mu_);
  while (!stopped_) {
    if (pending_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const auto next = std::min_element(pending_.begin(), pending_.end(),
                                       [](const Pending& a, const Pending& b) {
                                         return a.due < b.due;
                                       })->due;
    if (Clock::now() < next) {
      cv_.wait_until(lock, next);
      continue;
    }
    // The due ones, oldest first; the others stay.
    std::vector<Pending> due;
    const auto now = Clock::now();
    auto split = std::partition(pending_.begin(), pending_.end(),
                                [&](const Pending& p) { return p.due > now; });
    std::move(split, pending_.end(), std::back_inserter(due));
    pending_.erase(split, pending_.end());
    std::sort(due.begin(), due.end(),
              [](const Pending& a, const Pending& b) { return a.due < b.due; });
    trying_ = due.size();
    lock.unlock();
    std::vector<Pending> again;
    for (Pending& p : due) {
      if (p.w.interrupted && p.w.interrupted()) {
        p.w.done(Status(Code::kIntr, "lock wait interrupted by a signal"));
        continue;
      }
      Status st = p.w.attempt();
      if (st.code() != Code::kAgain) {
        p.w.done(st);
        continue;
      }
      p.backoff = std::min<Clock::duration>(p.backoff * 2, kMaxBackoff);
      p.due = Clock::now() + p.backoff;
      again.push_back(std::move(p));
    }
    lock.lock();
    trying_ = 0;
    for (Pending& p : again) pending_.push_back(std::move(p));
  }
}

void LockWaiters::Stop() {
  std::vector<Pending> left;
  std::thread t;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    cv_.notify_all();
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
  {
    std::lock_guard lock(mu_);
    left.swap(pending_);
  }
  for (Pending& p : left) p.w.done(Unmounted());
}

}  // namespace stria::client::fuse
