#include "client/fuse/mount_options.h"

#include <gtest/gtest.h>

namespace stria::client::fuse {
namespace {

TEST(MountOptions, DefaultsForRoot) {
  auto m = ParseMountOptions({}, "127.0.0.1@tcp:9880:/training", true);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->FuseOptString(), "fsname=127.0.0.1@tcp:9880:/training,subtype=stria,allow_other,default_permissions");
  EXPECT_EQ(m->io_threads, 16);
}

TEST(MountOptions, NonRootGetsNoAllowOther) {
  auto m = ParseMountOptions({}, "a@tcp:/fs", false);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->FuseOptString(), "fsname=a@tcp:/fs,subtype=stria,default_permissions");
}

TEST(MountOptions, SplitsOursFromFuseAndDropsFstabWords) {
  auto m = ParseMountOptions({"rw,defaults,_netdev,io_threads=4", "max_threads=8,noatime",
                              "x-systemd.automount,log=/tmp/x.log,noallow_other,nodefault_permissions"},
                             "a@tcp,b@tcp:/fs", true);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->io_threads, 4);
  EXPECT_EQ(m->max_threads, 8);
  EXPECT_EQ(m->idle_threads, 8);  // clamped to max_threads
  EXPECT_EQ(m->log_file, "/tmp/x.log");
  // The NID list's comma is escaped for libfuse's option parser.
  EXPECT_EQ(m->FuseOptString(), "rw,noatime,fsname=a@tcp\\,b@tcp:/fs,subtype=stria");
}

TEST(MountOptions, BadValues) {
  EXPECT_FALSE(ParseMountOptions({"io_threads=0"}, "a@tcp:/fs", true).ok());
  EXPECT_FALSE(ParseMountOptions({"io_threads=abc"}, "a@tcp:/fs", true).ok());
  EXPECT_FALSE(ParseMountOptions({"connect_timeout="}, "a@tcp:/fs", true).ok());
  EXPECT_FALSE(ParseMountOptions({"log="}, "a@tcp:/fs", true).ok());
  EXPECT_FALSE(ParseMountOptions({"timeout=0"}, "a@tcp:/fs", true).ok());
}

TEST(MountOptions, Timeout) {
  auto d = ParseMountOptions({}, "a@tcp:/fs", true);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->timeout_s, 300);
  auto m = ParseMountOptions({"timeout=7"}, "a@tcp:/fs", true);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->timeout_s, 7);
  EXPECT_EQ(m->FuseOptString().find("timeout"), std::string::npos);  // not passed to libfuse
}

TEST(MountOptions, LnetFallbackAndO2ibPoll) {
  auto d = ParseMountOptions({}, "a@o2ib:/fs", true);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->lnet_fallback, "");
  EXPECT_FALSE(d->o2ib_poll);
  auto m = ParseMountOptions({"lnet_fallback=tcp,o2ib_poll"}, "a@o2ib:/fs", true);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->lnet_fallback, "tcp");
  EXPECT_TRUE(m->o2ib_poll);
  EXPECT_EQ(m->FuseOptString().find("lnet"), std::string::npos);  // not passed to libfuse
  EXPECT_FALSE(ParseMountOptions({"lnet_fallback=udp"}, "a@o2ib:/fs", true).ok());
}

}  // namespace
}  // namespace stria::client::fuse
