// FdCache: a small, bounded LRU of open object descriptors, shared by the RPC workers.
//
// The OSS process may hold at most ~20,000 descriptors while an OST holds millions of
// objects, so descriptors are cached, never kept one per object. An entry is one object: its
// file (with its checksums inside, object_format.h), plus the checksum sidecar on an OST of
// the old format, and one more for O_DIRECT writes once the object has had one. Entries are reference
// counted (FileRef): eviction drops the cache's reference and the descriptor closes when the
// last request using it finishes, so the number open is at most capacity plus the requests
// in flight. The cache is split into shards, each with its own mutex and LRU list.
//
// Invariant: a cached descriptor refers to the object file now at the object's path. Open
// (on a miss) and Invalidate (destroy) for one key run under the same shard lock, so a
// descriptor opened just before an unlink can never be inserted after it.
//
// Thread-safety: all methods are thread-safe. Lock order: a shard mutex is a leaf lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace stria::oss::internal {

// Identifies one object inside an OST.
struct ObjKey {
  uint64_t group = 0;
  uint64_t id = 0;
  bool operator==(const ObjKey&) const = default;
};

struct ObjKeyHash {
  size_t operator()(const ObjKey& k) const {
    uint64_t h = k.id * 0x9E3779B97F4A7C15ull ^ (k.group + 0x632BE59BD9B4E019ull);
    h ^= h >> 29;
    return static_cast<size_t>(h);
  }
};

// An open object: its file and, on an OST of the sidecar format, its checksum sidecar
// (crc_fd -1 otherwise); closes its descriptors when the last reference goes.
class OpenFile {
 public:
  OpenFile(int fd, int crc_fd) : fd_(fd), crc_fd_(crc_fd) {}
  ~OpenFile();
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;

  int fd() const { return fd_; }
  int crc_fd() const { return crc_fd_; }

  // The data file opened again with O_DIRECT (read-write), on first use; -1 where the file
  // system refuses O_DIRECT (then large writes and reads stay buffered). Thread-safe.
  int direct_fd();

  // Set when this descriptor created the file: its directory entry is not yet durable, so
  // the next fsync of the object also fsyncs the parent directory.
  std::atomic<bool> dir_dirty{false};

 private:
  int fd_;
  int crc_fd_;
  std::once_flag direct_once_;
  int direct_fd_ = -1;  // written once under direct_once_
};

using FileRef = std::shared_ptr<OpenFile>;

class FdCache {
 public:
  // capacity >= 1: the most objects (one to three descriptors each) the cache keeps open.
  explicit FdCache(size_t capacity);

  // The cached file for `key`, or the result of `open` (called under the shard lock; a
  // failure is returned as is and nothing is cached).
  Result<FileRef> Get(const ObjKey& key, const std::function<Result<FileRef>()>& open);

  // Runs `fn` (e.g. unlink) under the key's shard lock, then drops any cached descriptor.
  Status Invalidate(const ObjKey& key, const std::function<Status()>& fn);

  // Descriptors the cache holds now.
  size_t size() const;

 private:
  struct Shard {
    mutable std::mutex mu;
    std::list<std::pair<ObjKey, FileRef>> lru;  // front = most recently used; GUARDED_BY(mu)
    std::unordered_map<ObjKey, std::list<std::pair<ObjKey, FileRef>>::iterator, ObjKeyHash>
        index;                                  // GUARDED_BY(mu)
  };
  Shard& ShardFor(const ObjKey& key);

  size_t per_shard_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace stria::oss::internal
