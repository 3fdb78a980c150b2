#include "tools/mount_info.h"

#include <gtest/gtest.h>

namespace stria::tools {
namespace {

constexpr char kMountInfo[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "40 22 0:40 / /mnt/training-data rw,nosuid,nodev,relatime shared:20 - fuse.stria "
    "127.0.0.1@tcp:9880:/training rw,user_id=0,group_id=0\n"
    "41 40 0:41 / /mnt/training-data/scratch rw - tmpfs tmpfs rw\n"
    "42 22 0:42 / /mnt/with\\040space rw - fuse.stria a@tcp,b@tcp:9000:/fs2 rw\n"
    "garbage line\n"
    "43 22 0:43 / /mnt/training-data2 rw - fuse.stria 10.0.0.1@tcp:/other rw\n";

TEST(MountInfoTest, Parse) {
  auto m = ParseMountInfo(kMountInfo);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[1].mount_point, "/mnt/training-data");
  EXPECT_EQ(m[1].fstype, "fuse.stria");
  EXPECT_EQ(m[1].source, "127.0.0.1@tcp:9880:/training");
  EXPECT_EQ(m[3].mount_point, "/mnt/with space");
}

TEST(MountInfoTest, LongestPrefixAtBoundary) {
  auto m = ParseMountInfo(kMountInfo);
  auto r = FindStriaMount(m, "/mnt/training-data/shards/a");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mount_point, "/mnt/training-data");
  r = FindStriaMount(m, "/mnt/training-data");
  ASSERT_TRUE(r.ok());
  r = FindStriaMount(m, "/mnt/training-data2/x");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, "10.0.0.1@tcp:/other");
  // A tmpfs mounted inside hides the Stria mount below it.
  EXPECT_FALSE(FindStriaMount(m, "/mnt/training-data/scratch/x").ok());
  EXPECT_FALSE(FindStriaMount(m, "/home/user").ok());
  EXPECT_FALSE(FindStriaMount(m, "/mnt/training-dat").ok());
}

TEST(MountInfoTest, Device) {
  auto d = ParseDevice("127.0.0.1@tcp:9880:/training");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->nids, "127.0.0.1@tcp:9880");
  EXPECT_EQ(d->fsname, "training");
  d = ParseDevice("a@tcp,b@tcp:9000:/fs2");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->nids, "a@tcp,b@tcp:9000");
  EXPECT_EQ(d->fsname, "fs2");
  EXPECT_FALSE(ParseDevice("127.0.0.1@tcp").ok());
  EXPECT_FALSE(ParseDevice(":/training").ok());
  EXPECT_FALSE(ParseDevice("a@tcp:/").ok());
  EXPECT_FALSE(ParseDevice("a@tcp:/x/y").ok());
}

TEST(MountInfoTest, PathInFilesystem) {
  EXPECT_EQ(PathInFilesystem("/mnt/training-data", "/mnt/training-data"), "/");
  EXPECT_EQ(PathInFilesystem("/mnt/training-data", "/mnt/training-data/a/b"), "/a/b");
  EXPECT_EQ(PathInFilesystem("/mnt/training-data", "/mnt/training-data/a//b/"), "/a/b");
  EXPECT_EQ(PathInFilesystem("/", "/a"), "/a");
}

}  // namespace
}  // namespace stria::tools
