// UnlinkWriteback: what is queued and when, the order against the mount's other MDS
// requests, recalls and failures (the MDS side: mds/leases_test.cc; the whole path through a
// mount: tests/fuse_lease_test.cc).
#include "client/fuse/unlink_writeback.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stria::client::fuse {
namespace {

using namespace std::chrono_literals;
using Clock = UnlinkWriteback::Clock;

// A send function whose batches wait until released, recording what reached "the MDS".
class FakeMds {
 public:
  std::vector<Status> Send(const std::vector<UnlinkWriteback::Item>& items) {
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    --waiting_;
    std::vector<Status> results;
    batches_.emplace_back();
    for (const UnlinkWriteback::Item& it : items) {
      sent_.push_back(it.name);
      batches_.back().push_back(it.name);
      results.push_back(it.name.starts_with("bad") ? Status(Code::kIO, "disk error")
                                                   : Status::Ok());
    }
    cv_.notify_all();
    return results;
  }
  UnlinkWriteback::SendFn Fn() {
    return [this](const std::vector<UnlinkWriteback::Item>& items) { return Send(items); };
  }
  void Hold() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void Release() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  std::vector<std::string> sent() const {
    std::lock_guard lock(mu_);
    return sent_;
  }
  // Until `n` sends wait for the MDS (held).
  void AwaitWaiting(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return waiting_ >= n; });
  }
  std::vector<std::vector<std::string>> batches() const {
    std::lock_guard lock(mu_);
    return batches_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int waiting_ = 0;
  std::vector<std::string> sent_;
  std::vector<std::vector<std::string>> batches_;
};

proto::Credentials Cred() {
  proto::Credentials c;
  c.set_uid(1000);
  return c;
}

