#include "tools/stripe_args.h"

#include <gtest/gtest.h>

#include "proto/layout_components.h"

namespace stria::tools {
namespace {

TEST(ParseSizeTest, Suffixes) {
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("64k"), 64u << 10);
  EXPECT_EQ(*ParseSize("64K"), 64u << 10);
  EXPECT_EQ(*ParseSize("1M"), 1u << 20);
  EXPECT_EQ(*ParseSize("1m"), 1u << 20);
  EXPECT_EQ(*ParseSize("4G"), 4ull << 30);
  EXPECT_EQ(*ParseSize("2T"), 2ull << 40);
}

TEST(ParseSizeTest, RejectsGarbage) {
  for (const char* bad : {"", "M", "-1", "+4", "1.5M", "1MB", "1X", " 1", "1 ", "0x10",
                          "99999999999999999999", "20000000000000000T"}) {
    auto r = ParseSize(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Code::kInval) << bad;
    }
  }
}

TEST(ParseStripeSizeTest, MultipleOf64K) {
  EXPECT_EQ(*ParseStripeSize("64k"), 65536u);
  EXPECT_EQ(*ParseStripeSize("1M"), 1u << 20);
  EXPECT_EQ(*ParseStripeSize("4G"), 4ull << 30);
  EXPECT_EQ(*ParseStripeSize("196608"), 196608u);  // 192 KiB
  EXPECT_FALSE(ParseStripeSize("0").ok());
  EXPECT_FALSE(ParseStripeSize("4096").ok());
  EXPECT_FALSE(ParseStripeSize("100k").ok());
  EXPECT_FALSE(ParseStripeSize("5G").ok());
  EXPECT_FALSE(ParseStripeSize("abc").ok());
  auto r = ParseStripeSize("100k");
  EXPECT_NE(r.status().message().find("64 KiB"), std::string::npos) << r.status().message();
}

TEST(ParseStripeCountTest, Range) {
  EXPECT_EQ(*ParseStripeCount("1"), 1);
  EXPECT_EQ(*ParseStripeCount("4"), 4);
  EXPECT_EQ(*ParseStripeCount("-1"), -1);
  EXPECT_EQ(*ParseStripeCount("2000"), 2000);
  EXPECT_FALSE(ParseStripeCount("0").ok());
  EXPECT_FALSE(ParseStripeCount("-2").ok());
  EXPECT_FALSE(ParseStripeCount("2001").ok());
  EXPECT_FALSE(ParseStripeCount("4x").ok());
  EXPECT_FALSE(ParseStripeCount("").ok());
}

TEST(ParseStripeIndexTest, Range) {
  EXPECT_EQ(*ParseStripeIndex("-1"), -1);
  EXPECT_EQ(*ParseStripeIndex("0"), 0);
  EXPECT_EQ(*ParseStripeIndex("17"), 17);
  EXPECT_FALSE(ParseStripeIndex("-2").ok());
  EXPECT_FALSE(ParseStripeIndex("one").ok());
  EXPECT_FALSE(ParseStripeIndex("99999999999").ok());
}

TEST(ParseComponentEndTest, SizesAndEof) {
  EXPECT_EQ(*ParseComponentEnd("4M"), 4u << 20);
  EXPECT_EQ(*ParseComponentEnd("64k"), 64u << 10);
  EXPECT_EQ(*ParseComponentEnd("-1"), kLayoutEof);
  EXPECT_EQ(*ParseComponentEnd("EOF"), kLayoutEof);
  EXPECT_EQ(*ParseComponentEnd("eof"), kLayoutEof);
  EXPECT_FALSE(ParseComponentEnd("0").ok());
  EXPECT_FALSE(ParseComponentEnd("100k").ok()) << "not a multiple of 64 KiB";
  EXPECT_FALSE(ParseComponentEnd("-2").ok());
  EXPECT_FALSE(ParseComponentEnd("").ok());
}

}  // namespace
}  // namespace stria::tools

namespace stria::tools {
namespace {

TEST(LayoutOptionsTest, MirrorsFromDashN) {
  // lfs mirror create -N2 -c 2 -N -S 1M --flags=prefer: three mirrors, the third preferred.
  LayoutOptions o;
  ASSERT_TRUE(o.Apply('N', "2").ok());
  ASSERT_TRUE(o.Apply('c', "2").ok());
  ASSERT_TRUE(o.Apply('N', nullptr).ok());
  ASSERT_TRUE(o.Apply('S', "1M").ok());
  ASSERT_TRUE(o.Apply('F', "prefer").ok());
  ASSERT_TRUE(o.mirrored());
  ASSERT_TRUE(o.Finish().ok());
  const proto::Layout& l = o.layout();
  ASSERT_EQ(l.components_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(l.components(i).id(), ComponentId(static_cast<uint32_t>(i + 1), 0));
    EXPECT_EQ(l.components(i).start(), 0u);
    EXPECT_EQ(l.components(i).end(), kLayoutEof);
  }
  EXPECT_EQ(l.components(0).layout().stripe_count(), 2);
  EXPECT_EQ(l.components(1).layout().stripe_count(), 2);
  EXPECT_EQ(l.components(2).layout().stripe_size(), 1u << 20);
  EXPECT_EQ(l.components(2).flags(), kLcmeFlPrefRw);
  EXPECT_EQ(l.components(0).flags(), 0u);

  // PFL mirrors: each -N's -E components, under its mirror id.
  LayoutOptions pfl;
  ASSERT_TRUE(pfl.Apply('N', "2").ok());
  ASSERT_TRUE(pfl.Apply('E', "4M").ok());
  ASSERT_TRUE(pfl.Apply('E', "-1").ok());
  ASSERT_TRUE(pfl.Finish().ok());
  ASSERT_EQ(pfl.layout().components_size(), 4);
  EXPECT_EQ(MirrorIdOf(pfl.layout().components(2).id()), 2u);
  EXPECT_EQ(pfl.layout().components(3).start(), 4u << 20);
}

TEST(LayoutOptionsTest, BadMirrorOptionsAreRefused) {
  LayoutOptions before;
  ASSERT_TRUE(before.Apply('c', "2").ok());
  EXPECT_FALSE(before.Apply('N', "2").ok());  // options must follow -N
  LayoutOptions zero;
  EXPECT_FALSE(zero.Apply('N', "0").ok());
  EXPECT_FALSE(zero.Apply('N', "17").ok());
  EXPECT_FALSE(zero.Apply('N', "x").ok());
  LayoutOptions flags;
  EXPECT_FALSE(flags.Apply('F', "prefer").ok());  // --flags without -N
  ASSERT_TRUE(flags.Apply('N', "9").ok());
  ASSERT_TRUE(flags.Apply('N', "9").ok());
  EXPECT_FALSE(flags.Apply('F', "fast").ok());
  EXPECT_FALSE(flags.Finish().ok());  // 18 mirrors
  LayoutOptions dom;
  ASSERT_TRUE(dom.Apply('N', "2").ok());
  ASSERT_TRUE(dom.Apply('E', "1M").ok());
  ASSERT_TRUE(dom.Apply('L', "mdt").ok());
  ASSERT_TRUE(dom.Apply('E', "-1").ok());
  EXPECT_FALSE(dom.Finish().ok());  // no Data-on-MDT in a mirror
}

}  // namespace
}  // namespace stria::tools
