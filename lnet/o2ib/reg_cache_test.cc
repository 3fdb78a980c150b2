#include "lnet/o2ib/reg_cache.h"

#include <gtest/gtest.h>

#include <map>

#include "lnet/buffer.h"

namespace stria::lnet::o2ib {
namespace {

// Hands out keys and remembers what is registered, so each test can check that the cache
// registers, merges and deregisters exactly what it should. (The cache's logic is what is
// under test; ibv_reg_mr itself needs a device this machine does not have.)
class KeyRegistrar : public Registrar {
 public:
  Result<MemoryRegion> Register(uintptr_t addr, size_t len) override {
    if (fail_next) {
      fail_next = false;
      return Status(Code::kNoMem, "ibv_reg_mr: Cannot allocate memory");
    }
    MemoryRegion mr{addr, len, next_key, next_key + 1000, nullptr};
    ++next_key;
    live[mr.lkey] = mr;
    ++registrations;
    return mr;
  }
  void Deregister(const MemoryRegion& mr) override {
    EXPECT_EQ(live.erase(mr.lkey), 1u) << "deregistered twice or never registered";
  }
  std::map<uint32_t, MemoryRegion> live;
  uint32_t next_key = 1;
  int registrations = 0;
  bool fail_next = false;
};

constexpr uintptr_t kBase = 0x10000000;
const void* At(uintptr_t off) { return reinterpret_cast<const void*>(kBase + off); }

TEST(RegCacheTest, CoveringLookupHitsWithoutRegistering) {
  KeyRegistrar reg;
  RegCache cache(&reg, {.max_bytes = 1 << 30, .align = 4096});
  auto p1 = cache.Acquire(At(0), 64 << 10);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(p1->region().addr, kBase);
  EXPECT_EQ(p1->region().len, 64u << 10);
  // Any range inside is a hit with the same keys.
  auto p2 = cache.Acquire(At(4096 + 100), 8000);
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p2->lkey(), p1->lkey());
  EXPECT_EQ(p2->rkey(), p1->rkey());
  EXPECT_EQ(reg.registrations, 1);
  EXPECT_EQ(cache.stats().hits, 1u);
  // Unaligned ranges are rounded out to pages.
  auto p3 = cache.Acquire(At((1 << 20) + 10), 10);
  ASSERT_TRUE(p3.ok());
  EXPECT_EQ(p3->region().addr, kBase + (1 << 20));
  EXPECT_EQ(p3->region().len, 4096u);
}

TEST(RegCacheTest, OverlapMergesIntoOneRegistration) {
  KeyRegistrar reg;
  RegCache cache(&reg, {});
  {
    auto a = cache.Acquire(At(0), 8192);
    ASSERT_TRUE(a.ok());
  }
  {
    auto b = cache.Acquire(At(16384), 8192);
    ASSERT_TRUE(b.ok());
  }
  EXPECT_EQ(cache.entries(), 2u);
  // [4096, 20480) overlaps both: one registration over [0, 24576) replaces them.
  auto c = cache.Acquire(At(4096), 16384);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->region().addr, kBase);
  EXPECT_EQ(c->region().len, 24576u);
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(reg.live.size(), 1u);  // the two old ones were deregistered
  EXPECT_EQ(cache.stats().merges, 2u);
  EXPECT_EQ(cache.bytes(), 24576u);
}

TEST(RegCacheTest, PinnedRegistrationOutlivesMergeAndInvalidate) {
  KeyRegistrar reg;
  RegCache cache(&reg, {});
  auto a = cache.Acquire(At(0), 4096);
  ASSERT_TRUE(a.ok());
  const uint32_t key = a->lkey();
  auto b = cache.Acquire(At(0), 8192);  // grows: a is merged away but still in use
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b->lkey(), key);
  EXPECT_EQ(reg.live.count(key), 1u);  // not deregistered under its user
  a->Release();
  EXPECT_EQ(reg.live.count(key), 0u);
  cache.Invalidate(At(100), 1);
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(reg.live.size(), 1u);  // b still pinned
  b->Release();
  EXPECT_TRUE(reg.live.empty());
}

