#include "lnet/shared_bulk.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "lnet/buffer.h"
#include "lnet/lnd.h"
#include "lnet/socket.h"

namespace stria::lnet {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kHugePage = size_t{2} << 20;  // a PMD huge page (x86-64, arm64 4K)
constexpr int kPageShift = 12;
constexpr int kMinClass = 12;  // 4 KiB
constexpr int kClasses = 64;

int SizeClass(size_t size) {
  const int c = std::bit_width(std::max(size, kPage) - 1);
  return std::max(c, kMinClass);
}

bool Aligned(uint64_t v) { return (v & (kPage - 1)) == 0; }

}  // namespace

// Bytes of freed blocks whose pages stay resident, as BufferPool keeps: beyond it the pages
// of the blocks freed longest ago go back to the system (the blocks stay in their free
// lists, to be faulted in again, by the client and by each server's mapping, if ever
// handed out). Those freed last are the ones handed out next: they keep their pages.
constexpr size_t kMaxResidentFreeBytes = size_t{64} << 20;

struct FreeBlock {
  uint8_t* p;
  bool resident;  // its pages were not given back
};

struct BulkArena::State {
  std::mutex mu;
  size_t next = 0;                                      // GUARDED_BY(mu): the bump pointer
  std::vector<FreeBlock> free[kClasses];                // GUARDED_BY(mu)
  size_t resident_free = 0;                             // GUARDED_BY(mu): bytes, see above
  std::vector<std::pair<uint64_t, uint64_t>> detached;  // GUARDED_BY(mu): [offset, end)
  std::atomic<bool> any_detached{false};
  std::atomic<bool> request_bulk_taken{false};
};

BulkArena::BulkArena(int fd, uint8_t* base, size_t size)
    : fd_(fd), base_(base), size_(size), state_(new State) {}

namespace {
std::atomic<BulkArena*> the_arena{nullptr};
}  // namespace

BulkArena* BulkArena::Get() { return the_arena.load(std::memory_order_acquire); }

BulkArena* BulkArena::Create() {
  static BulkArena* arena = []() -> BulkArena* {
    if (!LocalSharedBulkEnabled() || !LocalSocketsEnabled()) return nullptr;
    const int fd = memfd_create("stria-bulk", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    const size_t size = kDefaultBytes;
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      LOG_WARN("shared bulk off: memfd: {}", strerror(errno));
      if (fd >= 0) close(fd);
      return nullptr;
    }
    // Mapped at a huge page boundary, so that a block on one (PreferHugePages) can be a
    // huge page: the address space is reserved with room to align, then the memfd placed.
    void* p = mmap(nullptr, size + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      const uintptr_t start = reinterpret_cast<uintptr_t>(p);
      const uintptr_t aligned = (start + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
      if (aligned > start) munmap(p, aligned - start);
      munmap(reinterpret_cast<void*>(aligned + size), start + kHugePage - aligned);
      p = mmap(reinterpret_cast<void*>(aligned), size, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_FIXED, fd, 0);
      if (p == MAP_FAILED) munmap(reinterpret_cast<void*>(aligned), size);  // the reservation
    }
    if (p == MAP_FAILED) {
      LOG_WARN("shared bulk off: mmap: {}", strerror(errno));
      close(fd);
      return nullptr;
    }
    return new BulkArena(fd, static_cast<uint8_t*>(p), size);
  }();
  the_arena.store(arena, std::memory_order_release);
  return arena;
}

uint8_t* BulkArena::Allocate(size_t size, size_t* capacity) {
  const int c = SizeClass(size);
  if (c >= kClasses) return nullptr;
  const size_t cap = size_t{1} << c;
  std::lock_guard lk(state_->mu);
  std::vector<FreeBlock>& list = state_->free[c];
  uint8_t* p = nullptr;
  if (!list.empty()) {
    p = list.back().p;
    if (list.back().resident) state_->resident_free -= cap;
    list.pop_back();
  } else {
    // A block of a huge page or more starts on a huge page boundary (PreferHugePages). The
    // address space skipped costs no memory, but is not handed out again.
    const size_t align = cap >= kHugePage ? kHugePage : kPage;
    const size_t at = (state_->next + align - 1) & ~(align - 1);
    if (at + cap > size_) return nullptr;
    p = base_ + at;
    state_->next = at + cap;
  }
  *capacity = cap;
  return p;
}

void BulkArena::Free(uint8_t* p, size_t capacity) {
  if (p == nullptr) return;
  const auto from = static_cast<uint64_t>(p - base_);
  std::lock_guard lk(state_->mu);
  for (const auto& [off, end] : state_->detached) {
    if (from < end && off < from + capacity) {
      // Partly private now (or retired request bulk a server may still read), so never
      // shared again: kept out of the free lists, and its pages dropped from this mapping.
      (void)madvise(p, capacity, MADV_DONTNEED);
      return;
    }
  }
  state_->free[SizeClass(capacity)].push_back({p, true});
  state_->resident_free += capacity;
  // Past the cap, the oldest free blocks give their pages back, the largest sizes first;
  // never the last of a list, which is handed out next. Nothing can read them (a block is
  // freed only once its exchanges returned; one a server may still read late was retired
  // above).
  for (int c = kClasses - 1; c >= 0 && state_->resident_free > kMaxResidentFreeBytes; --c) {
    const size_t cap = size_t{1} << c;
    std::vector<FreeBlock>& list = state_->free[c];
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      FreeBlock& f = list[i];
      if (state_->resident_free <= kMaxResidentFreeBytes) break;
      if (!f.resident) continue;
      (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(f.p - base_), static_cast<off_t>(cap));
      (void)madvise(f.p, cap, MADV_DONTNEED);
      f.resident = false;
      state_->resident_free -= cap;
    }
  }
}

