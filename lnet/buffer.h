// Buffer: an owned, page-aligned, uninitialised byte array for bulk data.
//
// Bulk payloads are read from sockets and disks straight into Buffers (alignment keeps the
// door open for O_DIRECT), and never copied into protobufs. Movable, not copyable.
// Thread-safety: none; one owner at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

namespace stria::lnet {

// Bulk buffers are allocated and freed once per request. glibc would serve each from a
// fresh mmap (and the kernel would zero and fault in every page every time); this raises
// the mmap threshold once per process so that freed bulk buffers are reused from the heap.
void KeepBulkBuffersOffMmap();

// Page-aligned blocks for bulk buffers. Blocks of 64 KiB and more are kept when freed, by
// power-of-two size class, up to kMaxCachedBytes in all, and handed out again: a steady
// stream of 1 MiB requests then touches the same warm pages instead of faulting in fresh
// heap (per-thread malloc arenas return their tops to the kernel). Smaller blocks come
// straight from posix_memalign. Thread-safety: thread-safe (one mutex; a push or pop).
//
// RDMA (lnet/o2ib): blocks kept in the free lists stay registered with the device, so the
// pool doubles as the pre-registered pool of I/O buffers. A release hook hears of every block
// before it goes back to the system (the registration cache drops it); with a hook added the
// pool also tracks the blocks it has handed out, so Owns() can tell pool memory, whose
// registrations may be cached, from any other memory.
class BufferPool {
 public:
  static constexpr size_t kMinPooled = 64u << 10;
  static constexpr size_t kMaxCachedBytes = 64u << 20;
  static constexpr int kMaxReleaseHooks = 4;

  using ReleaseHook = void (*)(const void* block, size_t capacity);

  // A block of at least `size` bytes (size > 0); *capacity gets its real size.
  static uint8_t* Allocate(size_t size, size_t* capacity);
  // Returns a block from Allocate with its capacity.
  static void Free(uint8_t* p, size_t capacity);
  // Bytes held in the free lists now.
  static size_t CachedBytes();

  // Calls `hook` with every block before it is freed to the system, from then on, and
  // starts tracking handed-out blocks (blocks already out are not known). At most
  // kMaxReleaseHooks; adding one twice adds it once. Costs nothing while none is added.
  static void AddReleaseHook(ReleaseHook hook);
  // True when [p, p+len) lies inside one block handed out since the first hook was added.
  static bool Owns(const void* p, size_t len);
};

class BulkArena;  // lnet/shared_bulk.h

// Gives a Buffer's block back to the BufferPool, or to the arena it came from.
struct BufferFree {
  size_t capacity = 0;
  BulkArena* arena = nullptr;
  void operator()(uint8_t* p) const;
};

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t size) : size_(size) {
    if (size == 0) return;
    size_t capacity = 0;
    uint8_t* p = BufferPool::Allocate(size, &capacity);
    data_ = std::unique_ptr<uint8_t, BufferFree>(p, BufferFree{capacity});
  }

  // A buffer from the process's shared bulk arena (lnet/shared_bulk.h) when there is one
  // with room and a server on this host takes request bulk from it, else from the
  // BufferPool: request bulk that a local server may then read in place (the mount's
  // write-behind copies).
  static Buffer Shareable(size_t size);

  // Whether its block is in the shared arena.
  bool shared() const { return data_.get_deleter().arena != nullptr; }

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_.get(), size_}; }
  std::span<const uint8_t> span() const { return {data_.get(), size_}; }

  // Shrinks the visible size (the allocation stays); n must not exceed size().
  void Shrink(size_t n) { size_ = n < size_ ? n : size_; }

 private:
  std::unique_ptr<uint8_t, BufferFree> data_;
  size_t size_ = 0;
};

}  // namespace stria::lnet
