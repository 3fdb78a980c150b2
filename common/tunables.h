// The client tunables Stria knows, in Lustre's names, with their ranges: one table that the
// MGS checks `lctl set_param -P` against (mds/params.h) and that the client applies
// (client/client_tunables.h). A name is DEVICE.INSTANCE.TUNABLE, where INSTANCE may be a glob
// (osc.*.max_rpcs_in_flight) or one instance (osc.testfs-OST0001-osc-*.checksums); jobid_var
// is global.
//
//   osc.*.max_rpcs_in_flight    1-256    RPCs in flight per OST (default 8)
//   osc.*.max_dirty_mb          0-2048   write-behind bytes in flight per file (MiB; default
//                                        8; 0 = writes are synchronous)
//   osc.*.checksums             0|1      crc32c of bulk data on the wire (default 1)
//   llite.*.max_read_ahead_mb   0-1024   kernel readahead of the mount (MiB; default 8)
//   jobid_var                   NAME     the environment variable holding the JOBID
//                                        (default SLURM_JOB_ID; "disable": no job stats)
// Thread-safety: pure functions over constant tables.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace stria {

struct TunableSpec {
  std::string_view device;  // "osc", "llite"
  std::string_view name;    // "max_rpcs_in_flight"
  int64_t min, max, def;
  std::string_view unit;    // for docs and errors
};

std::span<const TunableSpec> ClientTunables();

inline constexpr std::string_view kJobidVar = "jobid_var";
inline constexpr std::string_view kDefaultJobidVar = "SLURM_JOB_ID";

// The spec a parameter name refers to (its first and last components), or null.
const TunableSpec* FindClientTunable(std::string_view name);

// The integer value of `value` for `spec`: EINVAL naming the range when out of it.
Result<int64_t> ParseTunable(const TunableSpec& spec, std::string_view value);

// EINVAL unless `value` is an environment variable name (or "disable").
Status CheckJobidVar(std::string_view value);

// OK when `name`=`value` is a client tunable with a valid value; kNoEnt when `name` is not
// a client tunable at all; EINVAL for a bad value.
Status CheckClientParam(std::string_view name, std::string_view value);

}  // namespace stria
