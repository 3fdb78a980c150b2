// RAID-0 striping arithmetic: where the bytes of a file live among its stripe objects.
//
// A file striped over `stripe_count` objects in chunks of `stripe_size` bytes stores chunk k
// (file bytes [k*S, (k+1)*S)) in object k % count, at object offset (k / count) * S. This
// header maps file extents to object extents and object sizes back to a file size; it knows
// nothing of OSTs or the wire. Invariants: stripe_size > 0 and a multiple of 64 KiB,
// 1 <= stripe_count <= kMaxStripeCount (checked by ValidateStripe).
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace stria {

inline constexpr uint64_t kDefaultStripeSize = 4ull << 20;  // Lustre 2.16's default
inline constexpr uint32_t kDefaultStripeCount = 1;
inline constexpr uint64_t kMinStripeSize = 64ull << 10;
inline constexpr uint64_t kMaxStripeSize = 4ull << 30;
inline constexpr uint32_t kMaxStripeCount = 2000;
inline constexpr uint64_t kMaxFileSize = 1ull << 60;

struct StripeGeometry {
  uint64_t stripe_size = kDefaultStripeSize;
  uint32_t stripe_count = kDefaultStripeCount;
};

// One piece of a file extent that falls inside a single stripe object.
struct ObjectExtent {
  uint32_t stripe = 0;      // index into the layout's objects (0 .. stripe_count-1)
  uint64_t obj_offset = 0;  // byte offset inside that object
  uint64_t length = 0;
  uint64_t buf_offset = 0;  // offset of these bytes inside the caller's file-extent buffer
};

// EINVAL with a reason when the geometry is not one Stria accepts.
Status ValidateStripe(uint64_t stripe_size, uint32_t stripe_count);

// Splits file range [offset, offset+length) into per-object extents, in file order; one extent
// per chunk touched (adjacent chunks of the same object are not merged).
std::vector<ObjectExtent> MapExtent(const StripeGeometry& g, uint64_t offset, uint64_t length);

// The object offset of a file offset; the stripe index goes to *stripe when not null.
uint64_t ObjectOffset(const StripeGeometry& g, uint64_t file_offset, uint32_t* stripe);

// The size that object `stripe` must have for a file of `file_size` bytes (for truncate).
uint64_t ObjectSizeForFileSize(const StripeGeometry& g, uint32_t stripe, uint64_t file_size);

// The smallest file size consistent with object `stripe` having `object_size` bytes.
uint64_t FileSizeFromObject(const StripeGeometry& g, uint32_t stripe, uint64_t object_size);

}  // namespace stria
