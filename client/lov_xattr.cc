#include "client/lov_xattr.h"

#include <cstring>

#include "common/layout.h"

namespace stria::client {

namespace {

constexpr uint32_t kPatternRaid0 = 1;
constexpr size_t kHeaderSize = 32;
constexpr size_t kObjectSize = 24;
constexpr uint16_t kU16All = 0xffff;  // stripe count -1 (all OSTs) / offset -1 (MDS picks)

template <typename T>
void Put(std::string* out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

template <typename T>
T Get(std::string_view in, size_t off) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<T>(static_cast<uint8_t>(in[off + i])) << (8 * i);
  }
  return v;
}

uint16_t ToU16(int32_t v) { return v < 0 ? kU16All : static_cast<uint16_t>(v); }

}  // namespace

bool IsLovXattrName(std::string_view name) {
  return name == "lustre.lov" || name == "trusted.lov";
}

std::string PackLov(const proto::Layout& layout, bool with_objects) {
  std::string out;
  const int n = with_objects ? layout.objects_size() : 0;
  out.reserve(kHeaderSize + kObjectSize * static_cast<size_t>(n));
  Put<uint32_t>(&out, kLovMagicV1);
  Put<uint32_t>(&out, kPatternRaid0);
  const uint64_t first_id = n > 0 ? layout.objects(0).object_id() : 0;
  const uint64_t first_seq = n > 0 ? layout.objects(0).group() : 0;
  Put<uint64_t>(&out, first_id);
  Put<uint64_t>(&out, first_seq);
  Put<uint32_t>(&out, static_cast<uint32_t>(layout.stripe_size()));
  Put<uint16_t>(&out, with_objects ? static_cast<uint16_t>(n) : ToU16(layout.stripe_count()));
  // Files carry their layout generation here; directories the first OST (or "any").
  Put<uint16_t>(&out, with_objects ? static_cast<uint16_t>(layout.generation())
                                   : ToU16(layout.stripe_offset()));
  for (int i = 0; i < n; ++i) {
    const proto::StripeObject& o = layout.objects(i);
    Put<uint64_t>(&out, o.object_id());
    Put<uint64_t>(&out, o.group());
    Put<uint32_t>(&out, 0);  // ost generation
    Put<uint32_t>(&out, o.ost_idx());
  }
  return out;
}

Result<proto::Layout> UnpackLov(std::string_view value) {
  if (value.size() < kHeaderSize) {
    return Status(Code::kInval, "lov xattr shorter than a lov_user_md_v1 header");
  }
  if (Get<uint32_t>(value, 0) != kLovMagicV1) {
    return Status(Code::kInval, "lov xattr magic is not lov_user_md_v1 (0x0BD10BD0)");
  }
  if (Get<uint32_t>(value, 4) != kPatternRaid0) {
    return Status(Code::kInval, "only the RAID0 layout pattern is supported");
  }
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  const uint32_t size = Get<uint32_t>(value, 24);
  const uint16_t count = Get<uint16_t>(value, 28);
  const uint16_t offset = Get<uint16_t>(value, 30);
  l.set_stripe_size(size == 0 ? kDefaultStripeSize : size);
  l.set_stripe_count(count == kU16All ? -1 : count == 0 ? static_cast<int32_t>(kDefaultStripeCount)
                                                        : count);
  l.set_stripe_offset(offset == kU16All ? -1 : offset);
  const uint32_t check_count = l.stripe_count() < 0 ? 1 : static_cast<uint32_t>(l.stripe_count());
  STRIA_RETURN_IF_ERROR(ValidateStripe(l.stripe_size(), check_count));
  return l;
}

}  // namespace stria::client
