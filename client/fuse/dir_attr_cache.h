// DirAttrCache: the attributes of directories as this client's own changes left them.
//
// With default_permissions the kernel checks write and search permission on the parent
// before every create and unlink, and it has just thrown the parent's attributes away
// (every change to a directory invalidates them), so each create or unlink would cost a
// GETATTR round trip to the MDS before the change itself. The MDS returns the parent's
// attributes after the change in its CREATE, LINK and UNLINK replies; this cache keeps them
// for the attribute timeout and answers the kernel's GETATTR from them. That is exactly as
// fresh as the kernel's own attribute cache would have been had it kept the reply: a change
// by another client shows within the attribute timeout, as for any cached attribute.
//
// An entry is replaced only by attributes at least as recent (ctime), so replies that race
// each other never bring an older state back; any other change this client makes to a
// directory (setattr, xattrs) drops its entry, and a rename (which changes the directory it
// moves as well as both parents) drops them all.
//
// Thread-safety: all methods are thread-safe (one mutex; hash lookups).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "proto/stria.pb.h"

namespace stria::client::fuse {

class DirAttrCache {
 public:
  using Clock = std::chrono::steady_clock;

  // ttl 0 disables the cache.
  explicit DirAttrCache(std::chrono::milliseconds ttl, size_t max_entries = 4096)
      : ttl_(ttl), max_entries_(max_entries) {}

  // Keeps `attr` (a directory's, from a reply) unless an entry with a later ctime is held.
  void Put(const proto::Attr& attr, Clock::time_point now = Clock::now());
  // The attributes of directory `ino` when fresh at `now`.
  std::optional<proto::Attr> Get(uint64_t ino, Clock::time_point now = Clock::now());
  // A change of directory `ino` answered here before the MDS made it (a write-back unlink,
  // unlink_writeback.h): its mtime and ctime move to now_ns, as the MDS's will when it
  // makes it (whose reply then replaces them). Nothing when the directory is not held.
  void Touch(uint64_t ino, int64_t now_ns);
  void Drop(uint64_t ino);
  void Clear();
  size_t size() const;

 private:
  struct Entry {
    proto::Attr attr;
    Clock::time_point expires;
  };
  const std::chrono::milliseconds ttl_;
  const size_t max_entries_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> entries_;  // GUARDED_BY(mu_)
};

}  // namespace stria::client::fuse
