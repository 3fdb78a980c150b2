#include "common/fid.h"

#include <gtest/gtest.h>

namespace stria {
namespace {

TEST(FidTest, RootAndNormalFids) {
  EXPECT_EQ(FormatFid(FidOfIno(1)), "[0x200000007:0x1:0x0]");
  EXPECT_EQ(FormatFid(FidOfIno(2)), "[0x200000400:0x3:0x0]");
  EXPECT_EQ(FormatFid(FidOfIno(0x20000)), "[0x200000401:0x1:0x0]");
  EXPECT_EQ(FormatFid(FidOfIno(0x3ffff)), "[0x200000401:0x20000:0x0]");
}

TEST(FidTest, RoundTripsEveryShapeOfInode) {
  for (uint64_t ino :
       {uint64_t{1}, uint64_t{2}, uint64_t{4095}, uint64_t{0x1ffff}, uint64_t{0x20000},
        uint64_t{0x20001}, uint64_t{123456789012}, (uint64_t{1} << 50) + 7}) {
    auto back = InoOfFid(FidOfIno(ino));
    ASSERT_TRUE(back.ok()) << ino;
    EXPECT_EQ(*back, ino);
    auto parsed = ParseFid(FormatFid(FidOfIno(ino)));
    ASSERT_TRUE(parsed.ok()) << FormatFid(FidOfIno(ino));
    EXPECT_EQ(*parsed, FidOfIno(ino));
  }
}

TEST(FidTest, ParsesLustreSpellingsAndRefusesGarbage) {
  EXPECT_EQ(*ParseFid("0x200000401:0x1:0x0"), (Fid{0x200000401, 1, 0}));
  EXPECT_EQ(*ParseFid("[200000401:1:0]"), (Fid{0x200000401, 1, 0}));
  for (const char* bad : {"", "[]", "[0x1:0x2]", "0x1:0x2:0x3:0x4", "[0x1:0x2:0x3", "0xg:0x1:0x0",
                          "0x1:0x100000000:0x0", "1:2:"}) {
    EXPECT_EQ(ParseFid(bad).status().code(), Code::kInval) << bad;
  }
  // Well-formed, but never handed out here.
  EXPECT_EQ(InoOfFid({0x200000007, 2, 0}).status().code(), Code::kInval);
  EXPECT_EQ(InoOfFid({0x100000000, 5, 0}).status().code(), Code::kInval);
  EXPECT_EQ(InoOfFid({0x200000400, 0, 0}).status().code(), Code::kInval);
  EXPECT_EQ(InoOfFid({0x200000400, 1, 0}).status().code(), Code::kInval) << "ino 0";
  EXPECT_EQ(InoOfFid({0x200000401, 1, 1}).status().code(), Code::kInval) << "version";
}

}  // namespace
}  // namespace stria
