// o2ib NIDs on a host without an RDMA device, with the real binaries.
//
// Without the operator's fallback every daemon and tool given an o2ib NID refuses at once
// with the one documented message ("o2ib: no RDMA device found (...) ...; use
// --lnet-fallback tcp ..."), and exits non-zero. With --lnet-fallback tcp (and
// lnet_fallback=tcp on the mount) a whole cluster named by o2ib NIDs serves over TCP:
// striped writes and reads with bulk through libstria and through the FUSE mount, and
// `lctl peers` shows the LND that carries each connection.
//
// On a host that has an RDMA device these checks do not apply (the o2ib LND carries the
// NIDs); the test says so and skips.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/client.h"
#include "lnet/lnd.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"

namespace stria::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDocumented = "o2ib: no RDMA device found (ibv_get_device_list";
constexpr const char* kAdvice = "use --lnet-fallback tcp to carry o2ib NIDs over TCP";

// The stderr lines that start with "<prog>: ".
std::vector<std::string> LinesOf(const std::string& err, const std::string& prog) {
  std::vector<std::string> out;
  std::istringstream in(err);
  std::string l;
  while (std::getline(in, l)) {
    if (l.rfind(prog + ": ", 0) == 0) out.push_back(l);
  }
  return out;
}

class O2ibFallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (lnet::O2ibUnavailableReason().empty()) {
      GTEST_SKIP() << "this host has an RDMA device: o2ib NIDs run on the o2ib LND here";
    }
    if (!lnet::O2ibBuilt()) {
      GTEST_SKIP() << "this build has no o2ib LND; the no-device message cannot be checked";
    }
    dir_ = fs::temp_directory_path() / ("stria-o2ib-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Runs argv (killed after 20 s); it must exit `want_exit` with exactly one line naming the
  // missing device and the option.
  void ExpectOneClearMessage(std::vector<std::string> argv, int want_exit) {
    const std::string prog = fs::path(argv[0]).filename().string();
    SCOPED_TRACE(prog);
    argv.insert(argv.begin(), {"/usr/bin/timeout", "-s", "KILL", "20"});
    CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, want_exit) << "stdout: " << r.out << "\nstderr: " << r.err;
    std::vector<std::string> lines = LinesOf(r.err, prog);
    if (prog == "lctl") lines = LinesOf(r.err, "failed to ping 127.0.0.1@o2ib:1");
    ASSERT_EQ(lines.size(), 1u) << "stderr:\n" << r.err;
    EXPECT_NE(lines[0].find(kDocumented), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find(kAdvice), std::string::npos) << lines[0];
  }

  fs::path dir_;
};

TEST_F(O2ibFallbackTest, EveryBinaryRefusesAnO2ibNidWithOneClearMessage) {
  fs::create_directories(dir_ / "mnt");
  ExpectOneClearMessage({BinPath("stria-mds"), "--fsname", "o2fs", "--data",
                         (dir_ / "mdt").string(), "--listen", "127.0.0.1@o2ib:0"},
                        1);
  ExpectOneClearMessage({BinPath("stria-oss"), "--mgs", "127.0.0.1@o2ib:1", "--ost",
                         "0:" + (dir_ / "ost0").string(), "--listen", "127.0.0.1@tcp:0"},
                        1);
  // A mount exits with mount(8)'s "mount failure".
  ExpectOneClearMessage(
      {BinPath("stria-fuse"), "127.0.0.1@o2ib:1:/o2fs", (dir_ / "mnt").string(), "-f"}, 32);
  ExpectOneClearMessage({BinPath("lctl"), "ping", "127.0.0.1@o2ib:1"}, ENODEV);
  // Nothing was formatted by the refused daemons.
  EXPECT_FALSE(fs::exists(dir_ / "mdt"));
  EXPECT_FALSE(fs::exists(dir_ / "ost0" / "meta"));
}

TEST_F(O2ibFallbackTest, ClusterNamedByO2ibNidsServesOverTcpWithTheFallback) {
  ClusterOptions o;
  o.tag = "o2ib-fallback";
  o.fsname = "o2fs";
  o.num_oss = 2;
  o.osts_per_oss = 1;
  o.net = "o2ib";
  o.mds_args = {"--lnet-fallback", "tcp"};
  o.oss_args = {"--lnet-fallback", "tcp"};
  o.fuse_options = {"lnet_fallback=tcp"};
  o.mount = true;
  // This process (the harness polls the MGS, libstria below) is a client of o2ib NIDs too.
  const lnet::LndConfig saved = lnet::CurrentLndConfig();
  lnet::LndConfig tcp = saved;
  tcp.fallback = lnet::LndFallback::kTcp;
  lnet::ConfigureLnds(tcp);
  Cluster cluster(o);
  Status st = cluster.Start();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_NE(cluster.mgs_nid().find("@o2ib:"), std::string::npos);

  // Without the fallback this process's libstria refuses the same NIDs.
  lnet::LndConfig none = saved;
  none.fallback = lnet::LndFallback::kNone;
  lnet::ConfigureLnds(none);
  auto refused = ConnectClient(cluster);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("no RDMA device found"), std::string::npos)
      << refused.status().ToString();
  lnet::ConfigureLnds(tcp);
  auto cl = ConnectClient(cluster);
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();

  // A file striped over both OSTs (each registered with an @o2ib NID): 3 MiB of bulk out
  // and back, checksummed on the wire.
  proto::CreateRequest req;
  *req.mutable_cred() = RootCred();
  req.set_parent(1);
  req.set_name("striped");
  req.set_mode(S_IFREG | 0644);
  *req.mutable_layout() = Raid0(2, 1 << 20);
  proto::EntryReply rep;
  ASSERT_TRUE((*cl)->MdsCall(proto::OP_MDS_CREATE, req, &rep).ok());
  std::vector<uint8_t> data(3 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 20));
  ASSERT_TRUE((*cl)->Write(rep.layout(), 0, data).ok());
  std::vector<uint8_t> back(data.size());
  auto n = (*cl)->Read(rep.layout(), data.size(), 0, back);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, data.size());
  EXPECT_TRUE(back == data);

  // Through the mount (stria-fuse given lnet_fallback=tcp).
  const std::string path = cluster.mount_point() + "/via-fuse";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), 1 << 20);
  }
  {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> got(1 << 20);
    in.read(got.data(), got.size());
    EXPECT_EQ(in.gcount(), 1 << 20);
    EXPECT_EQ(std::memcmp(got.data(), data.data(), got.size()), 0);
  }

  // The operator's view: the MGS's connections, each carried by tcp for an o2ib NID.
  CommandResult peers =
      RunCommand({BinPath("lctl"), "--lnet-fallback", "tcp", "peers", cluster.mgs_nid()});
  EXPECT_EQ(peers.exit_code, 0) << peers.err;
  EXPECT_NE(peers.out.find("nid: " + cluster.mgs_nid()), std::string::npos) << peers.out;
  EXPECT_NE(peers.out.find("lnd: tcp"), std::string::npos) << peers.out;
  EXPECT_EQ(peers.out.find("lnd: o2ib"), std::string::npos) << peers.out;
  CommandResult ping =
      RunCommand({BinPath("lctl"), "--lnet-fallback", "tcp", "ping", cluster.mgs_nid()});
  EXPECT_EQ(ping.exit_code, 0) << ping.err;
  EXPECT_NE(ping.out.find("12345-" + cluster.mgs_nid() + " lnd tcp (--lnet-fallback)"),
            std::string::npos)
      << ping.out;
  lnet::ConfigureLnds(saved);
}

}  // namespace
}  // namespace stria::testing
