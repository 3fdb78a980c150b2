#include "client/lov_xattr.h"

#include <gtest/gtest.h>

#include "proto/layout_components.h"

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

proto::Layout CompositeLayout() {
  proto::Layout l;
  l.set_generation(4);
  proto::LayoutComponent* a = l.add_components();
  a->set_id(1);
  a->set_start(0);
  a->set_end(4 << 20);
  a->set_flags(kLcmeFlInit);
  *a->mutable_layout() = FileLayout();
  proto::LayoutComponent* b = l.add_components();
  b->set_id(2);
  b->set_start(4 << 20);
  b->set_end(kLayoutEof);
  b->mutable_layout()->set_pattern(proto::PATTERN_RAID0);
  b->mutable_layout()->set_stripe_size(1 << 20);
  b->mutable_layout()->set_stripe_count(-1);
  b->mutable_layout()->set_stripe_offset(-1);
  return l;
}

uint64_t U64(const std::string& s, size_t off) {
  return U32(s, off) | (static_cast<uint64_t>(U32(s, off + 4)) << 32);
}

TEST(LovXattrTest, CompositePacksAsLovCompMdV1AndRoundTrips) {
  const std::string v = PackLov(CompositeLayout(), /*with_objects=*/true);
  // Header, two entries, a v1 blob with 2 objects and one with none.
  ASSERT_EQ(v.size(), 32u + 2 * 48u + (32u + 2 * 24u) + 32u);
  EXPECT_EQ(U32(v, 0), kLovMagicCompV1);
  EXPECT_EQ(U32(v, 4), v.size()) << "lcm_size";
  EXPECT_EQ(U32(v, 8), 4u) << "lcm_layout_gen";
  EXPECT_EQ(U32(v, 12) >> 16, 2u) << "lcm_entry_count";
  EXPECT_EQ(U32(v, 32), 1u) << "lcme_id";
  EXPECT_EQ(U32(v, 36), kLcmeFlInit) << "lcme_flags";
  EXPECT_EQ(U64(v, 48), 4u << 20) << "e_end";
  EXPECT_EQ(U32(v, 56), 32u + 2 * 48u) << "lcme_offset";
  EXPECT_EQ(U32(v, 60), 32u + 2 * 24u) << "lcme_size";
  EXPECT_EQ(U32(v, U32(v, 56)), kLovMagicV1) << "first blob";
  EXPECT_EQ(U64(v, 48 + 48), kLayoutEof) << "second e_end";
  EXPECT_EQ(U32(v, 80 + 4), 0u) << "second is not instantiated";

  auto back = UnpackLov(v);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->components_size(), 2);
  EXPECT_EQ(back->components(0).end(), 4u << 20);
  EXPECT_EQ(back->components(0).layout().stripe_count(), 2);
  EXPECT_EQ(back->components(1).start(), 4u << 20);
  EXPECT_EQ(back->components(1).end(), kLayoutEof);
  EXPECT_EQ(back->components(1).layout().stripe_count(), -1);
  EXPECT_EQ(back->components(0).flags(), 0u) << "a restored template carries no flags";
}

TEST(LovXattrTest, DamagedCompositeValuesAreEinval) {
  const std::string good = PackLov(CompositeLayout(), /*with_objects=*/false);
  ASSERT_TRUE(UnpackLov(good).ok());
  std::string v = good.substr(0, 32 + 48);  // the table is cut short
  EXPECT_EQ(UnpackLov(v).status().code(), Code::kInval);
  v = good;
  v[56] = static_cast<char>(0xff);  // blob offset past the end
  v[57] = static_cast<char>(0xff);
  EXPECT_EQ(UnpackLov(v).status().code(), Code::kInval);
  v = good;
  v[40] = 1;  // the first component no longer starts at 0
  EXPECT_EQ(UnpackLov(v).status().code(), Code::kInval);
  v = good;
  v[16] = 1;  // a mirror count the components do not have
  EXPECT_EQ(UnpackLov(v).status().code(), Code::kInval);
  v = good;
  v[14] = 0;  // no entries
  EXPECT_EQ(UnpackLov(v).status().code(), Code::kInval);
}

}  // namespace
}  // namespace stria::client
