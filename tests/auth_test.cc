// Authentication and root squash against real daemons and a real mount (docs/security.md).
//
// One cluster with a cluster key: the mount (given the key) reads and writes; a client without the
// key, and one with another key, are refused with kAccess "authentication failed" while the
// MDS logs exactly one line per refused connection and keeps serving the mount; a mount
// with the wrong key fails; lctl with and without the key; the C API through the Python
// package with key_file= and without. Root squash through a mount: a cluster whose MDS
// squashes root (--root-squash), then one that keeps root for the NIDs in --nosquash-nids.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/native.h"
#include "lnet/auth.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::vector<uint8_t> bytes;
  if (ReadFile(path, &bytes) != 0) return "";
  return std::string(bytes.begin(), bytes.end());
}

// Lines of `log` containing `needle`.
int CountLines(const std::string& log, const std::string& needle) {
  std::istringstream in(ReadAll(log));
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

class AuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("STRIA_KEY_FILE");  // the tests choose every key explicitly
    ClusterOptions o;
    o.tag = "auth";
    o.fsname = "authfs";
    o.num_oss = 1;
    o.osts_per_oss = 2;
    o.num_mounts = 2;
    o.cluster_key = true;
    cluster_ = new Cluster(o);
    Status st = cluster_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    wrong_key_ = cluster_->dir() + "/wrong.key";
    ASSERT_TRUE(lnet::WriteNewKeyFile(wrong_key_, false).ok());
  }
  static void TearDownTestSuite() { delete cluster_; }

  static Result<std::unique_ptr<client::NativeFs>> Connect(const std::string& key_file) {
    client::NativeOptions o;
    o.key_file = key_file;
    o.timeout_ms = 5'000;
    o.start_session = false;
    return client::NativeFs::Connect(cluster_->device(), o);
  }

  static Cluster* cluster_;
  static std::string wrong_key_;
};
Cluster* AuthTest::cluster_ = nullptr;
std::string AuthTest::wrong_key_;

TEST_F(AuthTest, MountWithTheKeyWorks) {
  const std::string path = cluster_->mount_point(0) + "/by-root";
  {
    std::ofstream out(path);
    out << "written through an authenticated mount";
    ASSERT_TRUE(out.good());
  }
  EXPECT_EQ(ReadAll(path), "written through an authenticated mount");
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0) << strerror(errno);
  EXPECT_EQ(st.st_size, 38);
  EXPECT_EQ(st.st_uid, 0u);
  // And a libstria client with the key sees it too.
  auto fs = Connect(cluster_->key_file());
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  auto attr = (*fs)->Stat("/by-root");
  ASSERT_TRUE(attr.ok()) << attr.status().ToString();
  EXPECT_EQ(attr->size(), 38u);
}

TEST_F(AuthTest, ClientWithoutTheKeyIsRefusedWithOneLogLine) {
  const std::string log = cluster_->mds_log();
  const int before = CountLines(log, "authentication failed");
  auto fs = Connect(/*key_file=*/"");  // no $STRIA_KEY_FILE, no /etc/stria/stria.key here
  ASSERT_FALSE(fs.ok());
  EXPECT_EQ(fs.status().code(), Code::kAccess) << fs.status().ToString();
  EXPECT_NE(fs.status().message().find("authentication failed"), std::string::npos)
      << fs.status().ToString();
  EXPECT_EQ(CountLines(log, "authentication failed") - before, 1) << ReadAll(log);
  EXPECT_EQ(CountLines(log, "presented no cluster key"), 1);
  // The MDS keeps serving the authenticated mount.
  struct stat st{};
  EXPECT_EQ(stat(cluster_->mount_point(0).c_str(), &st), 0);
  const std::string path = cluster_->mount_point(0) + "/after-refusal";
  std::ofstream(path) << "still served";
  EXPECT_EQ(ReadAll(path), "still served");
}

