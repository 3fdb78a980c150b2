// The bulk crc32c on the wire (lnet/frame.h) end to end: a request whose bulk fails its
// checksum is refused before its handler runs (kChecksum, retryable), and the client resends
// both a write the server refused that way and a read whose reply bulk arrived corrupt, with
// the same xid, until the bytes arrive intact.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/crc32c.h"
#include "lnet/frame.h"
#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "lnet/socket.h"
#include "lnet/test_frames.h"
#include "proto/stria.pb.h"

namespace stria::lnet {
namespace {

using testing::Frame;
using testing::Loopback;
using testing::RecvFrame;
using testing::SendFrame;
using testing::Soon;

uint8_t PatternByte(size_t i) { return static_cast<uint8_t>(i * 31 + 7); }

// A stand-in OSS speaking raw frames, so it can do what a real server never does: its first
// READ reply carries a bulk that fails its crc, and its first WRITE is refused with
// kChecksum as if the request bulk had been damaged. It records every (opcode, xid).
class FlakyBulkPeer {
 public:
  FlakyBulkPeer() {
    Result<int> fd = TcpListen(Loopback(0));
    EXPECT_TRUE(fd.ok()) << fd.status().ToString();
    listen_fd_ = fd.ok() ? *fd : -1;
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FlakyBulkPeer() {
    stop_ = true;
    thread_.join();
    close(listen_fd_);
  }

  uint16_t port() const { return port_; }
  std::vector<uint64_t> Xids(uint16_t opcode) {
    std::lock_guard lk(mu_);
    std::vector<uint64_t> out;
    for (auto [op, xid] : seen_) {
      if (op == opcode) out.push_back(xid);
    }
    return out;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) continue;
      while (!stop_) {
        Result<Frame> f = RecvFrame(fd);
        if (!f.ok() || !Answer(fd, *f).ok()) break;
      }
      close(fd);
    }
  }

