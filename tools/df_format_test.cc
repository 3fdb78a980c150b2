#include "tools/df_format.h"

#include <gtest/gtest.h>

namespace stria::tools {
namespace {

TEST(DfFormatTest, LustreTable) {
  std::vector<DfTarget> t(3);
  t[0] = {"training-MDT0000_UUID", "MDT", 0, "", 4096, 1000, 900, 900, 1000, 990};
  t[1] = {"training-OST0000_UUID", "OST", 0, "", 4096, 1000, 750, 700, 5000, 4000};
  t[2] = {"training-OST0001_UUID", "OST", 1, "", 4096, 1000, 1000, 1000, 5000, 5000};
  std::string got = FormatDf(t, "/mnt/training-data", 0);
  EXPECT_EQ(got,
            "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
            "training-MDT0000_UUID        4000         400        3600  10% "
            "/mnt/training-data[MDT:0]\n"
            "training-OST0000_UUID        4000        1000        2800  26% "
            "/mnt/training-data[OST:0]\n"
            "training-OST0001_UUID        4000           0        4000   0% "
            "/mnt/training-data[OST:1]\n"
            "\n"
            "filesystem_summary:         8000        1000        6800  13% /mnt/training-data\n"
            "\n");
}

TEST(DfFormatTest, InodesAndErrors) {
  std::vector<DfTarget> t(2);
  t[0] = {"fs-MDT0000_UUID", "MDT", 0, "", 4096, 10, 10, 10, 1000, 990};
  t[1] = {"fs-OST0000_UUID", "OST", 0, "Connection refused", 0, 0, 0, 0, 0, 0};
  std::string got = FormatDf(t, "/m", kDfInodes);
  EXPECT_EQ(got,
            "UUID                      Inodes       IUsed       IFree IUse% Mounted on\n"
            "fs-MDT0000_UUID             1000          10         990   1% /m[MDT:0]\n"
            "fs-OST0000_UUID     : Connection refused\n"
            "\n"
            "filesystem_summary:         1000          10         990   1% /m\n"
            "\n");
}

TEST(DfFormatTest, Human) {
  EXPECT_EQ(HumanSize(1000), "       1000");
  EXPECT_EQ(HumanSize(2048), "     2.0K");
  EXPECT_EQ(HumanSize(3ull << 30), "     3.0G");
  std::vector<DfTarget> t(1);
  t[0] = {"fs-OST0000_UUID", "OST", 0, "", 1 << 20, 4096, 2048, 2048, 0, 0};
  std::string got = FormatDf(t, "/m", kDfHuman);
  EXPECT_NE(got.find("UUID                       bytes        Used   Available Use% Mounted on\n"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("fs-OST0000_UUID             4.0G        2.0G        2.0G  50% /m[OST:0]\n"),
            std::string::npos)
      << got;
}

}  // namespace
}  // namespace stria::tools
