#include "client/fuse/write_behind.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

namespace stria::client::fuse {
namespace {

using namespace std::chrono_literals;

TEST(WriteBehindTest, SubmitReturnsBeforeTheWriteAndDrainWaits) {
  WriteBehind wb;  // outlives the pool, whose threads use it last
  internal::ThreadPool pool(2);
  std::atomic<bool> done{false};
  std::vector<uint8_t> data(100, 7);
  ASSERT_TRUE(wb.Submit(&pool, 0, data, [&](uint64_t, std::span<const uint8_t> d) {
                  std::this_thread::sleep_for(100ms);
                  EXPECT_EQ(d.size(), 100u);
                  done = true;
                  return Status::Ok();
                }).ok());
  EXPECT_FALSE(done.load());
  data.assign(100, 9);  // the caller's buffer is free once Submit returns
  EXPECT_TRUE(wb.Drain().ok());
  EXPECT_TRUE(done.load());
}

TEST(WriteBehindTest, AnOwnedBufferIsWrittenAsItIsAndKeptUntilWritten) {
  WriteBehind wb;  // outlives the pool, whose threads use it last
  internal::ThreadPool pool(2);
  auto buf = std::make_shared<lnet::Buffer>(4096);
  std::memset(buf->data(), 3, buf->size());
  const uint8_t* const where = buf->data();
  std::weak_ptr<lnet::Buffer> watch = buf;
  std::atomic<bool> same_bytes{false};
  ASSERT_TRUE(wb.Submit(&pool, 8192, std::move(buf), [&](uint64_t off, std::span<const uint8_t> d) {
                  std::this_thread::sleep_for(50ms);
                  same_bytes = off == 8192 && d.data() == where && d.size() == 4096 && d[4095] == 3;
                  return Status::Ok();
                }).ok());
  EXPECT_FALSE(watch.expired());  // the write-behind holds it while the write runs
  ASSERT_TRUE(wb.Drain().ok());
  EXPECT_TRUE(same_bytes.load());  // not a copy
  for (int i = 0; i < 100 && !watch.expired(); ++i) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(watch.expired());  // and let go once written
}

TEST(WriteBehindTest, OverlappingWritesLandInOrder) {
  WriteBehind wb;  // outlives the pool, whose threads use it last
  internal::ThreadPool pool(4);
  std::mutex mu;
  std::map<uint64_t, uint8_t> disk;  // byte offset -> value
  auto write = [&](uint64_t off, std::span<const uint8_t> d) {
    // The first write is slow: a later overlapping one must not overtake it.
    if (d[0] == 1) std::this_thread::sleep_for(100ms);
    std::lock_guard lock(mu);
    for (size_t i = 0; i < d.size(); ++i) disk[off + i] = d[i];
    return Status::Ok();
  };
  std::vector<uint8_t> a(10, 1), b(10, 2);
  ASSERT_TRUE(wb.Submit(&pool, 0, a, write).ok());
  ASSERT_TRUE(wb.Submit(&pool, 5, b, write).ok());
  ASSERT_TRUE(wb.Drain().ok());
  EXPECT_EQ(disk[4], 1);
  EXPECT_EQ(disk[5], 2);
  EXPECT_EQ(disk[14], 2);
}

TEST(WriteBehindTest, BackgroundErrorIsReportedOnceAtTheNextCall) {
  WriteBehind wb;  // outlives the pool, whose threads use it last
  internal::ThreadPool pool(2);
  std::vector<uint8_t> d(10, 1);
  ASSERT_TRUE(wb.Submit(&pool, 0, d, [](uint64_t, std::span<const uint8_t>) {
                  return Status(Code::kNoSpc, "OST full");
                }).ok());
  Status st = wb.Drain();
  EXPECT_EQ(st.code(), Code::kNoSpc);
  EXPECT_TRUE(wb.Drain().ok());  // reported once
  // An error pending at the next Submit fails that write instead of queuing it.
  ASSERT_TRUE(wb.Submit(&pool, 0, d, [](uint64_t, std::span<const uint8_t>) {
                  return Status(Code::kIO, "disk");
                }).ok());
  std::atomic<bool> ran{false};
  // Overlapping the failed write, so Submit waits for it to finish and then sees its error.
  st = wb.Submit(&pool, 5, d, [&](uint64_t, std::span<const uint8_t>) {
    ran = true;
    return Status::Ok();
  });
  EXPECT_EQ(st.code(), Code::kIO);
  EXPECT_TRUE(wb.Drain().ok());
  EXPECT_FALSE(ran.load());
}

TEST(WriteBehindTest, IdleOnlyWithNothingInFlightAndNoErrorPending) {
  WriteBehind wb;  // outlives the pool, whose threads use it last
  internal::ThreadPool pool(2);
  EXPECT_TRUE(wb.Idle());
  std::atomic<bool> release{false};
  std::vector<uint8_t> d(10, 1);
  ASSERT_TRUE(wb.Submit(&pool, 0, d, [&](uint64_t, std::span<const uint8_t>) {
                  while (!release.load()) std::this_thread::sleep_for(1ms);
                  return Status(Code::kIO, "disk");
                }).ok());
  EXPECT_FALSE(wb.Idle()) << "a write is in flight";
  release = true;
  while (!wb.Idle()) {
    // Done but failed: not idle until the error is reported.
    std::this_thread::sleep_for(5ms);
    if (wb.Drain().code() == Code::kIO) break;
  }
  EXPECT_TRUE(wb.Idle());
}

TEST(WriteBehindTest, InFlightBytesAreBounded) {
  WriteBehind wb;  // outlives the pool, whose threads use it last
  internal::ThreadPool pool(8);
  std::atomic<int> running{0}, peak{0};
  std::vector<uint8_t> d(1000, 1);
  for (uint64_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(wb.Submit(&pool, i * 1000, d,
                          [&](uint64_t, std::span<const uint8_t>) {
                            int now = ++running;
                            int p = peak.load();
                            while (now > p && !peak.compare_exchange_weak(p, now)) {
                            }
                            std::this_thread::sleep_for(5ms);
                            --running;
                            return Status::Ok();
                          },
                          /*max_bytes=*/3000)
                    .ok());
  }
  ASSERT_TRUE(wb.Drain().ok());
  EXPECT_LE(peak.load(), 3);
  EXPECT_GE(peak.load(), 2);
}

// A write that runs until its gate opens.
struct Gate {
  std::atomic<bool> open{false};
  WriteBehind::WriteFn Write(Status result = Status::Ok()) {
    return [this, result](uint64_t, std::span<const uint8_t>) {
      while (!open.load()) std::this_thread::sleep_for(1ms);
      return result;
    };
  }
};

TEST(WriteBehindTest, AfterWritesRunsOnceTheWritesBeforeItFinishedNotTheOnesAfter) {
  WriteBehind wb;  // outlives the pool, whose threads use it last
  internal::ThreadPool pool(4);
  EXPECT_FALSE(wb.AfterWrites([](Status) { ADD_FAILURE() << "nothing was in flight"; }));
  Gate before, other, after;
  std::vector<uint8_t> d(10, 1);
  ASSERT_TRUE(wb.Submit(&pool, 0, d, before.Write(Status(Code::kNoSpc, "OST full"))).ok());
  ASSERT_TRUE(wb.Submit(&pool, 50, d, other.Write()).ok());
  std::atomic<int> ran{0};
  Status seen;
  ASSERT_TRUE(wb.AfterWrites([&](Status st) {
    seen = st;
    ++ran;
  }));
  // Submitted after the callback was asked for: the callback does not wait for it.
  ASSERT_TRUE(wb.Submit(&pool, 100, d, after.Write()).ok());
  other.open = true;  // one of the writes before it finishes, the other does not
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(ran.load(), 0) << "ran before every write it waits for finished";
  before.open = true;
  for (int i = 0; i < 2000 && ran.load() == 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(ran.load(), 1) << "did not run while a later write was still in flight";
  EXPECT_EQ(seen.code(), Code::kNoSpc) << "the error goes to the callback";
  after.open = true;
  EXPECT_TRUE(wb.Drain().ok()) << "the error was taken by the callback";
}

TEST(WriteBehindTest, AfterWritesCallbacksRunInOrderOneAtATime) {
  WriteBehind wb;  // outlives the pool, whose threads use it last
  internal::ThreadPool pool(4);
  Gate a, b, c;
  std::vector<uint8_t> d(10, 1);
  std::mutex mu;
  std::vector<int> order;  // callbacks as they start
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  auto note = [&](int n, std::chrono::milliseconds hold) {
    return [&, n, hold](Status) {
      if (++inside > 1) overlapped = true;
      {
        std::lock_guard lock(mu);
        order.push_back(n);
      }
      std::this_thread::sleep_for(hold);
      --inside;
    };
  };
  auto started = [&] {
    std::lock_guard lock(mu);
    return order.size();
  };
  ASSERT_TRUE(wb.Submit(&pool, 0, d, a.Write()).ok());
  ASSERT_TRUE(wb.AfterWrites(note(1, 100ms)));  // waits for a
  ASSERT_TRUE(wb.Submit(&pool, 100, d, b.Write()).ok());
  ASSERT_TRUE(wb.Submit(&pool, 200, d, c.Write()).ok());
  ASSERT_TRUE(wb.AfterWrites(note(2, 0ms)));  // waits for a, b and c
  b.open = true;  // finishes first: neither may start, as a is in flight
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(started(), 0u);
  a.open = true;  // 1 starts; c finishing while it runs must not start 2 beside it
  for (int i = 0; i < 2000 && started() == 0; ++i) std::this_thread::sleep_for(1ms);
  c.open = true;
  ASSERT_TRUE(wb.Drain().ok());
  for (int i = 0; i < 2000 && (started() < 2 || inside.load() > 0); ++i) {
    std::this_thread::sleep_for(1ms);
  }
  std::lock_guard lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_FALSE(overlapped.load());
}

}  // namespace
}  // namespace stria::client::fuse
