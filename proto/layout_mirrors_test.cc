#include "proto/layout_mirrors.h"

#include <gtest/gtest.h>

namespace stria {
namespace {

constexpr uint64_t M = 1 << 20;

// A mirrored layout: `mirrors` mirrors of one instantiated component [0, EOF) each, one
// 1 MiB stripe on OST (mirror - 1).
proto::Layout Mirrored(uint32_t mirrors) {
  proto::Layout l;
  l.set_generation(3);
  l.set_ino(42);
  for (uint32_t m = 1; m <= mirrors; ++m) {
    proto::LayoutComponent* c = l.add_components();
    c->set_id(ComponentId(m, m));
    c->set_start(0);
    c->set_end(kLayoutEof);
    c->set_flags(kLcmeFlInit);
    c->mutable_layout()->set_pattern(proto::PATTERN_RAID0);
    c->mutable_layout()->set_stripe_size(M);
    c->mutable_layout()->set_stripe_count(1);
    proto::StripeObject* o = c->mutable_layout()->add_objects();
    o->set_ost_idx(m - 1);
    o->set_object_id(m);
  }
  return l;
}

TEST(LayoutMirrorsTest, IdsCountAndViews) {
  proto::Layout l = Mirrored(2);
  EXPECT_EQ(MirrorIds(l), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(MirrorCount(l), 2u);
  EXPECT_TRUE(IsMirrored(l));
  EXPECT_EQ(l.components(1).id(), 131074u);  // as Lustre numbers mirror 2's component 2
  proto::Layout v = MirrorView(l, 2);
  ASSERT_EQ(v.components_size(), 1);
  EXPECT_EQ(v.components(0).layout().objects(0).ost_idx(), 1u);
  EXPECT_EQ(v.ino(), 42u);
  EXPECT_EQ(v.generation(), 3u);
  EXPECT_TRUE(CheckComponentExtents(l).ok());
  EXPECT_EQ(LcmFlags(l), kLcmFlRdonly);

  proto::Layout plain;
  EXPECT_EQ(MirrorCount(plain), 1u);
  EXPECT_FALSE(IsMirrored(plain));
  EXPECT_EQ(LcmFlags(plain), kLcmFlNone);
}

TEST(LayoutMirrorsTest, ExtentRulesHoldPerMirror) {
  proto::Layout l = Mirrored(2);
  // Mirror 1 in two components: [0, 4M) and [4M, EOF); still valid.
  proto::LayoutComponent second = l.components(0);
  l.mutable_components(0)->set_end(4 * M);
  second.set_start(4 * M);
  second.set_id(ComponentId(1, 3));
  l.mutable_components()->Add(std::move(second));
  // Move it next to its mirror: [m1 0-4M, m2 0-EOF, m1 4M-EOF] is not consecutive.
  Status st = CheckComponentExtents(l);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not consecutive"), std::string::npos) << st.ToString();
  l.mutable_components()->SwapElements(1, 2);
  EXPECT_TRUE(CheckComponentExtents(l).ok()) << CheckComponentExtents(l).ToString();
  EXPECT_EQ(MirrorIds(l), (std::vector<uint32_t>{1, 2}));

  // Mirrors must end at the same place.
  proto::Layout short_one = Mirrored(2);
  short_one.mutable_components(0)->set_end(8 * M);
  EXPECT_FALSE(CheckComponentExtents(short_one).ok());

  // Mirror 0 beside another mirror, and Data-on-MDT in a mirror, are refused.
  proto::Layout zero = Mirrored(2);
  zero.mutable_components(0)->set_id(1);
  EXPECT_FALSE(CheckComponentExtents(zero).ok());
  proto::Layout dom = Mirrored(2);
  dom.mutable_components(0)->set_end(M);
  dom.mutable_components(0)->mutable_layout()->set_pattern(proto::PATTERN_MDT);
  EXPECT_FALSE(CheckComponentExtents(dom).ok());

  // Stale ranges outside the extent or on a component that is not stale are refused.
  proto::Layout bad = Mirrored(2);
  proto::ByteRange* r = bad.mutable_components(1)->add_stale_ranges();
  r->set_start(0);
  r->set_end(M);
  EXPECT_FALSE(CheckComponentExtents(bad).ok());
  bad.mutable_components(1)->set_flags(kLcmeFlInit | kLcmeFlStale);
  EXPECT_TRUE(CheckComponentExtents(bad).ok());
  r->set_end(0);
  EXPECT_FALSE(CheckComponentExtents(bad).ok());
}

TEST(LayoutMirrorsTest, StaleRangesMergeAndCover) {
  proto::Layout l = Mirrored(2);
  EXPECT_FALSE(StaleCovers(l, 2, 0, M));
  EXPECT_TRUE(AddStaleRange(&l, 2, M, 2 * M));
  EXPECT_EQ(LcmFlags(l), kLcmFlWritePending);
  EXPECT_TRUE(StaleCovers(l, 2, M, 2 * M));
  EXPECT_TRUE(StaleCovers(l, 2, M + 5, M + 10));
  EXPECT_FALSE(StaleCovers(l, 2, 0, M + 1));
  EXPECT_FALSE(StaleCovers(l, 1, M, 2 * M));  // the other mirror is untouched
  EXPECT_FALSE(AddStaleRange(&l, 2, M, M + 100));  // covered: no change
  EXPECT_TRUE(AddStaleRange(&l, 2, 2 * M, 3 * M));  // touching: merged into one
  ASSERT_EQ(l.components(1).stale_ranges_size(), 1);
  EXPECT_EQ(l.components(1).stale_ranges(0).start(), M);
  EXPECT_EQ(l.components(1).stale_ranges(0).end(), 3 * M);
  EXPECT_TRUE(AddStaleRange(&l, 2, 5 * M, 6 * M));
  EXPECT_EQ(l.components(1).stale_ranges_size(), 2);
  EXPECT_EQ(StaleSpans(l.components(1)),
            (std::vector<ByteSpan>{{M, 3 * M}, {5 * M, 6 * M}}));
  EXPECT_TRUE(CheckComponentExtents(l).ok());

  // Too many ranges collapse into one reaching the end of the component.
  proto::Layout many = Mirrored(2);
  for (int i = 0; i <= kMaxStaleRanges; ++i) {
    AddStaleRange(&many, 1, (2 * i + 1) * M, (2 * i + 2) * M);
  }
  ASSERT_EQ(many.components(0).stale_ranges_size(), 1);
  EXPECT_EQ(many.components(0).stale_ranges(0).start(), M);
  EXPECT_EQ(many.components(0).stale_ranges(0).end(), kLayoutEof);

  // A whole-extent mark lists no range.
  proto::Layout whole = Mirrored(2);
  EXPECT_TRUE(AddStaleRange(&whole, 1, 0, kLayoutEof));
  EXPECT_EQ(whole.components(0).stale_ranges_size(), 0);
  EXPECT_TRUE(StaleCovers(whole, 1, 12345, 99 * M));
}

TEST(LayoutMirrorsTest, TheLastGoodCopyIsKnown) {
  proto::Layout l = Mirrored(2);
  EXPECT_TRUE(OtherMirrorHolds(l, 2, 0, 10 * M));
  AddStaleRange(&l, 1, 4 * M, 6 * M);
  // Mirror 2 is now the only good copy of [4M, 6M): it may not be marked there.
  EXPECT_FALSE(OtherMirrorHolds(l, 2, 5 * M, 5 * M + 1));
  EXPECT_TRUE(OtherMirrorHolds(l, 2, 0, 4 * M));
  EXPECT_TRUE(OtherMirrorHolds(l, 2, 6 * M, 7 * M));
  EXPECT_TRUE(OtherMirrorHolds(l, 1, 4 * M, 6 * M));
  // A layout without mirrors has no other copy.
  proto::Layout one = Mirrored(1);
  EXPECT_FALSE(OtherMirrorHolds(one, 1, 0, 1));
  // An uninstantiated mirror holds nothing.
  proto::Layout uninit = Mirrored(2);
  uninit.mutable_components(0)->set_flags(0);
  uninit.mutable_components(0)->mutable_layout()->clear_objects();
  EXPECT_FALSE(OtherMirrorHolds(uninit, 2, 0, 1));
}

TEST(LayoutMirrorsTest, ReadsAlternateByStripeAndSkipStale) {
  proto::Layout l = Mirrored(2);
  std::vector<MirrorPiece> p = PlanMirrorRead(l, 0, 4 * M);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].mirrors, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(p[1].mirrors, (std::vector<uint32_t>{2, 1}));
  EXPECT_EQ(p[2].mirrors, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(p[1].start, M);
  EXPECT_EQ(p[1].end, 2 * M);

  // Mirror 1 stale over [M, 3M): those bytes come from mirror 2 only (merged into one piece).
  AddStaleRange(&l, 1, M, 3 * M);
  p = PlanMirrorRead(l, 512 << 10, 3 * M);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].start, 512u << 10);
  EXPECT_EQ(p[0].end, M);
  EXPECT_EQ(p[0].mirrors, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(p[1].start, M);
  EXPECT_EQ(p[1].end, 3 * M);
  EXPECT_EQ(p[1].mirrors, (std::vector<uint32_t>{2}));
  EXPECT_EQ(p[2].mirrors, (std::vector<uint32_t>{2, 1}));  // stripe 3: mirror 2 first

  // A preferred mirror is always first.
  proto::Layout pref = Mirrored(2);
  pref.mutable_components(1)->set_flags(kLcmeFlInit | kLcmeFlPrefRd);
  p = PlanMirrorRead(pref, 0, 4 * M);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].mirrors, (std::vector<uint32_t>{2, 1}));

  // Nothing instantiated: a hole.
  proto::Layout holes = Mirrored(2);
  for (auto& c : *holes.mutable_components()) {
    c.set_flags(0);
    c.mutable_layout()->clear_objects();
  }
  p = PlanMirrorRead(holes, 0, M);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(p[0].mirrors.empty());
}

}  // namespace
}  // namespace stria
