#include "client/fuse/pre_opens.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace stria::client::fuse {

PreOpens::PreOpens(std::chrono::milliseconds keep, CloseFn close)
    : keep_(keep), close_(std::move(close)) {
  if (keep_.count() > 0) worker_ = std::thread([this] { Run(); });
}

PreOpens::~PreOpens() { Stop(); }

void PreOpens::Stop() {
  std::deque<Entry> left;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    left.swap(held_);
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  for (Entry& e : left) Drop(*e.p);
}

bool PreOpens::Want(uint64_t dir) {
  if (keep_.count() <= 0) return false;
  std::lock_guard lock(mu_);
  auto it = scores_.find(dir);
  if (it == scores_.end() || it->second < kWantScore) return false;
  Score(dir, -1);  // the pre-open it brings, until taken: a scan that takes none soon stops
  return true;
}

bool PreOpens::Wants(uint64_t dir) const {
  if (keep_.count() <= 0) return false;
  std::lock_guard lock(mu_);
  auto it = scores_.find(dir);
  return it != scores_.end() && it->second >= kWantScore;
}

void PreOpens::NotHeld(uint64_t dir) {
  std::lock_guard lock(mu_);
  Score(dir, 1);
}

void PreOpens::Score(uint64_t dir, int delta) {
  if (scores_.size() >= kMaxDirs && !scores_.contains(dir)) scores_.clear();
  int& s = scores_[dir];
  s = std::clamp(s + delta, 0, kMaxScore);
}

void PreOpens::OpenedAfterLookup(uint64_t dir) {
  if (keep_.count() <= 0) return;
  std::lock_guard lock(mu_);
  Score(dir, 1);
}

void PreOpens::Hold(std::shared_ptr<PreOpen> p) {
  {
    std::lock_guard lock(mu_);
    ++counters_.held;
    ++counters_.pending;
    if (!stop_) {
      held_.push_back(Entry{std::move(p), Clock::now() + keep_});
      if (held_.size() == 1) cv_.notify_one();
      return;
    }
  }
  Drop(*p);  // the mount is going
}

bool PreOpens::ClaimLocked(PreOpen& p) {
  if (p.claimed.exchange(true)) return false;
  --counters_.pending;
  return true;
}

bool PreOpens::Take(PreOpen& p) {
  std::lock_guard lock(mu_);
  if (!ClaimLocked(p)) return false;
  ++counters_.used;
  Score(p.parent, 2);  // Hold's point back, and one more
  return true;
}

bool PreOpens::Drop(PreOpen& p) {
  return CloseUnused(p, 1 - kWasteCost);  // with Hold's, kWasteCost
}

bool PreOpens::Withdraw(PreOpen& p) { return CloseUnused(p, 0); }

bool PreOpens::CloseUnused(PreOpen& p, int score) {
  {
    std::lock_guard lock(mu_);
    if (!ClaimLocked(p)) return false;
    ++counters_.wasted;
    if (score != 0) Score(p.parent, score);
  }
  close_(p);
  return true;
}

void PreOpens::DiscardAll() {
  std::deque<Entry> all;
  {
    std::lock_guard lock(mu_);
    all.swap(held_);
  }
  for (Entry& e : all) Drop(*e.p);
}

PreOpens::Counters PreOpens::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

void LocalChanges::Note(uint64_t ino) {
  std::lock_guard lock(mu_);
  const uint64_t n = count_.load();
  log_[n % kLog] = ino;
  count_.store(n + 1);
}

bool LocalChanges::ChangedSince(uint64_t since, uint64_t ino) const {
  if (count_.load() == since) return false;  // nothing changed: no lock
  std::lock_guard lock(mu_);
  const uint64_t now = count_.load();
  if (now - since > kLog) return true;  // the log no longer reaches back that far
  for (uint64_t n = since; n < now; ++n) {
    if (log_[n % kLog] == ino) return true;
  }
  return false;
}

void PreOpens::Run() {
  // Expired ones go in sweeps, not one wake-up each: a cold read of many files holds one
  // per file (most taken at once, but left here until due).
  const auto slack = std::clamp<std::chrono::milliseconds>(
      keep_ / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(100));
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (held_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const Clock::time_point due = held_.front().due + slack;
    if (Clock::now() < due) {
      cv_.wait_until(lock, due);
      continue;
    }
    std::vector<std::shared_ptr<PreOpen>> expired;
    const Clock::time_point now = Clock::now();
    while (!held_.empty() && held_.front().due <= now) {
      expired.push_back(std::move(held_.front().p));
      held_.pop_front();
    }
    lock.unlock();
    for (const auto& p : expired) Drop(*p);
    lock.lock();
  }
}

}  // namespace stria::client::fuse
