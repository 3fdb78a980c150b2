// RpcServer and RpcClient over real loopback sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "common/crc32c.h"
#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "lnet/socket.h"
#include "proto/stria.pb.h"

namespace stria::lnet {
namespace {

Nid Loopback(uint16_t port) {
  Nid n;
  n.addr = "127.0.0.1";
  n.port = port;
  return n;
}

// A server that echoes a Ping, and for OP_OST_WRITE returns the crc of the request bulk,
// and for OP_OST_READ returns `length` bytes of a known pattern.
class RpcTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(0); }

  void StartServer(uint16_t port) {
    ServerOptions opts;
    opts.name = "test";
    opts.fsname = "testfs";
    opts.worker_threads = 4;
    opts.stall_timeout_ms = 1000;
    server_ = std::make_unique<RpcServer>(opts);
    server_->Register<proto::OstIoRequest, proto::OstIoReply>(
        proto::OP_OST_WRITE,
        [this](RpcContext& ctx, const proto::OstIoRequest& req, proto::OstIoReply* rep) {
          writes_++;
          if (req.length() != ctx.bulk_in.size()) return Status(Code::kInval, "length mismatch");
          rep->set_length(ctx.bulk_in.size());
          rep->set_object_size(Crc32c(ctx.bulk_in.data(), ctx.bulk_in.size()));
          return Status::Ok();
        });
    server_->Register<proto::OstIoRequest, proto::OstIoReply>(
        proto::OP_OST_READ,
        [](RpcContext& ctx, const proto::OstIoRequest& req, proto::OstIoReply* rep) {
          if (req.length() > (64u << 20)) return Status(Code::kInval, "too long");
          ctx.bulk_out = Buffer(req.length());
          for (size_t i = 0; i < req.length(); ++i) {
            ctx.bulk_out.data()[i] = static_cast<uint8_t>((req.offset() + i) * 7);
          }
          rep->set_length(req.length());
          return Status::Ok();
        });
    ASSERT_TRUE(server_->Start(Loopback(port)).ok());
    port_ = server_->port();
  }

  std::unique_ptr<RpcClient> NewClient(int retry_ms = 2000, std::string fsname = "testfs") {
    ClientOptions o;
    o.retry_deadline_ms = retry_ms;
    o.rpc_timeout_ms = 2000;
    o.fsname = std::move(fsname);
    return std::make_unique<RpcClient>(Loopback(port_), o);
  }

  std::unique_ptr<RpcServer> server_;
  uint16_t port_ = 0;
  std::atomic<int> writes_{0};
};

TEST_F(RpcTest, PingEchoes) {
  auto c = NewClient();
  proto::Ping req, rep;
  req.set_payload("abc");
  ASSERT_TRUE(c->Call(proto::OP_PING, req, &rep).ok());
  EXPECT_EQ(rep.payload(), "abc");
}

TEST_F(RpcTest, BulkBothWaysIsIntact) {
  auto c = NewClient();
  std::vector<uint8_t> data(3 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + 1);
  // Gathered from two iovecs.
  iovec iov[2] = {{data.data(), 1000}, {data.data() + 1000, data.size() - 1000}};
  proto::OstIoRequest req;
  req.set_length(data.size());
  proto::OstIoReply rep;
  CallBulk out;
  out.out = iov;
  ASSERT_TRUE(c->Call(proto::OP_OST_WRITE, req, &rep, out).ok());
  EXPECT_EQ(rep.object_size(), Crc32c(data.data(), data.size()));

  std::vector<uint8_t> got(1 << 20);
  size_t got_len = 0;
  req.set_offset(5);
  req.set_length(got.size() - 3);
  CallBulk in;
  in.in = got;
  in.in_len = &got_len;
  ASSERT_TRUE(c->Call(proto::OP_OST_READ, req, &rep, in).ok());
  ASSERT_EQ(got_len, got.size() - 3);
  for (size_t i = 0; i < got_len; ++i) ASSERT_EQ(got[i], static_cast<uint8_t>((5 + i) * 7));
}

TEST_F(RpcTest, HandlerErrorsArriveWithCodeAndMessage) {
  auto c = NewClient();
  proto::OstIoRequest req;
  req.set_length(10);  // but no bulk
  proto::OstIoReply rep;
  Status st = c->Call(proto::OP_OST_WRITE, req, &rep);
  EXPECT_EQ(st.code(), Code::kInval);
  EXPECT_EQ(st.message(), "length mismatch");
  st = c->Call(proto::OP_MDS_LOOKUP, req, &rep);
  EXPECT_EQ(st.code(), Code::kBadOpcode);
}

