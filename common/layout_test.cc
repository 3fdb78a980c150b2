#include "common/layout.h"

#include <gtest/gtest.h>

namespace stria {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(LayoutTest, ValidateStripe) {
  EXPECT_TRUE(ValidateStripe(kMiB, 4).ok());
  EXPECT_EQ(ValidateStripe(1000, 4).code(), Code::kInval);
  EXPECT_EQ(ValidateStripe(kMiB, 0).code(), Code::kInval);
  EXPECT_EQ(ValidateStripe(kMiB, kMaxStripeCount + 1).code(), Code::kInval);
}

TEST(LayoutTest, MapExtentSpansStripes) {
  StripeGeometry g{kMiB, 4};
  // 2.5 MiB starting half a MiB into the file: chunks 0 (half), 1, 2 (full), none of 3.
  auto ex = MapExtent(g, kMiB / 2, 5 * kMiB / 2);
  ASSERT_EQ(ex.size(), 3u);
  EXPECT_EQ(ex[0].stripe, 0u);
  EXPECT_EQ(ex[0].obj_offset, kMiB / 2);
  EXPECT_EQ(ex[0].length, kMiB / 2);
  EXPECT_EQ(ex[1].stripe, 1u);
  EXPECT_EQ(ex[1].obj_offset, 0u);
  EXPECT_EQ(ex[1].buf_offset, kMiB / 2);
  EXPECT_EQ(ex[2].stripe, 2u);
  EXPECT_EQ(ex[2].length, kMiB);
}

TEST(LayoutTest, SecondRowLandsAfterFirstChunkOfEachObject) {
  StripeGeometry g{kMiB, 4};
  uint32_t stripe = 99;
  EXPECT_EQ(ObjectOffset(g, 5 * kMiB + 7, &stripe), kMiB + 7);
  EXPECT_EQ(stripe, 1u);
}

TEST(LayoutTest, ObjectSizesSumToFileSize) {
  for (uint32_t count : {1u, 3u, 4u}) {
    StripeGeometry g{kMiB, count};
    for (uint64_t size : {uint64_t{0}, uint64_t{1}, kMiB - 1, kMiB, kMiB + 1, 7 * kMiB + 12345, 64 * kMiB}) {
      uint64_t sum = 0, from_objects = 0;
      for (uint32_t s = 0; s < count; ++s) {
        uint64_t os = ObjectSizeForFileSize(g, s, size);
        sum += os;
        from_objects = std::max(from_objects, FileSizeFromObject(g, s, os));
      }
      EXPECT_EQ(sum, size) << "count " << count << " size " << size;
      EXPECT_EQ(from_objects, size) << "count " << count << " size " << size;
    }
  }
}

}  // namespace
}  // namespace stria
