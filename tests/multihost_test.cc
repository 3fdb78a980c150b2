// The three-machine install of docs/operations.md ("Installing on several machines"), on
// five "hosts" in one process: an MDS, two OSSes and two clients, each a network namespace
// of its own with its own address on one bridge (10.213.0.0/24, inside a sixth "switch"
// namespace, so the test host's own network is untouched), plus a rogue host for the
// refusals. Every host has its own root directory standing for its "/": HOST/etc/stria/
// stria.conf, HOST/etc/stria/stria.key, HOST/srv/stria, HOST/mnt.
//
// Configured only by those config files: the daemons run the ExecStart= command line of the
// installed systemd units (dist/systemd/*.service.in, read here), with @STRIA_SBINDIR@ the
// build's bin directory, %i the instance and /etc/stria/stria.conf the host's file; the
// clients run what mount(8) runs for the fstab line of the docs (`mount.stria DEVICE DIR -o
// _netdev`), with $STRIA_CONFIG naming the host's /etc/stria/stria.conf. Keys come from
// `lctl keygen`, as in the docs. Processes join a host's namespace with `nsenter --net`
// (the network only: the mounts stay visible to this process).
//
// What it checks: the clients mount with the key and see each other's files, byte for byte,
// striped over both OSSes; a host without the key, or with another, is refused (mount.stria
// exits 32, the servers log the refusal) and the servers keep serving; root is squashed on
// the client outside nosquash_nids, through the mount and in a forged raw request; an OSS
// refuses object I/O without a capability, with a made-up one and with a genuine expired one
// (kCapaExpired), and keeps serving the genuine one.
//
// Skips (with the reason) where `ip netns` cannot be used (not root, no iproute2, no veth or
// bridge in the kernel) or there is no /dev/fuse.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lnet/auth.h"
#include "lnet/capa.h"
#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "proto/stria.pb.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

#ifndef STRIA_SOURCE_DIR
#define STRIA_SOURCE_DIR "."
#endif

namespace stria::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kFsname[] = "mhfs";
constexpr char kMgsNid[] = "10.213.0.10@tcp:9880";
constexpr char kDevice[] = "10.213.0.10@tcp:9880:/mhfs";
constexpr uint32_t kSquashUid = 65534;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::trunc) << text;
}

// One machine: a network namespace with one address, and a directory standing for its "/".
struct Host {
  std::string name;  // mds, oss1, oss2, client1, client2, rogue
  std::string addr;  // 10.213.0.X
  std::string ns;    // the network namespace
  std::string root;  // this host's "/"
  std::string Conf() const { return root + "/etc/stria/stria.conf"; }
  std::string Key() const { return root + "/etc/stria/stria.key"; }
  std::string Mnt() const { return root + "/mnt/stria"; }
  std::string Log(const std::string& what) const { return root + "/var/log/" + what + ".log"; }
  // argv run inside this host's network namespace.
  std::vector<std::string> In(std::vector<std::string> argv) const {
    argv.insert(argv.begin(), {"/usr/bin/nsenter", "--net=/run/netns/" + ns, "--"});
    return argv;
  }
};

// The ExecStart= of an installed unit, as this host would run it: the daemon from the build,
// the host's config file, `instance` for %i.
Result<std::vector<std::string>> UnitCommand(const std::string& unit, const Host& h,
                                             const std::string& instance = "") {
  const std::string path = std::string(STRIA_SOURCE_DIR) + "/dist/systemd/" + unit + ".in";
  std::istringstream in(ReadText(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("ExecStart=")) continue;
    std::istringstream words(line.substr(10));
    std::vector<std::string> argv;
    for (std::string w; words >> w;) {
      if (w.starts_with("@STRIA_SBINDIR@/")) w = BinPath(w.substr(16));
      if (w == "/etc/stria/stria.conf") w = h.Conf();
      if (w == "%i") w = instance;
      if (w.find_first_of("@%") != std::string::npos) {
        return Status(Code::kInval, path + ": cannot run '" + w + "' of " + line);
      }
      argv.push_back(w);
    }
    if (argv.empty()) break;
    return argv;
  }
  return Status(Code::kNoEnt, path + ": no ExecStart=");
}

