// The LND seam on this host: tcp NIDs always resolve to TCP; an o2ib NID resolves to the
// RDMA LND only where a device exists, fails with the documented message where none does,
// and is carried by TCP only when the operator allowed it. The RPC tests at the end run real
// servers and clients through the seam.
#include "lnet/lnd.h"

#include <gtest/gtest.h>

#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "proto/stria.pb.h"

namespace stria::lnet {
namespace {

class LndTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = CurrentLndConfig(); }
  void TearDown() override { ConfigureLnds(saved_); }
  static void SetFallback(LndFallback f) {
    LndConfig c = CurrentLndConfig();
    c.fallback = f;
    ConfigureLnds(c);
  }
  LndConfig saved_;
};

TEST_F(LndTest, TcpNidsAlwaysUseTcp) {
  SetFallback(LndFallback::kNone);
  auto lnd = ResolveLnd(*Nid::Parse("127.0.0.1@tcp:1"));
  ASSERT_TRUE(lnd.ok());
  EXPECT_EQ(*lnd, Lnd::kTcp);
  EXPECT_EQ(LndName(Lnd::kTcp), "tcp");
  EXPECT_EQ(LndName(Lnd::kO2ib), "o2ib");
}

TEST_F(LndTest, ParsesTheFallbackOption) {
  EXPECT_EQ(*ParseLndFallback("tcp"), LndFallback::kTcp);
  EXPECT_EQ(*ParseLndFallback("none"), LndFallback::kNone);
  auto bad = ParseLndFallback("udp");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInval);
  EXPECT_NE(bad.status().message().find("tcp or none"), std::string::npos);
}

// Without a device an o2ib NID fails with one message that says why and what to do, and it
// is not retried. (On a host with a device it resolves to o2ib: the test checks both.)
TEST_F(LndTest, O2ibWithoutDeviceFailsClearlyUnlessFallbackAllowsTcp) {
  SetFallback(LndFallback::kNone);
  const Nid nid = *Nid::Parse("127.0.0.1@o2ib:9880");
  const std::string why = O2ibUnavailableReason();
  auto lnd = ResolveLnd(nid);
  if (why.empty()) {
    ASSERT_TRUE(lnd.ok());
    EXPECT_EQ(*lnd, Lnd::kO2ib);
    GTEST_SKIP() << "this host has an RDMA device: the no-device failure cannot happen here";
  }
  ASSERT_FALSE(lnd.ok());
  const Status& st = lnd.status();
  EXPECT_EQ(st.code(), Code::kNoDev);
  EXPECT_FALSE(st.retryable());
  if (O2ibBuilt()) {
    EXPECT_NE(st.message().find("o2ib: no RDMA device found (ibv_get_device_list"),
              std::string::npos)
        << st.message();
  }
  EXPECT_NE(st.message().find("127.0.0.1@o2ib:9880"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("use --lnet-fallback tcp"), std::string::npos) << st.message();

  SetFallback(LndFallback::kTcp);
  auto fallback = ResolveLnd(nid);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(*fallback, Lnd::kTcp);
}

// A real server and client given an o2ib NID on a host without a device: both refuse
// without the fallback (the client at once, not after its retry deadline), and with it the
// exchange runs over TCP.
TEST_F(LndTest, RpcOverO2ibNidFailsOrFallsBackToTcp) {
  if (O2ibUnavailableReason().empty()) GTEST_SKIP() << "this host has an RDMA device";
  SetFallback(LndFallback::kNone);
  Nid o2ib = *Nid::Parse("127.0.0.1@o2ib:0");
  {
    RpcServer server(ServerOptions{});
    Status st = server.Start(o2ib);
    EXPECT_EQ(st.code(), Code::kNoDev) << st.ToString();
  }
  RpcServer tcp_server(ServerOptions{});
  ASSERT_TRUE(tcp_server.Start(*Nid::Parse("127.0.0.1@tcp:0")).ok());
  o2ib.port = tcp_server.port();
  {
    ClientOptions co;
    co.retry_deadline_ms = 60'000;
    RpcClient client(o2ib, co);
    proto::Ping req, rep;
    req.set_payload("x");
    const auto start = std::chrono::steady_clock::now();
    Status st = client.Call(proto::OP_PING, req, &rep);
    EXPECT_EQ(st.code(), Code::kNoDev) << st.ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }

  SetFallback(LndFallback::kTcp);
  RpcServer server(ServerOptions{});
  Nid listen = *Nid::Parse("127.0.0.1@o2ib:0");
  ASSERT_TRUE(server.Start(listen).ok());
  listen.port = server.port();
  RpcClient client(listen, ClientOptions{});
  proto::Ping req, rep;
  req.set_payload("over tcp");
  ASSERT_TRUE(client.Call(proto::OP_PING, req, &rep).ok());
  EXPECT_EQ(rep.payload(), "over tcp");
  // The server's peer listing says which LND carries the connection.
  proto::PeersRequest preq;
  proto::PeersReply prep;
  ASSERT_TRUE(client.Call(proto::OP_LNET_PEERS, preq, &prep).ok());
  EXPECT_EQ(prep.lnd(), "tcp");
  EXPECT_NE(prep.listen_nid().find("@o2ib:"), std::string::npos) << prep.listen_nid();
  ASSERT_EQ(prep.connections_size(), 1);
  EXPECT_EQ(prep.connections(0).lnd(), "tcp");
  EXPECT_EQ(prep.connections(0).requests(), 3u);  // CONNECT, PING, PEERS
}

}  // namespace
}  // namespace stria::lnet
