#include "client/fuse/mount_config.h"

#include <gtest/gtest.h>

#include "client/fuse/mount_options.h"

namespace stria::client::fuse {
namespace {

std::vector<std::string> Options(const std::string& text) {
  auto f = ConfigFile::Parse(text, "/etc/stria/stria.conf");
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  auto o = MountOptionsFromConfig(*f);
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  return o.ok() ? *o : std::vector<std::string>{};
}

std::string Error(const std::string& text) {
  auto f = ConfigFile::Parse(text, "/etc/stria/stria.conf");
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  auto o = MountOptionsFromConfig(*f);
  EXPECT_FALSE(o.ok()) << text;
  return o.ok() ? "" : o.status().message();
}

TEST(MountConfigTest, ClientAndGlobalBecomeMountOptions) {
  EXPECT_EQ(Options("[global]\nlog_level = \"debug\"\nlog_file = \"/var/log/s.log\"\n"
                    "key_file = [\"/k\"]\nthreads = 4\n"  // threads: a daemon's key, skipped
                    "[client]\ntimeout = 600\no2ib_poll = true\nallow_other = false\n"
                    "default_permissions = false\nlog_target = \"syslog\"\n"),
            (std::vector<std::string>{"log_level=debug", "log=/var/log/s.log", "key_file=/k",
                                      "timeout=600", "o2ib_poll", "noallow_other",
                                      "nodefault_permissions", "log_target=syslog"}));
  EXPECT_TRUE(Options("[client]\no2ib_poll = false\n").empty());
  EXPECT_EQ(Options("[client]\nstatahead_max = 0\n"),
            (std::vector<std::string>{"statahead_max=0"}));
}

TEST(MountConfigTest, CommandLineOptionsWin) {
  auto from_file = Options("[client]\ntimeout = 600\nio_threads = 4\nallow_other = false\n");
  std::vector<std::string> all = from_file;
  all.push_back("timeout=30,allow_other");  // the -o of the command line, after the file's
  auto m = ParseMountOptions(all, "127.0.0.1@tcp:9880:/t", false);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->timeout_s, 30);
  EXPECT_EQ(m->io_threads, 4);
  EXPECT_NE(m->FuseOptString().find("allow_other"), std::string::npos);
}

TEST(MountConfigTest, BadEntriesNameFileAndLine) {
  EXPECT_NE(Error("[client]\n\ntimeuot = 3\n").find("/etc/stria/stria.conf:3: unknown key 'timeuot' in [client]"),
            std::string::npos);
  EXPECT_NE(Error("[client]\ntimeout = 0\n").find("/etc/stria/stria.conf:2: option timeout=0"),
            std::string::npos);
  EXPECT_NE(Error("[client]\nlog_level = \"loud\"\n").find(":2: option log_level=loud"),
            std::string::npos);
  EXPECT_NE(Error("[client]\nlog_target = \"file\"\n").find(":2: option log target 'file'"),
            std::string::npos);
  EXPECT_NE(Error("[client]\no2ib_poll = \"yes\"\n").find(":2: o2ib_poll = yes: expected true or false"),
            std::string::npos);
  EXPECT_NE(Error("[client]\ntimeout = true\n").find(":2: timeout: expected a value"),
            std::string::npos);
  EXPECT_NE(Error("[global]\nkey_file = [\"/a\", \"/b\"]\n").find(":2: key_file: takes one value"),
            std::string::npos);
  EXPECT_NE(Error("[client]\nlog_file = \"/x\"\n").find(":2: unknown key 'log_file'"),
            std::string::npos);
}

TEST(MountConfigTest, LustreClientOptions) {
  EXPECT_EQ(Options("[client]\nflock = \"localflock\"\nuser_xattr = false\nlazystatfs = false\n"
                    "splice_writes = false\n"),
            (std::vector<std::string>{"localflock", "nouser_xattr", "nolazystatfs",
                                      "nosplice_writes"}));
  EXPECT_EQ(Options("[client]\nflock = \"noflock\"\nuser_xattr = true\n"),
            (std::vector<std::string>{"noflock", "user_xattr"}));
  EXPECT_NE(Error("[client]\nflock = \"io_threads=3\"\n")
                .find(":2: flock = io_threads=3: expected flock, localflock, noflock"),
            std::string::npos);
  EXPECT_NE(Error("[client]\nflock = true\n").find(":2: flock = true: expected flock"),
            std::string::npos);
}

TEST(MountConfigTest, NoFileNoOptions) {
  auto o = LoadMountConfig("", true);  // --config ''
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->empty());
  auto missing = LoadMountConfig("/nonexistent/stria.conf", true);
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace stria::client::fuse
