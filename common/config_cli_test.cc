#include "common/config_cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace stria {
namespace {

// A program shaped like the daemons: a required option, a ranged integer, a repeatable
// option, a flag, a choice.
struct Program {
  CLI::App app{"test daemon"};
  std::string fsname, listen = "0.0.0.0@tcp:9880", fallback;
  int threads = 8;
  std::vector<std::string> osts;
  bool poll = false;
  std::string level;

  Program() {
    app.add_option("--fsname", fsname)->required();
    app.add_option("--listen", listen);
    app.add_option("--threads", threads)->check(CLI::Range(1, 256));
    app.add_option("--ost", osts);
    app.add_flag("--o2ib-poll", poll);
    app.add_option("--lnet-fallback", fallback)->check(CLI::IsMember({"tcp", "none"}));
    app.add_option("--log-level", level);
  }
  // Runs with argv = {"stria-mds", args...}; *err gets what it printed to stderr.
  std::string instance;
  std::optional<int> Run(std::vector<std::string> args, std::string* err = nullptr,
                         std::string_view section = "mds") {
    args.insert(args.begin(), "stria-mds");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    testing::internal::CaptureStderr();
    if (section == "oss") app.add_option("--instance", instance);
    auto rc = ParseCommandLineAndConfig(app, static_cast<int>(argv.size()), argv.data(), section,
                                        section == "oss" ? &instance : nullptr);
    const std::string e = testing::internal::GetCapturedStderr();
    if (err != nullptr) *err = e;
    return rc;
  }
};

class ConfigCliTest : public testing::Test {
 protected:
  void SetUp() override {
    unsetenv("STRIA_CONFIG");
    char tmpl[] = "/tmp/stria-config-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/stria.conf";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::string dir_, path_;
};

TEST_F(ConfigCliTest, FileSetsOptionsTheCommandLineLeaves) {
  Write("[global]\nlog_level = \"debug\"\nlnet_fallback = \"tcp\"\n"
        "[mds]\nfsname = \"training\"\nthreads = 32\nost = [\"0:/a\", \"1:/b\"]\n"
        "o2ib_poll = true\nlnet_fallback = \"none\"\n");
  Program p;
  EXPECT_EQ(p.Run({"--config", path_, "--threads", "4"}), std::nullopt);
  EXPECT_EQ(p.fsname, "training");      // from [mds], satisfies ->required()
  EXPECT_EQ(p.threads, 4);              // the command line wins
  EXPECT_EQ(p.osts, (std::vector<std::string>{"0:/a", "1:/b"}));
  EXPECT_TRUE(p.poll);
  EXPECT_EQ(p.level, "debug");          // from [global]
  EXPECT_EQ(p.fallback, "none");        // [mds] beats [global]
  EXPECT_EQ(p.listen, "0.0.0.0@tcp:9880");  // untouched: the default
}

TEST_F(ConfigCliTest, RepeatedOptionOnTheCommandLineReplacesTheFilesList) {
  Write("[mds]\nfsname = \"t\"\nost = [\"0:/a\", \"1:/b\"]\n");
  Program p;
  EXPECT_EQ(p.Run({"--config", path_, "--ost", "5:/c"}), std::nullopt);
  EXPECT_EQ(p.osts, std::vector<std::string>{"5:/c"});
}

TEST_F(ConfigCliTest, FalseFlagLeavesTheDefault) {
  Write("[mds]\nfsname = \"t\"\no2ib_poll = false\n");
  Program p;
  EXPECT_EQ(p.Run({"--config", path_}), std::nullopt);
  EXPECT_FALSE(p.poll);
}

TEST_F(ConfigCliTest, UnknownKeyNamesFileLineAndTheKeys) {
  Write("[mds]\nfsname = \"t\"\n\nthreadz = 3\n");
  Program p;
  std::string err;
  EXPECT_EQ(p.Run({"--config", path_}, &err), 1);
  EXPECT_NE(err.find(path_ + ":4: unknown key 'threadz' in [mds]"), std::string::npos) << err;
  EXPECT_NE(err.find("threads"), std::string::npos) << err;  // what it takes instead
}

TEST_F(ConfigCliTest, UnknownGlobalKeyIsAnError) {
  Write("[global]\nfsname = \"t\"\n");
  Program p;
  std::string err;
  EXPECT_EQ(p.Run({"--config", path_}, &err), 1);
  EXPECT_NE(err.find(path_ + ":2: unknown key 'fsname' in [global]"), std::string::npos) << err;
}

TEST_F(ConfigCliTest, BadValuesFailWithFileAndLine) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"[mds]\nfsname = \"t\"\nthreads = 999\n", ":3: threads = 999"},
      {"[mds]\nfsname = \"t\"\nthreads = \"many\"\n", ":3: threads = many"},
      {"[mds]\nfsname = \"t\"\nlnet_fallback = \"udp\"\n", ":3: lnet_fallback = udp"},
      {"[mds]\nfsname = \"t\"\no2ib_poll = 1\n", ":3: o2ib_poll = 1: expected true or false"},
      {"[mds]\nfsname = \"t\"\nthreads = true\n", ":3: threads: expected a value"},
      {"[mds]\nfsname = [\"a\", \"b\"]\n", ":2: fsname = [a, b]: takes one value"},
      {"[mds]\nfsname = \"t\"\nconfig = \"/x\"\n", ":3: unknown key 'config'"},
      {"[mds]\nfsname = \"t\"\nclient-lease-ms = 5\n", ":3: unknown key 'client-lease-ms'"},
  };
  for (const Case& c : cases) {
    Write(c.text);
    Program p;
    std::string err;
    EXPECT_EQ(p.Run({"--config", path_}, &err), 1) << c.text;
    EXPECT_NE(err.find(path_ + c.want), std::string::npos) << c.text << "\n" << err;
  }
}

