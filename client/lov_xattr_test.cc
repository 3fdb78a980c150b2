#include "client/lov_xattr.h"

#include <gtest/gtest.h>

namespace stria::client {
namespace {

proto::Layout FileLayout() {
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  l.set_stripe_size(1 << 20);
  l.set_stripe_count(2);
  l.set_generation(3);
  for (uint32_t i = 0; i < 2; ++i) {
    proto::StripeObject* o = l.add_objects();
    o->set_ost_idx(i + 5);
    o->set_object_id(100 + i);
  }
  return l;
}

uint32_t U32(const std::string& s, size_t off) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[off + i]);
  return v;
}

TEST(LovXattrTest, FileLayoutPacksAsLovUserMdV1) {
  const std::string v = PackLov(FileLayout(), /*with_objects=*/true);
  ASSERT_EQ(v.size(), 32u + 2 * 24u);
  EXPECT_EQ(U32(v, 0), kLovMagicV1);
  EXPECT_EQ(U32(v, 4), 1u) << "RAID0";
  EXPECT_EQ(U32(v, 8), 100u) << "first object id";
  EXPECT_EQ(U32(v, 24), 1u << 20) << "stripe size";
  EXPECT_EQ(U32(v, 28) & 0xffff, 2u) << "stripe count";
  EXPECT_EQ(U32(v, 28) >> 16, 3u) << "layout generation";
  EXPECT_EQ(U32(v, 32 + 20), 5u) << "first object's OST";
  EXPECT_EQ(U32(v, 56 + 8), 0u);
  EXPECT_EQ(U32(v, 56), 101u);
  EXPECT_EQ(U32(v, 56 + 20), 6u);
}

TEST(LovXattrTest, DirectoryDefaultRoundTrips) {
  proto::Layout l;
  l.set_stripe_size(4 << 20);
  l.set_stripe_count(-1);
  l.set_stripe_offset(-1);
  auto back = UnpackLov(PackLov(l, /*with_objects=*/false));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->stripe_size(), 4u << 20);
  EXPECT_EQ(back->stripe_count(), -1);
  EXPECT_EQ(back->stripe_offset(), -1);
}

TEST(LovXattrTest, BadValuesAreEinval) {
  EXPECT_EQ(UnpackLov("short").status().code(), Code::kInval);
  std::string v = PackLov(FileLayout(), false);
  v[0] ^= 1;
  EXPECT_EQ(UnpackLov(v).status().code(), Code::kInval) << "magic";
  v = PackLov(FileLayout(), false);
  v[24] = 1;  // stripe size 0x100001: not a multiple of 64 KiB
  EXPECT_EQ(UnpackLov(v).status().code(), Code::kInval);
}

}  // namespace
}  // namespace stria::client
