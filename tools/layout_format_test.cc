#include "tools/layout_format.h"

#include <gtest/gtest.h>

namespace stria::tools {
namespace {

proto::Layout FourStripes() {
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  l.set_stripe_size(1 << 20);
  l.set_stripe_count(4);
  l.set_stripe_offset(-1);
  const uint32_t osts[] = {1, 2, 3, 0};
  const uint64_t ids[] = {5, 5, 4, 300};
  for (int i = 0; i < 4; ++i) {
    auto* o = l.add_objects();
    o->set_ost_idx(osts[i]);
    o->set_object_id(ids[i]);
  }
  return l;
}

TEST(FormatFileLayoutTest, LustreShape) {
  std::string got = FormatFileLayout("/mnt/training-data/f", FourStripes(), {});
  EXPECT_EQ(got,
            "/mnt/training-data/f\n"
            "lmm_stripe_count:  4\n"
            "lmm_stripe_size:   1048576\n"
            "lmm_pattern:       raid0\n"
            "lmm_layout_gen:    0\n"
            "lmm_stripe_offset: 1\n"
            "\tobdidx\t\t objid\t\t objid\t\t group\n"
            "\t     1\t             5\t          0x5\t             0\n"
            "\t     2\t             5\t          0x5\t             0\n"
            "\t     3\t             4\t          0x4\t             0\n"
            "\t     0\t           300\t        0x12c\t             0\n"
            "\n");
}

TEST(FormatFileLayoutTest, PoolAndGenerationAndGroup) {
  proto::Layout l = FourStripes();
  l.set_pool("flash");
  l.set_generation(3);
  l.mutable_objects(0)->set_group(0x200000400);
  std::string got = FormatFileLayout("f", l, {});
  EXPECT_NE(got.find("lmm_layout_gen:    3\n"), std::string::npos) << got;
  EXPECT_NE(got.find("lmm_stripe_offset: 1\nlmm_pool:          flash\n"), std::string::npos)
      << got;
  EXPECT_NE(got.find("\t     1\t             5\t          0x5\t   0x200000400\n"),
            std::string::npos)
      << got;
}

TEST(FormatFileLayoutTest, SingleFieldPrintsOnlyTheValue) {
  GetstripeFormat f;
  f.show_path = false;
  f.fields = kFieldCount;
  EXPECT_EQ(FormatFileLayout("f", FourStripes(), f), "4\n");
  f.fields = kFieldSize;
  EXPECT_EQ(FormatFileLayout("f", FourStripes(), f), "1048576\n");
  f.fields = kFieldOffset;
  EXPECT_EQ(FormatFileLayout("f", FourStripes(), f), "1\n");
  f.fields = kFieldCount | kFieldSize;
  EXPECT_EQ(FormatFileLayout("f", FourStripes(), f),
            "lmm_stripe_count:  4\nlmm_stripe_size:   1048576\n");
}

TEST(FormatFileLayoutTest, QuietShowsPathAndObjects) {
  GetstripeFormat f;
  f.fields = kFieldObjects;
  proto::Layout l = FourStripes();
  l.mutable_objects()->DeleteSubrange(1, 3);
  EXPECT_EQ(FormatFileLayout("/x", l, f),
            "/x\n"
            "\tobdidx\t\t objid\t\t objid\t\t group\n"
            "\t     1\t             5\t          0x5\t             0\n"
            "\n");
}

TEST(FormatDirLayoutTest, OneLine) {
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  l.set_stripe_count(1);
  l.set_stripe_size(4 << 20);
  l.set_stripe_offset(-1);
  EXPECT_EQ(FormatDirLayout("/mnt/d", l, {}),
            "/mnt/d\n"
            "stripe_count:  1 stripe_size:   4194304 pattern:       raid0 stripe_offset: -1\n");
  GetstripeFormat d;
  d.show_path = false;
  EXPECT_EQ(FormatDirLayout("/mnt/d", l, d),
            "stripe_count:  1 stripe_size:   4194304 pattern:       raid0 stripe_offset: -1\n");
  l.set_pool("flash");
  l.set_stripe_count(-1);
  EXPECT_EQ(FormatDirLayout("/mnt/d", l, d),
            "stripe_count:  -1 stripe_size:   4194304 pattern:       raid0 stripe_offset: -1 "
            "pool:          flash\n");
  d.fields = kFieldCount;
  EXPECT_EQ(FormatDirLayout("/mnt/d", l, d), "-1\n");
}

TEST(EffectiveDirLayoutTest, InheritsMissingFields) {
  proto::Layout fs;
  fs.set_pattern(proto::PATTERN_RAID0);
  fs.set_stripe_count(2);
  fs.set_stripe_size(1 << 20);
  fs.set_stripe_offset(-1);
  proto::Layout dir;
  dir.set_stripe_count(4);
  dir.set_stripe_offset(-1);
  proto::Layout e = EffectiveDirLayout(&dir, fs);
  EXPECT_EQ(e.stripe_count(), 4);
  EXPECT_EQ(e.stripe_size(), 1u << 20);
  EXPECT_EQ(e.pattern(), proto::PATTERN_RAID0);
  EXPECT_EQ(e.stripe_offset(), -1);

  e = EffectiveDirLayout(nullptr, fs);
  EXPECT_EQ(e.stripe_count(), 2);

  e = EffectiveDirLayout(nullptr, proto::Layout());
  EXPECT_EQ(e.stripe_count(), 1);
  EXPECT_EQ(e.stripe_size(), 4u << 20);
  EXPECT_EQ(e.stripe_offset(), -1);
}

}  // namespace
}  // namespace stria::tools
