#include "client/fuse/write_behind.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace stria::client::fuse {

bool WriteBehind::OverlapsLocked(uint64_t start, uint64_t end) const {
  return std::any_of(ranges_.begin(), ranges_.end(),
                     [&](const Range& r) { return r.start < end && start < r.end; });
}

Status WriteBehind::Admit(uint64_t offset, uint64_t size, uint64_t max_bytes) {
  const uint64_t end = offset + size;
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] {
    const bool room = bytes_ == 0 || bytes_ + size <= max_bytes;
    return !error_.ok() || (room && !OverlapsLocked(offset, end));
  });
  if (!error_.ok()) return std::exchange(error_, Status::Ok());
  bytes_ += size;
  ranges_.push_back({offset, end, next_seq_++});
  return Status::Ok();
}

Status WriteBehind::Submit(internal::ThreadPool* pool, uint64_t offset,
                           std::span<const uint8_t> data, WriteFn write, uint64_t max_bytes) {
  STRIA_RETURN_IF_ERROR(Admit(offset, data.size(), max_bytes));
  // The copy goes to a pooled bulk buffer (lnet/buffer.h): a fresh 1 MiB heap block per
  // write cost a page fault per 4 KiB (a third of the copy's time in a checkpoint profile).
  // In the shared arena where there is one: an OSS on this host then reads the bytes from
  // there (lnet/shared_bulk.h), and none go through a socket.
  auto copy = std::make_shared<lnet::Buffer>(lnet::Buffer::Shareable(data.size()));
  std::memcpy(copy->data(), data.data(), data.size());
  return Run(pool, offset, std::move(copy), std::move(write));
}

Status WriteBehind::Submit(internal::ThreadPool* pool, uint64_t offset,
                           std::shared_ptr<const lnet::Buffer> data, WriteFn write,
                           uint64_t max_bytes) {
  STRIA_RETURN_IF_ERROR(Admit(offset, data->size(), max_bytes));
  return Run(pool, offset, std::move(data), std::move(write));
}

Status WriteBehind::Run(internal::ThreadPool* pool, uint64_t offset,
                        std::shared_ptr<const lnet::Buffer> data, WriteFn write) {
  const uint64_t end = offset + data->size();
  pool->Submit([this, offset, end, data = std::move(data), write = std::move(write)] {
    Status st = write(offset, data->span());
    std::unique_lock lock(mu_);
    bytes_ -= data->size();
    auto it = std::find_if(ranges_.begin(), ranges_.end(),
                           [&](const Range& r) { return r.start == offset && r.end == end; });
    if (it != ranges_.end()) ranges_.erase(it);
    if (!st.ok() && error_.ok()) error_ = std::move(st);
    cv_.notify_all();
    RunWaitersLocked(lock);
  });
  return Status::Ok();
}

bool WriteBehind::ReadyLocked(const Waiter& w) const {
  return std::none_of(ranges_.begin(), ranges_.end(),
                      [&](const Range& r) { return r.seq < w.seq; });
}

void WriteBehind::RunWaitersLocked(std::unique_lock<std::mutex>& lock) {
  if (running_waiters_) return;  // that thread runs the ones this write made ready too
  running_waiters_ = true;
  while (!waiters_.empty() && ReadyLocked(waiters_.front())) {
    Waiter w = std::move(waiters_.front());
    waiters_.pop_front();
    Status st = std::exchange(error_, Status::Ok());
    lock.unlock();
    w.then(std::move(st));
    lock.lock();
  }
  running_waiters_ = false;
}

bool WriteBehind::AfterWrites(std::function<void(Status)> then) {
  std::lock_guard lock(mu_);
  if (ranges_.empty() && waiters_.empty() && !running_waiters_) return false;
  // With no range in flight, a waiter is queued only behind others that a thread is running
  // (ranges empty and waiters left means one is): that thread runs this one too.
  waiters_.push_back({next_seq_, std::move(then)});
  return true;
}

uint64_t WriteBehind::InFlightBytes() {
  std::lock_guard lock(mu_);
  return bytes_;
}

void WriteBehind::KeepError(Status error) {
  std::lock_guard lock(mu_);
  if (!error.ok() && error_.ok()) error_ = std::move(error);
}

bool WriteBehind::Idle() {
  std::lock_guard lock(mu_);
  return bytes_ == 0 && error_.ok();
}

Status WriteBehind::Drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return bytes_ == 0; });
  return std::exchange(error_, Status::Ok());
}

}  // namespace stria::client::fuse
