// The layout as Lustre exposes it in the `lustre.lov` (and `trusted.lov`) extended
// attribute: a packed little-endian lov_user_md_v1, so tools that read or restore Lustre
// striping through xattrs (tar --xattrs, rsync -X, scripts using getfattr) work on Stria.
//
//   u32 lmm_magic (0x0BD10BD0)   u32 lmm_pattern (1 = RAID0)
//   u64 lmm_oi.id  u64 lmm_oi.seq  (the first object)
//   u32 lmm_stripe_size   u16 lmm_stripe_count   u16 lmm_stripe_offset (layout gen for files)
//   then per object: u64 id, u64 seq, u32 ost_gen, u32 ost_idx        (32 + 24 * count bytes)
//
// A directory's default layout has no objects and stripe_offset 0xffff when the MDS chooses.
//
// A composite (PFL) layout is a lov_comp_md_v1: a 32-byte header (u32 magic 0x0BD60BD0,
// u32 total size, u32 layout gen, u16 flags, u16 entry count, u16 mirror count - 1, padding),
// then a 48-byte lov_comp_md_entry_v1 per component (u32 id, u32 flags, u64 e_start,
// u64 e_end, u32 blob offset, u32 blob size, ...), then each component's lov_user_md_v1.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client {

inline constexpr uint32_t kLovMagicV1 = 0x0BD10BD0;
inline constexpr uint32_t kLovMagicCompV1 = 0x0BD60BD0;

// True for the names under which the layout is exposed.
bool IsLovXattrName(std::string_view name);

// Packs a file's layout (with its objects) or a directory's default layout (without).
std::string PackLov(const proto::Layout& layout, bool with_objects);

// Parses a lov_user_md_v1 or lov_comp_md_v1 written by a user (setfattr, tar): extents and
// stripe size, count and offset only. EINVAL for a short buffer, a wrong magic or pattern,
// an invalid stripe, a component blob outside the buffer or components that do not tile.
Result<proto::Layout> UnpackLov(std::string_view value);

}  // namespace stria::client
