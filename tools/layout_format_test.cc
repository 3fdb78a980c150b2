#include "tools/layout_format.h"

#include <gtest/gtest.h>

#include "proto/layout_components.h"

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

// -E 4M -c 1 -S 1M -E -1 -c -1, the first component instantiated on OST 1 (object 2).
proto::Layout TwoComponents() {
  proto::Layout l;
  l.set_generation(1);
  proto::LayoutComponent* a = l.add_components();
  a->set_id(1);
  a->set_flags(kLcmeFlInit);
  a->set_start(0);
  a->set_end(4 << 20);
  a->mutable_layout()->set_pattern(proto::PATTERN_RAID0);
  a->mutable_layout()->set_stripe_size(1 << 20);
  a->mutable_layout()->set_stripe_count(1);
  a->mutable_layout()->set_stripe_offset(1);
  auto* o = a->mutable_layout()->add_objects();
  o->set_ost_idx(1);
  o->set_object_id(2);
  proto::LayoutComponent* b = l.add_components();
  b->set_id(2);
  b->set_start(4 << 20);
  b->set_end(kLayoutEof);
  b->mutable_layout()->set_pattern(proto::PATTERN_RAID0);
  b->mutable_layout()->set_stripe_size(4 << 20);
  b->mutable_layout()->set_stripe_count(-1);
  b->mutable_layout()->set_stripe_offset(-1);
  return l;
}

// The shape of lov_dump_comp_v1 in Lustre 2.16's lustre/utils/liblustreapi.c (header
// "%2s"-indented, entries "%4s", sub-layouts "%6s"; objects as "- %3d: { l_ost_idx: %3d,
// l_fid: DFID }"; a blank line after each component).
TEST(FormatFileLayoutTest, CompositeLustreShape) {
  EXPECT_EQ(FormatFileLayout("/mnt/training-data/ckpt", TwoComponents(), {}),
            "/mnt/training-data/ckpt\n"
            "  lcm_layout_gen:    1\n"
            "  lcm_mirror_count:  1\n"
            "  lcm_entry_count:   2\n"
            "    lcme_id:             1\n"
            "    lcme_mirror_id:      0\n"
            "    lcme_flags:          init\n"
            "    lcme_extent.e_start: 0\n"
            "    lcme_extent.e_end:   4194304\n"
            "      lmm_stripe_count:  1\n"
            "      lmm_stripe_size:   1048576\n"
            "      lmm_pattern:       raid0\n"
            "      lmm_layout_gen:    0\n"
            "      lmm_stripe_offset: 1\n"
            "      lmm_objects:\n"
            "      -   0: { l_ost_idx:   1, l_fid: [0x100010000:0x2:0x0] }\n"
            "\n"
            "    lcme_id:             2\n"
            "    lcme_mirror_id:      0\n"
            "    lcme_flags:          0\n"
            "    lcme_extent.e_start: 4194304\n"
            "    lcme_extent.e_end:   EOF\n"
            "      lmm_stripe_count:  -1\n"
            "      lmm_stripe_size:   4194304\n"
            "      lmm_pattern:       raid0\n"
            "      lmm_layout_gen:    0\n"
            "      lmm_stripe_offset: -1\n"
            "\n");
}