TEST_F(AuthTest, ClientWithAnotherKeyIsRefused) {
  const std::string log = cluster_->mds_log();
  const int before = CountLines(log, "wrong cluster key");
  auto fs = Connect(wrong_key_);
  ASSERT_FALSE(fs.ok());
  EXPECT_EQ(fs.status().code(), Code::kAccess) << fs.status().ToString();
  EXPECT_NE(fs.status().message().find("authentication failed"), std::string::npos);
  EXPECT_EQ(CountLines(log, "wrong cluster key") - before, 1) << ReadAll(log);
}

TEST_F(AuthTest, OssRefusesAClientWithoutTheKey) {
  // Straight to an OSS, bypassing the MGS: its NID from the keyed client's configuration.
  auto keyed = ConnectClient(*cluster_);
  ASSERT_TRUE(keyed.ok()) << keyed.status().ToString();
  auto cfg = (*keyed)->GetConfig();
  ASSERT_TRUE(cfg.ok());
  ASSERT_GT(cfg->osts_size(), 0);
  auto nid = lnet::Nid::Parse(cfg->osts(0).nid());
  ASSERT_TRUE(nid.ok());
  lnet::ClientOptions opts;
  opts.retry_deadline_ms = 3'000;
  lnet::RpcClient plain(*nid, opts);
  proto::OstStatfsRequest req;
  req.set_ost_idx(cfg->osts(0).index());
  proto::OstStatfsReply rep;
  Status st = plain.Call(proto::OP_OST_STATFS, req, &rep);
  EXPECT_EQ(st.code(), Code::kAccess) << st.ToString();
  EXPECT_GE(CountLines(cluster_->oss_log(0), "authentication failed"), 1);
  // The same request with the key is served.
  auto keys = lnet::LoadKeyRing({cluster_->key_file()});
  ASSERT_TRUE(keys.ok());
  opts.keys = *keys;
  lnet::RpcClient keyed_rpc(*nid, opts);
  EXPECT_TRUE(keyed_rpc.Call(proto::OP_OST_STATFS, req, &rep).ok());
}

TEST_F(AuthTest, MountWithTheWrongKeyFails) {
  Status st = cluster_->Mount(1, {"key_file=" + wrong_key_, "connect_timeout=3"});
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(cluster_->Mounted(1));
  EXPECT_NE(ReadAll(cluster_->fuse_log(1)).find("authentication failed"), std::string::npos)
      << ReadAll(cluster_->fuse_log(1));
}

TEST_F(AuthTest, LctlNeedsTheKey) {
  CommandResult with = RunCommand({BinPath("lctl"), "--key-file", cluster_->key_file(), "--mgs",
                                   cluster_->mgs_nid(), "dl"});
  EXPECT_EQ(with.exit_code, 0) << with.err;
  EXPECT_NE(with.out.find("authfs-OST0000"), std::string::npos) << with.out;
  CommandResult without = RunCommand({BinPath("lctl"), "--mgs", cluster_->mgs_nid(), "dl"});
  EXPECT_NE(without.exit_code, 0);
  EXPECT_NE(without.err.find("authentication failed"), std::string::npos) << without.err;
}

TEST_F(AuthTest, LctlKeygenRefusesToOverwrite) {
  const std::string path = cluster_->dir() + "/keygen.key";
  CommandResult first = RunCommand({BinPath("lctl"), "keygen", path});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string key = ReadAll(path);
  EXPECT_EQ(key.size(), 65u);  // 64 hex digits and a newline
  CommandResult again = RunCommand({BinPath("lctl"), "keygen", path});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_EQ(ReadAll(path), key);
  CommandResult forced = RunCommand({BinPath("lctl"), "keygen", "--force", path});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(ReadAll(path), key);
}

