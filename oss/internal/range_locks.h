// RangeLocks: reader/writer locks over 1 MiB regions of objects, striped over a fixed table.
//
// A write must exclude the readers and writers of the chunks it changes, so that a read never
// sees the data of one write with the checksums of another and two read-modify-writes of one
// 4 KiB chunk never interleave; but writes to disjoint parts of one object (the client's
// write-behind keeps several 1 MiB writes of one object in flight, N-to-1 writers share one)
// should run in parallel. So each object is cut into 1 MiB regions (a multiple of the
// checksum chunk: no chunk straddles two) and a request locks the regions it touches. The
// stripes are taken in ascending order, so two multi-region requests never deadlock. Regions
// of different objects may share a stripe: harmless, only less parallel.
//
// Thread-safety: thread-safe. Lock order: after the object lock (ObjectStore), before an
// FdCache shard lock; stripes in ascending index order.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <shared_mutex>

#include "oss/internal/fd_cache.h"

namespace stria::oss::internal {

class RangeLocks {
 public:
  static constexpr uint64_t kRegionBytes = 1u << 20;
  static constexpr size_t kStripes = 1024;

  // Holds the stripes of one request's regions until destroyed.
  class Guard {
   public:
    Guard(RangeLocks* locks, std::bitset<kStripes> stripes, bool exclusive)
        : locks_(locks), stripes_(stripes), exclusive_(exclusive) {
      for (size_t i = 0; i < kStripes; ++i) {
        if (!stripes_[i]) continue;
        if (exclusive_) {
          locks_->stripes_[i].lock();
        } else {
          locks_->stripes_[i].lock_shared();
        }
      }
    }
    ~Guard() {
      for (size_t i = kStripes; i-- > 0;) {
        if (!stripes_[i]) continue;
        if (exclusive_) {
          locks_->stripes_[i].unlock();
        } else {
          locks_->stripes_[i].unlock_shared();
        }
      }
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    RangeLocks* locks_;
    std::bitset<kStripes> stripes_;
    bool exclusive_;
  };

  // Locks the regions of object `key` that [offset, offset + length) touches (length >= 1).
  [[nodiscard]] Guard Lock(const ObjKey& key, uint64_t offset, uint64_t length, bool exclusive) {
    std::bitset<kStripes> stripes;
    const uint64_t first = offset / kRegionBytes;
    const uint64_t last = (offset + length - 1) / kRegionBytes;
    if (last - first + 1 >= kStripes) {
      stripes.set();
    } else {
      const size_t base = ObjKeyHash()(key);
      for (uint64_t r = first; r <= last; ++r) {
        stripes.set((base + r * 0x9E3779B1u) % kStripes);
      }
    }
    return Guard(this, stripes, exclusive);
  }

 private:
  std::array<std::shared_mutex, kStripes> stripes_;
};

}  // namespace stria::oss::internal
