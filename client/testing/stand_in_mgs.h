// StandInMgs: a real RpcServer standing in for the MGS/MDS in client tests that need an MDS
// answering otherwise than this one does (an MDS from before a protocol change, a broken
// one, one that holds requests back). It serves OP_MGS_GET_CONFIG for filesystem "testfs",
// so a real Client connects; the test registers the MDS operations it answers on server()
// before Start(). Header-only; link stria::client. Thread-safety: as lnet::RpcServer.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "client/client.h"
#include "lnet/rpc_server.h"
#include "proto/stria.pb.h"

namespace stria::client::testing {

class StandInMgs {
 public:
  explicit StandInMgs(int worker_threads) {
    lnet::ServerOptions so;
    so.name = "stand-in-mds";
    so.fsname = "testfs";
    so.worker_threads = worker_threads;
    server_ = std::make_unique<lnet::RpcServer>(so);
    server_->Register<proto::GetConfigRequest, proto::FsConfig>(
        proto::OP_MGS_GET_CONFIG,
        [](lnet::RpcContext&, const proto::GetConfigRequest&, proto::FsConfig* rep) {
          rep->set_fsname("testfs");
          return Status::Ok();
        });
  }
  ~StandInMgs() { server_->Stop(); }

  lnet::RpcServer& server() { return *server_; }
  void Start() {
    Status st = server_->Start(lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", 0});
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  // A Client of it (null on failure, with the test failed); calls resend for at most
  // retry_deadline_ms.
  std::unique_ptr<Client> Connect(int retry_deadline_ms) {
    ClientConfig c;
    c.mgs_nids = {lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", server_->port()}};
    c.fsname = "testfs";
    c.rpc.retry_deadline_ms = retry_deadline_ms;
    auto client = Client::Connect(std::move(c));
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }

 private:
  std::unique_ptr<lnet::RpcServer> server_;
};

}  // namespace stria::client::testing
