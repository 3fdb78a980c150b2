#include "oss/internal/fd_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <algorithm>

namespace stria::oss::internal {

OpenFile::~OpenFile() {
  if (fd_ >= 0) ::close(fd_);
  if (crc_fd_ >= 0) ::close(crc_fd_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
}

int OpenFile::direct_fd() {
  std::call_once(direct_once_, [this] {
    // The same inode as fd_, whatever its path is now (/proc/self/fd is the open file).
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    int fd;
    do {
      fd = ::open(self.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    direct_fd_ = fd;  // -1: EINVAL (no O_DIRECT on this file system) or out of descriptors
  });
  return direct_fd_;
}

FdCache::FdCache(size_t capacity) {
  capacity = std::max<size_t>(capacity, 1);
  const size_t nshards = std::min<size_t>(16, capacity);
  per_shard_ = capacity / nshards;  // never exceeds capacity in total
  shards_.reserve(nshards);
  for (size_t i = 0; i < nshards; ++i) shards_.push_back(std::make_unique<Shard>());
}

FdCache::Shard& FdCache::ShardFor(const ObjKey& key) {
  return *shards_[(ObjKeyHash()(key) >> 7) % shards_.size()];
}

Result<FileRef> FdCache::Get(const ObjKey& key, const std::function<Result<FileRef>()>& open) {
  Shard& s = ShardFor(key);
  FileRef evicted;  // closed after the lock is released
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.index.find(key);
  if (it != s.index.end()) {
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    return it->second->second;
  }
  Result<FileRef> opened = open();
  if (!opened.ok()) return opened.status();
  s.lru.emplace_front(key, *opened);
  s.index[key] = s.lru.begin();
  if (s.lru.size() > per_shard_) {
    evicted = std::move(s.lru.back().second);
    s.index.erase(s.lru.back().first);
    s.lru.pop_back();
  }
  return opened;
}

Status FdCache::Invalidate(const ObjKey& key, const std::function<Status()>& fn) {
  Shard& s = ShardFor(key);
  FileRef dropped;
  std::lock_guard<std::mutex> lock(s.mu);
  Status st = fn();
  auto it = s.index.find(key);
  if (it != s.index.end()) {
    dropped = std::move(it->second->second);
    s.lru.erase(it->second);
    s.index.erase(it);
  }
  return st;
}

size_t FdCache::size() const {
  size_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    n += s->lru.size();
  }
  return n;
}

}  // namespace stria::oss::internal
