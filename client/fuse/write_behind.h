// WriteBehind: lets a FUSE write return once its data is copied, while the striped write to
// the OSTs runs in the background, so that one writer keeps several writes in flight (the
// kernel sends a file's writes one at a time without a writeback cache).
//
// Invariants: at most `max_bytes` are in flight per file; writes whose byte ranges overlap
// never run at once (a later one waits for the earlier), so the last write wins as POSIX
// requires; an error of a background write is kept and returned by the next Submit or Drain
// (as NFS and Lustre report asynchronous write errors at the next write, fsync or close).
// Whoever needs the data on the OSTs (read, fsync, truncate) calls Drain(); whoever only
// needs to act once it is there (a close(2) that reports the size, StriaFs::DoFlush) asks
// AfterWrites to call it back then.
// Thread-safety: all methods are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "client/internal/thread_pool.h"
#include "common/status.h"
#include "lnet/buffer.h"

namespace stria::client::fuse {

class WriteBehind {
 public:
  using WriteFn = std::function<Status(uint64_t offset, std::span<const uint8_t> data)>;

  static constexpr uint64_t kDefaultMaxBytes = 8ull << 20;

  // Copies data and runs write(offset, copy) on `pool`. Returns a pending error of an earlier
  // background write instead (the new data is then not written).
  Status Submit(internal::ThreadPool* pool, uint64_t offset, std::span<const uint8_t> data,
                WriteFn write, uint64_t max_bytes = kDefaultMaxBytes);
  // The same for data the caller already holds in a buffer of its own (a write spliced from
  // the kernel and read once into it): the buffer is written as it is, not copied.
  Status Submit(internal::ThreadPool* pool, uint64_t offset,
                std::shared_ptr<const lnet::Buffer> data, WriteFn write,
                uint64_t max_bytes = kDefaultMaxBytes);

  // Waits until no write is in flight; returns (and clears) a pending error.
  Status Drain();

  // Calls `then(status)` once every write submitted before this call has finished, without
  // waiting for them: on the pool thread that finishes the last of them. `status` is the
  // first background error, taken as Drain takes it. Callbacks run one at a time, in the
  // order they were given, so one may rely on an earlier one having returned (a handle's
  // release on its flush). Returns false, and does not call `then`, when no write is in
  // flight and no callback waits.
  bool AfterWrites(std::function<void(Status)> then);

  // Bytes in flight now.
  uint64_t InFlightBytes();

  // Keeps `error` (if no other is) for the next Submit or Drain to return: an AfterWrites
  // callback that took an error it could not report.
  void KeepError(Status error);

  // True when no write is in flight and no error waits to be reported: a write made now
  // on the caller's thread cannot overtake or be overtaken by a background one.
  bool Idle();

 private:
  struct Range {
    uint64_t start, end;
    uint64_t seq;  // order of admission
  };
  struct Waiter {
    uint64_t seq;  // runs once no range admitted before `seq` is in flight
    std::function<void(Status)> then;
  };
  bool OverlapsLocked(uint64_t start, uint64_t end) const;
  bool ReadyLocked(const Waiter& w) const;
  // Runs the waiters whose writes have finished, in order, unless another thread is at it.
  // REQUIRES mu_ held by `lock`; released while a waiter runs.
  void RunWaitersLocked(std::unique_lock<std::mutex>& lock);
  // Waits for room and for overlapping writes to finish, then counts [offset, offset+size)
  // in flight; or returns (and clears) a pending error.
  Status Admit(uint64_t offset, uint64_t size, uint64_t max_bytes);
  // Runs write(offset, data) on `pool` for a range Admit counted.
  Status Run(internal::ThreadPool* pool, uint64_t offset,
             std::shared_ptr<const lnet::Buffer> data, WriteFn write);

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t bytes_ = 0;          // GUARDED_BY(mu_): bytes in flight
  std::vector<Range> ranges_;   // GUARDED_BY(mu_): byte ranges in flight
  Status error_;                // GUARDED_BY(mu_): first unreported background failure
  uint64_t next_seq_ = 0;       // GUARDED_BY(mu_)
  std::deque<Waiter> waiters_;  // GUARDED_BY(mu_): AfterWrites callbacks not yet run
  bool running_waiters_ = false;  // GUARDED_BY(mu_): a thread is in RunWaitersLocked
};

}  // namespace stria::client::fuse
