#include "client/fuse/dir_attr_cache.h"

#include <sys/stat.h>

#include <algorithm>

namespace stria::client::fuse {

void DirAttrCache::Put(const proto::Attr& attr, Clock::time_point now) {
  if (ttl_.count() <= 0 || attr.ino() == 0 || !S_ISDIR(attr.mode())) return;
  std::lock_guard lock(mu_);
  auto it = entries_.find(attr.ino());
  if (it != entries_.end()) {
    if (it->second.attr.ctime_ns() > attr.ctime_ns()) return;
    it->second = Entry{attr, now + ttl_};
    return;
  }
  if (entries_.size() >= max_entries_) {
    // Expired entries first; if none, start over (they are refetched on demand).
    std::erase_if(entries_, [now](const auto& e) { return e.second.expires <= now; });
    if (entries_.size() >= max_entries_) entries_.clear();
  }
  entries_.emplace(attr.ino(), Entry{attr, now + ttl_});
}

std::optional<proto::Attr> DirAttrCache::Get(uint64_t ino, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(ino);
  if (it == entries_.end()) return std::nullopt;
  if (it->second.expires <= now) {
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second.attr;
}

void DirAttrCache::Touch(uint64_t ino, int64_t now_ns) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(ino);
  if (it == entries_.end()) return;
  proto::Attr& a = it->second.attr;
  a.set_mtime_ns(std::max(a.mtime_ns(), now_ns));
  a.set_ctime_ns(std::max(a.ctime_ns(), now_ns));
}

void DirAttrCache::Drop(uint64_t ino) {
  std::lock_guard lock(mu_);
  entries_.erase(ino);
}

void DirAttrCache::Clear() {
  std::lock_guard lock(mu_);
  entries_.clear();
}

size_t DirAttrCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace stria::client::fuse