  Status Answer(int fd, const Frame& f) {
    {
      std::lock_guard lk(mu_);
      seen_.emplace_back(f.h.opcode, f.h.xid);
    }
    FrameHeader r;
    r.opcode = f.h.opcode;
    r.xid = f.h.xid;
    r.flags = kFlagReply;
    std::string body;
    std::vector<uint8_t> bulk;
    uint32_t flip = 0;
    if (f.h.opcode == proto::OP_CONNECT) {
      proto::ConnectReply rep;
      rep.set_version(kWireVersion);
      rep.SerializeToString(&body);
    } else if (f.h.opcode == proto::OP_OST_READ) {
      proto::OstIoRequest req;
      req.ParseFromString(f.body);
      bulk.resize(req.length());
      for (size_t i = 0; i < bulk.size(); ++i) bulk[i] = PatternByte(i);
      if (reads_++ == 0) flip = 0x4;  // damaged on the way back, once
      proto::OstIoReply rep;
      rep.set_length(bulk.size());
      rep.SerializeToString(&body);
    } else if (f.h.opcode == proto::OP_OST_WRITE && writes_++ == 0) {
      r.status = static_cast<int32_t>(Code::kChecksum);  // as RpcServer refuses a bad bulk
      body = "request bulk checksum mismatch";
    } else {
      proto::OstIoReply rep;
      rep.set_length(Crc32c(f.bulk.data(), f.bulk.size()));
      rep.SerializeToString(&body);
    }
    return SendFrame(fd, r, body, bulk, flip);
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  int reads_ = 0;   // used by the serving thread only
  int writes_ = 0;  // used by the serving thread only
  std::mutex mu_;
  std::vector<std::pair<uint16_t, uint64_t>> seen_;  // GUARDED_BY(mu_)
};

std::unique_ptr<RpcClient> ClientOf(uint16_t port) {
  ClientOptions o;
  o.rpc_timeout_ms = 2000;
  o.retry_deadline_ms = 5000;
  o.max_connections = 1;
  return std::make_unique<RpcClient>(Loopback(port), o);
}

TEST(RpcBulkCrcTest, CorruptReadReplyBulkIsResentWithTheSameXid) {
  FlakyBulkPeer peer;
  auto c = ClientOf(peer.port());
  proto::OstIoRequest req;
  req.set_length(100000);
  proto::OstIoReply rep;
  std::vector<uint8_t> got(req.length());
  size_t got_len = 0;
  CallBulk in;
  in.in = got;
  in.in_len = &got_len;
  Status st = c->Call(proto::OP_OST_READ, req, &rep, in);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(got_len, got.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], PatternByte(i)) << i;
  const std::vector<uint64_t> xids = peer.Xids(proto::OP_OST_READ);
  ASSERT_EQ(xids.size(), 2u) << "one corrupt reply, one resend";
  EXPECT_EQ(xids[0], xids[1]);
}

TEST(RpcBulkCrcTest, WriteRefusedForItsBulkChecksumIsResentWithTheSameXid) {
  FlakyBulkPeer peer;
  auto c = ClientOf(peer.port());
  std::vector<uint8_t> data(70000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = PatternByte(i);
  iovec iov{data.data(), data.size()};
  CallBulk out;
  out.out = std::span<const iovec>(&iov, 1);
  proto::OstIoRequest req;
  req.set_length(data.size());
  proto::OstIoReply rep;
  Status st = c->Call(proto::OP_OST_WRITE, req, &rep, out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rep.length(), Crc32c(data.data(), data.size()));  // the resend arrived intact
  const std::vector<uint64_t> xids = peer.Xids(proto::OP_OST_WRITE);
  ASSERT_EQ(xids.size(), 2u);
  EXPECT_EQ(xids[0], xids[1]);
}

// Sends an OP_OST_WRITE of `bulk` (xid 2) whose bulk crc is off by `bulk_crc_flip`, and
// returns the reply.
Result<Frame> RawWrite(int fd, const std::vector<uint8_t>& bulk, uint32_t bulk_crc_flip) {
  proto::OstIoRequest req;
  req.set_length(bulk.size());
  std::string body;
  req.SerializeToString(&body);
  FrameHeader h;
  h.opcode = proto::OP_OST_WRITE;
  h.xid = 2;
  STRIA_RETURN_IF_ERROR(SendFrame(fd, h, body, bulk, bulk_crc_flip));
  return RecvFrame(fd);
}

TEST(RpcBulkCrcTest, AHandlerThatVerifiesItsBulkGetsItUncheckedWithTheExpectedCrc) {
  ServerOptions so;
  so.name = "crc-test";
  so.worker_threads = 2;
  RpcServer server(so);
  std::mutex mu;
  std::vector<std::optional<uint32_t>> seen;  // bulk_in_crc of each request handled
  server.Register<proto::OstIoRequest, proto::OstIoReply>(
      proto::OP_OST_WRITE, [&](RpcContext& ctx, const proto::OstIoRequest&, proto::OstIoReply*) {
        std::lock_guard lock(mu);
        seen.push_back(ctx.bulk_in_crc);
        return Status::Ok();
      });
  server.HandlerVerifiesBulk(proto::OP_OST_WRITE);
  ASSERT_TRUE(server.Start(Loopback(0)).ok());
  Result<int> fd = testing::ConnectRaw(server.port());
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  const std::vector<uint8_t> bulk(5000, 0xAB);
  Result<Frame> reply = RawWrite(*fd, bulk, /*bulk_crc_flip=*/0x100);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->h.status, 0) << "left to the handler";
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 1u);
  ASSERT_TRUE(seen[0].has_value());
  EXPECT_EQ(*seen[0], Crc32c(bulk.data(), bulk.size()) ^ 0x100) << "the crc the frame carried";
  close(*fd);
  server.Stop();
}

TEST(RpcBulkCrcTest, ServerRefusesACorruptRequestBulkBeforeTheHandler) {
  ServerOptions so;
  so.name = "crc-test";
  so.worker_threads = 2;
  RpcServer server(so);
  std::atomic<int> handled{0};
  server.Register<proto::OstIoRequest, proto::OstIoReply>(
      proto::OP_OST_WRITE, [&](RpcContext&, const proto::OstIoRequest&, proto::OstIoReply*) {
        handled++;
        return Status::Ok();
      });
  ASSERT_TRUE(server.Start(Loopback(0)).ok());
  Result<int> fd = testing::ConnectRaw(server.port());
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  const std::vector<uint8_t> bulk(5000, 0xAB);
  Result<Frame> reply = RawWrite(*fd, bulk, /*bulk_crc_flip=*/0x100);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->h.status, static_cast<int32_t>(Code::kChecksum));
  EXPECT_TRUE(Status(Code::kChecksum, "").retryable());
  EXPECT_EQ(handled.load(), 0);
  // The connection stays usable: the resend of the same xid is served.
  reply = RawWrite(*fd, bulk, 0);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->h.status, 0);
  EXPECT_EQ(handled.load(), 1);
  close(*fd);
  server.Stop();
}

}  // namespace
}  // namespace stria::lnet
