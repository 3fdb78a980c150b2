// Zero-copy bulk over local sockets (lnet/socket.h, SpliceAll): a reply bulk goes to the
// peer by reference, so its pages must stay untouched until the peer has read them, however
// many other requests the server serves meanwhile.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "lnet/lnd.h"
#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "lnet/socket.h"
#include "lnet/test_frames.h"
#include "proto/stria.pb.h"

namespace stria::lnet {
namespace {

namespace tf = ::stria::lnet::testing;

uint8_t Pattern(uint64_t offset, size_t i) { return static_cast<uint8_t>((offset + i) * 13 + 5); }

constexpr size_t kReadBytes = 4u << 20;

class ZeroCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LndConfig c = saved_;
    c.local_sockets = true;
    c.local_zero_copy = true;
    ConfigureLnds(c);
    ServerOptions opts;
    opts.name = "zc";
    opts.fsname = "testfs";
    opts.worker_threads = 4;
    opts.stall_timeout_ms = 1000;  // how long a reply may wait for a peer that stops reading
    server_ = std::make_unique<RpcServer>(opts);
    server_->Register<proto::OstIoRequest, proto::OstIoReply>(
        proto::OP_OST_READ,
        [](RpcContext& ctx, const proto::OstIoRequest& req, proto::OstIoReply* rep) {
          ctx.bulk_out = Buffer(req.length());
          for (size_t i = 0; i < req.length(); ++i) {
            ctx.bulk_out.data()[i] = Pattern(req.offset(), i);
          }
          rep->set_length(req.length());
          return Status::Ok();
        });
    ASSERT_TRUE(server_->Start(tf::Loopback(0)).ok());
  }
  void TearDown() override {
    server_->Stop();
    ConfigureLnds(saved_);
  }

  // Reads `length` bytes at `offset` into *got through `client`; false on an error.
  static bool Read(RpcClient& client, uint64_t offset, std::vector<uint8_t>* got,
                   size_t length = kReadBytes) {
    got->assign(length, 0);
    size_t got_len = 0;
    proto::OstIoRequest r;
    r.set_offset(offset);
    r.set_length(length);
    proto::OstIoReply rep;
    CallBulk in;
    in.in = *got;
    in.in_len = &got_len;
    return client.Call(proto::OP_OST_READ, r, &rep, in).ok() && got_len == length;
  }

  // A raw local connection that has asked for `length` bytes at offset 0 and read nothing.
  int AskRaw(size_t length) {
    Result<int> raw = tf::ConnectRaw(server_->port());
    EXPECT_TRUE(raw.ok()) << raw.status().ToString();
    if (!raw.ok()) return -1;
    EXPECT_TRUE(IsLocalSocket(*raw));
    proto::OstIoRequest req;
    req.set_offset(0);
    req.set_length(length);
    std::string body;
    req.SerializeToString(&body);
    FrameHeader h;
    h.opcode = proto::OP_OST_READ;
    h.xid = 2;
    EXPECT_TRUE(tf::SendFrame(*raw, h, body, {}).ok());
    return *raw;
  }

  LndConfig saved_ = CurrentLndConfig();
  std::unique_ptr<RpcServer> server_;
};

// A peer asks for 4 MiB and reads nothing yet; a client then reads 4 MiB twenty times at
// other offsets (their buffers come from the same pool). The first reply, read last, is
// still the bytes the handler wrote.
TEST_F(ZeroCopyTest, AnUnreadReplyStaysIntactWhileTheServerServesOthers) {
  const int raw = AskRaw(kReadBytes);
  ASSERT_GE(raw, 0);
  // The server counts the reply as it starts sending it.
  for (int i = 0; i < 500 && server_->load().bulk_spliced == 0; ++i) usleep(10'000);
  ASSERT_EQ(server_->load().bulk_spliced, 1u);

  ClientOptions o;
  o.fsname = "testfs";
  RpcClient client(tf::Loopback(server_->port()), o);
  std::vector<uint8_t> got;
  for (uint64_t off = 1; off <= 20; ++off) {
    ASSERT_TRUE(Read(client, off, &got));
    ASSERT_EQ(got[0], Pattern(off, 0));
  }
  EXPECT_EQ(server_->load().bulk_spliced, 21u);

  Result<tf::Frame> reply = tf::RecvFrame(raw);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->bulk.size(), kReadBytes);
  EXPECT_EQ(Crc32c(reply->bulk.data(), reply->bulk.size()), reply->h.bulk_crc);
  size_t wrong = 0;
  for (size_t i = 0; i < kReadBytes; ++i) wrong += reply->bulk[i] != Pattern(0, i);
  EXPECT_EQ(wrong, 0u);
  close(raw);
}

