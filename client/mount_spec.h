// MountSpec: the DEVICE of a Stria mount, `NID[,NID...]:/fsname`.
//
//   127.0.0.1@tcp:9880:/training        one MGS NID with a port
//   mds1@tcp,mds2@tcp:/scratch         failover MGS NIDs, default port
//
// The fsname follows the last ":/"; the part before it is the MGS NID list (lnet/nid.h).
// An fsname is 1 to 32 characters of [A-Za-z0-9_-]. Thread-safety: values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "lnet/nid.h"

namespace stria::client {

inline constexpr size_t kMaxFsnameLen = 32;

struct MountSpec {
  std::vector<lnet::Nid> mgs_nids;
  std::string fsname;
};

// EINVAL with a message that names the device and what is wrong.
Result<MountSpec> ParseMountSpec(std::string_view device);

// EINVAL unless `fsname` is a valid filesystem name.
Status ValidateFsname(std::string_view fsname);

}  // namespace stria::client
