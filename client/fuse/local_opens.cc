#include "client/fuse/local_opens.h"

#include <utility>

namespace stria::client::fuse {

LocalOpens::LocalOpens(std::chrono::milliseconds delay, RegisterFn register_open)
    : delay_(delay), register_open_(std::move(register_open)) {
  worker_ = std::thread([this] { Run(); });
}

LocalOpens::~LocalOpens() { Stop(); }

void LocalOpens::Stop() {
  {
    // The mount is going: what was not registered never will be (its files are closed).
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
    pending_.clear();
    index_.clear();
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void LocalOpens::Add(FileHandle* fh, uint64_t ino) {
  {
    std::lock_guard lock(mu_);
    pending_.push_back(Pending{fh, ino, Clock::now() + delay_});
    index_[fh] = std::prev(pending_.end());
    ++counters_.opened;
  }
  cv_.notify_one();
}

bool LocalOpens::Withdraw(FileHandle* fh) {
  std::unique_lock lock(mu_);
  if (auto it = index_.find(fh); it != index_.end()) {
    pending_.erase(it->second);
    index_.erase(it);
    ++counters_.withdrawn;
    return true;
  }
  done_cv_.wait(lock, [&] { return !in_progress_.contains(fh); });
  return false;
}

void LocalOpens::RegisterInodes(const std::vector<uint64_t>& inos) {
  const std::unordered_set<uint64_t> wanted(inos.begin(), inos.end());
  RegisterWhere([&](const Pending& p) { return wanted.contains(p.ino); }, &wanted);
}

void LocalOpens::RegisterAll() {
  RegisterWhere([](const Pending&) { return true; }, nullptr);
}

void LocalOpens::RegisterWhere(const std::function<bool(const Pending&)>& pick,
                               const std::unordered_set<uint64_t>* wait_for) {
  std::vector<Pending> taken;
  {
    std::lock_guard lock(mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (!pick(*it)) {
        ++it;
        continue;
      }
      taken.push_back(*it);
      in_progress_[it->fh] = it->ino;
      index_.erase(it->fh);
      it = pending_.erase(it);
    }
  }
  RegisterTaken(std::move(taken));
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] {
    if (wait_for == nullptr) return in_progress_.empty();
    for (const auto& [fh, ino] : in_progress_) {
      if (wait_for->contains(ino)) return false;
    }
    return true;
  });
}

void LocalOpens::RegisterTaken(std::vector<Pending> taken) {
  for (const Pending& p : taken) {
    register_open_(p.fh);
    {
      std::lock_guard lock(mu_);
      in_progress_.erase(p.fh);
      ++counters_.registered;
    }
    done_cv_.notify_all();
  }
}

void LocalOpens::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (pending_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const Clock::time_point due = pending_.front().due;
    if (Clock::now() < due) {
      cv_.wait_until(lock, due);
      continue;
    }
    std::vector<Pending> taken;
    const Clock::time_point now = Clock::now();
    while (!pending_.empty() && pending_.front().due <= now) {
      const Pending& p = pending_.front();
      taken.push_back(p);
      in_progress_[p.fh] = p.ino;
      index_.erase(p.fh);
      pending_.pop_front();
    }
    lock.unlock();
    RegisterTaken(std::move(taken));
    lock.lock();
  }
}

LocalOpens::Counters LocalOpens::counters() const {
  std::lock_guard lock(mu_);
  Counters c = counters_;
  c.pending = pending_.size();
  return c;
}

}  // namespace stria::client::fuse