TEST_F(ConfigCliTest, BadValueOnTheCommandLineStillFails) {
  // The command line's own values are still checked, file or not.
  Write("[mds]\nfsname = \"t\"\nthreads = 4\n");
  Program p;
  EXPECT_EQ(p.Run({"--config", path_, "--threads", "999"}), 1);
}

TEST_F(ConfigCliTest, RequiredOptionMissingEverywhere) {
  Write("[mds]\nthreads = 3\n");
  Program p;
  std::string err;
  EXPECT_EQ(p.Run({"--config", path_}, &err), 1);
  EXPECT_NE(err.find("--fsname is required"), std::string::npos) << err;
}

TEST_F(ConfigCliTest, ExplicitConfigMustExistTheDefaultNeedNot) {
  Program p;
  std::string err;
  EXPECT_EQ(p.Run({"--config", dir_ + "/missing.conf", "--fsname", "t"}, &err), 1);
  EXPECT_NE(err.find("missing.conf"), std::string::npos) << err;
  Program q;
  setenv("STRIA_CONFIG", "", 1);  // none at all
  EXPECT_EQ(q.Run({"--fsname", "t"}), std::nullopt);
  unsetenv("STRIA_CONFIG");
}

TEST_F(ConfigCliTest, EnvironmentNamesTheFileAndEmptyConfigSkipsIt) {
  Write("[mds]\nfsname = \"from-env\"\n");
  setenv("STRIA_CONFIG", path_.c_str(), 1);
  Program p;
  EXPECT_EQ(p.Run({}), std::nullopt);
  EXPECT_EQ(p.fsname, "from-env");
  Program q;
  std::string err;
  EXPECT_EQ(q.Run({"--config", ""}, &err), 1);  // no file: --fsname is missing
  EXPECT_NE(err.find("--fsname is required"), std::string::npos) << err;
  unsetenv("STRIA_CONFIG");
}

TEST_F(ConfigCliTest, InstanceSectionComesBeforeItsParent) {
  Write("[global]\nlog_level = \"warn\"\n"
        "[oss]\nfsname = \"t\"\nthreads = 16\nlisten = \"0.0.0.0@tcp:0\"\n"
        "[oss.b]\nlisten = \"10.0.0.2@tcp:9882\"\nost = [\"2:/b\"]\n"
        "[oss.a]\nlisten = \"10.0.0.2@tcp:9881\"\nost = [\"0:/a\"]\n");
  Program p;
  EXPECT_EQ(p.Run({"--config", path_, "--instance", "a"}, nullptr, "oss"), std::nullopt);
  EXPECT_EQ(p.listen, "10.0.0.2@tcp:9881");
  EXPECT_EQ(p.osts, std::vector<std::string>{"0:/a"});
  EXPECT_EQ(p.threads, 16);
  EXPECT_EQ(p.level, "warn");
  Program q;
  std::string err;
  EXPECT_EQ(q.Run({"--config", path_, "--instance", "c"}, &err, "oss"), 1);
  EXPECT_NE(err.find("has no [oss.c] section"), std::string::npos) << err;
  Write("[oss]\nfsname = \"t\"\n[oss.a]\nbogus = 1\n");
  Program r;
  EXPECT_EQ(r.Run({"--config", path_, "--instance", "a"}, &err, "oss"), 1);
  EXPECT_NE(err.find(path_ + ":4: unknown key 'bogus' in [oss.a]"), std::string::npos) << err;
}

TEST_F(ConfigCliTest, CommandLineOnlyOptionsAreNotKeys) {
  Write("[mds]\nfsname = \"t\"\nsimulate_power_loss = true\n");
  Program p;
  bool cut = false;
  p.app.add_flag("--simulate-power-loss", cut)->group(kCommandLineOnlyGroup);
  std::string err;
  EXPECT_EQ(p.Run({"--config", path_}, &err), 1);
  EXPECT_NE(err.find(":3: unknown key 'simulate_power_loss'"), std::string::npos) << err;
  EXPECT_FALSE(cut);
}

TEST_F(ConfigCliTest, HelpAndVersionExitZero) {
  Program p;
  testing::internal::CaptureStdout();
  EXPECT_EQ(p.Run({"--help"}), 0);
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("--config"), std::string::npos) << help;
}

}  // namespace
}  // namespace stria