#if defined(STRIA_PYTHON) && defined(STRIA_LIBRARY_PATH)
// The C API (stria_connect_opts.key_file) through the Python package.
TEST_F(AuthTest, PythonAndCApiConnectWithAKeyFile) {
  const std::string script =
      "import sys, stria\n"
      "fs = stria.connect(sys.argv[1], key_file=sys.argv[2], timeout=5)\n"
      "fs.write_bytes('/by-root-py', b'python')\n"
      "print(fs.read_bytes('/by-root-py').decode())\n"
      "try:\n"
      "    stria.connect(sys.argv[1], key_file=sys.argv[3], timeout=5)\n"
      "    print('wrong key accepted')\n"
      "except PermissionError as e:\n"
      "    print('refused:', e)\n";
  CommandResult r = RunCommand({"/usr/bin/env", "STRIA_LIBRARY=" STRIA_LIBRARY_PATH,
                                "PYTHONPATH=" STRIA_PYTHON_DIR, STRIA_PYTHON, "-c", script,
                                cluster_->device(), cluster_->key_file(), wrong_key_});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("python\n", 0), 0u) << r.out << r.err;  // the bytes written and read back
  EXPECT_NE(r.out.find("refused:"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("authentication failed"), std::string::npos) << r.out << r.err;
}
#endif

// Root squash through a real mount: root's files belong to the squash ids and root loses
// its powers (it cannot write in root's own 0755 directory); then, from a NID in
// --nosquash-nids, root stays root.
TEST(RootSquashMountTest, RootIsSquashedUnlessItsNidIsListed) {
  ClusterOptions o;
  o.tag = "squash";
  o.fsname = "sqfs";
  o.num_oss = 1;
  o.osts_per_oss = 1;
  o.mds_args = {"--client-lease-ms", "2000"};
  Cluster c(o);
  Status st = c.Start();
  ASSERT_TRUE(st.ok()) << st.ToString();
  // Unsquashed root prepares a directory everyone may write in.
  const std::string pub = c.mount_point(0) + "/pub";
  ASSERT_EQ(mkdir(pub.c_str(), 0777), 0) << strerror(errno);
  ASSERT_EQ(chmod(pub.c_str(), 01777), 0) << strerror(errno);

  // The MDS restarts squashing root; the mount reconnects.
  ASSERT_TRUE(c.KillMds().ok());
  c.mutable_options().mds_args = {"--client-lease-ms", "2000", "--root-squash", "4243:4244"};
  ASSERT_TRUE(c.StartMds().ok());
  const std::string squashed = pub + "/by-squashed-root";
  {
    std::ofstream out(squashed);
    out << "x";
  }
  struct stat sb{};
  ASSERT_EQ(stat(squashed.c_str(), &sb), 0) << strerror(errno);
  EXPECT_EQ(sb.st_uid, 4243u);
  EXPECT_EQ(sb.st_gid, 4244u);
  // Squashed root may not create in root's 0755 directory (or chown what it does not own).
  const std::string denied = c.mount_point(0) + "/denied";
  EXPECT_NE(mkdir(denied.c_str(), 0755), 0);
  EXPECT_EQ(errno, EACCES);

  // From a listed NID (the mount's 127.0.0.1), root is root again.
  ASSERT_TRUE(c.KillMds().ok());
  c.mutable_options().mds_args = {"--client-lease-ms", "2000", "--root-squash", "4243:4244",
                                  "--nosquash-nids", "10.9.9.9@tcp 127.0.0.[1-3]@tcp"};
  ASSERT_TRUE(c.StartMds().ok());
  const std::string kept = pub + "/by-root";
  {
    std::ofstream out(kept);
    out << "x";
  }
  ASSERT_EQ(stat(kept.c_str(), &sb), 0) << strerror(errno);
  EXPECT_EQ(sb.st_uid, 0u);
  EXPECT_EQ(sb.st_gid, 0u);
  EXPECT_EQ(mkdir(denied.c_str(), 0755), 0) << strerror(errno);
}

}  // namespace
}  // namespace stria::testing