TEST(UnlinkWritebackTest, QueuesOnlyUnderALiveGrantAndFlushWaitsForTheMds) {
  FakeMds mds;
  UnlinkWriteback wb(2, 16, mds.Fn(), nullptr);
  EXPECT_FALSE(wb.TryQueue(7, "a", Cred())) << "no grant";
  wb.Granted(7, 30'000, Clock::now(), wb.Epoch());
  wb.Granted(8, 0, Clock::now(), wb.Epoch());
  EXPECT_FALSE(wb.TryQueue(8, "a", Cred())) << "a reply without a grant";
  // A grant with less than kMargin left is not used.
  wb.Granted(9, 1'000, Clock::now(), wb.Epoch());
  EXPECT_FALSE(wb.TryQueue(9, "a", Cred()));

  mds.Hold();
  ASSERT_TRUE(wb.TryQueue(7, "a", Cred()));
  ASSERT_TRUE(wb.TryQueue(7, "b", Cred()));
  auto flushed = std::async(std::launch::async, [&] { wb.Flush(); });
  EXPECT_EQ(flushed.wait_for(100ms), std::future_status::timeout) << "the MDS has not answered";
  EXPECT_EQ(wb.counters().pending, 2u);
  mds.Release();
  flushed.get();
  EXPECT_EQ(mds.sent().size(), 2u);
  const auto c = wb.counters();
  EXPECT_EQ(c.queued, 2u);
  EXPECT_EQ(c.sent, 2u);
  EXPECT_EQ(c.pending, 0u);
}

TEST(UnlinkWritebackTest, NoOtherMdsRequestOvertakesWhatWasQueued) {
  FakeMds mds;
  std::unique_ptr<UnlinkWriteback> wb;
  std::atomic<int> sender_gate_calls{0};
  wb = std::make_unique<UnlinkWriteback>(
      1, 16,
      [&](const std::vector<UnlinkWriteback::Item>& items) {
        // A sender's own request goes through the gate too, and must not wait for itself.
        wb->BeforeMdsCall(proto::OP_MDS_UNLINK);
        ++sender_gate_calls;
        return mds.Send(items);
      },
      nullptr);
  wb->Granted(7, 30'000, Clock::now(), wb->Epoch());
  mds.Hold();
  ASSERT_TRUE(wb->TryQueue(7, "a", Cred()));
  // Requests that end the same in either order go at once.
  for (auto op : {proto::OP_MDS_KEEPALIVE, proto::OP_MDS_CLOSE_BATCH, proto::OP_MGS_GET_CONFIG,
                  proto::OP_MDS_LEASE_REGISTER}) {
    auto f = std::async(std::launch::async, [&] { wb->BeforeMdsCall(op); });
    EXPECT_EQ(f.wait_for(2s), std::future_status::ready) << proto::Opcode_Name(op);
  }
  // A lookup (the name again), a create, a readdir wait for the unlink.
  auto lookup = std::async(std::launch::async, [&] { wb->BeforeMdsCall(proto::OP_MDS_LOOKUP); });
  EXPECT_EQ(lookup.wait_for(100ms), std::future_status::timeout);
  mds.Release();
  EXPECT_EQ(lookup.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(mds.sent(), std::vector<std::string>{"a"});
  EXPECT_EQ(sender_gate_calls.load(), 1);
  wb->Stop();
}

TEST(UnlinkWritebackTest, ARecallEndsTheGrantAndReturnsOnceTheQueueReachedTheMds) {
  FakeMds mds;
  UnlinkWriteback wb(2, 16, mds.Fn(), nullptr);
  wb.Granted(7, 30'000, Clock::now(), wb.Epoch());
  wb.Granted(8, 30'000, Clock::now(), wb.Epoch());
  mds.Hold();
  ASSERT_TRUE(wb.TryQueue(7, "a", Cred()));
  auto recalled = std::async(std::launch::async, [&] { wb.Recall({7}, /*all=*/false); });
  EXPECT_EQ(recalled.wait_for(100ms), std::future_status::timeout);
  mds.Release();
  recalled.get();
  EXPECT_EQ(mds.sent(), std::vector<std::string>{"a"});
  EXPECT_FALSE(wb.TryQueue(7, "b", Cred())) << "recalled";
  EXPECT_TRUE(wb.TryQueue(8, "b", Cred())) << "another directory's grant stays";
  // A grant from a reply to a request that was out during a recall may be recalled already.
  const uint64_t before = wb.Epoch();
  wb.Recall({}, /*all=*/true);
  EXPECT_FALSE(wb.TryQueue(8, "c", Cred())) << "all grants end";
  wb.Granted(7, 30'000, Clock::now(), before);
  EXPECT_FALSE(wb.TryQueue(7, "c", Cred()));
  wb.Granted(7, 30'000, Clock::now(), wb.Epoch());
  EXPECT_TRUE(wb.TryQueue(7, "c", Cred()));
  EXPECT_EQ(wb.counters().recalls, 2u);
}

TEST(UnlinkWritebackTest, AnUnlinkTheMdsRefusesIsReportedAndAFullQueueWaits) {
  FakeMds mds;
  std::mutex mu;
  std::vector<std::string> failed;
  UnlinkWriteback wb(1, 2, mds.Fn(), [&](const UnlinkWriteback::Item& it, const Status& st) {
    std::lock_guard lock(mu);
    failed.push_back(it.name + ": " + st.message());
  });
  wb.Granted(7, 30'000, Clock::now(), wb.Epoch());
  mds.Hold();
  ASSERT_TRUE(wb.TryQueue(7, "bad1", Cred()));
  // One is being sent (the sender took it), two wait: the queue is full.
  mds.AwaitWaiting(1);
  ASSERT_TRUE(wb.TryQueue(7, "x", Cred()));
  ASSERT_TRUE(wb.TryQueue(7, "y", Cred()));
  auto fourth = std::async(std::launch::async, [&] { return wb.TryQueue(7, "z", Cred()); });
  EXPECT_EQ(fourth.wait_for(100ms), std::future_status::timeout) << "waits for room";
  mds.Release();
  EXPECT_TRUE(fourth.get());
  wb.Flush();
  EXPECT_EQ(mds.sent(), (std::vector<std::string>{"bad1", "x", "y", "z"}));
  std::lock_guard lock(mu);
  EXPECT_EQ(failed, std::vector<std::string>{"bad1: disk error"});
  EXPECT_EQ(wb.counters().failed, 1u);
  EXPECT_EQ(wb.counters().sent, 3u);
}

TEST(UnlinkWritebackTest, QueuedUnlinksOfOneDirectoryByOneUserGoAsOneBatch) {
  FakeMds mds;
  std::mutex mu;
  std::vector<std::string> failed;
  UnlinkWriteback wb(1, 256, mds.Fn(), [&](const UnlinkWriteback::Item& it, const Status&) {
    std::lock_guard lock(mu);
    failed.push_back(it.name);
  });
  wb.Granted(7, 30'000, Clock::now(), wb.Epoch());
  wb.Granted(8, 30'000, Clock::now(), wb.Epoch());
  mds.Hold();
  ASSERT_TRUE(wb.TryQueue(7, "first", Cred()));
  mds.AwaitWaiting(1);  // the sender took it and waits for the MDS
  proto::Credentials other_pid = Cred(), root, other_gid = Cred(), other_groups = Cred(),
                     other_job = Cred();
  other_pid.set_pid(4242);
  other_gid.set_gid(5);
  other_groups.add_groups(6);
  other_job.set_jobid("train.7");
  ASSERT_TRUE(wb.TryQueue(7, "a", Cred()));
  ASSERT_TRUE(wb.TryQueue(8, "b", Cred()));
  ASSERT_TRUE(wb.TryQueue(7, "c", other_pid));
  ASSERT_TRUE(wb.TryQueue(7, "d", root));
  ASSERT_TRUE(wb.TryQueue(7, "g", other_gid));
  ASSERT_TRUE(wb.TryQueue(7, "h", other_groups));
  ASSERT_TRUE(wb.TryQueue(7, "j", other_job));
  ASSERT_TRUE(wb.TryQueue(7, "bad", Cred()));
  std::vector<std::string> more, rest;
  for (int i = 0; i < 70; ++i) {
    const std::string name = "e" + std::to_string(i);
    ASSERT_TRUE(wb.TryQueue(7, name, Cred()));
    (i < 61 ? more : rest).push_back(name);
  }
  mds.Release();
  wb.Flush();
  std::vector<std::string> second = {"a", "c", "bad"};
  second.insert(second.end(), more.begin(), more.end());
  ASSERT_EQ(second.size(), UnlinkWriteback::kMaxBatch);
  const std::vector<std::vector<std::string>> want = {{"first"}, second, {"b"}, {"d"},
                                                      {"g"},     {"h"},  {"j"}, rest};
  EXPECT_EQ(mds.batches(), want);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(failed, std::vector<std::string>{"bad"}) << "only the refused one of its batch";
  }
  const auto c = wb.counters();
  EXPECT_EQ(c.batches, 8u);
  EXPECT_EQ(c.sent, 78u);
  EXPECT_EQ(c.failed, 1u);
}

TEST(UnlinkWritebackTest, AnMdsRestartEndsEveryGrantAndWhatWasQueuedStillGoes) {
  FakeMds mds;
  UnlinkWriteback wb(1, 16, mds.Fn(), nullptr);
  wb.Granted(7, 30'000, Clock::now(), wb.Epoch());
  wb.Granted(8, 30'000, Clock::now(), wb.Epoch());
  const uint64_t before = wb.Epoch();
  mds.Hold();
  ASSERT_TRUE(wb.TryQueue(7, "a", Cred()));
  wb.MdsRestarted();  // the restarted MDS knows of no grant
  EXPECT_FALSE(wb.TryQueue(7, "b", Cred()));
  EXPECT_FALSE(wb.TryQueue(8, "b", Cred()));
  // A grant in the reply to a request sent before the restart is not taken either.
  wb.Granted(7, 30'000, Clock::now(), before);
  EXPECT_FALSE(wb.TryQueue(7, "b", Cred()));
  mds.Release();
  wb.Flush();
  EXPECT_EQ(mds.sent(), std::vector<std::string>{"a"});
  wb.Granted(7, 30'000, Clock::now(), wb.Epoch());  // granted again by the new MDS
  EXPECT_TRUE(wb.TryQueue(7, "b", Cred()));
}

TEST(UnlinkWritebackTest, StopSendsWhatIsQueuedAndQueuesNothingAfter) {
  FakeMds mds;
  UnlinkWriteback wb(2, 16, mds.Fn(), nullptr);
  wb.Granted(7, 30'000, Clock::now(), wb.Epoch());
  mds.Hold();
  ASSERT_TRUE(wb.TryQueue(7, "a", Cred()));
  ASSERT_TRUE(wb.TryQueue(7, "b", Cred()));
  ASSERT_TRUE(wb.TryQueue(7, "c", Cred()));
  std::thread release([&] {
    std::this_thread::sleep_for(50ms);
    mds.Release();
  });
  wb.Stop();
  release.join();
  EXPECT_EQ(mds.sent().size(), 3u);
  EXPECT_FALSE(wb.TryQueue(7, "d", Cred()));
}

}  // namespace
}  // namespace stria::client::fuse
