#include "client/fuse/lock_waiters.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace stria::client::fuse {
namespace {

using namespace std::chrono_literals;

// A waiter whose lock is granted once `*free` is set; its answer lands in `answer`,
// published by `answered`.
struct Probe {
  std::atomic<int> tries{0};
  std::atomic<bool> answered{false};
  Code answer = Code::kOk;
  std::atomic<bool> interrupted{false};
};

LockWaiters::Waiter Make(Probe* p, const std::atomic<bool>* free) {
  return LockWaiters::Waiter{
      .attempt =
          [p, free] {
            ++p->tries;
            return free->load() ? Status::Ok() : Status(Code::kAgain, "held");
          },
      .interrupted = [p] { return p->interrupted.load(); },
      .done =
          [p](const Status& st) {
            EXPECT_FALSE(p->answered.load()) << "answered twice";
            p->answer = st.code();  // before the flag that publishes it
            p->answered.store(true);
          },
  };
}

bool WaitFor(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!flag.load() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
  return flag.load();
}

TEST(LockWaitersTest, ManyWaitersWaitOnOneThreadAndAreAnsweredWhenFree) {
  LockWaiters w;
  std::atomic<bool> free{false};
  std::vector<std::unique_ptr<Probe>> probes;
  for (int i = 0; i < 200; ++i) {
    probes.push_back(std::make_unique<Probe>());
    w.Add(Make(probes.back().get(), &free));
  }
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(w.size(), 200u);
  for (auto& p : probes) {
    EXPECT_FALSE(p->answered.load());
    EXPECT_GE(p->tries.load(), 2) << "each is retried";
    EXPECT_LE(p->tries.load(), 12) << "with backoff, not in a spin";
  }
  free = true;
  for (auto& p : probes) {
    ASSERT_TRUE(WaitFor(p->answered, 2s));
    EXPECT_EQ(p->answer, Code::kOk);
  }
  EXPECT_EQ(w.size(), 0u);
}

TEST(LockWaitersTest, AnInterruptedWaiterIsAnsweredEintrAndTheOthersWaitOn) {
  LockWaiters w;
  std::atomic<bool> free{false};
  Probe a, b;
  w.Add(Make(&a, &free));
  w.Add(Make(&b, &free));
  a.interrupted = true;
  ASSERT_TRUE(WaitFor(a.answered, 2s));
  EXPECT_EQ(a.answer, Code::kIntr);
  std::this_thread::sleep_for(150ms);
  EXPECT_FALSE(b.answered.load());
  free = true;
  ASSERT_TRUE(WaitFor(b.answered, 2s));
  EXPECT_EQ(b.answer, Code::kOk);
}

TEST(LockWaitersTest, AnErrorOtherThanAConflictIsTheAnswer) {
  LockWaiters w;
  Probe p;
  w.Add({.attempt = [] { return Status(Code::kNoSys, "MDS gone"); },
         .interrupted = nullptr,
         .done = [&p](const Status& st) {
           p.answer = st.code();
           p.answered = true;
         }});
  ASSERT_TRUE(WaitFor(p.answered, 2s));
  EXPECT_EQ(p.answer, Code::kNoSys);
}

TEST(LockWaitersTest, StopAnswersEveryWaiterEintrAndLaterOnesAtOnce) {
  LockWaiters w;
  std::atomic<bool> free{false};
  Probe a, b, late;
  w.Add(Make(&a, &free));
  w.Add(Make(&b, &free));
  std::this_thread::sleep_for(20ms);
  w.Stop();
  EXPECT_TRUE(a.answered.load());
  EXPECT_TRUE(b.answered.load());
  EXPECT_EQ(a.answer, Code::kIntr);
  EXPECT_EQ(b.answer, Code::kIntr);
  w.Add(Make(&late, &free));
  EXPECT_TRUE(late.answered.load());
  EXPECT_EQ(late.answer, Code::kIntr);
}

}  // namespace
}  // namespace stria::client::fuse
