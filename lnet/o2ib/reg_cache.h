// RegCache: a memory registration cache keyed by address range.
//
// Registering memory with the RDMA device (ibv_reg_mr) pins its pages and costs tens of
// microseconds, far too much per request. The cache keeps registrations and hands out a
// covering one for any range inside it, so steady-state bulk I/O registers nothing:
//
//   - Acquire(addr, len) returns a Pin on a registration that covers the range (its lkey
//     for local work requests, its rkey for the peer). A hit costs one map lookup. A miss
//     registers the range rounded out to `align`, merged with every cached registration
//     it overlaps (those leave the index: the index never holds two overlapping entries, so
//     a covering lookup is one ordered-map search).
//   - Invalidate(addr, len) forgets every registration overlapping the range. It must be
//     called before memory is given back to the system (BufferPool does, lnet/buffer.h):
//     the device would otherwise keep the old pages while new memory reuses the addresses.
//   - Registrations not pinned are kept in LRU order and evicted (deregistered) while the
//     cache holds more than max_bytes. Pinned ones are never deregistered under a user;
//     an invalidated or merged-away pinned registration is deregistered at its last Unpin.
//
// The device is behind Registrar, so this logic is the same with and without hardware
// (lnet/o2ib/reg_cache_test.cc runs it with a registrar that hands out keys).
// Thread-safety: thread-safe (one mutex); a Pin may be released on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>

#include "common/status.h"

namespace stria::lnet::o2ib {

// One registration as the device made it.
struct MemoryRegion {
  uintptr_t addr = 0;
  size_t len = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  void* handle = nullptr;  // the registrar's own (an ibv_mr*)
};

// Registers and deregisters memory (ibv_reg_mr / ibv_dereg_mr on a protection domain).
class Registrar {
 public:
  virtual ~Registrar() = default;
  virtual Result<MemoryRegion> Register(uintptr_t addr, size_t len) = 0;
  virtual void Deregister(const MemoryRegion& mr) = 0;
};

struct RegCacheOptions {
  size_t max_bytes = size_t{4} << 30;  // unpinned registrations kept, bytes
  size_t align = 4096;                 // registrations are rounded out to this (a power of 2)
};

struct RegCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;         // registrations made
  uint64_t evictions = 0;      // deregistered by the LRU under max_bytes
  uint64_t invalidations = 0;  // dropped by Invalidate
  uint64_t merges = 0;         // dropped because a new registration covers them
};

class RegCache {
 private:
  struct Entry {
    MemoryRegion mr;
    int pins = 0;
    bool indexed = true;              // in by_addr_ (false: invalidated or merged away)
    std::list<Entry*>::iterator lru;  // valid when indexed && pins == 0
  };

 public:
  // A registration held for the duration of a transfer. Movable; releases on destruction.
  class Pin {
   public:
    Pin() = default;
    Pin(Pin&& o) noexcept : cache_(o.cache_), entry_(o.entry_) { o.cache_ = nullptr; }
    Pin& operator=(Pin&& o) noexcept;
    ~Pin() { Release(); }
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;

    uint32_t lkey() const { return entry_->mr.lkey; }
    uint32_t rkey() const { return entry_->mr.rkey; }
    const MemoryRegion& region() const { return entry_->mr; }
    bool valid() const { return cache_ != nullptr; }
    void Release();

   private:
    friend class RegCache;
    Pin(RegCache* cache, Entry* entry) : cache_(cache), entry_(entry) {}
    RegCache* cache_ = nullptr;
    Entry* entry_ = nullptr;
  };

  RegCache(Registrar* registrar, RegCacheOptions options);
  ~RegCache();  // REQUIRES: no Pin outstanding; deregisters everything
  RegCache(const RegCache&) = delete;
  RegCache& operator=(const RegCache&) = delete;

  // A registration covering [addr, addr+len) (len > 0). The registrar's error on failure.
  Result<Pin> Acquire(const void* addr, size_t len);

  // Forgets every registration overlapping [addr, addr+len).
  void Invalidate(const void* addr, size_t len);

  size_t bytes() const;    // registered bytes in the index
  size_t entries() const;  // registrations in the index
  RegCacheStats stats() const;

 private:
  void Unpin(Entry* e);
  // REQUIRES: mu_ held. Takes e out of the index; deregisters it unless pinned.
  void DropLocked(Entry* e);
  void DestroyLocked(Entry* e);
  void EvictLocked();

  Registrar* const registrar_;
  const RegCacheOptions options_;
  mutable std::mutex mu_;
  std::map<uintptr_t, Entry*> by_addr_;  // GUARDED_BY(mu_): start -> entry, never overlapping
  std::list<Entry*> lru_;                // GUARDED_BY(mu_): unpinned indexed entries, LRU first
  size_t bytes_ = 0;                     // GUARDED_BY(mu_)
  RegCacheStats stats_;                  // GUARDED_BY(mu_)
};

}  // namespace stria::lnet::o2ib
