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
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client {

inline constexpr uint32_t kLovMagicV1 = 0x0BD10BD0;

// True for the names under which the layout is exposed.
bool IsLovXattrName(std::string_view name);

// Packs a file's layout (with its objects) or a directory's default layout (without).
std::string PackLov(const proto::Layout& layout, bool with_objects);

// Parses a lov_user_md_v1 written by a user (setfattr, tar): stripe size, count and offset
// only. EINVAL for a short buffer, a wrong magic or pattern, or an invalid stripe.
Result<proto::Layout> UnpackLov(std::string_view value);

}  // namespace stria::client
