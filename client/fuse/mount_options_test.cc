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

TEST(MountOptions, BusyPoll) {
  auto d = ParseMountOptions({}, "a@tcp:/fs", true);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->busy_poll_us, -1);  // not given: the transport decides (150 over io_uring, else 0)
  auto m = ParseMountOptions({"busy_poll_us=150"}, "a@tcp:/fs", true);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->busy_poll_us, 150);
  EXPECT_EQ(m->FuseOptString().find("busy"), std::string::npos);  // not passed to libfuse
  EXPECT_FALSE(ParseMountOptions({"busy_poll_us=10001"}, "a@tcp:/fs", true).ok());
  EXPECT_FALSE(ParseMountOptions({"busy_poll_us=-1"}, "a@tcp:/fs", true).ok());
  EXPECT_EQ(d->close_gather_ms, 10);
  auto g = ParseMountOptions({"close_gather_ms=0"}, "a@tcp:/fs", true);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->close_gather_ms, 0);
  EXPECT_FALSE(ParseMountOptions({"close_gather_ms=600001"}, "a@tcp:/fs", true).ok());
  EXPECT_EQ(d->open_intent_ms, 1000);
  auto oi = ParseMountOptions({"open_intent_ms=0"}, "a@tcp:/fs", true);
  ASSERT_TRUE(oi.ok());
  EXPECT_EQ(oi->open_intent_ms, 0);
  EXPECT_EQ(oi->FuseOptString().find("intent"), std::string::npos);  // not passed to libfuse
  EXPECT_FALSE(ParseMountOptions({"open_intent_ms=10001"}, "a@tcp:/fs", true).ok());
  EXPECT_EQ(d->statahead_max, 32);
  auto sa = ParseMountOptions({"statahead_max=0"}, "a@tcp:/fs", true);
  ASSERT_TRUE(sa.ok());
  EXPECT_EQ(sa->statahead_max, 0);
  EXPECT_EQ(sa->FuseOptString().find("statahead"), std::string::npos);
  EXPECT_FALSE(ParseMountOptions({"statahead_max=129"}, "a@tcp:/fs", true).ok());
}

TEST(MountOptions, LustreClientOptions) {
  auto d = ParseMountOptions({}, "a@tcp:/fs", true);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->locks, LockMode::kCluster);
  EXPECT_TRUE(d->user_xattr);
  EXPECT_TRUE(d->lazy_statfs);
  auto m = ParseMountOptions({"localflock,nouser_xattr,nolazystatfs"}, "a@tcp:/fs", true);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->locks, LockMode::kLocal);
  EXPECT_FALSE(m->user_xattr);
  EXPECT_FALSE(m->lazy_statfs);
  // None of them reaches libfuse (which would refuse them).
  EXPECT_EQ(m->FuseOptString(), "fsname=a@tcp:/fs,subtype=stria,allow_other,default_permissions");
  // The last one given wins, as mount(8) options do.
  auto n = ParseMountOptions({"noflock,user_xattr,lazystatfs", "flock"}, "a@tcp:/fs", true);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->locks, LockMode::kCluster);
  EXPECT_TRUE(n->user_xattr);
  EXPECT_TRUE(n->lazy_statfs);
  auto none = ParseMountOptions({"flock,noflock"}, "a@tcp:/fs", true);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->locks, LockMode::kNone);
}

TEST(MountOptions, UnknownOptionsAreRefusedUnlessSloppy) {
  auto m = ParseMountOptions({"noatime,acl"}, "a@tcp:/fs", true);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kInval);
  EXPECT_EQ(m.status().message(), "unknown option 'acl', won't mount");
  EXPECT_FALSE(ParseMountOptions({"flocks"}, "a@tcp:/fs", true).ok());
  EXPECT_FALSE(ParseMountOptions({"io_thread=3"}, "a@tcp:/fs", true).ok());
  EXPECT_FALSE(ParseMountOptions({"noatime=1"}, "a@tcp:/fs", true).ok());  // a flag, not a value
  auto s = ParseMountOptions({"noatime,acl,mystery=1"}, "a@tcp:/fs", true, /*sloppy=*/true);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->ignored, (std::vector<std::string>{"acl", "mystery=1"}));
  EXPECT_EQ(s->FuseOptString(), "noatime,fsname=a@tcp:/fs,subtype=stria,allow_other,default_permissions");
  // Generic mount flags and libfuse's options are passed on.
  auto g = ParseMountOptions({"ro,nosuid,nodev,noexec,sync,dirsync,relatime,auto_unmount,max_read=65536"},
                             "a@tcp:/fs", false);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->FuseOptString(),
            "ro,nosuid,nodev,noexec,sync,dirsync,relatime,auto_unmount,max_read=65536,"
            "fsname=a@tcp:/fs,subtype=stria,default_permissions");
}

}  // namespace
}  // namespace stria::client::fuse
