#include "common/config_file.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace stria {
namespace {

TEST(ConfigFileTest, SectionsValuesAndLines) {
  auto f = ConfigFile::Parse(
      "# a comment\n"
      "[global]\n"
      "log_level = \"debug\"\n"
      "\n"
      "[mds]\n"
      "fsname = \"training\"\n"
      "threads = 16\n"
      "o2ib_poll = true\n"
      "key_file = [\"/a.key\", \"/b.key\"]\n",
      "/etc/stria/stria.conf");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto g = f->Section("global");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].key, "log_level");
  EXPECT_EQ(g[0].values, std::vector<std::string>{"debug"});
  EXPECT_EQ(g[0].line, 3);
  auto m = f->Section("mds");
  ASSERT_EQ(m.size(), 4u);
  // File order, whatever the order inside toml++'s tables.
  EXPECT_EQ(m[0].key, "fsname");
  EXPECT_EQ(m[1].key, "threads");
  EXPECT_EQ(m[1].values, std::vector<std::string>{"16"});
  EXPECT_FALSE(m[1].is_bool);
  EXPECT_EQ(m[2].key, "o2ib_poll");
  EXPECT_TRUE(m[2].is_bool);
  EXPECT_EQ(m[2].values, std::vector<std::string>{"true"});
  EXPECT_TRUE(m[3].is_array);
  EXPECT_EQ(m[3].values, (std::vector<std::string>{"/a.key", "/b.key"}));
  EXPECT_EQ(f->Where(m[3]), "/etc/stria/stria.conf:9");
  EXPECT_TRUE(f->Section("oss").empty());
}

TEST(ConfigFileTest, SyntaxErrorNamesFileAndLine) {
  auto f = ConfigFile::Parse("[mds]\nfsname = \"x\"\nthreads = = 3\n", "my.conf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kInval);
  EXPECT_TRUE(f.status().message().starts_with("my.conf:3:")) << f.status().message();
}

TEST(ConfigFileTest, UnknownSectionIsAnError) {
  auto f = ConfigFile::Parse("[mds]\nfsname = \"x\"\n\n[mdss]\nthreads = 3\n", "my.conf");
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(f.status().message().starts_with("my.conf:4:")) << f.status().message();
  EXPECT_NE(f.status().message().find("mdss"), std::string::npos);
  // A bare key at the top is not a section either.
  f = ConfigFile::Parse("threads = 3\n", "my.conf");
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(f.status().message().starts_with("my.conf:1:")) << f.status().message();
}

TEST(ConfigFileTest, ValuesOfOtherTypesAreErrors) {
  for (const char* text : {"[oss]\nthreads = 1.5\n", "[mds]\n[mds.sub]\nx = 1\n",
                           "[oss]\nost = [true]\n", "[oss]\nost = [[\"a\"]]\n"}) {
    auto f = ConfigFile::Parse(text, "c.conf");
    ASSERT_FALSE(f.ok()) << text;
    EXPECT_TRUE(f.status().message().starts_with("c.conf:2:")) << f.status().message();
  }
}

TEST(ConfigFileTest, OssInstanceSections) {
  auto f = ConfigFile::Parse("[oss]\nthreads = 8\n[oss.nvme0]\nost = [\"0:/a\"]\n", "c.conf");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->Section("oss.nvme0").size(), 1u);
  EXPECT_EQ(f->Section("oss.nvme0")[0].line, 4);
  EXPECT_EQ(f->Section("oss").size(), 1u);
  // Only [oss] has instances.
  EXPECT_FALSE(ConfigFile::Parse("[mds.a]\nx = 1\n", "c.conf").ok());
  EXPECT_FALSE(ConfigFile::Parse("[oss.\"a b\"]\nx = 1\n", "c.conf").ok());
}

TEST(ConfigFileTest, MissingFileIsNoEnt) {
  auto f = ConfigFile::Load("/nonexistent/stria.conf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kNoEnt);
}

TEST(ConfigFileTest, WhichFileToRead) {
  bool required = true;
  unsetenv("STRIA_CONFIG");
  EXPECT_EQ(ConfigPathToRead("", false, &required), "/etc/stria/stria.conf");
  EXPECT_FALSE(required);
  EXPECT_EQ(ConfigPathToRead("/x.conf", true, &required), "/x.conf");
  EXPECT_TRUE(required);
  EXPECT_EQ(ConfigPathToRead("", true, &required), "");  // --config '': none
  EXPECT_FALSE(required);
  setenv("STRIA_CONFIG", "/y.conf", 1);
  EXPECT_EQ(ConfigPathToRead("", false, &required), "/y.conf");
  EXPECT_TRUE(required);
  EXPECT_EQ(ConfigPathToRead("/x.conf", true, &required), "/x.conf");
  unsetenv("STRIA_CONFIG");
}

}  // namespace
}  // namespace stria
