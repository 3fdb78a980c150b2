// Text shapes of `lfs getstripe`, as Lustre's liblustreapi prints them.
//
// A regular file (all fields):
//   /mnt/training-data/f
//   lmm_stripe_count:  2
//   lmm_stripe_size:   1048576
//   lmm_pattern:       raid0
//   lmm_layout_gen:    0
//   lmm_stripe_offset: 1
//   \tobdidx\t\t objid\t\t objid\t\t group
//   \t     1\t             5\t          0x5\t             0
//   \t     2\t             5\t          0x5\t             0
//   (blank line)
//
// A composite (PFL) file, as Lustre 2.16 prints lov_comp_md_v1 (objects as IDIF FIDs):
//   /mnt/training-data/f
//     lcm_layout_gen:    2
//     lcm_mirror_count:  1
//     lcm_entry_count:   2
//       lcme_id:             1
//       lcme_mirror_id:      0
//       lcme_flags:          init
//       lcme_extent.e_start: 0
//       lcme_extent.e_end:   4194304
//         lmm_stripe_count:  1
//         ... (the plain fields, indented by six)
//         lmm_objects:
//         - 0: { l_ost_idx:   0, l_fid: [0x100000000:0x2:0x0] }
//   (blank line after each component)
// A directory's composite template prints "lcme_id: N/A" and each component's fields on
// one line. Asking for single fields (-c, -S, ...) prints them for the last instantiated
// component only (the last component of a template), as Lustre does.
//
// A directory's default layout is one line ("stripe_count:  1 stripe_size:   4194304
// pattern:       raid0 stripe_offset: -1"). When exactly one field is asked for (-c, -S,
// -i, ...), only its value is printed, as Lustre does. Labels appear when more than one
// field is shown. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "proto/stria.pb.h"

namespace stria::tools {

// Fields `lfs getstripe` shows (Lustre's VERBOSE_* bits).
enum GetstripeField : uint32_t {
  kFieldObjects = 1u << 0,     // the obdidx/objid table (files only)
  kFieldCount = 1u << 1,       // -c
  kFieldSize = 1u << 2,        // -S
  kFieldOffset = 1u << 3,      // -i
  kFieldPool = 1u << 4,        // -p (printed only when a pool is set)
  kFieldPattern = 1u << 5,     // -L
  kFieldGeneration = 1u << 6,  // -g (files only)
  kFieldComponentCount = 1u << 7,  // --component-count (composite layouts)
  kFieldFid = 1u << 8,             // -F/--fid: lmm_fid, the file's FID (not by default)
  kFieldsDefault = kFieldObjects | kFieldCount | kFieldSize | kFieldOffset | kFieldPool |
                   kFieldPattern | kFieldGeneration | kFieldComponentCount,
};

struct GetstripeFormat {
  uint32_t fields = kFieldsDefault;
  bool show_path = true;  // false for -d and the single-field options, as Lustre
  uint32_t component_id = 0;  // -I ID: only that component (0 = all)
  // --component-start/--component-end: only the components whose extent passes (null: all).
  std::function<bool(uint64_t start, uint64_t end)> component_filter;
  bool detail = false;        // -v: lmm_magic, lmm_seq, lmm_object_id, lmm_fid; for a
                              // composite layout its header and each entry's blob offset
  std::string fid;            // the file's FID as FormatFid prints it (for -v and -F)
};

// An object as Lustre names it in lmm_objects: "[0x100010000:0x5:0x0]" (an IDIF FID).
std::string ObjectFid(const proto::StripeObject& o);

// "raid0", or the pattern number in hex for one this tool does not know.
std::string PatternName(proto::LayoutPattern pattern);

// A regular file's layout, in the shape above (plain or composite).
std::string FormatFileLayout(std::string_view path, const proto::Layout& layout,
                             const GetstripeFormat& format);

// A directory's default layout (already made effective with EffectiveDirLayout).
// (plain or composite).
std::string FormatDirLayout(std::string_view path, const proto::Layout& layout,
                            const GetstripeFormat& format);

// What a directory's files inherit: its own default layout where set (dir_layout non-null),
// with "inherit" fields (count 0, size 0, pattern none) filled from the filesystem default;
// the filesystem default itself otherwise. Missing filesystem values fall back to
// common/layout.h's defaults (count 1, size 4 MiB). A composite template's components are
// filled the same way, each from the plain filesystem default.
proto::Layout EffectiveDirLayout(const proto::Layout* dir_layout,
                                 const proto::Layout& fs_default);

}  // namespace stria::tools
