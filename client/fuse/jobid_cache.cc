#include "client/fuse/jobid_cache.h"

#include <fstream>
#include <iterator>

namespace stria::client::fuse {

std::string JobIdCache::Read(pid_t pid, uid_t uid, const std::string& jobid_var) {
  if (jobid_var.empty() || jobid_var == "disable") return "";
  const std::string proc = "/proc/" + std::to_string(pid);
  {
    std::ifstream env(proc + "/environ", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    const std::string key = jobid_var + "=";
    size_t pos = 0;
    while (pos < all.size()) {
      size_t end = all.find('\0', pos);
      if (end == std::string::npos) end = all.size();
      if (all.compare(pos, key.size(), key) == 0) {
        std::string v = all.substr(pos + key.size(), end - pos - key.size());
        if (!v.empty()) return v.substr(0, 128);
      }
      pos = end + 1;
    }
  }
  std::ifstream comm(proc + "/comm");
  std::string name;
  std::getline(comm, name);
  if (name.empty()) return "";
  return name + "." + std::to_string(uid);
}

std::string JobIdCache::Get(pid_t pid, uid_t uid, const std::string& jobid_var) {
  const Clock::time_point now = Clock::now();
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(pid);
    if (it != entries_.end() && it->second.expires > now && it->second.var == jobid_var) {
      return it->second.jobid;
    }
  }
  std::string jobid = Read(pid, uid, jobid_var);
  std::lock_guard lock(mu_);
  if (entries_.size() >= max_entries_) entries_.clear();
  entries_[pid] = Entry{now + ttl_, jobid_var, jobid};
  return jobid;
}

}  // namespace stria::client::fuse
