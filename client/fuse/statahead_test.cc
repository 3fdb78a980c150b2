#include "client/fuse/statahead.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace stria::client::fuse {
namespace {

using std::chrono::milliseconds;

TEST(StataheadNames, SplitAndJoinKeepTheNamesShape) {
  NamePattern p;
  uint64_t n = 0;
  ASSERT_TRUE(SplitName("img_000123.jpg", &p, &n));
  EXPECT_EQ(p.prefix, "img_");
  EXPECT_EQ(p.suffix, ".jpg");
  EXPECT_EQ(p.width, 6);
  EXPECT_EQ(n, 123u);
  EXPECT_EQ(JoinName(p, 124), "img_000124.jpg");
  EXPECT_EQ(JoinName(p, 1234567), "img_1234567.jpg");  // past the padding: all digits
  ASSERT_TRUE(SplitName("shard9", &p, &n));
  EXPECT_EQ(p.width, 0);
  EXPECT_EQ(JoinName(p, 10), "shard10");
  ASSERT_TRUE(SplitName("0", &p, &n));  // a lone 0 is not padding
  EXPECT_EQ(p.width, 0);
  EXPECT_EQ(n, 0u);
  ASSERT_TRUE(SplitName("epoch2-part0007", &p, &n));  // the last run of digits counts
  EXPECT_EQ(p.prefix, "epoch2-part");
  EXPECT_EQ(n, 7u);
  EXPECT_FALSE(SplitName("README", &p, &n));
  EXPECT_FALSE(SplitName("x1234567890123456789", &p, &n));  // 19 digits
}

// A stand-in for the MDS: each name's reply carries its number as the inode; the names in
// `absent` do not exist. fetch can be held until released.
class FakeMds {
 public:
  std::vector<Result<AheadEntry>> Fetch(const Statahead::Job& job) {
    std::unique_lock lock(mu_);
    jobs_.push_back(job);
    cv_.notify_all();
    cv_.wait(lock, [&] { return !hold_; });
    std::vector<Result<AheadEntry>> out;
    for (const std::string& name : job.names) {
      NamePattern p;
      uint64_t n = 0;
      if (down_) {
        out.push_back(Status(Code::kTimeout, "the MDS does not answer"));
        continue;
      }
      if (absent_.contains(name) || !SplitName(name, &p, &n)) {
        out.push_back(Status(Code::kNoEnt, name));
        continue;
      }
      AheadEntry e;
      e.rep.mutable_attr()->set_ino(n);
      e.cred = job.cred;
      out.push_back(std::move(e));
    }
    return out;
  }
  std::vector<Statahead::Job> jobs() {
    std::lock_guard lock(mu_);
    return jobs_;
  }
  void Hold(bool on) {
    std::lock_guard lock(mu_);
    hold_ = on;
    cv_.notify_all();
  }
  bool WaitForJobs(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return jobs_.size() >= n; });
  }
  void Down(bool down) {
    std::lock_guard lock(mu_);
    down_ = down;
  }
  void Absent(const std::string& name) {
    std::lock_guard lock(mu_);
    absent_.insert(name);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Statahead::Job> jobs_;
  std::set<std::string> absent_;
  bool hold_ = false;
  bool down_ = false;
};

std::string Name(uint64_t n) { return fmt::format("img_{:06}.jpg", n); }

class StataheadTest : public ::testing::Test {
 protected:
  void Make(int window, milliseconds keep, bool want_open = true) {
    ahead_ = std::make_unique<Statahead>(
        window, keep, [this](const Statahead::Job& j) { return mds_.Fetch(j); },
        [this](AheadEntry&, Statahead::Why) { ++dropped_; },
        [want_open](uint64_t) { return want_open; });
  }
  // A kernel lookup: a reply found here is used, as StriaFs::UseAhead does.
  std::optional<AheadEntry> Lookup(uint64_t dir, uint64_t n) {
    std::optional<AheadEntry> e = ahead_->Lookup(dir, Name(n), cred_);
    if (e) ahead_->Used(dir);
    return e;
  }

  FakeMds mds_;
  proto::Credentials cred_;
  std::atomic<int> dropped_{0};
  std::unique_ptr<Statahead> ahead_;
};

