#include "client/fuse/dir_attr_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

namespace stria::client::fuse {
namespace {

using std::chrono::milliseconds;

proto::Attr Dir(uint64_t ino, int64_t ctime, uint32_t nlink = 2) {
  proto::Attr a;
  a.set_ino(ino);
  a.set_mode(S_IFDIR | 0755);
  a.set_ctime_ns(ctime);
  a.set_nlink(nlink);
  return a;
}

TEST(DirAttrCacheTest, AnswersUntilTheTtlThenForgets) {
  DirAttrCache c(milliseconds(1000));
  const auto t0 = DirAttrCache::Clock::now();
  c.Put(Dir(7, 100), t0);
  auto a = c.Get(7, t0 + milliseconds(999));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->ctime_ns(), 100);
  EXPECT_FALSE(c.Get(7, t0 + milliseconds(1000)).has_value());
  EXPECT_EQ(c.size(), 0u) << "an expired entry is dropped when seen";
  EXPECT_FALSE(c.Get(8, t0).has_value());
}

TEST(DirAttrCacheTest, NeverGoesBackToAnOlderState) {
  DirAttrCache c(milliseconds(1000));
  const auto t0 = DirAttrCache::Clock::now();
  c.Put(Dir(7, 200, 3), t0);
  c.Put(Dir(7, 150, 2), t0);  // a reply that lost the race
  EXPECT_EQ(c.Get(7, t0)->nlink(), 3u);
  c.Put(Dir(7, 200, 4), t0);  // same ctime: the later reply wins
  EXPECT_EQ(c.Get(7, t0)->nlink(), 4u);
  c.Drop(7);
  EXPECT_FALSE(c.Get(7, t0).has_value());
  c.Put(Dir(7, 300), t0);
  c.Put(Dir(8, 300), t0);
  c.Clear();
  EXPECT_EQ(c.size(), 0u);
}

TEST(DirAttrCacheTest, KeepsOnlyDirectoriesAndCanBeOff) {
  DirAttrCache c(milliseconds(1000));
  proto::Attr file = Dir(9, 1);
  file.set_mode(S_IFREG | 0644);
  c.Put(file);
  EXPECT_FALSE(c.Get(9).has_value());
  DirAttrCache off(milliseconds(0));
  off.Put(Dir(7, 1));
  EXPECT_FALSE(off.Get(7).has_value());
}

TEST(DirAttrCacheTest, StaysBounded) {
  DirAttrCache c(milliseconds(1000), /*max_entries=*/4);
  for (uint64_t i = 1; i <= 10; ++i) c.Put(Dir(i, 1));
  EXPECT_LE(c.size(), 4u);
  EXPECT_TRUE(c.Get(10).has_value()) << "the newest entry is kept";
}

}  // namespace
}  // namespace stria::client::fuse
