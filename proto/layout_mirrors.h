// Mirrored layouts (Lustre's FLR) over proto::Layout: which mirrors hold which bytes, which
// are stale, and where a read goes.
//
// A mirrored layout is a composite layout whose component ids carry a mirror id in their
// high 16 bits (proto/layout_components.h): each mirror is a list of consecutive components
// that tiles the file by itself, so every mirror stores every byte. A component with
// LCME_FL_STALE may lack the bytes of its stale ranges (its whole extent when it lists
// none): reads never use it, writes skip it, and a resync copies those ranges from a mirror
// that is not stale and clears the mark. The MDS keeps the invariant that every byte has at
// least one mirror that is not stale there (OtherMirrorHolds before any mark).
//
// A layout without mirror ids (plain, or PFL) is "one mirror, id 0" to every function here.
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <vector>

#include "proto/layout_components.h"
#include "proto/stria.pb.h"

namespace stria {

// lcm_flags of a composite layout (LCM_FL_*, values rather than bits, as Lustre's).
inline constexpr uint32_t kLcmFlNone = 0;
inline constexpr uint32_t kLcmFlRdonly = 1;        // "ro": every mirror in sync
inline constexpr uint32_t kLcmFlWritePending = 2;  // "wp": some mirror is stale
inline constexpr uint32_t kLcmFlSyncPending = 3;   // "sp": a resync is copying

struct ByteSpan {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  bool operator==(const ByteSpan&) const = default;
};

// The mirror ids of `l` in layout order: {} for a plain layout, {0} for a PFL one.
std::vector<uint32_t> MirrorIds(const proto::Layout& l);

// lcm_mirror_count: how many mirrors (1 for a layout without mirrors).
uint32_t MirrorCount(const proto::Layout& l);

// More than one mirror.
bool IsMirrored(const proto::Layout& l);

// The layout of mirror `mirror_id` alone: a composite layout of its components, with the
// file's ino and generation, which common/layout.h and client/striped_io.h address as any
// PFL layout. A plain layout is its own view (mirror 0).
proto::Layout MirrorView(const proto::Layout& l, uint32_t mirror_id);

// The file bytes a component may lack: empty when it is not stale, its extent when it is
// and lists no range.
std::vector<ByteSpan> StaleSpans(const proto::LayoutComponent& c);

// Some component of `l` is stale.
bool HasStale(const proto::Layout& l);

// lcm_flags: kLcmFlNone without mirrors, kLcmFlWritePending while a mirror is stale,
// kLcmFlRdonly otherwise.
uint32_t LcmFlags(const proto::Layout& l);

// Whether every byte of [start, end) that mirror `mirror_id` stores is marked stale in it
// already (a write there needs no new mark).
bool StaleCovers(const proto::Layout& l, uint32_t mirror_id, uint64_t start, uint64_t end);

// Marks [start, end) stale in each component of mirror `mirror_id` it reaches (merging with
// the ranges marked already; a component with more than kMaxStaleRanges is marked stale
// from its first range to its end): true when something changed. The generation is the
// caller's to bump.
inline constexpr int kMaxStaleRanges = 32;
bool AddStaleRange(proto::Layout* l, uint32_t mirror_id, uint64_t start, uint64_t end);

// Whether every byte of [start, end) is held by an instantiated component, not stale there,
// of a mirror other than `mirror_id` (bytes past the layout's end count as held).
bool OtherMirrorHolds(const proto::Layout& l, uint32_t mirror_id, uint64_t start,
                      uint64_t end);

// One piece of a read: file bytes [start, end) and the mirrors that may serve them, best
// first. Empty `mirrors`: no mirror has objects there (a hole).
struct MirrorPiece {
  uint64_t start = 0;
  uint64_t end = 0;
  std::vector<uint32_t> mirrors;
};

// Where a read of [offset, offset + length) goes: pieces cut at every component boundary of
// every mirror and at every stripe of the first candidate, each with the mirrors that hold
// its bytes (instantiated, not stale there), preferred ones (LCME_FL_PREF_RD) first, the
// rest rotated by stripe number so that consecutive stripes of a file are read from
// different mirrors (and so OSSes). Adjacent pieces with the same order are merged. When
// every mirror is stale over a piece (which the MDS never lets happen), the stale ones are
// listed so the bytes are still read.
std::vector<MirrorPiece> PlanMirrorRead(const proto::Layout& l, uint64_t offset,
                                        uint64_t length);

}  // namespace stria