TEST_F(StataheadTest, ANumberedRunIsAskedAheadAndItsLookupsAnsweredHere) {
  Make(32, milliseconds(5000));
  constexpr uint64_t kRun = Statahead::kMinRun;
  constexpr uint64_t kFirst = Statahead::kFirstWindow;
  // The first lookups of the run go to the MDS (nothing kept) until kMinRun have come.
  for (uint64_t n = 1; n < kRun; ++n) EXPECT_FALSE(Lookup(7, n));
  EXPECT_TRUE(mds_.jobs().empty());
  EXPECT_FALSE(Lookup(7, kRun));
  ASSERT_TRUE(mds_.WaitForJobs(1));
  const Statahead::Job job = mds_.jobs().front();
  EXPECT_EQ(job.dir, 7u);
  EXPECT_TRUE(job.open);
  ASSERT_EQ(job.names.size(), kFirst);  // the first window, after the highest looked up
  EXPECT_EQ(job.names.front(), Name(kRun + 1));
  EXPECT_EQ(job.names.back(), Name(kRun + kFirst));
  // Each name after it is answered here (waiting for its request if it is still out),
  // once: the run asks again half a window before the readers reach the end of what it
  // asked, and asks further ahead as its replies are used.
  for (uint64_t n = kRun + 1; n <= kRun + 40; ++n) {
    std::optional<AheadEntry> e = Lookup(7, n);
    ASSERT_TRUE(e) << n;
    EXPECT_EQ(e->rep.attr().ino(), n);
  }
  EXPECT_FALSE(ahead_->Lookup(7, Name(kRun + 1), cred_));  // taken already
  const std::vector<Statahead::Job> jobs = mds_.jobs();
  std::set<std::string> asked;
  for (const Statahead::Job& j : jobs) {
    for (const std::string& n : j.names) EXPECT_TRUE(asked.insert(n).second) << n << " twice";
  }
  EXPECT_LE(jobs.size(), 7u);
  EXPECT_GE(jobs.back().names.size(), 16u) << "the window grew";
  EXPECT_TRUE(asked.contains(Name(kRun + 40 + 16))) << "asked well ahead of the readers";
  const Statahead::Counters c = ahead_->counters();
  EXPECT_EQ(c.runs, 1u);
  EXPECT_EQ(c.hits, 40u);
  EXPECT_EQ(c.requests, jobs.size());
  // Another directory is not answered from this one's.
  EXPECT_FALSE(Lookup(8, kRun + 41));
}

TEST_F(StataheadTest, LookupsOutOfOrderWithinTheJitterStillMakeARun) {
  Make(16, milliseconds(5000));
  // Workers reading in turn: their lookups arrive a little out of order. The fourth of
  // the run asks for the window after the highest seen.
  for (uint64_t n : {2, 1, 4, 3}) Lookup(3, n);
  ASSERT_TRUE(mds_.WaitForJobs(1));
  EXPECT_EQ(mds_.jobs().front().names.front(), Name(5));
  EXPECT_EQ(mds_.jobs().front().names.back(), Name(4 + Statahead::kFirstWindow));
}

TEST_F(StataheadTest, ShuffledOrUnnumberedNamesAskNothingAhead) {
  Make(16, milliseconds(5000));
  for (uint64_t n : {500, 12, 9000, 77, 3100, 250, 6, 4444}) EXPECT_FALSE(Lookup(1, n));
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) {
    EXPECT_FALSE(ahead_->Lookup(2, name, cred_));
  }
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(mds_.jobs().empty());
  EXPECT_EQ(ahead_->counters().runs, 0u);
}

TEST_F(StataheadTest, AMissingNameIsLeftToTheMds) {
  Make(8, milliseconds(5000));
  mds_.Absent(Name(6));
  for (uint64_t n = 1; n <= 4; ++n) Lookup(4, n);
  ASSERT_TRUE(mds_.WaitForJobs(1));
  EXPECT_TRUE(Lookup(4, 5));
  EXPECT_FALSE(Lookup(4, 6));  // not kept: asked again of the MDS by the caller
  EXPECT_TRUE(Lookup(4, 7));
}

TEST_F(StataheadTest, ARevocationOrALocalChangeDropsWhatIsKeptAndWhatIsInFlight) {
  Make(8, milliseconds(5000));
  for (uint64_t n = 1; n <= 4; ++n) Lookup(5, n);
  ASSERT_TRUE(mds_.WaitForJobs(1));
  ASSERT_TRUE(Lookup(5, 5));  // the request came back
  ahead_->Clear();
  EXPECT_FALSE(Lookup(5, 6));     // kept before the revocation: dropped
  EXPECT_EQ(dropped_.load(), 7);  // 6..12 were kept; 6's lookup found none
  // A request out during a change of its directory: what it brings is never used.
  mds_.Hold(true);
  const size_t before = mds_.jobs().size();
  for (uint64_t n = 100; n <= 103; ++n) Lookup(6, n);  // asks 104..111
  ASSERT_TRUE(mds_.WaitForJobs(before + 1));
  ahead_->DropDir(6);
  mds_.Hold(false);
  EXPECT_FALSE(Lookup(6, 105));
  // The names of the request in flight come back unused and are dropped.
  for (int i = 0; i < 100 && dropped_.load() < 7 + 8; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(dropped_.load(), 7 + 8);
  EXPECT_EQ(ahead_->counters().hits, 1u);
}

TEST_F(StataheadTest, AWaitingLookupIsAnsweredByTheRequestInFlight) {
  Make(8, milliseconds(5000));
  mds_.Hold(true);
  for (uint64_t n = 1; n <= 4; ++n) Lookup(9, n);
  ASSERT_TRUE(mds_.WaitForJobs(1));
  std::optional<AheadEntry> got;
  std::thread waiter([&] { got = Lookup(9, 6); });
  std::this_thread::sleep_for(milliseconds(50));
  mds_.Hold(false);
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->rep.attr().ino(), 6u);
  EXPECT_EQ(mds_.jobs().size(), 1u);  // not asked again
}

