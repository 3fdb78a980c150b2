// Busy polling: a thread about to sleep for the reply to a small request spins for it
// instead, for at most a budget.
//
// Why: a thread that sleeps lets its CPU go idle, and waking an idle CPU costs more than the
// message itself on a virtual machine (the vCPU halted and the host must schedule it again:
// tens of microseconds here, where a loopback round trip is ~20 us of work), and tens of
// microseconds in deep C-states on bare metal. Through libstria a 4 KiB random read at QD1
// took 156 us (p50) with the client asleep for its reply and 98 us spinning for it
// (docs/performance.md).
//
// Bounded four ways, so that throughput work does not pay for it: a budget per wait
// (busy_poll_us, 0 turns it off); only small exchanges spin (the caller decides: a MiB of
// bulk takes longer than any budget); a thread spins only while it is the process's one
// thread waiting for a reply (with several in flight the CPUs are busy anyway, and a spinner
// takes a CPU from the servers that answer: 16 threads creating through libstria made 15%
// fewer creates with spinning than without); and a place whose waits keep outlasting the
// budget stops spinning (BusyPoller's miss streak). And a spinner yields its CPU between
// checks: on one machine the server that answers is often woken on the spinner's own CPU,
// and waited there for the spin to end (4 KiB random reads from two OSSes: 1.3-1.4x the
// IOPS and half the p99 with the yield, docs/performance.md).
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>

namespace stria::lnet {

// The process-wide budget of one wait, in microseconds (0: never spin). The default is
// STRIA_BUSY_POLL_US from the environment when set (libstria's users have no command line
// of ours), else kDefaultBusyPollUs; the daemons' --busy-poll-us and the mount's
// busy_poll_us= set it.
inline constexpr int kDefaultBusyPollUs = 150;
inline constexpr int kMaxBusyPollUs = 10'000;
void SetBusyPollUs(int us);  // clamped to [0, kMaxBusyPollUs]
int BusyPollUs();

// How often a spin found what it waited for, and how often it gave up.
struct BusyPollStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
};
BusyPollStats GetBusyPollStats();

// While alive, this thread is waiting for a reply (RpcClient's exchanges): BusyPoller spins
// only for a thread that is the only one waiting.
class ReplyWaitScope {
 public:
  ReplyWaitScope();
  ~ReplyWaitScope();
  ReplyWaitScope(const ReplyWaitScope&) = delete;
  ReplyWaitScope& operator=(const ReplyWaitScope&) = delete;
};

// One place that waits (a connection's replies). It remembers how its recent spins went:
// after kMissStreak spins in a row that found nothing (waits there are longer than the
// budget: a slow disk, a loaded server), it spins only on every kMissStreak-th wait until
// one finds something again, so a place where spinning does not pay costs almost nothing.
class BusyPoller {
 public:
  static constexpr int kMissStreak = 8;

  // Spins until fd has one of `events` (poll(2) with a zero timeout) or the budget is
  // spent. true: ready (read without sleeping); false: not ready, or not allowed now
  // (the budget is 0, other threads wait for replies too, a miss streak): the caller sleeps
  // as before. Call it inside a ReplyWaitScope.
  bool SpinForFd(int fd, short events);

 private:
  std::atomic<int> misses_{0};   // spins in a row that found nothing
  std::atomic<int> skipped_{0};  // waits during a miss streak
};

}  // namespace stria::lnet
