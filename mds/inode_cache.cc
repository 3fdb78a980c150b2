#include "mds/inode_cache.h"

#include <utility>

namespace stria::mds {

std::shared_ptr<const InodeRecord> InodeCache::Find(uint64_t ino, uint64_t* token) const {
  Shard& s = ShardOf(ino);
  std::lock_guard lock(s.mu);
  if (auto it = s.map.find(ino); it != s.map.end()) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    return it->second;
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  *token = s.changes;
  return nullptr;
}

void InodeCache::Offer(uint64_t ino, uint64_t token, std::shared_ptr<const InodeRecord> rec) {
  std::shared_ptr<const InodeRecord> dropped;  // freed outside the lock
  std::unordered_map<uint64_t, std::shared_ptr<const InodeRecord>> full;
  Shard& s = ShardOf(ino);
  std::lock_guard lock(s.mu);
  if (s.changes != token) return;  // what the reader read may predate that change
  if (s.map.size() >= per_shard_ && !s.map.count(ino)) full.swap(s.map);
  auto [it, added] = s.map.try_emplace(ino, std::move(rec));
  if (!added) dropped = std::exchange(it->second, std::move(rec));
}

void InodeCache::Changed(uint64_t ino) {
  std::shared_ptr<const InodeRecord> dropped;
  Shard& s = ShardOf(ino);
  std::lock_guard lock(s.mu);
  ++s.changes;
  if (auto it = s.map.find(ino); it != s.map.end()) {
    dropped = std::move(it->second);
    s.map.erase(it);
  }
}

void InodeCache::Clear() {
  for (Shard& s : shards_) {
    std::unordered_map<uint64_t, std::shared_ptr<const InodeRecord>> dropped;
    std::lock_guard lock(s.mu);
    ++s.changes;
    dropped.swap(s.map);
  }
}

}  // namespace stria::mds
