#include "proto/layout_components.h"

#include <gtest/gtest.h>

namespace stria {
namespace {

proto::Layout Components(std::initializer_list<std::pair<uint64_t, uint64_t>> extents,
                         std::initializer_list<bool> init) {
  proto::Layout l;
  auto it = init.begin();
  for (auto [start, end] : extents) {
    proto::LayoutComponent* c = l.add_components();
    c->set_id(static_cast<uint32_t>(l.components_size()));
    c->set_start(start);
    c->set_end(end);
    c->mutable_layout()->set_stripe_size(1 << 20);
    if (it != init.end() && *it++) {
      c->set_flags(kLcmeFlInit);
      c->mutable_layout()->add_objects()->set_object_id(static_cast<uint64_t>(c->id()));
    }
  }
  return l;
}

constexpr uint64_t M = 1 << 20;

TEST(LayoutComponentsTest, PlainLayoutIsOneExtent) {
  proto::Layout plain;
  EXPECT_FALSE(HasObjects(plain));
  EXPECT_FALSE(RangeInstantiated(plain, 0, 1));
  plain.add_objects()->set_object_id(7);
  auto ex = LayoutExtents(plain);
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].start, 0u);
  EXPECT_EQ(ex[0].end, kLayoutEof);
  EXPECT_TRUE(ex[0].init);
  EXPECT_TRUE(RangeInstantiated(plain, 1ull << 50, (1ull << 50) + 1));
  EXPECT_EQ(LayoutEnd(plain), kLayoutEof);
  EXPECT_EQ(AllObjects(plain).size(), 1u);
}

TEST(LayoutComponentsTest, RangesAgainstInstantiatedComponents) {
  const proto::Layout l =
      Components({{0, 4 * M}, {4 * M, 64 * M}, {64 * M, kLayoutEof}}, {true, false, true});
  ASSERT_TRUE(CheckComponentExtents(l).ok());
  EXPECT_TRUE(HasObjects(l));
  EXPECT_TRUE(RangeInstantiated(l, 0, 4 * M));  // end is exclusive
  EXPECT_FALSE(RangeInstantiated(l, 4 * M - 1, 4 * M + 1));
  EXPECT_FALSE(RangeInstantiated(l, 4 * M, 4 * M + 1));
  EXPECT_TRUE(RangeInstantiated(l, 64 * M, 65 * M));
  EXPECT_TRUE(RangeInstantiated(l, 5 * M, 5 * M));  // empty
  EXPECT_EQ(AllObjects(l).size(), 2u);
  EXPECT_EQ(AllObjects(l)[1]->object_id(), 3u);
}

TEST(LayoutComponentsTest, ABoundedLayoutEnds) {
  const proto::Layout l = Components({{0, 4 * M}, {4 * M, 8 * M}}, {true, true});
  EXPECT_EQ(LayoutEnd(l), 8 * M);
  EXPECT_TRUE(RangeInstantiated(l, 0, 8 * M));
  EXPECT_FALSE(RangeInstantiated(l, 0, 8 * M + 1));
}

TEST(LayoutComponentsTest, ExtentsMustTileFromZero) {
  EXPECT_TRUE(CheckComponentExtents(Components({{0, kLayoutEof}}, {})).ok());
  EXPECT_FALSE(CheckComponentExtents(Components({{M, 2 * M}}, {})).ok()) << "not from 0";
  EXPECT_FALSE(CheckComponentExtents(Components({{0, M}, {2 * M, 3 * M}}, {})).ok()) << "gap";
  EXPECT_FALSE(CheckComponentExtents(Components({{0, 2 * M}, {M, 3 * M}}, {})).ok()) << "overlap";
  EXPECT_FALSE(CheckComponentExtents(Components({{0, 0}}, {})).ok()) << "empty";
  EXPECT_FALSE(CheckComponentExtents(Components({{0, 4096}}, {})).ok()) << "unaligned";
  EXPECT_FALSE(
      CheckComponentExtents(Components({{0, kLayoutEof}, {kLayoutEof, kLayoutEof}}, {})).ok())
      << "after EOF";
  proto::Layout nested = Components({{0, kLayoutEof}}, {});
  nested.mutable_components(0)->mutable_layout()->add_components();
  EXPECT_FALSE(CheckComponentExtents(nested).ok());
  proto::Layout many;
  for (int i = 0; i <= kMaxLayoutComponents; ++i) {
    auto* c = many.add_components();
    c->set_start(static_cast<uint64_t>(i) * M);
    c->set_end(static_cast<uint64_t>(i + 1) * M);
  }
  EXPECT_FALSE(CheckComponentExtents(many).ok());
}

}  // namespace
}  // namespace stria