void BulkArena::NoteRequestBulkTaken() {
  state_->request_bulk_taken.store(true, std::memory_order_relaxed);
}

bool BulkArena::RequestBulkTaken() const {
  return state_->request_bulk_taken.load(std::memory_order_relaxed);
}

std::optional<uint64_t> BulkArena::PagesAt(const void* p, size_t len) const {
  const auto* b = static_cast<const uint8_t*>(p);
  if (len == 0 || b < base_ || b >= base_ + size_ || len > static_cast<size_t>(base_ + size_ - b)) {
    return std::nullopt;
  }
  const uint64_t off = static_cast<uint64_t>(b - base_);
  if (!Aligned(off) || !Aligned(len)) return std::nullopt;
  return off;
}

std::optional<uint64_t> BulkArena::Offset(const void* p, size_t len) const {
  const std::optional<uint64_t> at = PagesAt(p, len);
  if (!at) return std::nullopt;
  const uint64_t off = *at;
  if (state_->any_detached.load(std::memory_order_acquire)) {
    std::lock_guard lk(state_->mu);
    for (const auto& [from, to] : state_->detached) {
      if (off < to && from < off + len) return std::nullopt;
    }
  }
  return off;
}

void BulkArena::Retire(void* p, size_t len) {
  const std::optional<uint64_t> at = PagesAt(p, len);
  if (!at) return;  // not arena memory: nothing to retire
  const uint64_t off = *at;
  // The whole range, even where an earlier retirement of an overlapping one (a mirror's
  // exchange of the same bytes) already covered part of it; under the lock, so that two
  // retirements of one range do not interleave.
  std::lock_guard lk(state_->mu);
  state_->detached.emplace_back(off, off + len);
  state_->any_detached.store(true, std::memory_order_release);
  // The caller's view gets private pages holding the same bytes (it may resend them, or
  // reuse the buffer), while the memfd's pages keep them for a server that reads late:
  // they are not punched out. The copy is made in a mapping of its own and moved over the
  // range in one step, so that another thread reading the range (sending the same bytes
  // elsewhere) never sees it empty.
  void* copy = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy != MAP_FAILED) {
    std::memcpy(copy, p, len);
    if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, p) != MAP_FAILED) {
      LOG_DEBUG("shared bulk: retired {} bytes of request bulk at {}", len, off);
      return;
    }
  }
  LOG_ERROR("shared bulk: cannot retire {} bytes: {}", len, strerror(errno));
  std::abort();  // the caller could change bytes a late server read takes as the request's
}

void BulkArena::Detach(void* p, size_t len) {
  std::optional<uint64_t> off = Offset(p, len);
  if (!off) return;  // not shared (or already detached): nothing can land there
  {
    std::lock_guard lk(state_->mu);
    state_->detached.emplace_back(*off, *off + len);
    state_->any_detached.store(true, std::memory_order_release);
  }
  // Private pages over the range first, then the shared ones go back to the system (a DMA
  // still under way keeps its pages until it ends).
  if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
      MAP_FAILED) {
    LOG_ERROR("shared bulk: cannot detach {} bytes: {}", len, strerror(errno));
    std::abort();  // a late write from the server could land in memory the caller reuses
  }
  (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(*off),
                  static_cast<off_t>(len));
  LOG_DEBUG("shared bulk: detached {} bytes at {}", len, *off);
}