// Two mirrors, one component each; mirror 2 stale, as Lustre 2.16 prints them.
TEST(FormatFileLayoutTest, MirroredLustreShape) {
  proto::Layout l;
  l.set_generation(4);
  for (uint32_t m = 1; m <= 2; ++m) {
    proto::LayoutComponent* c = l.add_components();
    c->set_id(ComponentId(m, m));
    c->set_start(0);
    c->set_end(kLayoutEof);
    c->set_flags(kLcmeFlInit | (m == 2 ? kLcmeFlStale : 0u) | (m == 1 ? kLcmeFlPrefRw : 0u));
    proto::Layout* p = c->mutable_layout();
    p->set_pattern(proto::PATTERN_RAID0);
    p->set_stripe_size(1 << 20);
    p->set_stripe_count(1);
    p->set_stripe_offset(static_cast<int32_t>(m - 1));
    proto::StripeObject* o = p->add_objects();
    o->set_ost_idx(m - 1);
    o->set_object_id(2);
  }
  const std::string got = FormatFileLayout("f", l, {});
  EXPECT_NE(got.find("  lcm_layout_gen:    4\n"
                     "  lcm_mirror_count:  2\n"
                     "  lcm_entry_count:   2\n"
                     "    lcme_id:             65537\n"
                     "    lcme_mirror_id:      1\n"
                     "    lcme_flags:          init,prefer\n"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("    lcme_id:             131074\n"
                     "    lcme_mirror_id:      2\n"
                     "    lcme_flags:          init,stale\n"),
            std::string::npos)
      << got;
  GetstripeFormat v;
  v.detail = true;
  EXPECT_NE(FormatFileLayout("f", l, v).find("  lcm_flags:         wp\n"), std::string::npos);
  l.mutable_components(1)->set_flags(kLcmeFlInit);
  EXPECT_NE(FormatFileLayout("f", l, v).find("  lcm_flags:         ro\n"), std::string::npos);
}

TEST(FormatFileLayoutTest, CompositeSingleFieldsAndOneComponent) {
  GetstripeFormat count;
  count.fields = kFieldCount;
  count.show_path = false;
  // The last instantiated component's value only, as Lustre.
  EXPECT_EQ(FormatFileLayout("f", TwoComponents(), count), "1\n");
  GetstripeFormat entries;
  entries.fields = kFieldComponentCount;
  entries.show_path = false;
  EXPECT_EQ(FormatFileLayout("f", TwoComponents(), entries), "2\n");
  GetstripeFormat second;
  second.component_id = 2;
  const std::string out = FormatFileLayout("f", TwoComponents(), second);
  EXPECT_NE(out.find("lcme_id:             2\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("lcme_id:             1\n"), std::string::npos) << out;
}

TEST(FormatDirLayoutTest, CompositeTemplate) {
  proto::Layout l = TwoComponents();
  l.set_generation(0);
  for (auto& c : *l.mutable_components()) {
    c.set_id(0);
    c.set_flags(0);
    c.mutable_layout()->clear_objects();
    c.mutable_layout()->set_stripe_offset(-1);
  }
  GetstripeFormat f;
  f.show_path = false;
  EXPECT_EQ(FormatDirLayout("/mnt/training-data/d", l, f),
            "  lcm_layout_gen:    0\n"
            "  lcm_mirror_count:  1\n"
            "  lcm_entry_count:   2\n"
            "    lcme_id:             N/A\n"
            "    lcme_mirror_id:      N/A\n"
            "    lcme_flags:          0\n"
            "    lcme_extent.e_start: 0\n"
            "    lcme_extent.e_end:   4194304\n"
            "      stripe_count:  1       stripe_size:   1048576       pattern:       raid0"
            "       stripe_offset: -1\n"
            "\n"
            "    lcme_id:             N/A\n"
            "    lcme_mirror_id:      N/A\n"
            "    lcme_flags:          0\n"
            "    lcme_extent.e_start: 4194304\n"
            "    lcme_extent.e_end:   EOF\n"
            "      stripe_count:  -1       stripe_size:   4194304       pattern:       raid0"
            "       stripe_offset: -1\n"
            "\n");
}

TEST(ObjectFidTest, IdifFids) {
  proto::StripeObject o;
  o.set_ost_idx(3);
  o.set_object_id(0x123456789ull);
  EXPECT_EQ(ObjectFid(o), "[0x100030001:0x23456789:0x0]");
}

TEST(FormatFileLayoutTest, VerboseAndFid) {
  GetstripeFormat v;
  v.detail = true;
  v.fid = "[0x200000400:0x3:0x0]";
  const std::string plain = FormatFileLayout("f", FourStripes(), v);
  EXPECT_EQ(plain.substr(0, plain.find("lmm_stripe_count")),
            "f\n"
            "lmm_magic:         0x0BD10BD0\n"
            "lmm_seq:           0x200000400\n"
            "lmm_object_id:     0x3\n"
            "lmm_fid:           [0x200000400:0x3:0x0]\n");
  GetstripeFormat fid_only;
  fid_only.fields = kFieldFid;
  fid_only.show_path = false;
  fid_only.fid = v.fid;
  EXPECT_EQ(FormatFileLayout("f", FourStripes(), fid_only), "[0x200000400:0x3:0x0]\n");
  EXPECT_EQ(FormatFileLayout("f", TwoComponents(), fid_only), "[0x200000400:0x3:0x0]\n");
  // lov_comp_md_v1 with -v: the header, blob offsets (32 + 2 * 48 = 128) and sizes
  // (32 + 24 per object), and each sub-layout's lmm_fid.
  const std::string comp = FormatFileLayout("f", TwoComponents(), v);
  EXPECT_NE(comp.find("composite_header:\n  lcm_magic:         0x0BD60BD0\n"
                      "  lcm_size:          216\n"),
            std::string::npos)
      << comp;
  EXPECT_NE(comp.find("components:\n  - lcme_id:             1\n"), std::string::npos) << comp;
  EXPECT_NE(comp.find("    lcme_offset:         128\n    lcme_size:           56\n"
                      "    sub_layout:\n      lmm_magic:         0x0BD10BD0\n"),
            std::string::npos)
      << comp;
  EXPECT_NE(comp.find("    lcme_offset:         184\n    lcme_size:           32\n"),
            std::string::npos)
      << comp;
  EXPECT_NE(comp.find("      lmm_fid:           [0x200000400:0x3:0x0]\n"), std::string::npos);
}

}  // namespace
}  // namespace stria::tools