TEST_F(StataheadTest, UnusedRepliesExpireAndARunThatWastesStopsAsking) {
  Make(8, milliseconds(30));
  // A run whose names are asked ahead but never looked up (the kernel had them).
  for (uint64_t n = 1; n <= 4; ++n) Lookup(2, n);
  ASSERT_TRUE(mds_.WaitForJobs(1));
  for (int i = 0; i < 200 && (ahead_->counters().misses < 8 || dropped_.load() < 8); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(ahead_->counters().misses, 8u);
  EXPECT_EQ(dropped_.load(), 8);
  EXPECT_EQ(ahead_->counters().wrong, 1u);  // its credit (one window) is spent
  // The run goes on, but asks nothing more.
  for (uint64_t n = 20; n <= 30; ++n) Lookup(2, n);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(mds_.jobs().size(), 1u);
}

TEST_F(StataheadTest, DropIfTakesTheMatchingRepliesAndThoseInFlight) {
  Make(8, milliseconds(5000));
  for (uint64_t n = 1; n <= 4; ++n) Lookup(2, n);
  ASSERT_TRUE(mds_.WaitForJobs(1));
  ASSERT_TRUE(Lookup(2, 5));  // the request came back: 6..12 kept
  EXPECT_EQ(ahead_->counters().kept, 7u);
  ahead_->DropIf([](const proto::EntryReply& r) { return r.attr().ino() % 2 == 0; });
  EXPECT_EQ(ahead_->counters().kept, 3u);  // 7, 9, 11 stay; 6, 8, 10, 12 go
  EXPECT_EQ(dropped_.load(), 4);
  EXPECT_FALSE(Lookup(2, 6));
  EXPECT_TRUE(Lookup(2, 7));
}

TEST_F(StataheadTest, NamesAskedInVainStopTheRun) {
  // An MDS that answers none of them (one from before batched opens refuses them all).
  Make(8, milliseconds(5000));
  for (uint64_t n = 1; n <= 100; ++n) mds_.Absent(Name(n));
  for (uint64_t n = 1; n <= 60; ++n) Lookup(3, n);
  std::this_thread::sleep_for(milliseconds(50));
  const Statahead::Counters c = ahead_->counters();
  EXPECT_EQ(c.wrong, 1u);
  EXPECT_LE(c.asked, 8u + 8u) << "a window's credit, and what was asked before it ran out";
  EXPECT_EQ(c.unkept, c.asked);
}

TEST_F(StataheadTest, AnMdsThatDoesNotAnswerDoesNotStopTheRun) {
  Make(8, milliseconds(5000));
  mds_.Down(true);  // failing over: every request of the window times out
  for (uint64_t n = 1; n <= 4; ++n) Lookup(4, n);
  ASSERT_TRUE(mds_.WaitForJobs(1));
  for (uint64_t n = 5; n <= 12; ++n) EXPECT_FALSE(Lookup(4, n));
  mds_.Down(false);
  int hits = 0;
  for (uint64_t n = 13; n <= 60; ++n) hits += Lookup(4, n) ? 1 : 0;
  EXPECT_GE(hits, 30) << "the run asks again once the MDS answers";
  EXPECT_EQ(ahead_->counters().wrong, 0u);
}

TEST_F(StataheadTest, StataheadMaxCanBeChangedWhileRunning) {
  Make(0, milliseconds(5000));
  for (uint64_t n = 1; n <= 10; ++n) EXPECT_FALSE(Lookup(1, n));
  EXPECT_TRUE(mds_.jobs().empty());
  ahead_->set_window(16);
  for (uint64_t n = 11; n <= 14; ++n) Lookup(1, n);  // a run begins
  ASSERT_TRUE(mds_.WaitForJobs(1));
  EXPECT_EQ(mds_.jobs().front().names.front(), Name(15));
  ahead_->set_window(0);
  const size_t jobs = mds_.jobs().size();
  for (uint64_t n = 15; n <= 40; ++n) Lookup(1, n);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(mds_.jobs().size(), jobs);
  // Back on: the run asks again from where its readers are.
  ahead_->set_window(16);
  Lookup(1, 41);
  ASSERT_TRUE(mds_.WaitForJobs(jobs + 1));
  EXPECT_EQ(mds_.jobs().back().names.back(), Name(41 + Statahead::kFirstWindow));
}

TEST_F(StataheadTest, OffAsksNothing) {
  Make(0, milliseconds(5000));
  for (uint64_t n = 1; n <= 20; ++n) EXPECT_FALSE(Lookup(1, n));
  EXPECT_TRUE(mds_.jobs().empty());
}

}  // namespace
}  // namespace stria::client::fuse
