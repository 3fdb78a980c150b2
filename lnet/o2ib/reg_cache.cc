#include "lnet/o2ib/reg_cache.h"

#include <algorithm>
#include <vector>

namespace stria::lnet::o2ib {

RegCache::Pin& RegCache::Pin::operator=(Pin&& o) noexcept {
  if (this != &o) {
    Release();
    cache_ = o.cache_;
    entry_ = o.entry_;
    o.cache_ = nullptr;
  }
  return *this;
}

void RegCache::Pin::Release() {
  if (cache_ == nullptr) return;
  cache_->Unpin(entry_);
  cache_ = nullptr;
  entry_ = nullptr;
}

RegCache::RegCache(Registrar* registrar, RegCacheOptions options)
    : registrar_(registrar), options_(options) {}

RegCache::~RegCache() {
  std::lock_guard lk(mu_);
  for (auto& [start, e] : by_addr_) DestroyLocked(e);
  by_addr_.clear();
  lru_.clear();
}

Result<RegCache::Pin> RegCache::Acquire(const void* addr, size_t len) {
  if (len == 0) return Status(Code::kInval, "cannot register an empty range");
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (a + len < a) return Status(Code::kInval, "registration range wraps around");
  std::lock_guard lk(mu_);
  // The entry starting at or before a is the only one that can cover [a, a+len).
  auto it = by_addr_.upper_bound(a);
  if (it != by_addr_.begin()) {
    Entry* e = std::prev(it)->second;
    if (e->mr.addr + e->mr.len >= a + len) {
      if (e->pins++ == 0) lru_.erase(e->lru);
      ++stats_.hits;
      return Pin(this, e);
    }
  }
  // A miss: register the aligned range, grown to cover every entry it overlaps.
  const uintptr_t mask = options_.align - 1;
  uintptr_t start = a & ~mask;
  uintptr_t end = (a + len + mask) & ~mask;
  std::vector<Entry*> overlapped;
  it = by_addr_.upper_bound(start);
  if (it != by_addr_.begin()) --it;
  for (; it != by_addr_.end() && it->first < end; ++it) {
    Entry* e = it->second;
    if (e->mr.addr + e->mr.len <= start) continue;
    overlapped.push_back(e);
    start = std::min(start, e->mr.addr);
    end = std::max(end, e->mr.addr + e->mr.len);
  }
  Result<MemoryRegion> mr = registrar_->Register(start, end - start);
  if (!mr.ok()) return mr.status();
  for (Entry* e : overlapped) {
    ++stats_.merges;
    DropLocked(e);
  }
  auto* e = new Entry;
  e->mr = *mr;
  e->pins = 1;
  by_addr_[e->mr.addr] = e;
  bytes_ += e->mr.len;
  ++stats_.misses;
  EvictLocked();
  return Pin(this, e);
}

void RegCache::Invalidate(const void* addr, size_t len) {
  if (len == 0) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t end = a + len;
  std::lock_guard lk(mu_);
  auto it = by_addr_.upper_bound(a);
  if (it != by_addr_.begin()) --it;
  std::vector<Entry*> hit;
  for (; it != by_addr_.end() && it->first < end; ++it) {
    if (it->second->mr.addr + it->second->mr.len > a) hit.push_back(it->second);
  }
  for (Entry* e : hit) {
    ++stats_.invalidations;
    DropLocked(e);
  }
}

void RegCache::Unpin(Entry* e) {
  std::lock_guard lk(mu_);
  if (--e->pins > 0) return;
  if (!e->indexed) {
    DestroyLocked(e);
    return;
  }
  e->lru = lru_.insert(lru_.end(), e);
  EvictLocked();
}

void RegCache::DropLocked(Entry* e) {
  by_addr_.erase(e->mr.addr);
  bytes_ -= e->mr.len;
  e->indexed = false;
  if (e->pins == 0) {
    lru_.erase(e->lru);
    DestroyLocked(e);
  }
}

void RegCache::DestroyLocked(Entry* e) {
  registrar_->Deregister(e->mr);
  delete e;
}

void RegCache::EvictLocked() {
  while (bytes_ > options_.max_bytes && !lru_.empty()) {
    Entry* e = lru_.front();
    ++stats_.evictions;
    DropLocked(e);
  }
}

size_t RegCache::bytes() const {
  std::lock_guard lk(mu_);
  return bytes_;
}

size_t RegCache::entries() const {
  std::lock_guard lk(mu_);
  return by_addr_.size();
}

RegCacheStats RegCache::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace stria::lnet::o2ib
