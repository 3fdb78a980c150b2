#include "tools/layout_yaml.h"

#include <gtest/gtest.h>

#include "proto/layout_components.h"

namespace stria::tools {
namespace {

// -E 4M -c 1 -S 1M (instantiated on OST 1) -E -1 -c -1 -p fast.
proto::Layout Pfl() {
  proto::Layout l;
  l.set_generation(1);
  proto::LayoutComponent* a = l.add_components();
  a->set_id(1);
  a->set_flags(kLcmeFlInit);
  a->set_end(4 << 20);
  a->mutable_layout()->set_pattern(proto::PATTERN_RAID0);
  a->mutable_layout()->set_stripe_size(1 << 20);
  a->mutable_layout()->set_stripe_count(1);
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
  b->mutable_layout()->set_pool("fast");
  return l;
}

TEST(LayoutYamlTest, LustresShape) {
  EXPECT_EQ(FormatYaml(Pfl()),
            "lcm_layout_gen:    1\n"
            "lcm_mirror_count:  1\n"
            "lcm_entry_count:   2\n"
            "components:\n"
            "  - lcme_id:             1\n"
            "    lcme_mirror_id:      0\n"
            "    lcme_flags:          init\n"
            "    lcme_extent.e_start: 0\n"
            "    lcme_extent.e_end:   4194304\n"
            "    sub_layout:\n"
            "      lmm_stripe_count:  1\n"
            "      lmm_stripe_size:   1048576\n"
            "      lmm_pattern:       raid0\n"
            "      lmm_layout_gen:    0\n"
            "      lmm_stripe_offset: 1\n"
            "      lmm_objects:\n"
            "      - l_ost_idx: 1\n"
            "        l_fid:     0x100010000:0x2:0x0\n"
            "  - lcme_id:             2\n"
            "    lcme_mirror_id:      0\n"
            "    lcme_flags:          0\n"
            "    lcme_extent.e_start: 4194304\n"
            "    lcme_extent.e_end:   EOF\n"
            "    sub_layout:\n"
            "      lmm_stripe_count:  -1\n"
            "      lmm_stripe_size:   4194304\n"
            "      lmm_pattern:       raid0\n"
            "      lmm_layout_gen:    0\n"
            "      lmm_stripe_offset: -1\n"
            "      lmm_pool:          fast\n");
}

TEST(LayoutYamlTest, TemplatesRoundTrip) {
  auto back = ParseYaml(FormatYaml(Pfl()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->components_size(), 2);
  EXPECT_EQ(back->components(0).start(), 0u);
  EXPECT_EQ(back->components(0).end(), 4u << 20);
  EXPECT_EQ(back->components(0).flags(), 0u) << "flags are the MDS's";
  EXPECT_EQ(back->components(0).layout().objects_size(), 0) << "objects are the MDS's";
  EXPECT_EQ(back->components(0).layout().stripe_count(), 1);
  EXPECT_EQ(back->components(0).layout().stripe_size(), 1u << 20);
  EXPECT_EQ(back->components(0).layout().stripe_offset(), 1);
  EXPECT_EQ(back->components(1).end(), kLayoutEof);
  EXPECT_EQ(back->components(1).layout().stripe_count(), -1);
  EXPECT_EQ(back->components(1).layout().pool(), "fast");
  // The same text again: a template is a fixed point.
  proto::Layout again = *back;
  EXPECT_EQ(FormatYaml(*ParseYaml(FormatYaml(again))), FormatYaml(again));

  proto::Layout plain;
  plain.set_pattern(proto::PATTERN_RAID0);
  plain.set_stripe_size(1 << 20);
  plain.set_stripe_count(2);
  plain.set_stripe_offset(-1);
  auto p = ParseYaml(FormatYaml(plain));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->components_size(), 0);
  EXPECT_EQ(p->stripe_count(), 2);
  EXPECT_EQ(p->stripe_size(), 1u << 20);
}

TEST(LayoutYamlTest, BadTemplatesAreEinval) {
  for (const char* bad : {"", "nonsense\n", "lmm_stripe_count: many\n", "lmm_colour: red\n",
                          "lcme_id: 1\n", "components:\n",
                          "components:\n  - lcme_id: 1\n    lcme_extent.e_start: 0\n"
                          "    lcme_extent.e_end: 100\n",
                          "lmm_pattern: raid6\n"}) {
    EXPECT_EQ(ParseYaml(bad).status().code(), Code::kInval) << bad;
  }
}

}  // namespace
}  // namespace stria::tools
