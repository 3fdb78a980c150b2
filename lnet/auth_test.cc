// Cluster key files and the CONNECT challenge-response, over real loopback sockets.
#include "lnet/auth.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "proto/stria.pb.h"

namespace stria::lnet {
namespace {

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stria-auth-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (server_) server_->Stop();
    std::filesystem::remove_all(dir_);
  }

  std::string NewKey(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    Status st = WriteNewKeyFile(path, false);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return path;
  }
  std::shared_ptr<const KeyRing> Ring(const std::vector<std::string>& paths) {
    auto r = LoadKeyRing(paths);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : nullptr;
  }

  // A server answering OP_PING, with `keys` (null: none); counts the requests it served.
  void StartServer(std::shared_ptr<const KeyRing> keys) {
    ServerOptions opts;
    opts.name = "auth-test";
    opts.fsname = "testfs";
    opts.server_uuid = "testfs-MDT0000_UUID";
    opts.role = "mds";
    opts.worker_threads = 2;
    opts.keys = std::move(keys);
    server_ = std::make_unique<RpcServer>(opts);
    server_->Register<proto::StatfsRequest, proto::StatfsReply>(
        proto::OP_MDS_STATFS, [this](RpcContext&, const proto::StatfsRequest&,
                                     proto::StatfsReply*) {
          served_++;
          return Status::Ok();
        });
    Status st = server_->Start(*Nid::Parse("127.0.0.1@tcp:0"));
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  Status Call(std::shared_ptr<const KeyRing> keys) {
    ClientOptions opts;
    opts.fsname = "testfs";
    opts.keys = std::move(keys);
    opts.retry_deadline_ms = 2'000;
    RpcClient client(*Nid::Parse("127.0.0.1@tcp:" + std::to_string(server_->port())), opts);
    proto::StatfsRequest req;
    proto::StatfsReply rep;
    return client.Call(proto::OP_MDS_STATFS, req, &rep);
  }

  std::string dir_;
  std::unique_ptr<RpcServer> server_;
  std::atomic<int> served_{0};
};

TEST_F(AuthTest, KeyFileIsPrivateHexAndNotOverwritten) {
  const std::string path = NewKey("k");
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(path);
  std::string text;
  in >> text;
  EXPECT_EQ(text.size(), 2 * kKeySize);
  EXPECT_EQ(text.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(WriteNewKeyFile(path, false).code(), Code::kExist);
  ASSERT_TRUE(WriteNewKeyFile(path, true).ok());
  std::ifstream again(path);
  std::string text2;
  again >> text2;
  EXPECT_NE(text, text2);
  ASSERT_NE(Ring({path}), nullptr);
}

TEST_F(AuthTest, BadKeyFilesAreRefused) {
  const std::string open = NewKey("open");
  chmod(open.c_str(), 0644);
  EXPECT_EQ(LoadKeyRing({open}).status().code(), Code::kAccess);
  const std::string bad = dir_ + "/bad";
  std::ofstream(bad) << "not a key\n";
  chmod(bad.c_str(), 0600);
  EXPECT_EQ(LoadKeyRing({bad}).status().code(), Code::kInval);
  EXPECT_EQ(LoadKeyRing({dir_ + "/missing"}).status().code(), Code::kNoEnt);
}

TEST_F(AuthTest, SameKeyIsServed) {
  const std::string k = NewKey("k");
  StartServer(Ring({k}));
  EXPECT_TRUE(Call(Ring({k})).ok());
  EXPECT_EQ(served_.load(), 1);
}

TEST_F(AuthTest, NoKeyOrWrongKeyIsRefusedAndNothingServed) {
  StartServer(Ring({NewKey("k")}));
  Status none = Call(nullptr);
  EXPECT_EQ(none.code(), Code::kAccess) << none.ToString();
  EXPECT_NE(none.message().find("authentication failed"), std::string::npos);
  Status wrong = Call(Ring({NewKey("other")}));
  EXPECT_EQ(wrong.code(), Code::kAccess) << wrong.ToString();
  EXPECT_NE(wrong.message().find("wrong cluster key"), std::string::npos) << wrong.ToString();
  EXPECT_EQ(served_.load(), 0);
}

TEST_F(AuthTest, KeyedClientRefusesAServerWithoutTheKey) {
  StartServer(nullptr);
  Status st = Call(Ring({NewKey("k")}));
  EXPECT_EQ(st.code(), Code::kAccess) << st.ToString();
  EXPECT_NE(st.message().find("offered no challenge"), std::string::npos) << st.ToString();
  EXPECT_EQ(served_.load(), 0);
  EXPECT_TRUE(Call(nullptr).ok());  // a test cluster: no key anywhere
}

TEST_F(AuthTest, RotationAcceptsBothKeysAndProvesWithTheOneThatMatched) {
  const std::string old_key = NewKey("old"), new_key = NewKey("new");
  StartServer(Ring({new_key, old_key}));  // new primary, old still accepted
  EXPECT_TRUE(Call(Ring({old_key})).ok());  // a client not yet given the new key
  EXPECT_TRUE(Call(Ring({new_key})).ok());
  EXPECT_EQ(served_.load(), 2);
}

TEST_F(AuthTest, ProofCoversEveryField) {
  const Key key{1, 2, 3};
  HandshakeIds ids{"nc", "ns", "client", "uuid", "mds", "suuid", "fs"};
  const std::string base = Transcript("client", ids);
  EXPECT_NE(Transcript("server", ids), base);
  const Mac mac = Hmac(key, base);
  for (std::string HandshakeIds::*f :
       {&HandshakeIds::client_nonce, &HandshakeIds::server_nonce, &HandshakeIds::client_role,
        &HandshakeIds::client_uuid, &HandshakeIds::server_role, &HandshakeIds::server_uuid,
        &HandshakeIds::fsname}) {
    HandshakeIds changed = ids;
    changed.*f += "x";
    EXPECT_FALSE(ConstantTimeEqual(Hmac(key, Transcript("client", changed)), mac));
  }
  // Field boundaries are part of the bytes: "nc"+"ns" differs from "ncn"+"s".
  HandshakeIds shifted = ids;
  shifted.client_nonce = "ncn";
  shifted.server_nonce = "s";
  EXPECT_NE(Transcript("client", shifted), base);
}

}  // namespace
}  // namespace stria::lnet
