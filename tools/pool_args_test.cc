#include "tools/pool_args.h"

#include <gtest/gtest.h>

namespace stria::tools {
namespace {

using V = std::vector<uint32_t>;

TEST(PoolArgsTest, PoolNames) {
  auto p = SplitPoolName("training.hot");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->first, "training");
  EXPECT_EQ(p->second, "hot");
  for (const char* bad : {"training", ".hot", "training.", "a.b.c", ""}) {
    EXPECT_FALSE(SplitPoolName(bad).ok()) << bad;
  }
}

TEST(PoolArgsTest, LustreOstLists) {
  EXPECT_EQ(*ParseOstList("fs-OST[0-3]", "fs"), (V{0, 1, 2, 3}));
  EXPECT_EQ(*ParseOstList("fs-OST[0-6/2,9]", "fs"), (V{0, 2, 4, 6, 9}));
  EXPECT_EQ(*ParseOstList("fs-OST000a_UUID", "fs"), (V{10}));
  EXPECT_EQ(*ParseOstList("fs-OST0001", "fs"), (V{1}));
  EXPECT_EQ(*ParseOstList("OST0003", "fs"), (V{3}));
  EXPECT_EQ(*ParseOstList("3", "fs"), (V{3}));
  for (const char* bad : {"other-OST0001", "fs-OST1", "fs-OST[3-1]", "fs-OST[0-3", "fs-OST[]",
                          "fs-OST[a]", "fs-OST[0-3/0]", "fs-MDT0000", "99999999", "fs-OSTzzzz"}) {
    EXPECT_FALSE(ParseOstList(bad, "fs").ok()) << bad;
  }
}

}  // namespace
}  // namespace stria::tools
