// PreOpens: which directories' lookups carry the open intent, and that every pre-open is
// either taken once or closed once; LocalChanges: which lookups in flight saw their file
// change here. The close function stands where StriaFs::ClosePreOpen
// goes; the real path through a mount and an MDS is in tests/fuse_lease_test.cc
// (LeaseTest.ReadsTakeTheOpenThatTheirLookupBrought and the tests after it).
#include "client/fuse/pre_opens.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace stria::client::fuse {
namespace {

using std::chrono::milliseconds;

struct Closed {
  std::mutex mu;
  std::vector<uint64_t> handles;

  PreOpens::CloseFn Fn() {
    return [this](const PreOpen& p) {
      std::lock_guard lock(mu);
      handles.push_back(p.reply.handle());
    };
  }
  std::vector<uint64_t> Handles() {
    std::lock_guard lock(mu);
    return handles;
  }
};

std::shared_ptr<PreOpen> Made(uint64_t dir, uint64_t handle) {
  auto p = std::make_shared<PreOpen>();
  p->parent = dir;
  p->ino = handle + 1000;
  p->reply.set_handle(handle);
  return p;
}

// A lookup in flight keeps its open unless its own file changed meanwhile: changes of other
// files do not count, and a lookup that more changes happened across than are remembered
// counts its file as changed.
TEST(LocalChangesTest, OnlyAChangeOfTheLookedUpFileCounts) {
  LocalChanges changes;
  const uint64_t before = changes.Now();
  EXPECT_FALSE(changes.ChangedSince(before, 7));
  changes.Note(8);
  changes.Note(9);
  EXPECT_EQ(changes.Now(), before + 2);
  EXPECT_FALSE(changes.ChangedSince(before, 7)) << "other files changed";
  EXPECT_TRUE(changes.ChangedSince(before, 9));
  EXPECT_FALSE(changes.ChangedSince(changes.Now(), 9)) << "changed before the lookup was sent";

  const uint64_t mid = changes.Now();
  changes.Note(7);
  EXPECT_TRUE(changes.ChangedSince(before, 7));
  EXPECT_TRUE(changes.ChangedSince(mid, 7));

  const uint64_t long_ago = changes.Now();
  for (uint64_t i = 0; i < LocalChanges::kLog; ++i) changes.Note(100 + i);
  EXPECT_FALSE(changes.ChangedSince(long_ago, 7)) << "the log still reaches back";
  changes.Note(100);
  EXPECT_TRUE(changes.ChangedSince(long_ago, 7)) << "beyond the log: counted as changed";
  EXPECT_FALSE(changes.ChangedSince(changes.Now() - LocalChanges::kLog, 7));
}

TEST(PreOpensTest, ADirectoryWantsTheIntentOnceOpensFollowItsLookups) {
  Closed closed;
  PreOpens pre(milliseconds(1000), closed.Fn());
  EXPECT_FALSE(pre.Want(7));
  pre.OpenedAfterLookup(7);
  EXPECT_FALSE(pre.Want(7)) << "one open is not a pattern";
  pre.OpenedAfterLookup(7);
  EXPECT_TRUE(pre.Want(7));
  EXPECT_FALSE(pre.Want(8)) << "scores are per directory";

  // A pre-open taken keeps the score up; one wasted takes it down at once.
  auto used = Made(7, 1);
  pre.Hold(used);
  ASSERT_TRUE(pre.Take(*used));
  EXPECT_TRUE(pre.Want(7));
  auto unused = Made(7, 2);
  pre.Hold(unused);
  ASSERT_TRUE(pre.Drop(*unused));
  EXPECT_FALSE(pre.Want(7));
  EXPECT_EQ(closed.Handles(), std::vector<uint64_t>{2});
  const auto c = pre.counters();
  EXPECT_EQ(c.held, 2u);
  EXPECT_EQ(c.used, 1u);
  EXPECT_EQ(c.wasted, 1u);
}

TEST(PreOpensTest, PreOpensHeldAndNotTakenSoonStopTheIntent) {
  Closed closed;
  PreOpens pre(milliseconds(60'000), closed.Fn());
  for (int i = 0; i < 20; ++i) pre.OpenedAfterLookup(7);
  int asked = 0;
  for (uint64_t h = 1; h <= 20; ++h) {  // a stat-only scan: nothing is taken, nor expires
    if (!pre.Want(7)) break;
    ++asked;
    pre.Hold(Made(7, h));
  }
  EXPECT_EQ(asked, PreOpens::kMaxScore - PreOpens::kWantScore + 1);
  EXPECT_EQ(pre.counters().pending, static_cast<size_t>(asked));
}

TEST(PreOpensTest, LookupsAskedTogetherWasteNoMoreThanOneAfterAnother) {
  // Lookups of one directory in flight at once (FUSE_PARALLEL_DIROPS): each Want counts
  // when it is asked, before any reply is held.
  Closed closed;
  PreOpens pre(milliseconds(60'000), closed.Fn());
  for (int i = 0; i < 20; ++i) pre.OpenedAfterLookup(7);
  int asked = 0;
  for (int i = 0; i < 20; ++i) asked += pre.Want(7) ? 1 : 0;
  EXPECT_EQ(asked, PreOpens::kMaxScore - PreOpens::kWantScore + 1);
  // One whose reply brought no open (a directory, a file open for writing elsewhere) gives
  // its point back.
  pre.NotHeld(7);
  EXPECT_TRUE(pre.Want(7));
  EXPECT_FALSE(pre.Want(7));
}

TEST(PreOpensTest, LostLeasesCloseEveryHeldPreOpenOnce) {
  Closed closed;
  PreOpens pre(milliseconds(60'000), closed.Fn());
  auto a = Made(7, 1), b = Made(8, 2), c = Made(9, 3);
  pre.Hold(a);
  pre.Hold(b);
  pre.Hold(c);
  ASSERT_TRUE(pre.Take(*b));
  pre.DiscardAll();
  EXPECT_EQ(closed.Handles(), (std::vector<uint64_t>{1, 3}));
  EXPECT_FALSE(pre.Take(*a)) << "an OPEN that finds it on its inode asks the MDS";
  EXPECT_FALSE(pre.Drop(*c)) << "closed once";
  EXPECT_EQ(pre.counters().pending, 0u);
  EXPECT_EQ(pre.counters().wasted, 2u);
}

TEST(PreOpensTest, OffWantsNothing) {
  Closed closed;
  PreOpens pre(milliseconds(0), closed.Fn());
  for (int i = 0; i < 10; ++i) pre.OpenedAfterLookup(7);
  EXPECT_FALSE(pre.Want(7));
}

TEST(PreOpensTest, APreOpenNotTakenInTimeIsClosedOnceAndCannotBeTakenAfter) {
  Closed closed;
  PreOpens pre(milliseconds(50), closed.Fn());
  auto p = Made(7, 5);
  pre.Hold(p);
  for (int i = 0; i < 200 && closed.Handles().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(closed.Handles(), std::vector<uint64_t>{5});
  EXPECT_FALSE(pre.Take(*p)) << "closed already: the OPEN must ask the MDS";
  EXPECT_EQ(pre.counters().wasted, 1u);
  EXPECT_EQ(pre.counters().pending, 0u);
}

TEST(PreOpensTest, ATakenPreOpenIsNeverClosedHere) {
  Closed closed;
  PreOpens pre(milliseconds(20), closed.Fn());
  auto p = Made(7, 6);
  pre.Hold(p);
  ASSERT_TRUE(pre.Take(*p));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_TRUE(closed.Handles().empty()) << "the file handle closes it at release";
  EXPECT_FALSE(pre.Take(*p)) << "taken once only";
  EXPECT_FALSE(pre.Drop(*p)) << "nor closed after";
}

TEST(PreOpensTest, StopClosesWhatIsHeldAndWhatComesAfter) {
  Closed closed;
  PreOpens pre(milliseconds(60'000), closed.Fn());
  auto a = Made(7, 1), b = Made(7, 2), c = Made(7, 3);
  pre.Hold(a);
  pre.Hold(b);
  ASSERT_TRUE(pre.Take(*b));
  pre.Stop();
  EXPECT_EQ(closed.Handles(), std::vector<uint64_t>{1});
  pre.Hold(c);  // a lookup's reply that arrives as the mount goes
  EXPECT_EQ(closed.Handles(), (std::vector<uint64_t>{1, 3}));
}

}  // namespace
}  // namespace stria::client::fuse