TEST_F(RpcTest, ReplyLargerThanBufferIsAnError) {
  auto c = NewClient();
  std::vector<uint8_t> small(100);
  proto::OstIoRequest req;
  req.set_length(1000);
  proto::OstIoReply rep;
  CallBulk in;
  in.in = small;
  EXPECT_EQ(c->Call(proto::OP_OST_READ, req, &rep, in).code(), Code::kProtocol);
}

TEST_F(RpcTest, WrongFilesystemIsRefused) {
  auto c = NewClient(2000, "otherfs");
  proto::Ping req, rep;
  Status st = c->Call(proto::OP_PING, req, &rep);
  EXPECT_EQ(st.code(), Code::kWrongFs);
}

TEST_F(RpcTest, ManyThreadsInParallel) {
  auto c = NewClient();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        proto::Ping req, rep;
        req.set_payload(std::to_string(t * 1000 + i));
        if (c->Call(proto::OP_PING, req, &rep).ok() && rep.payload() == req.payload()) ok++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 16 * 50);
}

// Raw connection helpers for hostile-input tests.
int RawConnect(uint16_t port) {
  Result<int> fd = TcpConnect(Loopback(port), 1000);
  EXPECT_TRUE(fd.ok());
  return fd.ok() ? *fd : -1;
}

bool PeerClosed(int fd) {
  char b[4096];
  for (int i = 0; i < 50; ++i) {
    ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n > 0) continue;  // drain what the server sent before closing
    if (n < 0 && errno != EAGAIN) return true;
    usleep(100 * 1000);
  }
  return false;
}

TEST_F(RpcTest, GarbageDropsOnlyThatConnection) {
  int fd = RawConnect(port_);
  std::string junk(200, 'Z');
  ASSERT_EQ(send(fd, junk.data(), junk.size(), MSG_NOSIGNAL), 200);
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);
  auto c = NewClient();
  proto::Ping req, rep;
  EXPECT_TRUE(c->Call(proto::OP_PING, req, &rep).ok());
}

TEST_F(RpcTest, OversizedFrameIsRefusedBeforeAllocation) {
  int fd = RawConnect(port_);
  FrameHeader h;
  h.opcode = proto::OP_OST_WRITE;
  h.flags = kFlagBulkCrc;
  h.bulk_len = 1ull << 40;
  uint8_t buf[kFrameHeaderSize];
  EncodeHeader(h, buf);
  ASSERT_EQ(send(fd, buf, sizeof buf, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof buf));
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);
}

TEST_F(RpcTest, RequestBeforeConnectIsRefused) {
  int fd = RawConnect(port_);
  FrameHeader h;
  h.opcode = proto::OP_PING;
  uint8_t buf[kFrameHeaderSize];
  EncodeHeader(h, buf);
  ASSERT_EQ(send(fd, buf, sizeof buf, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof buf));
  uint8_t reply[kFrameHeaderSize];
  ASSERT_TRUE(RecvAll(fd, reply, sizeof reply, Clock::now() + std::chrono::seconds(5)).ok());
  auto rh = DecodeHeader(reply, FrameLimits{});
  ASSERT_TRUE(rh.ok());
  EXPECT_EQ(rh->status, static_cast<int32_t>(Code::kProtocol));
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);
}

TEST_F(RpcTest, StalledPeerIsDropped) {
  int fd = RawConnect(port_);
  ASSERT_EQ(send(fd, "STRA", 4, MSG_NOSIGNAL), 4);  // a partial header, then silence
  // stall_timeout is 1 s; the sweep runs every second.
  bool closed = false;
  for (int i = 0; i < 40 && !closed; ++i) closed = PeerClosed(fd);
  EXPECT_TRUE(closed);
  close(fd);
}

TEST_F(RpcTest, ClientReconnectsAfterServerRestart) {
  auto c = NewClient(10000);
  proto::Ping req, rep;
  ASSERT_TRUE(c->Call(proto::OP_PING, req, &rep).ok());
  const uint16_t port = port_;
  server_->Stop();
  std::thread restart([&] {
    usleep(300 * 1000);
    StartServer(port);
  });
  Status st = c->Call(proto::OP_PING, req, &rep);  // retried until the server is back
  restart.join();
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST_F(RpcTest, DeadPeerFailsAfterTheRetryDeadline) {
  server_->Stop();
  auto c = NewClient(300);
  proto::Ping req, rep;
  Status st = c->Call(proto::OP_PING, req, &rep);
  EXPECT_EQ(st.code(), Code::kDisconnected);
  EXPECT_TRUE(st.retryable());
}

}  // namespace
}  // namespace stria::lnet
