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

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t size) : size_(size) {
    if (size == 0) return;
    KeepBulkBuffersOffMmap();
    void* p = nullptr;
    if (posix_memalign(&p, 4096, (size + 4095) & ~size_t{4095}) != 0) std::abort();
    data_.reset(static_cast<uint8_t*>(p));
  }

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_.get(), size_}; }
  std::span<const uint8_t> span() const { return {data_.get(), size_}; }

  // Shrinks the visible size (the allocation stays); n must not exceed size().
  void Shrink(size_t n) { size_ = n < size_ ? n : size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

}  // namespace stria::lnet
