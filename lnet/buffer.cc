#include "lnet/buffer.h"

#include <malloc.h>

#include <bit>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace stria::lnet {

void KeepBulkBuffersOffMmap() {
  static const bool done = [] {
    // Up to 128 MiB blocks come from the heap; keep up to 512 MiB of freed heap untrimmed.
    mallopt(M_MMAP_THRESHOLD, 128 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
  (void)done;
}

namespace {

constexpr int kClasses = 48;  // log2 of the block size

struct Pool {
  std::mutex mu;
  std::vector<uint8_t*> free[kClasses];  // GUARDED_BY(mu)
  size_t cached = 0;                     // GUARDED_BY(mu): bytes in the free lists
};

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: buffers may be freed during exit
  return *pool;
}

uint8_t* AlignedAlloc(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) std::abort();
  return static_cast<uint8_t*>(p);
}

}  // namespace

uint8_t* BufferPool::Allocate(size_t size, size_t* capacity) {
  KeepBulkBuffersOffMmap();
  if (size < kMinPooled) {
    *capacity = (size + 4095) & ~size_t{4095};
    return AlignedAlloc(*capacity);
  }
  *capacity = std::bit_ceil(size);
  const int cls = std::countr_zero(*capacity);
  if (cls < kClasses) {
    Pool& pool = ThePool();
    std::lock_guard lock(pool.mu);
    if (!pool.free[cls].empty()) {
      uint8_t* p = pool.free[cls].back();
      pool.free[cls].pop_back();
      pool.cached -= *capacity;
      return p;
    }
  }
  return AlignedAlloc(*capacity);
}

size_t BufferPool::CachedBytes() {
  Pool& pool = ThePool();
  std::lock_guard lock(pool.mu);
  return pool.cached;
}

void BufferPool::Free(uint8_t* p, size_t capacity) {
  if (p == nullptr) return;
  const int cls = std::countr_zero(capacity);
  if (capacity >= kMinPooled && std::has_single_bit(capacity) && cls < kClasses) {
    Pool& pool = ThePool();
    std::lock_guard lock(pool.mu);
    if (pool.cached + capacity <= kMaxCachedBytes) {
      pool.free[cls].push_back(p);
      pool.cached += capacity;
      return;
    }
  }
  std::free(p);
}

}  // namespace stria::lnet
