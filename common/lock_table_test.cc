#include "common/lock_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace stria {
namespace {

const LockOwner kA{"client-a", 1};
const LockOwner kA2{"client-a", 2};
const LockOwner kB{"client-b", 1};

HeldLock L(const LockOwner& o, LockMode m, uint64_t start, uint64_t end,
           LockKind kind = LockKind::kPosix) {
  HeldLock l;
  l.owner = o;
  l.mode = m;
  l.start = start;
  l.end = end;
  l.kind = kind;
  return l;
}

// The owner's locks on ino 1 as "R0-9 W20-29" in start order.
std::string Dump(const LockTable& t, const LockOwner& o) {
  auto all = t.All();
  std::sort(all.begin(), all.end(),
            [](const auto& x, const auto& y) { return x.second.start < y.second.start; });
  std::string s;
  for (const auto& [ino, l] : all) {
    if (ino != 1 || !(l.owner == o)) continue;
    if (!s.empty()) s += ' ';
    s += (l.mode == LockMode::kWrite ? "W" : "R") + std::to_string(l.start) + "-" +
         (l.end == kLockEof ? std::string("eof") : std::to_string(l.end));
  }
  return s;
}

TEST(LockTableTest, WriteExcludesOtherOwnersButReadsShare) {
  LockTable t;
  EXPECT_FALSE(t.Set(1, L(kA, LockMode::kRead, 0, 99)));
  EXPECT_FALSE(t.Set(1, L(kB, LockMode::kRead, 50, 150)));
  auto c = t.Set(1, L(kB, LockMode::kWrite, 0, 10));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->owner, kA);
  EXPECT_FALSE(t.Set(1, L(kB, LockMode::kWrite, 100, 200))) << "no overlap with A's lock";
  EXPECT_FALSE(t.FindConflict(2, L(kB, LockMode::kWrite, 0, kLockEof))) << "other inode";
  EXPECT_TRUE(t.FindConflict(1, L(kA2, LockMode::kRead, 120, 120)))
      << "two owners of one client conflict too";
}

TEST(LockTableTest, OwnLocksAreReplacedSplitAndMerged) {
  LockTable t;
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kWrite, 0, 99)));
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kRead, 40, 59)));
  EXPECT_EQ(Dump(t, kA), "W0-39 R40-59 W60-99");
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kWrite, 40, 59)));
  EXPECT_EQ(Dump(t, kA), "W0-99") << "adjacent write locks merge back";
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kUnlock, 10, 19)));
  EXPECT_EQ(Dump(t, kA), "W0-9 W20-99");
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kWrite, 100, kLockEof)));
  EXPECT_EQ(Dump(t, kA), "W0-9 W20-eof");
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kUnlock, 0, kLockEof)));
  EXPECT_EQ(t.size(), 0u);
}

TEST(LockTableTest, ApplyRecordsAGrantThatSetWouldRefuse) {
  // A mirror of the authority's grants: B's lock arrives before A's release is applied.
  LockTable t;
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kWrite, 0, kLockEof)));
  ASSERT_TRUE(t.Set(1, L(kB, LockMode::kWrite, 0, 99))) << "Set refuses it";
  EXPECT_FALSE(t.Holds(1, kB, LockKind::kPosix));
  t.Apply(1, L(kB, LockMode::kWrite, 0, 99));
  EXPECT_TRUE(t.Holds(1, kB, LockKind::kPosix));
  t.ReleaseOwner(1, kA, LockKind::kPosix);
  EXPECT_EQ(Dump(t, kB), "W0-99");
  t.Apply(1, L(kB, LockMode::kUnlock, 0, 49));
  EXPECT_EQ(Dump(t, kB), "W50-99") << "Apply unlocks and splits as Set does";
}

TEST(LockTableTest, UnlockNeverConflicts) {
  LockTable t;
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kWrite, 0, kLockEof)));
  EXPECT_FALSE(t.Set(1, L(kB, LockMode::kUnlock, 0, kLockEof)));
  EXPECT_EQ(t.size(), 1u) << "B's unlock does not touch A's lock";
}

TEST(LockTableTest, FlockAndPosixAreIndependent) {
  LockTable t;
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kWrite, 0, kLockEof, LockKind::kFlock)));
  EXPECT_FALSE(t.Set(1, L(kB, LockMode::kWrite, 0, kLockEof, LockKind::kPosix)));
  EXPECT_TRUE(t.Set(1, L(kB, LockMode::kRead, 0, kLockEof, LockKind::kFlock)));
  // flock conversion by the same owner: exclusive to shared.
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kRead, 0, kLockEof, LockKind::kFlock)));
  EXPECT_FALSE(t.Set(1, L(kB, LockMode::kRead, 0, kLockEof, LockKind::kFlock)));
  EXPECT_TRUE(t.Holds(1, kA, LockKind::kFlock));
  t.ReleaseOwner(1, kA, LockKind::kFlock);
  EXPECT_FALSE(t.Holds(1, kA, LockKind::kFlock));
  EXPECT_TRUE(t.Holds(1, kB, LockKind::kPosix)) << "release of flock leaves POSIX locks";
}

TEST(LockTableTest, ReleaseClientDropsEveryOwnerOfThatClient) {
  LockTable t;
  ASSERT_FALSE(t.Set(1, L(kA, LockMode::kRead, 0, 9)));
  ASSERT_FALSE(t.Set(2, L(kA2, LockMode::kWrite, 0, 9)));
  ASSERT_FALSE(t.Set(3, L(kB, LockMode::kWrite, 0, 9)));
  EXPECT_EQ(t.ReleaseClient("client-a"), 2u);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_FALSE(t.FindConflict(2, L(kB, LockMode::kWrite, 0, 9)));
}

}  // namespace
}  // namespace stria
