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
// clamp stripe_count to the number of OSTs with room. A pool (lfs setstripe -p) restricts
// the candidates to its members; an OST an operator deactivated (osp.*.active=0, lctl
// deactivate) is never a candidate. When the candidates' free space is imbalanced
// (lod.*.qos_threshold_rr, mds/params.h), the MDS-chosen stripes are drawn with
// probability proportional to free space instead of round robin (Lustre's QoS). Object ids come from each OST's counter
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

// Lustre's QoS rule: the candidates' free space differs by more than threshold_pct percent
// of the largest (lod.*.qos_threshold_rr, 17 by default). False while any candidate has not
// reported its space, or with fewer than two. Exposed for tests.
bool FreeSpaceImbalanced(const std::map<uint32_t, OstState>& osts,
                         const std::vector<uint32_t>& candidates, uint32_t threshold_pct);

// `count` distinct candidates drawn with probability proportional to their free space.
std::vector<uint32_t> WeightedByFreeSpace(const std::map<uint32_t, OstState>& osts,
                                          std::vector<uint32_t> candidates, uint32_t count);

// The built-in filesystem default: RAID-0, stripe_count 1, stripe_size 4 MiB, offset -1.
proto::Layout BuiltinDefaultLayout();

// kInval when a layout given by a user (a create's or a directory default) is malformed.
// Zero size/count are allowed (inherit). Active OST membership is checked at allocation.
// A composite layout's components must tile the file (proto/layout_components.h), carry
// no flags, and each be a valid plain request.
Status CheckLayoutRequest(const proto::Layout& layout);

// The default layout a new file in `parent` inherits (parent, root, built-in), objects empty.
// A composite default replaces a plain one whole; its components inherit the fields they
// leave unset (stripe size, count, pool) from the plain default beneath.
Result<proto::Layout> EffectiveDefault(Txn& txn, uint64_t parent);
// The same from records read outside a Txn: `dir` is null for the root itself.
proto::Layout MergeDefaults(const InodeRecord& root, const InodeRecord* dir);

// Resolves `requested` (may be null) against the defaults and allocates the objects: all of
// them for a plain layout; for a composite one those of the component holding offset 0
// (the others wait for OP_MDS_LAYOUT_INTENT), components numbered 1.. in order (with their
// mirror id in the high bits, as Lustre: mirror 2's first component of a two-mirror file is
// 131074). The components of a mirror go to other OSSes than the other mirrors' copies of
// the same bytes when another OSS exists, even one that is silent (down): such a component
// starts stale over its extent, for the resync to fill when its OSS returns.
Result<proto::Layout> AllocateLayout(Txn& txn, uint64_t parent, const proto::Layout* requested);

// AllocateLayout without the allocation: the layout a new file in `parent` would get,
// components numbered and checked, no objects.
Result<proto::Layout> ResolveLayout(Txn& txn, uint64_t parent, const proto::Layout* requested);

// Makes a Data-on-MDT request concrete under the limit lod.*.dom_stripesize: a plain
// `-L mdt` layout becomes one MDT component [0, limit); a first MDT component past the limit
// is cut to it (as Lustre); EINVAL when DoM is disabled (limit 0). The MDT component gets
// stripe_size = its end, count 0, offset 0 (the MDT index), as lfs getstripe shows it.
Status ApplyDomLimit(proto::Layout* l, uint64_t limit);

// Allocates the objects of every component of `l` that [start, end) reaches and that has
// none yet (a mirror's apart from the other mirrors' copies, as AllocateLayout), marks them
// LCME_FL_INIT and bumps the generation: true when something changed.
// A plain layout is always complete (false). EFBIG when `end` is past the last component.
Result<bool> InstantiateRange(Txn& txn, proto::Layout* l, uint64_t start, uint64_t end);

}  // namespace stria::mds