TEST(RegCacheTest, InvalidateDropsOnlyOverlappingRegistrations) {
  KeyRegistrar reg;
  RegCache cache(&reg, {});
  for (uintptr_t off : {0u, 8192u, 16384u}) {
    ASSERT_TRUE(cache.Acquire(At(off), 4096).ok());
  }
  cache.Invalidate(At(8192 + 4095), 2);  // touches only the middle one
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(cache.stats().invalidations, 1u);
  // The next use of the middle range registers again.
  const int before = reg.registrations;
  ASSERT_TRUE(cache.Acquire(At(8192), 4096).ok());
  EXPECT_EQ(reg.registrations, before + 1);
}

TEST(RegCacheTest, LruEvictionKeepsUnpinnedBytesUnderTheCap) {
  KeyRegistrar reg;
  RegCache cache(&reg, {.max_bytes = 3 * 4096, .align = 4096});
  for (uintptr_t i = 0; i < 3; ++i) ASSERT_TRUE(cache.Acquire(At(i * 8192), 4096).ok());
  // Touch the first so the second is the least recently used.
  ASSERT_TRUE(cache.Acquire(At(0), 4096).ok());
  ASSERT_TRUE(cache.Acquire(At(3 * 8192), 4096).ok());
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_LE(cache.bytes(), 3u * 4096);
  EXPECT_EQ(cache.stats().evictions, 1u);
  const int before = reg.registrations;
  ASSERT_TRUE(cache.Acquire(At(0), 4096).ok());  // kept
  EXPECT_EQ(reg.registrations, before);
  ASSERT_TRUE(cache.Acquire(At(8192), 4096).ok());  // evicted: registered again
  EXPECT_EQ(reg.registrations, before + 1);
}

TEST(RegCacheTest, PinnedRegistrationsAreNeverEvicted) {
  KeyRegistrar reg;
  RegCache cache(&reg, {.max_bytes = 4096, .align = 4096});
  auto a = cache.Acquire(At(0), 4096);
  auto b = cache.Acquire(At(8192), 4096);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(reg.live.size(), 2u);  // over the cap, but both are in use
  a->Release();                    // now a is evictable, and the cache is over its cap
  EXPECT_EQ(reg.live.size(), 1u);
  EXPECT_EQ(reg.live.begin()->second.addr, kBase + 8192);
}

TEST(RegCacheTest, RegistrationFailureIsReturnedAndCachesNothing) {
  KeyRegistrar reg;
  RegCache cache(&reg, {});
  reg.fail_next = true;
  auto a = cache.Acquire(At(0), 4096);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Code::kNoMem);
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_FALSE(cache.Acquire(At(0), 0).ok());  // empty ranges are refused
}

// The BufferPool tells the cache when it gives a block back to the system.
RegCache* g_cache = nullptr;
void InvalidateHook(const void* p, size_t len) {
  if (g_cache != nullptr) g_cache->Invalidate(p, len);
}

TEST(RegCacheTest, BufferPoolFreeInvalidates) {
  KeyRegistrar reg;
  RegCache cache(&reg, {});
  g_cache = &cache;
  BufferPool::AddReleaseHook(&InvalidateHook);
  {
    Buffer small(8192);  // below the pooled sizes: freed to the system at once
    ASSERT_TRUE(BufferPool::Owns(small.data(), small.size()));
    auto pin = cache.Acquire(small.data(), small.size());
    ASSERT_TRUE(pin.ok());
    EXPECT_EQ(cache.entries(), 1u);
  }
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_TRUE(reg.live.empty());
  g_cache = nullptr;
  int on_stack = 0;
  EXPECT_FALSE(BufferPool::Owns(&on_stack, sizeof on_stack));
}

}  // namespace
}  // namespace stria::lnet::o2ib
