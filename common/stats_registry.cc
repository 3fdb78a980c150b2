#include "common/stats_registry.h"

#include <fnmatch.h>

namespace stria {

void StatsRegistry::Add(const std::string& name, FormatFn format, ClearFn clear) {
  std::lock_guard lock(mu_);
  entries_[name] = Entry{std::move(format), std::move(clear)};
}

std::map<std::string, std::string> StatsRegistry::Get(const std::string& pattern, bool clear,
                                                      bool names_only) const {
  std::map<std::string, std::string> out;
  std::lock_guard lock(mu_);
  for (const auto& [name, e] : entries_) {
    if (!pattern.empty() && fnmatch(pattern.c_str(), name.c_str(), 0) != 0) continue;
    out[name] = names_only ? std::string() : e.format();
    if (clear && e.clear) e.clear();
  }
  return out;
}

}  // namespace stria