// Runs `fn` on a thread inside network namespace `ns` (sockets it opens live there).
template <class F>
auto InNetns(const std::string& ns, F fn) -> decltype(fn()) {
  decltype(fn()) out;
  std::string err;
  std::thread t([&] {
    const int fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      err = std::string("setns ") + ns + ": " + strerror(errno);
    } else {
      out = fn();
    }
    if (fd >= 0) close(fd);
  });
  t.join();
  if (!err.empty()) ADD_FAILURE() << err;
  return out;
}

int CountLines(const std::string& log, const std::string& needle) {
  std::istringstream in(ReadText(log));
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

class MultiHostTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveFuse()) {
      skip_ = "no /dev/fuse on this machine";
      return;
    }
    std::string why;
    if (!NetnsUsable(&why)) {
      skip_ = why;
      return;
    }
    if (access("/usr/bin/nsenter", X_OK) != 0) {
      skip_ = "/usr/bin/nsenter (util-linux) is missing";
      return;
    }
    unsetenv("STRIA_KEY_FILE");  // every host has its own /etc/stria
    unsetenv("STRIA_CONFIG");
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/stria-multihost-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr) << tmpl << ": " << strerror(errno);
    dir_ = tmpl;
    const std::string id = std::to_string(getpid());
    switch_ns_ = "stria-mh" + id + "-switch";
    const std::vector<std::pair<std::string, int>> hosts = {
        {"mds", 10}, {"oss1", 21}, {"oss2", 22}, {"client1", 31}, {"client2", 32}, {"rogue", 66}};
    for (const auto& [name, octet] : hosts) {
      Host h{name, "10.213.0." + std::to_string(octet), "stria-mh" + id + "-" + name,
             dir_ + "/" + name};
      fs::create_directories(h.root + "/etc/stria");
      fs::create_directories(h.root + "/srv/stria");  // the operator's mkdir -p /srv/stria
      fs::create_directories(h.root + "/var/log");
      fs::create_directories(h.Mnt());
      hosts_[name] = h;
    }
    StartWatchdog();
    Status net = SetUpNetwork();
    ASSERT_TRUE(net.ok()) << net.ToString();
    WriteConfigs();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());

    // systemctl enable --now stria-mds / stria-oss@nvme0 (each OSS host) ...
    auto mds = UnitCommand("stria-mds.service", H("mds"));
    ASSERT_TRUE(mds.ok()) << mds.status().ToString();
    StartDaemon(H("mds"), *mds);
    for (const char* oss : {"oss1", "oss2"}) {
      auto cmd = UnitCommand("stria-oss@.service", H(oss), "nvme0");
      ASSERT_TRUE(cmd.ok()) << cmd.status().ToString();
      StartDaemon(H(oss), *cmd);
    }
    // ... lctl dl from a client host lists both OSTs UP ...
    ASSERT_TRUE(WaitForOsts().ok()) << DumpLogs();
    // ... and each client mounts as its fstab line says.
    for (const char* c : {"client1", "client2"}) {
      CommandResult r = Mount(H(c));
      ASSERT_EQ(r.exit_code, 0) << c << ": " << r.err << DumpLogs();
      mounted_.push_back(H(c).Mnt());
    }
    // A shared directory (root on client1 is not squashed), striped over both OSSes.
    const Host& c1 = H("client1");
    ASSERT_EQ(mkdir((c1.Mnt() + "/shared").c_str(), 0777), 0) << strerror(errno);
    ASSERT_EQ(chmod((c1.Mnt() + "/shared").c_str(), 01777), 0) << strerror(errno);
    CommandResult ss = RunCommand(c1.In({BinPath("lfs"), "--key-file", c1.Key(), "setstripe",
                                         "-c", "2", "-S", "1M", c1.Mnt() + "/shared"}));
    ASSERT_EQ(ss.exit_code, 0) << ss.out << ss.err;
  }

  static void TearDownTestSuite() {
    if (dir_.empty()) return;
    if (::testing::UnitTest::GetInstance()->Failed()) fprintf(stderr, "%s", DumpLogs().c_str());
    for (const std::string& m : mounted_) Unmount(m);
    mounted_.clear();
    for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) {
      kill(*it, SIGTERM);
      for (int i = 0; i < 200; ++i) {
        if (waitpid(*it, nullptr, WNOHANG) == *it) break;
        std::this_thread::sleep_for(50ms);
        if (i == 199) {
          kill(*it, SIGKILL);
          waitpid(*it, nullptr, 0);
        }
      }
    }
    daemons_.clear();
    for (auto& [name, h] : hosts_) RunIp({"netns", "del", h.ns}).IgnoreError();
    RunIp({"netns", "del", switch_ns_}).IgnoreError();
    if (watchdog_fd_ >= 0) {
      close(watchdog_fd_);
      waitpid(watchdog_pid_, nullptr, 0);
    }
    const char* keep = getenv("STRIA_TEST_KEEP");
    if (keep == nullptr || std::string(keep).empty() || std::string(keep) == "0") {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    } else {
      fprintf(stderr, "multihost: keeping %s\n", dir_.c_str());
    }
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  static const Host& H(const std::string& name) { return hosts_.at(name); }

  // The switch namespace holds a bridge; each host gets eth0 (a veth whose peer is a bridge
  // port) with its address.
  static Status SetUpNetwork() {
    STRIA_RETURN_IF_ERROR(RunIp({"netns", "add", switch_ns_}));
    STRIA_RETURN_IF_ERROR(RunIp({"-n", switch_ns_, "link", "add", "br0", "type", "bridge"}));
    STRIA_RETURN_IF_ERROR(RunIp({"-n", switch_ns_, "link", "set", "br0", "up"}));
    for (auto& [name, h] : hosts_) {
      const std::string port = "p-" + name;
      STRIA_RETURN_IF_ERROR(RunIp({"netns", "add", h.ns}));
      STRIA_RETURN_IF_ERROR(RunIp({"-n", switch_ns_, "link", "add", port, "type", "veth", "peer",
                                   "name", "eth0", "netns", h.ns}));
      STRIA_RETURN_IF_ERROR(RunIp({"-n", switch_ns_, "link", "set", port, "master", "br0", "up"}));
      STRIA_RETURN_IF_ERROR(RunIp({"-n", h.ns, "addr", "add", h.addr + "/24", "dev", "eth0"}));
      STRIA_RETURN_IF_ERROR(RunIp({"-n", h.ns, "link", "set", "eth0", "up"}));
      STRIA_RETURN_IF_ERROR(RunIp({"-n", h.ns, "link", "set", "lo", "up"}));
    }
    return Status::Ok();
  }

  // Keys from `lctl keygen` (the cluster key to every host but the rogue, the capability key
  // to the servers only) and one stria.conf per host, as docs/operations.md writes them.
  static void WriteConfigs() {
    const std::string lctl = BinPath("lctl");
    CommandResult k = RunCommand({lctl, "keygen", H("mds").Key()});
    ASSERT_EQ(k.exit_code, 0) << k.out << k.err;
    k = RunCommand({lctl, "keygen", H("mds").root + "/etc/stria/capa.key"});
    ASSERT_EQ(k.exit_code, 0) << k.out << k.err;
    k = RunCommand({lctl, "keygen", H("rogue").root + "/etc/stria/other.key"});
    ASSERT_EQ(k.exit_code, 0) << k.out << k.err;
    // scp -p: the copies keep mode 0600 (a key readable by others is refused).
    auto copy = [](const std::string& from, const std::string& to) {
      fs::copy_file(from, to);
      fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write);
    };
    for (const char* h : {"oss1", "oss2", "client1", "client2"}) copy(H("mds").Key(), H(h).Key());
    for (const char* h : {"oss1", "oss2"}) {
      copy(H("mds").root + "/etc/stria/capa.key", H(h).root + "/etc/stria/capa.key");
    }
    const Host& m = H("mds");
    WriteText(m.Conf(),
              "[global]\n"
              "key_file = [\"" + m.Key() + "\"]\n"
              "[mds]\n"
              "fsname = \"" + std::string(kFsname) + "\"\n"
              "data = \"" + m.root + "/srv/stria/mdt0\"\n"
              "listen = \"" + std::string(kMgsNid) + "\"\n"
              "root_squash = \"65534:65534\"\n"
              "nosquash_nids = \"" + H("client1").addr + "@tcp\"\n"
              "capa_key_file = [\"" + m.root + "/etc/stria/capa.key\"]\n");
    int ost = 0;
    for (const char* name : {"oss1", "oss2"}) {
      const Host& h = H(name);
      WriteText(h.Conf(),
                "[global]\n"
                "key_file = [\"" + h.Key() + "\"]\n"
                "[oss]\n"
                "mgs = \"" + std::string(kMgsNid) + "\"\n"
                "capa_key_file = [\"" + h.root + "/etc/stria/capa.key\"]\n"
                "[oss.nvme0]\n"
                "ost = [\"" + std::to_string(ost) + ":" + h.root + "/srv/stria/ost" +
                    std::to_string(ost) + "\"]\n"
                "listen = \"" + h.addr + "@tcp:0\"\n");
      ++ost;
    }
    for (const char* name : {"client1", "client2"}) {
      const Host& h = H(name);
      WriteText(h.Conf(),
                "[client]\n"
                "key_file = \"" + h.Key() + "\"\n"
                "log = \"" + h.Log("stria-client") + "\"\n"
                "connect_timeout = 5\n");
    }
    // The rogue host: a client section without a key (its other.key is for the second try).
    WriteText(H("rogue").Conf(), "[client]\nconnect_timeout = 5\n");
  }

  static void StartDaemon(const Host& h, const std::vector<std::string>& argv) {
    auto pid = SpawnLogged(h.In(argv), h.Log(fs::path(argv[0]).filename().string()));
    ASSERT_TRUE(pid.ok()) << pid.status().ToString();
    daemons_.push_back(*pid);
  }

  // `lctl dl` on client1 until the MGS lists both OSTs UP (a minute at most; a daemon that
  // exits ends the wait).
  static Status WaitForOsts() {
    std::string last;
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < until) {
      for (pid_t p : daemons_) {
        int st = 0;
        if (waitpid(p, &st, WNOHANG) == p) {
          return Status(Code::kInternal, "daemon " + std::to_string(p) + " exited (status " +
                                             std::to_string(st) + ")");
        }
      }
      CommandResult r = RunCommand(H("client1").In(
          {"/usr/bin/env", "STRIA_TOOL_TIMEOUT_MS=3000", BinPath("lctl"), "--key-file",
           H("client1").Key(), "--mgs", kMgsNid, "dl"}));
      int up = 0;
      std::istringstream in(r.out);
      for (std::string line; std::getline(in, line);) up += line.find(" UP obdfilter ") != std::string::npos;
      if (up == 2) return Status::Ok();
      last = r.out + r.err;
      std::this_thread::sleep_for(100ms);
    }
    return Status(Code::kTimeout, "the MGS did not list 2 OSTs: " + last);
  }

  // What mount(8) runs for `DEVICE /mnt/stria stria defaults,_netdev 0 0` on host h
  // ($STRIA_CONFIG stands for its /etc/stria/stria.conf).
  static CommandResult Mount(const Host& h, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {"/usr/bin/env", "STRIA_CONFIG=" + h.Conf(),
                                     BinPath("mount.stria"), kDevice, h.Mnt(), "-o", "_netdev"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(h.In(argv));
  }

  // fusermount3 -u, then until no mount.stria of this mount point is left.
  static void Unmount(const std::string& mnt) {
    CommandResult r = RunCommand({"/usr/bin/fusermount3", "-u", mnt});
    if (r.exit_code != 0) RunCommand({"/bin/umount", "-l", mnt});
    for (int i = 0; i < 200; ++i) {
      bool alive = false;
      std::error_code ec;
      for (const auto& p : fs::directory_iterator("/proc", ec)) {
        const std::string cmd = ReadText(p.path().string() + "/cmdline");
        alive |= cmd.find("mount.stria") != std::string::npos &&
                 cmd.find(mnt) != std::string::npos;
      }
      if (!alive) return;
      std::this_thread::sleep_for(50ms);
    }
    fprintf(stderr, "multihost: the daemon of %s did not exit\n", mnt.c_str());
  }

  // A child that, if this process dies, unmounts and removes the namespaces (the daemons
  // die with us through PR_SET_PDEATHSIG).
  static void StartWatchdog() {
    std::vector<std::vector<std::string>> cmds;
    for (const char* c : {"client1", "client2", "rogue"}) {
      cmds.push_back({"/bin/umount", "-l", H(c).Mnt()});
    }
    for (auto& [name, h] : hosts_) cmds.push_back({kIpPath, "netns", "del", h.ns});
    cmds.push_back({kIpPath, "netns", "del", switch_ns_});
    std::vector<std::vector<char*>> argvs;
    for (auto& c : cmds) {
      std::vector<char*> a;
      for (auto& w : c) a.push_back(w.data());
      a.push_back(nullptr);
      argvs.push_back(std::move(a));
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[1]);
      const int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      dup2(fds[0], 3);
      close_range(4, ~0u, 0);
      char c;
      while (read(3, &c, 1) < 0 && errno == EINTR) {
      }
      for (auto& argv : argvs) {
        const pid_t u = fork();
        if (u == 0) {
          execv(argv[0], argv.data());
          _exit(127);
        }
        if (u > 0) waitpid(u, nullptr, 0);
      }
      _exit(0);
    }
    close(fds[0]);
    watchdog_pid_ = pid;
    watchdog_fd_ = pid > 0 ? fds[1] : -1;
    if (pid < 0) close(fds[1]);
  }

  static std::string DumpLogs() {
    std::string out = "\n==== multihost logs (" + dir_ + ") ====\n";
    for (auto& [name, h] : hosts_) {
      std::error_code ec;
      for (const auto& f : fs::directory_iterator(h.root + "/var/log", ec)) {
        std::string text = ReadText(f.path());
        if (text.size() > 6000) text = "..." + text.substr(text.size() - 6000);
        out += "--- " + f.path().string() + "\n" + text;
      }
    }
    return out;
  }

  // A raw RPC client on host h's network, with the cluster key unless `keyless`.
  static std::unique_ptr<lnet::RpcClient> Raw(const Host& h, const std::string& nid,
                                              const std::string& uuid, bool keyless = false) {
    auto n = lnet::Nid::Parse(nid);
    EXPECT_TRUE(n.ok()) << nid;
    lnet::ClientOptions o;
    o.client_uuid = uuid;
    o.fsname = kFsname;
    o.retry_deadline_ms = 10'000;
    if (!keyless) o.keys = *lnet::LoadKeyRing({h.Key()});
    return std::make_unique<lnet::RpcClient>(*n, o);
  }

  static std::string OssNid(lnet::RpcClient& mds, uint32_t ost) {
    proto::GetConfigRequest req;
    proto::FsConfig cfg;
    Status st = mds.Call(proto::OP_MGS_GET_CONFIG, req, &cfg);
    EXPECT_TRUE(st.ok()) << st.ToString();
    for (const proto::OstInfo& o : cfg.osts()) {
      if (o.index() == ost) return o.nid();
    }
    ADD_FAILURE() << "no OST " << ost;
    return "";
  }

  static inline std::string skip_;
  static inline std::string dir_;
  static inline std::string switch_ns_;
  static inline std::map<std::string, Host> hosts_;
  static inline std::vector<pid_t> daemons_;
  static inline std::vector<std::string> mounted_;
  static inline pid_t watchdog_pid_ = -1;
  static inline int watchdog_fd_ = -1;
};

