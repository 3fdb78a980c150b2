#include "tools/config_view.h"

#include <fnmatch.h>

#include <cstdio>
#include <string>

namespace stria::tools {

bool OstAdminInactive(const proto::FsConfig& config, uint32_t idx) {
  char name[64];
  std::snprintf(name, sizeof(name), "-OST%04x-osc-MDT0000.active", idx);
  const std::string canonical = "osp." + config.fsname() + name;
  size_t best = 0;
  bool inactive = false;
  for (const auto& [k, v] : config.params()) {
    if (k.size() < best || fnmatch(k.c_str(), canonical.c_str(), 0) != 0) continue;
    best = k.size();
    inactive = v == "0";
  }
  return inactive;
}

bool OstActive(const proto::FsConfig& config, const proto::OstInfo& ost) {
  return ost.active() && !OstAdminInactive(config, ost.index());
}

}  // namespace stria::tools
