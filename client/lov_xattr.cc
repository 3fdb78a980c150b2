#include "client/lov_xattr.h"

#include <cstring>
#include <vector>

#include "common/layout.h"
#include "proto/layout_components.h"
#include "proto/layout_mirrors.h"

namespace stria::client {

namespace {

constexpr uint32_t kPatternRaid0 = 1;
constexpr size_t kHeaderSize = 32;
constexpr size_t kObjectSize = 24;
constexpr size_t kCompHeaderSize = 32;  // lov_comp_md_v1
constexpr size_t kCompEntrySize = 48;   // lov_comp_md_entry_v1
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

std::string PackPlain(const proto::Layout& layout, bool with_objects) {
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

Result<proto::Layout> UnpackPlain(std::string_view value) {
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


}  // namespace

bool IsLovXattrName(std::string_view name) {
  return name == "lustre.lov" || name == "trusted.lov";
}

std::string PackLov(const proto::Layout& layout, bool with_objects) {
  if (!IsComposite(layout)) return PackPlain(layout, with_objects);
  std::vector<std::string> blobs;
  for (const proto::LayoutComponent& c : layout.components()) {
    blobs.push_back(PackPlain(c.layout(), with_objects && (c.flags() & kLcmeFlInit)));
  }
  const size_t n = blobs.size();
  size_t total = kCompHeaderSize + kCompEntrySize * n;
  for (const std::string& b : blobs) total += b.size();
  std::string out;
  out.reserve(total);
  Put<uint32_t>(&out, kLovMagicCompV1);
  Put<uint32_t>(&out, static_cast<uint32_t>(total));
  Put<uint32_t>(&out, layout.generation());
  Put<uint16_t>(&out, static_cast<uint16_t>(LcmFlags(layout)));  // lcm_flags
  Put<uint16_t>(&out, static_cast<uint16_t>(n));
  Put<uint16_t>(&out, static_cast<uint16_t>(MirrorCount(layout) - 1));  // lcm_mirror_count
  out.append(kCompHeaderSize - out.size(), '\0');
  size_t blob_offset = kCompHeaderSize + kCompEntrySize * n;
  for (size_t i = 0; i < n; ++i) {
    const proto::LayoutComponent& c = layout.components(static_cast<int>(i));
    Put<uint32_t>(&out, c.id());
    Put<uint32_t>(&out, c.flags());
    Put<uint64_t>(&out, c.start());
    Put<uint64_t>(&out, c.end());
    Put<uint32_t>(&out, static_cast<uint32_t>(blob_offset));
    Put<uint32_t>(&out, static_cast<uint32_t>(blobs[i].size()));
    Put<uint32_t>(&out, 0);  // lcme_layout_gen
    Put<uint64_t>(&out, 0);  // lcme_timestamp
    Put<uint32_t>(&out, 0);  // stripe counts, compression
    blob_offset += blobs[i].size();
  }
  for (const std::string& b : blobs) out += b;
  return out;
}

Result<proto::Layout> UnpackLov(std::string_view value) {
  if (value.size() >= 4 && Get<uint32_t>(value, 0) == kLovMagicV1) return UnpackPlain(value);
  if (value.size() < kCompHeaderSize || Get<uint32_t>(value, 0) != kLovMagicCompV1) {
    return Status(Code::kInval,
                  "lov xattr is neither lov_user_md_v1 (0x0BD10BD0) nor lov_comp_md_v1 "
                  "(0x0BD60BD0)");
  }
  const uint16_t n = Get<uint16_t>(value, 14);
  if (n == 0 || n > kMaxLayoutComponents) {
    return Status(Code::kInval, "lov_comp_md_v1 with " + std::to_string(n) + " components");
  }
  if (value.size() < kCompHeaderSize + kCompEntrySize * n) {
    return Status(Code::kInval, "lov_comp_md_v1 shorter than its component table");
  }
  proto::Layout l;
  for (size_t i = 0; i < n; ++i) {
    const size_t e = kCompHeaderSize + kCompEntrySize * i;
    const uint64_t offset = Get<uint32_t>(value, e + 24);
    const uint64_t size = Get<uint32_t>(value, e + 28);
    if (offset > value.size() || size > value.size() - offset) {
      return Status(Code::kInval, "lov_comp_md_v1 component " + std::to_string(i + 1) +
                                      " points outside the attribute");
    }
    STRIA_ASSIGN_OR_RETURN(proto::Layout plain, UnpackPlain(value.substr(offset, size)));
    proto::LayoutComponent* c = l.add_components();
    // A template keeps each component's mirror and its prefer flags (lfs mirror create on a
    // directory, restored by tar); the MDS numbers the rest.
    c->set_id(ComponentId(MirrorIdOf(Get<uint32_t>(value, e)), 0));
    c->set_flags(Get<uint32_t>(value, e + 4) & kLcmeFlPrefRw);
    c->set_start(Get<uint64_t>(value, e + 8));
    c->set_end(Get<uint64_t>(value, e + 16));
    *c->mutable_layout() = std::move(plain);
  }
  STRIA_RETURN_IF_ERROR(CheckComponentExtents(l));
  if (Get<uint16_t>(value, 16) + 1u != MirrorCount(l)) {
    return Status(Code::kInval, "lcm_mirror_count " + std::to_string(Get<uint16_t>(value, 16)) +
                                    " does not match the components' " +
                                    std::to_string(MirrorCount(l)) + " mirrors");
  }
  return l;
}

}  // namespace stria::client
