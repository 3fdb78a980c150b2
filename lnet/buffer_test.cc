#include "lnet/buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace stria::lnet {
namespace {

bool PageAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 4096 == 0; }

TEST(BufferTest, BuffersArePageAlignedAtEverySize) {
  for (size_t size : {size_t{1}, size_t{4095}, size_t{4097}, size_t{65536}, size_t{1} << 20,
                      (size_t{1} << 20) + 1}) {
    Buffer b(size);
    EXPECT_EQ(b.size(), size);
    EXPECT_TRUE(PageAligned(b.data())) << size;
    b.data()[size - 1] = 0x5a;  // the whole size is usable
  }
}

TEST(BufferTest, FreedBulkBlocksAreReused) {
  const uint8_t* first = nullptr;
  {
    Buffer b(1 << 20);
    first = b.data();
  }
  Buffer again(1 << 20);
  EXPECT_EQ(again.data(), first) << "a freed 1 MiB block was not handed out again";
  // A request of another size class does not get it.
  Buffer other(4 << 20);
  EXPECT_NE(other.data(), first);
}

TEST(BufferTest, ThePoolKeepsABoundedAmount) {
  constexpr size_t kBlock = 4u << 20;
  const size_t n = BufferPool::kMaxCachedBytes / kBlock + 8;
  {
    std::vector<Buffer> bufs;
    for (size_t i = 0; i < n; ++i) bufs.emplace_back(kBlock);
  }
  EXPECT_LE(BufferPool::CachedBytes(), BufferPool::kMaxCachedBytes);
  EXPECT_GE(BufferPool::CachedBytes(), BufferPool::kMaxCachedBytes - kBlock);
  // Small blocks are not pooled.
  const size_t before = BufferPool::CachedBytes();
  { Buffer small(4096); }
  EXPECT_EQ(BufferPool::CachedBytes(), before);
}

}  // namespace
}  // namespace stria::lnet
