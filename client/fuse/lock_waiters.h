// LockWaiters: blocking lock requests (F_SETLKW, a blocking flock) wait here, all on one
// thread, instead of each holding a thread of its own.
//
// A request that conflicts is retried against the MDS with backoff (2 ms doubling to
// 100 ms) until it is granted, fails otherwise, or the kernel interrupts it (a signal
// reached the waiting process); then it is answered, exactly once. A FUSE request that
// waits so holds no worker: through /dev/fuse, 64 waiters no longer take every libfuse
// thread (the holder's unlock then had none left to run on); over io_uring, a ring thread
// never blocks in a lock wait while requests queue on its other entries.
//
// Thread-safety: all public methods may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"

namespace stria::client::fuse {

class LockWaiters {
 public:
  struct Waiter {
    std::function<Status()> attempt;           // one try: kAgain while it conflicts
    std::function<bool()> interrupted;         // whether the request was interrupted
    std::function<void(const Status&)> done;   // the answer, called once
  };

  LockWaiters() = default;
  ~LockWaiters() { Stop(); }
  LockWaiters(const LockWaiters&) = delete;
  LockWaiters& operator=(const LockWaiters&) = delete;

  // Queues `w` (whose first attempt conflicted); it is tried again shortly.
  void Add(Waiter w);

  // Answers every waiter EINTR (the unmount: nobody waits for them any more) and ends the
  // thread. Later Adds are answered EINTR at once.
  void Stop();

  size_t size() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    Waiter w;
    Clock::time_point due;
    Clock::duration backoff;
  };
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending> pending_;
  size_t trying_ = 0;  // taken out of pending_ by the thread, being tried
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace stria::client::fuse
