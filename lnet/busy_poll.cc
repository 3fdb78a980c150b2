#include "lnet/busy_poll.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace stria::lnet {
namespace {

int InitialBudgetUs() {
  const char* env = getenv("STRIA_BUSY_POLL_US");
  if (env == nullptr || *env == '\0') return kDefaultBusyPollUs;
  char* end = nullptr;
  const long v = strtol(env, &end, 10);
  return *end == '\0' && v >= 0 && v <= kMaxBusyPollUs ? static_cast<int>(v)
                                                         : kDefaultBusyPollUs;
}

std::atomic<int> g_budget_us{InitialBudgetUs()};
std::atomic<int> g_waiting{0};  // threads inside a ReplyWaitScope
std::atomic<uint64_t> g_hits{0};
std::atomic<uint64_t> g_misses{0};

}  // namespace

ReplyWaitScope::ReplyWaitScope() { g_waiting.fetch_add(1, std::memory_order_relaxed); }
ReplyWaitScope::~ReplyWaitScope() { g_waiting.fetch_sub(1, std::memory_order_relaxed); }

void SetBusyPollUs(int us) { g_budget_us.store(std::clamp(us, 0, kMaxBusyPollUs)); }
int BusyPollUs() { return g_budget_us.load(); }

BusyPollStats GetBusyPollStats() {
  return {g_hits.load(std::memory_order_relaxed), g_misses.load(std::memory_order_relaxed)};
}

bool BusyPoller::SpinForFd(int fd, short events) {
  const int budget = g_budget_us.load(std::memory_order_relaxed);
  if (budget <= 0 || g_waiting.load(std::memory_order_relaxed) > 1) return false;
  if (misses_.load(std::memory_order_relaxed) >= kMissStreak &&
      skipped_.fetch_add(1, std::memory_order_relaxed) % kMissStreak != kMissStreak - 1) {
    return false;  // a miss streak: probe now and then only
  }
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::microseconds(budget);
  int rc = 0;
  do {
    // Another thread started waiting for a reply: leave the CPU to the work that answers
    // (not a miss: the wait was not too long for the budget).
    if (g_waiting.load(std::memory_order_relaxed) > 1) return false;
    pollfd p{fd, events, 0};
    rc = poll(&p, 1, 0);
    if (rc != 0) break;  // ready, or an error the caller's own wait will see
    // A thread woken on this CPU (often the very server that answers, on one machine)
    // runs now rather than after the spin.
    sched_yield();
  } while (Clock::now() < until);
  if (rc > 0) {
    g_hits.fetch_add(1, std::memory_order_relaxed);
    misses_.store(0, std::memory_order_relaxed);
    return true;
  }
  g_misses.fetch_add(1, std::memory_order_relaxed);
  if (misses_.load(std::memory_order_relaxed) < kMissStreak) {
    misses_.fetch_add(1, std::memory_order_relaxed);
  }
  return false;
}

}  // namespace stria::lnet
