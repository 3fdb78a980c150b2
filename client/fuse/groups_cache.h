// GroupsCache: the supplementary groups of the processes that call into the mount.
//
// libfuse learns a caller's groups by reading /proc/PID/task/PID/status, which costs an
// open, a kernel-formatted page and a close: more CPU than the rest of a lookup. Every MDS
// request carries the caller's groups, so the FUSE client keeps them per (pid, uid, gid) for
// a short time. Staleness is bounded by the TTL, and with default_permissions (the default)
// the kernel checks every access with the process's live credentials before the MDS sees
// it, so a stale entry can never grant what the kernel refuses. ttl 0 disables the cache
// (nodefault_permissions mounts, where the MDS alone decides).
//
// Thread-safety: all methods are thread-safe (one mutex; the critical sections are a hash
// lookup or insert).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace stria::client::fuse {

class GroupsCache {
 public:
  using Clock = std::chrono::steady_clock;
  // Reads the groups of the calling process; false when it cannot.
  using Loader = std::function<bool(std::vector<gid_t>*)>;

  explicit GroupsCache(std::chrono::milliseconds ttl, size_t max_entries = 4096)
      : ttl_(ttl), max_entries_(max_entries) {}

  // The groups of (pid, uid, gid): cached when fresh, else load()ed (and cached on success).
  // False when load fails.
  bool Get(pid_t pid, uid_t uid, gid_t gid, const Loader& load, std::vector<gid_t>* groups);

  size_t size() const;

 private:
  struct Key {
    pid_t pid;
    uid_t uid;
    gid_t gid;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>{}((static_cast<uint64_t>(k.pid) << 32) ^
                                   (static_cast<uint64_t>(k.uid) << 16) ^ k.gid);
    }
  };
  struct Entry {
    Clock::time_point expires;
    std::vector<gid_t> groups;
  };

  const std::chrono::milliseconds ttl_;
  const size_t max_entries_;
  mutable std::mutex mu_;
  std::unordered_map<Key, Entry, KeyHash> entries_;  // GUARDED_BY(mu_)
};

}  // namespace stria::client::fuse
