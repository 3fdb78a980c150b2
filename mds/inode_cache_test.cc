// InodeCache: what a reader offers is kept only when nothing changed in between, a change
// drops the inode's entry, and a full shard starts over. Through a real Namespace, that
// GetInode answers what the last commit wrote: namespace_test.cc and ops_test.cc.
#include "mds/inode_cache.h"

#include <gtest/gtest.h>

#include "mds/namespace.h"

namespace stria::mds {
namespace {

std::shared_ptr<const InodeRecord> Record(uint64_t size) {
  auto rec = std::make_shared<InodeRecord>();
  rec->attr.set_size(size);
  return rec;
}

TEST(InodeCacheTest, AReadOffersWhatItReadUnlessTheInodesShardChangedMeanwhile) {
  InodeCache cache(1024);
  uint64_t token = 0;
  ASSERT_EQ(cache.Find(5, &token), nullptr);
  cache.Offer(5, token, Record(10));
  std::shared_ptr<const InodeRecord> hit = cache.Find(5, &token);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->attr.size(), 10u);

  // A commit writes inode 5 while a reader reads it: what the reader read may be the record
  // from before, and is not kept.
  cache.Changed(5);
  ASSERT_EQ(cache.Find(5, &token), nullptr) << "a change drops the entry";
  cache.Changed(5);
  cache.Offer(5, token, Record(10));
  EXPECT_EQ(cache.Find(5, &token), nullptr) << "read before the change: refused";
  cache.Offer(5, token, Record(20));
  hit = cache.Find(5, &token);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->attr.size(), 20u);

  // A change of another inode of the same shard refuses the offer too (the token is the
  // shard's); one of another shard does not.
  ASSERT_EQ(cache.Find(6, &token), nullptr);
  cache.Changed(6 + InodeCache::kShards);
  cache.Offer(6, token, Record(1));
  EXPECT_EQ(cache.Find(6, &token), nullptr);
  cache.Changed(7);
  cache.Offer(6, token, Record(1));
  EXPECT_NE(cache.Find(6, &token), nullptr);
  EXPECT_GE(cache.counters().hits, 3u);
}

TEST(InodeCacheTest, AFullShardStartsOver) {
  InodeCache cache(2 * InodeCache::kShards);  // three entries a shard
  uint64_t token = 0;
  for (uint64_t i = 0; i < 3; ++i) {
    const uint64_t ino = i * InodeCache::kShards;
    ASSERT_EQ(cache.Find(ino, &token), nullptr);
    cache.Offer(ino, token, Record(i));
  }
  for (uint64_t i = 0; i < 3; ++i) EXPECT_NE(cache.Find(i * InodeCache::kShards, &token), nullptr);
  ASSERT_EQ(cache.Find(3 * InodeCache::kShards, &token), nullptr);
  cache.Offer(3 * InodeCache::kShards, token, Record(3));
  EXPECT_EQ(cache.Find(0, &token), nullptr) << "the shard started over";
  EXPECT_NE(cache.Find(3 * InodeCache::kShards, &token), nullptr);
}

}  // namespace
}  // namespace stria::mds
