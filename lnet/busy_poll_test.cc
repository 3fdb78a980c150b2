// Busy polling over real sockets: small exchanges spin for their replies, big ones and a
// zero budget do not, and a place whose waits keep outlasting the budget stops spinning.
#include "lnet/busy_poll.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <vector>

#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "proto/stria.pb.h"

namespace stria::lnet {
namespace {

class BusyPollTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = BusyPollUs();
    ServerOptions opts;
    opts.name = "busy-poll-test";
    opts.fsname = "testfs";
    opts.worker_threads = 2;
    server_ = std::make_unique<RpcServer>(opts);
    server_->Register<proto::OstIoRequest, proto::OstIoReply>(
        proto::OP_OST_READ,
        [](RpcContext& ctx, const proto::OstIoRequest& req, proto::OstIoReply* rep) {
          ctx.bulk_out = Buffer(req.length());
          rep->set_length(req.length());
          return Status::Ok();
        });
    Nid nid;
    nid.addr = "127.0.0.1";
    nid.port = 0;  // any free port
    ASSERT_TRUE(server_->Start(nid).ok());
    nid.port = server_->port();
    ClientOptions co;
    co.fsname = "testfs";
    co.max_connections = 1;
    client_ = std::make_unique<RpcClient>(nid, co);
  }
  void TearDown() override { SetBusyPollUs(saved_); }

  Status Ping() {
    proto::Ping req, rep;
    req.set_payload("x");
    return client_->Call(proto::OP_PING, req, &rep);
  }
  Status Read(size_t len) {
    std::vector<uint8_t> buf(len);
    proto::OstIoRequest req;
    req.set_length(len);
    proto::OstIoReply rep;
    CallBulk in;
    in.in = buf;
    return client_->Call(proto::OP_OST_READ, req, &rep, in);
  }
  static uint64_t Spins() {
    BusyPollStats s = GetBusyPollStats();
    return s.hits + s.misses;
  }

  int saved_ = 0;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<RpcClient> client_;
};

TEST_F(BusyPollTest, SmallExchangesSpinForTheirReplies) {
  SetBusyPollUs(kMaxBusyPollUs);  // long enough for a loaded test host
  ASSERT_TRUE(Ping().ok());       // connects
  const BusyPollStats before = GetBusyPollStats();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Ping().ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Read(4096).ok());
  const BusyPollStats after = GetBusyPollStats();
  EXPECT_EQ(after.hits + after.misses - before.hits - before.misses, 25u);
  EXPECT_GE(after.hits - before.hits, 20u) << "replies within 10 ms are found spinning";
}

TEST_F(BusyPollTest, BigExchangesAndAZeroBudgetSleep) {
  SetBusyPollUs(kMaxBusyPollUs);
  ASSERT_TRUE(Ping().ok());
  uint64_t before = Spins();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Read(1 << 20).ok());
  EXPECT_EQ(Spins(), before) << "a MiB of bulk waits asleep";
  SetBusyPollUs(0);
  EXPECT_EQ(BusyPollUs(), 0);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Ping().ok());
  EXPECT_EQ(Spins(), before) << "busy_poll_us 0 never spins";
  SetBusyPollUs(kMaxBusyPollUs + 1);
  EXPECT_EQ(BusyPollUs(), kMaxBusyPollUs);
}

TEST(BusyPollerTest, AMissStreakSpinsOnlyNowAndThenUntilAHit) {
  const int saved = BusyPollUs();
  SetBusyPollUs(200);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  BusyPoller p;
  for (int i = 0; i < BusyPoller::kMissStreak; ++i) EXPECT_FALSE(p.SpinForFd(sv[0], POLLIN));
  // In the streak: kMissStreak - 1 waits do not spin, then one probes.
  uint64_t misses = GetBusyPollStats().misses;
  for (int i = 0; i < BusyPoller::kMissStreak - 1; ++i) {
    EXPECT_FALSE(p.SpinForFd(sv[0], POLLIN));
  }
  EXPECT_EQ(GetBusyPollStats().misses, misses);
  EXPECT_FALSE(p.SpinForFd(sv[0], POLLIN));
  EXPECT_EQ(GetBusyPollStats().misses, misses + 1) << "the probe spun";
  // Data arrives: the next probe finds it and the streak ends.
  ASSERT_EQ(write(sv[1], "x", 1), 1);
  bool hit = false;
  for (int i = 0; i < BusyPoller::kMissStreak && !hit; ++i) hit = p.SpinForFd(sv[0], POLLIN);
  EXPECT_TRUE(hit);
  EXPECT_TRUE(p.SpinForFd(sv[0], POLLIN)) << "after a hit every wait spins again";
  {
    // With another thread waiting for a reply too, nobody spins, ready or not.
    ReplyWaitScope mine, another;
    const BusyPollStats before = GetBusyPollStats();
    EXPECT_FALSE(p.SpinForFd(sv[0], POLLIN));
    const BusyPollStats after = GetBusyPollStats();
    EXPECT_EQ(after.hits + after.misses, before.hits + before.misses);
  }
  ReplyWaitScope alone;
  EXPECT_TRUE(p.SpinForFd(sv[0], POLLIN));
  close(sv[0]);
  close(sv[1]);
  SetBusyPollUs(saved);
}

}  // namespace
}  // namespace stria::lnet