TEST_F(MultiHostTest, ClientsShareFilesAcrossHosts) {
  const Host& c1 = H("client1");
  const Host& c2 = H("client2");
  // Each mount shows in /proc/mounts as the docs say.
  const std::string mounts = ReadText("/proc/mounts");
  EXPECT_NE(mounts.find(std::string(kDevice) + " " + c1.Mnt() + " fuse.stria "), std::string::npos)
      << mounts;
  EXPECT_NE(mounts.find(std::string(kDevice) + " " + c2.Mnt() + " fuse.stria "), std::string::npos);
  // The OSTs registered the addresses of their hosts.
  CommandResult dl = RunCommand(c1.In({BinPath("lctl"), "--key-file", c1.Key(), "--mgs", kMgsNid,
                                       "dl", "-t"}));
  EXPECT_NE(dl.out.find(H("oss1").addr + "@tcp"), std::string::npos) << dl.out << dl.err;
  EXPECT_NE(dl.out.find(H("oss2").addr + "@tcp"), std::string::npos) << dl.out;

  const auto data = Pattern((5 << 20) + 7, 12);
  ASSERT_EQ(WriteFile(c1.Mnt() + "/shared/from-client1", data, 1 << 20, true), 0);
  CommandResult gs = RunCommand(c2.In({BinPath("lfs"), "--key-file", c2.Key(), "getstripe", "-c",
                                       c2.Mnt() + "/shared/from-client1"}));
  EXPECT_EQ(gs.out, "2\n") << gs.err;
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(c2.Mnt() + "/shared/from-client1", &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1) << "client2 read other bytes than client1 wrote";

  const auto back = Pattern(300'001, 13);
  ASSERT_EQ(WriteFile(c2.Mnt() + "/shared/from-client2", back, 65536, false), 0);
  ASSERT_EQ(ReadFile(c1.Mnt() + "/shared/from-client2", &got), 0);
  EXPECT_EQ(FirstDiff(got, back), -1) << "client1 read other bytes than client2 wrote";
}

TEST_F(MultiHostTest, HostWithoutTheKeyIsRefusedAndServersKeepServing) {
  const Host& rogue = H("rogue");
  const std::string mds_log = H("mds").Log("stria-mds");
  const std::string oss_log = H("oss1").Log("stria-oss");
  const int mds_before = CountLines(mds_log, "authentication failed");
  const int oss_before = CountLines(oss_log, "authentication failed");

  // No key at all: mount(8)'s "mount failure".
  CommandResult r = Mount(rogue);
  EXPECT_EQ(r.exit_code, 32) << r.out << r.err;
  EXPECT_NE(r.err.find(std::string("MGS ") + kMgsNid + " refused us: EACCES: authentication failed"),
            std::string::npos)
      << r.err;
  // Another key.
  WriteText(rogue.Conf(), "[client]\nconnect_timeout = 5\nkey_file = \"" + rogue.root +
                              "/etc/stria/other.key\"\n");
  r = Mount(rogue);
  EXPECT_EQ(r.exit_code, 32) << r.out << r.err;
  EXPECT_NE(r.err.find("authentication failed"), std::string::npos) << r.err;
  EXPECT_EQ(ReadText("/proc/mounts").find(rogue.Mnt()), std::string::npos);
  EXPECT_GE(CountLines(mds_log, "authentication failed") - mds_before, 2) << ReadText(mds_log);

  // An OSS is no more open than the MDS: a keyless peer gets nothing, not even a ping.
  auto mds = InNetns(H("client1").ns, [&] { return Raw(H("client1"), kMgsNid, "mh-admin"); });
  const std::string oss_nid = InNetns(H("client1").ns, [&] { return OssNid(*mds, 0); });
  Status ping = InNetns(rogue.ns, [&] {
    auto oss = Raw(rogue, oss_nid, "mh-rogue", /*keyless=*/true);
    proto::Ping p, rep;
    p.set_payload("hello");
    return oss->Call(proto::OP_PING, p, &rep);
  });
  EXPECT_EQ(ping.code(), Code::kAccess) << ping.ToString();
  EXPECT_NE(ping.message().find("authentication failed"), std::string::npos) << ping.ToString();
  EXPECT_EQ(CountLines(oss_log, "authentication failed") - oss_before, 1) << ReadText(oss_log);

  // Everyone with the key is still served.
  const auto data = Pattern(100'000, 21);
  ASSERT_EQ(WriteFile(H("client2").Mnt() + "/shared/after-refusals", data), 0);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(H("client1").Mnt() + "/shared/after-refusals", &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);
}

TEST_F(MultiHostTest, RootIsSquashedOutsideNosquashNids) {
  const Host& c1 = H("client1");
  const Host& c2 = H("client2");
  struct stat st {};
  // This process is root. client1 is in nosquash_nids: root stays root.
  ASSERT_EQ(WriteFile(c1.Mnt() + "/shared/root-on-client1", Pattern(10, 1)), 0);
  ASSERT_EQ(stat((c1.Mnt() + "/shared/root-on-client1").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  // client2 is not: root's file belongs to 65534, and root may not write root's 0755 root.
  ASSERT_EQ(WriteFile(c2.Mnt() + "/shared/root-on-client2", Pattern(10, 2)), 0);
  ASSERT_EQ(stat((c2.Mnt() + "/shared/root-on-client2").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kSquashUid);
  EXPECT_EQ(st.st_gid, kSquashUid);
  EXPECT_NE(mkdir((c2.Mnt() + "/not-for-squashed-root").c_str(), 0755), 0);
  EXPECT_EQ(errno, EACCES);
  EXPECT_EQ(mkdir((c1.Mnt() + "/for-real-root").c_str(), 0755), 0) << strerror(errno);

  // A client with the key that forges root in a raw request is squashed too.
  auto rep = InNetns(c2.ns, [&] {
    auto mds = Raw(c2, kMgsNid, "mh-forger");
    proto::LookupRequest lk;
    lk.set_parent(1);
    lk.set_name("shared");
    proto::EntryReply dir;
    Status s = mds->Call(proto::OP_MDS_LOOKUP, lk, &dir);
    EXPECT_TRUE(s.ok()) << s.ToString();
    proto::CreateRequest req;
    req.mutable_cred()->set_uid(0);
    req.mutable_cred()->set_gid(0);
    req.set_parent(dir.attr().ino());
    req.set_name("forged-root");
    req.set_mode(S_IFREG | 0644);
    proto::EntryReply out;
    s = mds->Call(proto::OP_MDS_CREATE, req, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  });
  EXPECT_EQ(rep.attr().uid(), kSquashUid);
  ASSERT_EQ(stat((c1.Mnt() + "/shared/forged-root").c_str(), &st), 0) << strerror(errno);
  EXPECT_EQ(st.st_uid, kSquashUid);
}

TEST_F(MultiHostTest, OssRefusesObjectIoWithoutAValidCapability) {
  const Host& c1 = H("client1");
  struct Outcome {
    Status genuine_write, none, made_up, expired, genuine_read;
    std::string bytes;
  };
  // The genuine capability key, as the MDS host holds it: used here only to sign an expired
  // but otherwise genuine capability.
  auto capa_keys = lnet::LoadKeyRing({H("mds").root + "/etc/stria/capa.key"});
  ASSERT_TRUE(capa_keys.ok()) << capa_keys.status().ToString();
  const Outcome o = InNetns(c1.ns, [&] {
    Outcome out;
    const std::string uuid = "mh-capa-client";
    auto mds = Raw(c1, kMgsNid, uuid);
    proto::CreateRequest req;
    req.set_parent(1);
    req.set_name("capa-file");
    req.set_mode(S_IFREG | 0644);
    req.set_open(true);
    proto::EntryReply e;
    Status s = mds->Call(proto::OP_MDS_CREATE, req, &e);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(e.has_capa());
    if (!s.ok() || e.layout().objects_size() == 0 || e.capa().objects_size() == 0) return out;
    proto::ObjectId obj;
    obj.set_ost_idx(e.layout().objects(0).ost_idx());
    obj.set_object_id(e.layout().objects(0).object_id());
    obj.set_group(e.layout().objects(0).group());
    auto oss = Raw(c1, OssNid(*mds, obj.ost_idx()), uuid);
    proto::Capability genuine;
    genuine.set_ino(e.capa().ino());
    genuine.set_ops(e.capa().ops());
    genuine.set_expiry_ms(e.capa().expiry_ms());
    genuine.set_mac(e.capa().objects(0).mac());

    const std::string payload = "object bytes behind a capability";
    auto write = [&](const proto::Capability* capa) {
      proto::OstIoRequest w;
      *w.mutable_object() = obj;
      w.set_length(payload.size());
      if (capa) *w.mutable_capa() = *capa;
      iovec iov{const_cast<char*>(payload.data()), payload.size()};
      lnet::CallBulk bulk;
      bulk.out = std::span<const iovec>(&iov, 1);
      proto::OstIoReply rep;
      return oss->Call(proto::OP_OST_WRITE, w, &rep, bulk);
    };
    auto read = [&](const proto::Capability* capa, std::string* bytes) {
      proto::OstIoRequest r;
      *r.mutable_object() = obj;
      r.set_length(4096);
      if (capa) *r.mutable_capa() = *capa;
      std::string buf(4096, '\0');
      size_t got = 0;
      lnet::CallBulk bulk;
      bulk.in = std::span<uint8_t>(reinterpret_cast<uint8_t*>(buf.data()), buf.size());
      bulk.in_len = &got;
      proto::OstIoReply rep;
      Status st = oss->Call(proto::OP_OST_READ, r, &rep, bulk);
      if (bytes) *bytes = buf.substr(0, got);
      return st;
    };
    out.genuine_write = write(&genuine);
    out.none = read(nullptr, nullptr);
    proto::Capability made_up = genuine;
    std::mt19937_64 rng(99);
    std::string mac(16, '\0');
    for (char& c : mac) c = static_cast<char>(rng());
    made_up.set_mac(mac);
    out.made_up = read(&made_up, nullptr);
    // Signed with the real capability key, for this object and client, but expired.
    lnet::CapaSigner signer(*capa_keys, /*lifetime_ms=*/-60'000);
    proto::CapaGrant old;
    signer.Grant(uuid, e.attr().ino(), proto::CAPA_READ, e.layout(), &old);
    proto::Capability expired;
    expired.set_ino(old.ino());
    expired.set_ops(old.ops());
    expired.set_expiry_ms(old.expiry_ms());
    expired.set_mac(old.objects(0).mac());
    out.expired = read(&expired, nullptr);
    out.genuine_read = read(&genuine, &out.bytes);
    return out;
  });
  ASSERT_TRUE(o.genuine_write.ok()) << o.genuine_write.ToString();
  EXPECT_EQ(o.none.code(), Code::kAccess) << o.none.ToString();
  EXPECT_NE(o.none.message().find("capability refused"), std::string::npos) << o.none.ToString();
  EXPECT_EQ(o.made_up.code(), Code::kAccess) << o.made_up.ToString();
  EXPECT_NE(o.made_up.message().find("capability refused"), std::string::npos)
      << o.made_up.ToString();
  EXPECT_EQ(o.expired.code(), Code::kCapaExpired) << o.expired.ToString();
  ASSERT_TRUE(o.genuine_read.ok()) << o.genuine_read.ToString();
  EXPECT_EQ(o.bytes, "object bytes behind a capability");
}

}  // namespace
}  // namespace stria::testing
