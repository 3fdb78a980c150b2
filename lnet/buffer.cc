#include "lnet/buffer.h"

#include <malloc.h>

#include <atomic>
#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "lnet/shared_bulk.h"

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
  std::map<uintptr_t, size_t> out;       // GUARDED_BY(mu): handed-out blocks, when tracking
};

// Release hooks; `tracking` turns true with the first (then the pool tracks its blocks).
std::atomic<bool> tracking{false};
std::atomic<BufferPool::ReleaseHook> hooks[BufferPool::kMaxReleaseHooks];
std::mutex hooks_mu;  // serializes AddReleaseHook

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: buffers may be freed during exit
  return *pool;
}

uint8_t* AlignedAlloc(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) std::abort();
  return static_cast<uint8_t*>(p);
}

void Track(uint8_t* p, size_t capacity) {
  if (!tracking.load(std::memory_order_acquire)) return;
  Pool& pool = ThePool();
  std::lock_guard lock(pool.mu);
  pool.out[reinterpret_cast<uintptr_t>(p)] = capacity;
}

// Forgets a handed-out block and tells the hooks it is about to be freed to the system.
void ReleaseToSystem(uint8_t* p, size_t capacity) {
  if (!tracking.load(std::memory_order_acquire)) return;
  {
    Pool& pool = ThePool();
    std::lock_guard lock(pool.mu);
    pool.out.erase(reinterpret_cast<uintptr_t>(p));
  }
  for (auto& h : hooks) {
    if (BufferPool::ReleaseHook hook = h.load(std::memory_order_acquire)) hook(p, capacity);
  }
}

uint8_t* AllocateBlock(size_t size, size_t* capacity) {
  if (size < BufferPool::kMinPooled) {
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

}  // namespace

uint8_t* BufferPool::Allocate(size_t size, size_t* capacity) {
  KeepBulkBuffersOffMmap();
  uint8_t* p = AllocateBlock(size, capacity);
  Track(p, *capacity);
  return p;
}

void BufferPool::AddReleaseHook(ReleaseHook hook) {
  std::lock_guard lk(hooks_mu);
  for (auto& h : hooks) {
    if (h.load() == hook) return;
  }
  for (auto& h : hooks) {
    if (h.load() == nullptr) {
      h.store(hook, std::memory_order_release);
      tracking.store(true, std::memory_order_release);
      return;
    }
  }
  std::abort();  // more LNDs than hooks: a programming error
}

bool BufferPool::Owns(const void* p, size_t len) {
  if (!tracking.load(std::memory_order_acquire)) return false;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  Pool& pool = ThePool();
  std::lock_guard lock(pool.mu);
  auto it = pool.out.upper_bound(a);
  if (it == pool.out.begin()) return false;
  --it;
  return a + len >= a && a + len <= it->first + it->second;
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
      // Back in the free list, and still registered with any RDMA device.
      if (tracking.load(std::memory_order_relaxed)) pool.out.erase(reinterpret_cast<uintptr_t>(p));
      pool.free[cls].push_back(p);
      pool.cached += capacity;
      return;
    }
  }
  ReleaseToSystem(p, capacity);
  std::free(p);
}

void BufferFree::operator()(uint8_t* p) const {
  if (arena != nullptr) {
    arena->Free(p, capacity);
  } else {
    BufferPool::Free(p, capacity);
  }
}

Buffer Buffer::Shareable(size_t size) {
  BulkArena* arena = BulkArena::Get();
  size_t capacity = 0;
  uint8_t* p = (arena != nullptr && size > 0 && arena->RequestBulkTaken())
                   ? arena->Allocate(size, &capacity)
                   : nullptr;
  if (p == nullptr) return Buffer(size);
  Buffer b;
  b.data_ = std::unique_ptr<uint8_t, BufferFree>(p, BufferFree{capacity, arena});
  b.size_ = size;
  return b;
}

}  // namespace stria::lnet
