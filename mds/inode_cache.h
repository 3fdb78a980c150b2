// InodeCache: decoded inode records for the MDS's reads that take no lock (lookup, getattr,
// open, the checks of a close), so that the same inode is not read from RocksDB and decoded
// again by each request about it. A cold open of a small file read its inode (and its
// directory's) four or five times: a third of the MDS's CPU per cold read was RocksDB gets
// and decoding (docs/performance.md).
//
// Coherence: every write goes through Namespace::Write, which calls Changed for each inode
// record its batch writes or removes, before the batch is written and again after. A reader
// that misses reads RocksDB and offers what it read with the token Find gave it; the offer
// is refused when anything in the inode's shard changed since, since what it read may be
// older than that change. So an entry is never older than the last commit that changed its
// inode, and a reader sees a commit's records once that commit has called Changed (before
// its reply).
//
// Bounded: a shard that reaches its share of `capacity` starts over.
// Thread-safety: thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace stria::mds {

struct InodeRecord;

class InodeCache {
 public:
  explicit InodeCache(size_t capacity) : per_shard_(capacity / kShards + 1) {}

  // The cached record of `ino`, or null; then *token is what Offer needs.
  std::shared_ptr<const InodeRecord> Find(uint64_t ino, uint64_t* token) const;
  // What a reader that missed read from RocksDB after Find gave it `token`: kept unless
  // the shard changed since.
  void Offer(uint64_t ino, uint64_t token, std::shared_ptr<const InodeRecord> rec);
  // A commit wrote or removed the record of `ino`.
  void Changed(uint64_t ino);
  // A commit may have changed any record.
  void Clear();

  struct Counters {
    uint64_t hits = 0;
    uint64_t misses = 0;
  };
  Counters counters() const { return {hits_.load(), misses_.load()}; }

  static constexpr size_t kShards = 16;

 private:
  struct Shard {
    mutable std::mutex mu;
    uint64_t changes = 0;                                                  // GUARDED_BY(mu)
    std::unordered_map<uint64_t, std::shared_ptr<const InodeRecord>> map;  // GUARDED_BY(mu)
  };
  Shard& ShardOf(uint64_t ino) const { return shards_[ino % kShards]; }

  const size_t per_shard_;
  mutable std::array<Shard, kShards> shards_;
  mutable std::atomic<uint64_t> hits_{0}, misses_{0};
};

}  // namespace stria::mds
