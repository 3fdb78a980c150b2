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
  internal::ThreadPool pool(2);
  WriteBehind wb;
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
  internal::ThreadPool pool(2);
  WriteBehind wb;
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
  internal::ThreadPool pool(4);
  WriteBehind wb;
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
  internal::ThreadPool pool(2);
  WriteBehind wb;
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
  internal::ThreadPool pool(2);
  WriteBehind wb;
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
  internal::ThreadPool pool(8);
  WriteBehind wb;
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

}  // namespace
}  // namespace stria::client::fuse
