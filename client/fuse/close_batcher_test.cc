// CloseBatcher's gathering, its bounds, and what happens when the MDS cannot be reached.
// The send function stands where Metadata::CloseBatch goes; the real path through a mount
// and an MDS is tests/fuse_close_batch_test.cc.
#include "client/fuse/close_batcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace stria::client {
namespace {

using std::chrono::milliseconds;

proto::CloseRequest Close(uint64_t handle) {
  proto::CloseRequest c;
  c.set_ino(handle + 100);
  c.set_handle(handle);
  return c;
}

struct Sent {
  std::mutex mu;
  std::vector<int> batch_sizes;
  Status answer = Status::Ok();

  CloseBatcher::SendFn Fn() {
    return [this](const proto::CloseBatchRequest& r) -> Result<proto::CloseBatchReply> {
      std::lock_guard lock(mu);
      batch_sizes.push_back(r.closes_size());
      if (!answer.ok()) return answer;
      proto::CloseBatchReply rep;
      rep.set_closed(r.closes_size());
      return rep;
    };
  }
  std::vector<int> Sizes() {
    std::lock_guard lock(mu);
    return batch_sizes;
  }
};

TEST(CloseBatcherTest, GathersUntilAFlushAndSplitsAtTheBatchLimit) {
  Sent sent;
  CloseBatcher b(milliseconds(60'000), sent.Fn());
  for (uint64_t h = 1; h <= 3; ++h) b.Add(Close(h));
  EXPECT_TRUE(sent.Sizes().empty()) << "nothing goes before the window or a flush";
  b.Flush();
  EXPECT_EQ(sent.Sizes(), std::vector<int>{3});
  for (uint64_t h = 0; h < CloseBatcher::kMaxBatch + 5; ++h) b.Add(Close(h + 10));
  b.Flush();
  const std::vector<int> sizes = sent.Sizes();
  ASSERT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes[1], static_cast<int>(CloseBatcher::kMaxBatch)) << "a full batch goes at once";
  EXPECT_EQ(sizes[2], 5);
  const CloseBatcher::Counters c = b.counters();
  EXPECT_EQ(c.gathered, CloseBatcher::kMaxBatch + 8);
  EXPECT_EQ(c.batches, 3u);
  EXPECT_EQ(c.failed, 0u);
}

TEST(CloseBatcherTest, TheWindowSendsWithoutAFlush) {
  Sent sent;
  CloseBatcher b(milliseconds(5), sent.Fn());
  b.Add(Close(1));
  for (int i = 0; i < 500 && sent.Sizes().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(sent.Sizes(), std::vector<int>{1});
}

TEST(CloseBatcherTest, AnUnreachableMdsCountsTheClosesAsFailedAndFlushStillReturns) {
  Sent sent;
  sent.answer = Status(Code::kDisconnected, "MDS down");
  CloseBatcher b(milliseconds(60'000), sent.Fn());
  b.Add(Close(1));
  b.Add(Close(2));
  b.Flush();
  EXPECT_EQ(b.counters().failed, 2u);
  // The next batch goes as usual.
  sent.answer = Status::Ok();
  b.Add(Close(3));
  b.Flush();
  EXPECT_EQ(sent.Sizes(), (std::vector<int>{2, 1}));
  EXPECT_EQ(b.counters().failed, 2u);
}

TEST(CloseBatcherTest, DestroyingItSendsWhatIsLeft) {
  Sent sent;
  {
    CloseBatcher b(milliseconds(60'000), sent.Fn());
    b.Add(Close(1));
    b.Add(Close(2));
  }
  EXPECT_EQ(sent.Sizes(), std::vector<int>{2});
}

}  // namespace
}  // namespace stria::client
