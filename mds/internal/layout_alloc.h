// Layout choice and object allocation for new regular files.
//
// The geometry of a new file is resolved field by field, most specific first: the layout
// the create asked for (lfs setstripe on a file), the parent directory's default layout, the
// root's default (the filesystem default), then the built-in default (RAID-0, 1 stripe of
// 4 MiB). stripe_size 0 and stripe_count 0 mean "inherit"; stripe_offset is taken from the
// most specific layout present (-1 = the MDS chooses). stripe_count -1 means every active
// OST; a count above the number of active OSTs is clamped to it. A chosen start goes round
// robin over the active OSTs that sent a heartbeat (OP_MGS_REGISTER_OST) within
// kOstStaleNs, or over all active ones when none did (a cursor kept in memory); a given
// stripe_offset must name an active OST (EINVAL otherwise). OSTs that are nearly full
// (OstNearlyFull, from the free space each heartbeat reports) are left out of a chosen start
// and of the stripes after it, as Lustre leaves out degraded/full OSTs, unless every
// candidate is full (then they are used, and the writes get ENOSPC). Leaving OSTs out can
// clamp stripe_count to the number of OSTs with room. Object ids come from each OST's counter
// in the Txn, so they are persisted in the create's own batch and never reused.
// Thread-safety: REQUIRES the Namespace mutex (through the Txn).
#pragma once

#include <map>
#include <vector>

#include "mds/txn.h"

namespace stria::mds {

// An OST silent for this long gets no new objects while others are alive (OSSes heartbeat
// every 5 s).
inline constexpr int64_t kOstStaleNs = 30'000'000'000;

// An OST is nearly full when its last heartbeat reported less free space than
// min(kOstReservedBytes, total / kOstReservedFraction): 64 MiB, or 0.1% on OSTs under 64 GiB.
// OSTs that never reported space (0/0) are never full.
inline constexpr uint64_t kOstReservedBytes = 64ull << 20;
inline constexpr uint64_t kOstReservedFraction = 1000;
bool OstNearlyFull(const proto::OstInfo& info);

// The OSTs new objects may go to, in index order: of the `active` ones (ascending indexes),
// those that are not nearly full, or all of them when every one is. Exposed for tests.
std::vector<uint32_t> OstsWithRoom(const std::map<uint32_t, OstState>& osts,
                                   const std::vector<uint32_t>& active);

// The built-in filesystem default: RAID-0, stripe_count 1, stripe_size 4 MiB, offset -1.
proto::Layout BuiltinDefaultLayout();

// kInval when a layout given by a user (a create's or a directory default) is malformed.
// Zero size/count are allowed (inherit). Active OST membership is checked at allocation.
Status CheckLayoutRequest(const proto::Layout& layout);

// The default layout a new file in `parent` inherits (parent, root, built-in), objects empty.
Result<proto::Layout> EffectiveDefault(Txn& txn, uint64_t parent);
// The same from records read outside a Txn: `dir` is null for the root itself.
proto::Layout MergeDefaults(const InodeRecord& root, const InodeRecord* dir);

// Resolves `requested` (may be null) against the defaults and allocates the objects.
Result<proto::Layout> AllocateLayout(Txn& txn, uint64_t parent, const proto::Layout* requested);

}  // namespace stria::mds