// A peer that stops reading a reply larger than the socket holds: the send times out (the
// stall timeout, 1 s here) and the server drops the connection. What the peer had been
// sent is still in its socket, and stays the handler's bytes while the server serves
// others from the same pool: the pages linger a stall timeout before they are reused.
TEST_F(ZeroCopyTest, AReplyToAPeerThatStopsReadingStaysIntactAfterTheDrop) {
  constexpr size_t kBig = 32u << 20;  // more than the socket's buffers
  const int raw = AskRaw(kBig);
  ASSERT_GE(raw, 0);
  usleep(1'500'000);  // the send's deadline passes; the connection is dropped
  ClientOptions o;
  o.fsname = "testfs";
  RpcClient client(tf::Loopback(server_->port()), o);
  std::vector<uint8_t> got;
  for (uint64_t off = 1; off <= 3; ++off) {
    ASSERT_TRUE(Read(client, off, &got, kBig));
    ASSERT_EQ(got[0], Pattern(off, 0));
  }
  uint8_t hdr[kFrameHeaderSize];
  ASSERT_TRUE(RecvAll(raw, hdr, sizeof hdr, tf::Soon()).ok());
  Result<FrameHeader> h = DecodeHeader(hdr, FrameLimits{});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  std::string body(h->body_len, '\0');
  ASSERT_TRUE(RecvAll(raw, body.data(), body.size(), tf::Soon()).ok());
  std::vector<uint8_t> bulk(kBig);
  size_t have = 0;
  for (;;) {  // until the server's close: part of the bulk
    Result<size_t> n = RecvAtLeast(raw, bulk.data() + have, 1, bulk.size() - have, tf::Soon(),
                                   /*wait_first=*/false);
    if (!n.ok()) break;
    have += *n;
  }
  EXPECT_GT(have, 0u);
  EXPECT_LT(have, kBig);
  size_t wrong = 0;
  for (size_t i = 0; i < have; ++i) wrong += bulk[i] != Pattern(0, i);
  EXPECT_EQ(wrong, 0u);
  close(raw);
}

// Turned off, the same reply is copied: nothing is counted as spliced.
TEST_F(ZeroCopyTest, OffMeansCopied) {
  LndConfig c = CurrentLndConfig();
  c.local_zero_copy = false;
  ConfigureLnds(c);
  ClientOptions o;
  o.fsname = "testfs";
  RpcClient client(tf::Loopback(server_->port()), o);
  std::vector<uint8_t> got;
  ASSERT_TRUE(Read(client, 0, &got));
  EXPECT_EQ(got[100], Pattern(0, 100));
  EXPECT_EQ(server_->load().bulk_spliced, 0u);
}

}  // namespace
}  // namespace stria::lnet

namespace stria::lnet {
namespace {

// A splice into a socket whose peer has gone fails with EPIPE; it does not kill the process
// with SIGPIPE (a test process keeps SIGPIPE's default action, as libstria's users do).
TEST(SpliceAllTest, APeerThatHasGoneIsAnErrorNotASignal) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  close(sv[1]);
  std::vector<uint8_t> data(1 << 20, 7);
  iovec iov{data.data(), data.size()};
  Status st = SpliceAll(sv[0], &iov, 1, Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(st.code(), Code::kDisconnected) << st.ToString();
  sigset_t pending;
  sigemptyset(&pending);
  ASSERT_EQ(sigpending(&pending), 0);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
  close(sv[0]);
}

}  // namespace
}  // namespace stria::lnet