BulkBlock::BulkBlock(size_t size) : size_(size) {
  arena_ = BulkArena::Get();
  p_ = arena_ != nullptr ? arena_->Allocate(size, &cap_) : nullptr;
  if (p_ == nullptr) {
    arena_ = nullptr;
    p_ = BufferPool::Allocate(size, &cap_);
  }
}

size_t PreferHugePages(void* p, size_t len) {
#ifndef MADV_COLLAPSE
  constexpr int MADV_COLLAPSE = 25;  // Linux 6.1
#endif
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14
#endif
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  uintptr_t at = (start + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
  size_t made = 0;
  for (; at + kHugePage <= start + len; at += kHugePage) {
    // A range with no page in it is refused (EINVAL): its pages are faulted in first, as
    // they are (zeros where nothing was written).
    void* range = reinterpret_cast<void*>(at);
    if (madvise(range, kHugePage, MADV_POPULATE_WRITE) == 0 &&
        madvise(range, kHugePage, MADV_COLLAPSE) == 0) {
      made += kHugePage;
    }
  }
  return made;
}

size_t BulkBlock::PreferHugePages() { return lnet::PreferHugePages(p_, cap_); }

BulkBlock& BulkBlock::operator=(BulkBlock&& o) noexcept {
  if (this != &o) {
    Release();
    arena_ = std::exchange(o.arena_, nullptr);
    p_ = std::exchange(o.p_, nullptr);
    cap_ = std::exchange(o.cap_, 0);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void BulkBlock::Release() {
  if (p_ == nullptr) return;
  if (arena_ != nullptr) {
    arena_->Free(p_, cap_);
  } else {
    BufferPool::Free(p_, cap_);
  }
  p_ = nullptr;
}

uint64_t PackSharedBulk(uint64_t offset, size_t len) {
  return ((static_cast<uint64_t>(len) >> kPageShift) << 40) | offset;
}

Result<std::span<uint8_t>> UnpackSharedBulk(uint64_t packed, uint8_t* region, size_t region_size) {
  const uint64_t offset = packed & ((uint64_t{1} << 40) - 1);
  const uint64_t len = (packed >> 40) << kPageShift;
  if (!Aligned(offset) || len == 0 || offset > region_size || len > region_size - offset) {
    return Status(Code::kProtocol, "shared bulk descriptor of " + std::to_string(len) +
                                       " bytes at " + std::to_string(offset) +
                                       " is outside the shared region of " +
                                       std::to_string(region_size) + " bytes");
  }
  return std::span<uint8_t>(region + offset, len);
}

Result<std::shared_ptr<SharedRegion>> SharedRegion::Map(int fd, size_t max_size) {
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) return Status(Code::kInval, "the shared bulk region is not a memfd");
  if (!(seals & F_SEAL_SHRINK)) {
    return Status(Code::kInval, "the shared bulk region is not sealed against shrinking");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) return ErrnoStatus("fstat of the shared bulk region", errno);
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0 || size > max_size || !Aligned(size)) {
    return Status(Code::kInval, "shared bulk region of " + std::to_string(size) +
                                    " bytes (at most " + std::to_string(max_size) + ")");
  }
  // One mapping per memfd (its inode) in this process.
  static std::mutex mu;
  static std::map<std::pair<dev_t, ino_t>, std::weak_ptr<SharedRegion>> mapped;  // GUARDED_BY(mu)
  std::lock_guard lk(mu);
  const auto key = std::make_pair(st.st_dev, st.st_ino);
  if (auto it = mapped.find(key); it != mapped.end()) {
    // A sealed memfd never changes size, so the mapping covers it whole.
    if (std::shared_ptr<SharedRegion> r = it->second.lock(); r != nullptr) return r;
  }
  std::erase_if(mapped, [](const auto& m) { return m.second.expired(); });
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return ErrnoStatus("mapping the shared bulk region", errno);
  auto r = std::make_shared<SharedRegion>(static_cast<uint8_t*>(p), size);
  mapped[key] = r;
  return r;
}

SharedRegion::~SharedRegion() { munmap(base_, size_); }

}  // namespace stria::lnet
