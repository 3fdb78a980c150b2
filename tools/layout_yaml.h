// Layouts as YAML, the way `lfs getstripe --yaml` prints them and `lfs setstripe --yaml FILE`
// takes them back (Lustre's templates: a file's layout, copied to new files).
//
// Composite:                                 Plain:
//   lcm_layout_gen:    2                       lmm_stripe_count:  2
//   lcm_mirror_count:  1                       lmm_stripe_size:   1048576
//   lcm_entry_count:   2                       lmm_pattern:       raid0
//   components:                                lmm_layout_gen:    0
//     - lcme_id:             1                 lmm_stripe_offset: 1
//       lcme_mirror_id:      0                 lmm_objects:
//       lcme_flags:          init                    - l_ost_idx: 1
//       lcme_extent.e_start: 0                         l_fid:     0x100010000:0x5:0x0
//       lcme_extent.e_end:   4194304
//       sub_layout:
//         lmm_stripe_count:  1  (... as plain, indented by six, objects as above)
//
// Parsing reads the extents and each (sub)layout's stripe count, size, pattern (raid0, mdt),
// offset and pool; ids, flags, generations and objects are what the MDS decides, so they
// are skipped. A component not yet instantiated keeps its requested count (-1: all OSTs).
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::tools {

std::string FormatYaml(const proto::Layout& layout);

// EINVAL with the line at fault for text that is not such a layout; the result passes the
// MDS's checks only if its values do (CheckLayoutRequest).
Result<proto::Layout> ParseYaml(std::string_view text);

}  // namespace stria::tools
