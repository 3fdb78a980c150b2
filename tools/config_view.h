// What the tools read out of the filesystem configuration (FsConfig) the MGS sends.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "proto/stria.pb.h"

namespace stria::tools {

// Whether an operator deactivated OST `idx` (osp.FS-OSTxxxx-osc-MDT0000.active=0, lctl
// deactivate), by the MDS's rule: the longest stored param name that matches wins.
bool OstAdminInactive(const proto::FsConfig& config, uint32_t idx);

// The OST is registered, heard from, and not deactivated: Lustre's ACTIVE.
bool OstActive(const proto::FsConfig& config, const proto::OstInfo& ost);

}  // namespace stria::tools
