#include "common/layout.h"

#include <algorithm>
#include <string>

namespace stria {

Status ValidateStripe(uint64_t stripe_size, uint32_t stripe_count) {
  if (stripe_size < kMinStripeSize || stripe_size > kMaxStripeSize ||
      stripe_size % kMinStripeSize != 0) {
    return Status(Code::kInval, "stripe size " + std::to_string(stripe_size) +
                                    " must be a multiple of 65536 between 64 KiB and 4 GiB");
  }
  if (stripe_count == 0 || stripe_count > kMaxStripeCount) {
    return Status(Code::kInval, "stripe count " + std::to_string(stripe_count) +
                                    " must be between 1 and " + std::to_string(kMaxStripeCount));
  }
  return Status::Ok();
}

std::vector<ObjectExtent> MapExtent(const StripeGeometry& g, uint64_t offset, uint64_t length) {
  std::vector<ObjectExtent> out;
  const uint64_t s = g.stripe_size;
  uint64_t pos = offset;
  const uint64_t end = offset + length;
  while (pos < end) {
    const uint64_t chunk = pos / s;
    const uint64_t in_chunk = pos % s;
    const uint64_t n = std::min(s - in_chunk, end - pos);
    ObjectExtent e;
    e.stripe = static_cast<uint32_t>(chunk % g.stripe_count);
    e.obj_offset = (chunk / g.stripe_count) * s + in_chunk;
    e.length = n;
    e.buf_offset = pos - offset;
    out.push_back(e);
    pos += n;
  }
  return out;
}

uint64_t ObjectOffset(const StripeGeometry& g, uint64_t file_offset, uint32_t* stripe) {
  const uint64_t chunk = file_offset / g.stripe_size;
  if (stripe) *stripe = static_cast<uint32_t>(chunk % g.stripe_count);
  return (chunk / g.stripe_count) * g.stripe_size + file_offset % g.stripe_size;
}

uint64_t ObjectSizeForFileSize(const StripeGeometry& g, uint32_t stripe, uint64_t file_size) {
  const uint64_t s = g.stripe_size;
  const uint64_t row = s * g.stripe_count;
  const uint64_t full_rows = file_size / row;
  const uint64_t rem = file_size % row;  // bytes in the last, partial row
  uint64_t size = full_rows * s;
  const uint64_t start = static_cast<uint64_t>(stripe) * s;
  if (rem > start) size += std::min(s, rem - start);
  return size;
}

uint64_t FileSizeFromObject(const StripeGeometry& g, uint32_t stripe, uint64_t object_size) {
  if (object_size == 0) return 0;
  const uint64_t s = g.stripe_size;
  const uint64_t last = object_size - 1;
  const uint64_t chunk_in_obj = last / s;
  const uint64_t file_chunk = chunk_in_obj * g.stripe_count + stripe;
  return file_chunk * s + last % s + 1;
}

}  // namespace stria
