// InodeCache: what a reader offers is kept only when nothing changed in between, a change
// drops the inode's entry, and a full shard starts over. Through a real Namespace, that
// GetInode answers what the last commit wrote: namespace_test.cc and ops_test.cc.
#include "mds/inode_cache.h"

#include <gtest/gtest.h>
#include <rocksdb/write_batch.h>

#include "mds/mds_test_util.h"
#include "mds/namespace.h"
#include "mds/schema.h"

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

// Through a real Namespace: a batch written by hand (as tests and the store's upkeep do)
// drops what it changes, a record it rewrites or deletes, so that
// GetInode never answers from before it.
TEST(InodeCacheTest, EveryWriteOfTheStoreDropsWhatItChanges) {
  testing::MdsFixture f;
  f.AddOsts(1);
  const uint64_t a = f.Mkfile(kRootIno, "a", 0644).attr().ino();
  const uint64_t b = f.Mkfile(kRootIno, "b", 0644).attr().ino();
  ASSERT_TRUE(f.ns().GetInode(a).ok());
  Result<InodeRecord> rec = f.ns().GetInode(a);  // from the cache now
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE(f.ns().GetInode(b).ok());
  rec->attr.set_size(777);
  rocksdb::WriteBatch put;
  put.Put(InodeKey(a), rec->Encode());
  ASSERT_TRUE(f.ns().Write(&put).ok());
  EXPECT_EQ(f.ns().GetInode(a)->attr.size(), 777u);

  rocksdb::WriteBatch del;
  del.Delete(InodeKey(b));
  ASSERT_TRUE(f.ns().Write(&del).ok());
  EXPECT_EQ(f.ns().GetInode(b).status().code(), Code::kNoEnt);
}

}  // namespace
}  // namespace stria::mds
