#include "client/mount_spec.h"

#include <gtest/gtest.h>

namespace stria::client {
namespace {

TEST(MountSpec, OneNidWithPort) {
  auto s = ParseMountSpec("127.0.0.1@tcp:9880:/training");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->fsname, "training");
  ASSERT_EQ(s->mgs_nids.size(), 1u);
  EXPECT_EQ(s->mgs_nids[0].addr, "127.0.0.1");
  EXPECT_EQ(s->mgs_nids[0].port, 9880);
}

TEST(MountSpec, NidWithoutPortUsesDefault) {
  auto s = ParseMountSpec("10.0.0.5@tcp:/scratch");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->fsname, "scratch");
  ASSERT_EQ(s->mgs_nids.size(), 1u);
  EXPECT_EQ(s->mgs_nids[0].port, lnet::kDefaultPort);
}

TEST(MountSpec, FailoverNids) {
  auto s = ParseMountSpec("10.0.0.5@tcp:9000,10.0.0.6@tcp:9001:/fs_1");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->fsname, "fs_1");
  ASSERT_EQ(s->mgs_nids.size(), 2u);
  EXPECT_EQ(s->mgs_nids[0].port, 9000);
  EXPECT_EQ(s->mgs_nids[1].addr, "10.0.0.6");
  EXPECT_EQ(s->mgs_nids[1].port, 9001);
}

TEST(MountSpec, FsnameAfterLastSeparator) {
  auto s = ParseMountSpec("127.0.0.1@tcp:9880:/a:/b");
  // "a:" is not a NID list ending; the fsname is "b" and the NID part is bad.
  EXPECT_FALSE(s.ok());
}

TEST(MountSpec, Errors) {
  for (const char* bad : {"", "127.0.0.1@tcp", "127.0.0.1@tcp:9880", ":/training",
                          "127.0.0.1@tcp:9880:/", "127.0.0.1@tcp:9880:/has space",
                          "127.0.0.1@tcp:9880:/a/b", "notanid:/training",
                          "127.0.0.1@tcp:99999:/training",
                          "127.0.0.1@tcp:9880:/waytoolongfilesystemnamethatgoesonandon"}) {
    auto s = ParseMountSpec(bad);
    EXPECT_FALSE(s.ok()) << "accepted '" << bad << "'";
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), Code::kInval);
      EXPECT_NE(s.status().message().find("device '"), std::string::npos)
          << s.status().message();
    }
  }
}

TEST(MountSpec, ValidateFsname) {
  EXPECT_TRUE(ValidateFsname("training").ok());
  EXPECT_TRUE(ValidateFsname("a-b_c9").ok());
  EXPECT_FALSE(ValidateFsname("").ok());
  EXPECT_FALSE(ValidateFsname("a.b").ok());
}

}  // namespace
}  // namespace stria::client
