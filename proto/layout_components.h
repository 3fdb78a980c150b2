// Composite layouts (Lustre's PFL) over proto::Layout: which plain layout stores which bytes.
//
// A plain layout stores the whole file, [0, EOF). A composite layout is a list of components
// that tile the file from 0 without gaps or overlaps, in order; each stores its extent
// [start, end) with its own plain RAID-0 layout, addressed by the absolute file offset (as
// Lustre does: a component's objects hold its bytes where common/layout.h's arithmetic over
// the whole file puts them). A component has objects once it is instantiated (LCME_FL_INIT);
// bytes of an uninstantiated component are holes. The last component may end before EOF:
// nothing can be written past its end (EFBIG).
//
// A Data-on-MDT component (pattern PATTERN_MDT, only ever the first) stores its bytes on the
// MDS instead of in OST objects: it has no objects, and is instantiated (LCME_FL_INIT) from
// the start.
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria {

inline constexpr uint64_t kLayoutEof = UINT64_MAX;  // LUSTRE_EOF
// lcme_flags bits, as Lustre's lov_comp_md_entry_flags.
inline constexpr uint32_t kLcmeFlStale = 0x1;   // LCME_FL_STALE: a mirror lacking some bytes
inline constexpr uint32_t kLcmeFlPrefRd = 0x2;  // LCME_FL_PREF_RD: read this mirror first
inline constexpr uint32_t kLcmeFlPrefWr = 0x4;  // LCME_FL_PREF_WR
inline constexpr uint32_t kLcmeFlPrefRw = 0x6;  // LCME_FL_PREF_RW ("prefer")
inline constexpr uint32_t kLcmeFlInit = 0x10;   // LCME_FL_INIT
inline constexpr int kMaxLayoutComponents = 64;
inline constexpr uint32_t kMaxMirrors = 16;     // LUSTRE_MIRROR_COUNT_MAX
// A component id's high 16 bits are its mirror id (lcme_mirror_id; 0: not mirrored).
inline constexpr uint32_t MirrorIdOf(uint32_t component_id) { return component_id >> 16; }
inline constexpr uint32_t ComponentId(uint32_t mirror_id, uint32_t seq) {
  return (mirror_id << 16) | (seq & 0xffff);
}
inline constexpr uint64_t kComponentAlign = 64ull << 10;  // an e_end is a multiple of this

inline bool IsComposite(const proto::Layout& l) { return l.components_size() > 0; }

// One plain layout and the file bytes it stores. A mirrored layout has one per component of
// every mirror: extents of different mirrors overlap (proto/layout_mirrors.h picks one).
struct LayoutExtent {
  uint64_t start = 0;
  uint64_t end = kLayoutEof;
  const proto::Layout* plain = nullptr;  // points into the layout given
  uint32_t id = 0;                       // the component id (0 for a plain layout)
  bool init = false;                     // has its objects (or lives on the MDS)
  bool on_mdt = false;                   // Data-on-MDT: the bytes are the MDS's
};

// The extents of `l` in file order: one for a plain layout, one per component otherwise.
std::vector<LayoutExtent> LayoutExtents(const proto::Layout& l);

// Some bytes have a place: a plain layout with objects, or an instantiated component
// (OST objects or Data-on-MDT).
bool HasObjects(const proto::Layout& l);

// The end of the Data-on-MDT component, or 0 when the layout has none.
uint64_t DomEnd(const proto::Layout& l);

// Every extent that [start, end) reaches has its objects.
bool RangeInstantiated(const proto::Layout& l, uint64_t start, uint64_t end);

// The end of the last extent: writes may not reach past it.
uint64_t LayoutEnd(const proto::Layout& l);

// Every stripe object, of all instantiated components, in layout order.
std::vector<const proto::StripeObject*> AllObjects(const proto::Layout& l);

// EINVAL with a reason unless the components tile [0, end) in order: the first starts at 0,
// each starts where the previous ended, ends grow, every end but EOF is a multiple of
// kComponentAlign, at most kMaxLayoutComponents, and no component nests another. With
// mirrors (mirror ids in the component ids), each mirror's components are consecutive and
// tile the file that way on their own, every mirror ends at the same place, none is mirror
// 0, there are at most kMaxMirrors, and none is on the MDT. Stale ranges lie sorted inside
// their component's extent.
Status CheckComponentExtents(const proto::Layout& l);

}  // namespace stria
