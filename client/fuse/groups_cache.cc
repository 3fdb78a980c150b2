#include "client/fuse/groups_cache.h"

#include <algorithm>

namespace stria::client::fuse {

bool GroupsCache::Get(pid_t pid, uid_t uid, gid_t gid, const Loader& load,
                      std::vector<gid_t>* groups) {
  if (ttl_.count() <= 0) return load(groups);
  const Key key{pid, uid, gid};
  const Clock::time_point now = Clock::now();
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.expires > now) {
      *groups = it->second.groups;
      return true;
    }
  }
  if (!load(groups)) return false;
  std::lock_guard lock(mu_);
  if (entries_.size() >= max_entries_) {
    std::erase_if(entries_, [now](const auto& kv) { return kv.second.expires <= now; });
    if (entries_.size() >= max_entries_) entries_.clear();  // all fresh: start over
  }
  entries_[key] = Entry{now + ttl_, *groups};
  return true;
}

size_t GroupsCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace stria::client::fuse
