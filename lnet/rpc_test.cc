// RpcServer and RpcClient over real loopback sockets.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/crc32c.h"
#include "lnet/lnd.h"
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

// Sets whether this process uses local sockets (lnet/socket.h) while alive.
class LocalSocketsScope {
 public:
  explicit LocalSocketsScope(bool on) : saved_(CurrentLndConfig()) {
    LndConfig c = saved_;
    c.local_sockets = on;
    ConfigureLnds(c);
  }
  ~LocalSocketsScope() { ConfigureLnds(saved_); }

 private:
  LndConfig saved_;
};

// A server that echoes a Ping, for OP_OST_WRITE returns the crc of the request bulk, for
// OP_OST_READ returns `length` bytes of a known pattern, and for OP_OST_STATFS names the
// peer it saw (in a Ping's payload). Every test runs twice: between processes on one host
// over the local socket (the default), and over TCP (as between hosts).
class RpcTest : public ::testing::TestWithParam<bool> {
 protected:
  RpcTest() : local_(GetParam()) {}
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
    server_->Register<proto::Ping, proto::Ping>(
        proto::OP_OST_STATFS, [](RpcContext& ctx, const proto::Ping&, proto::Ping* rep) {
          rep->set_payload(ctx.peer);
          return Status::Ok();
        });
    ASSERT_TRUE(server_->Start(Loopback(port)).ok());
    port_ = server_->port();
  }

  // The peer name the server gave this client's connection.
  std::string PeerSeenBy(RpcClient& c) {
    proto::Ping req, rep;
    Status st = c.Call(proto::OP_OST_STATFS, req, &rep);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return rep.payload();
  }

  std::unique_ptr<RpcClient> NewClient(int retry_ms = 2000, std::string fsname = "testfs") {
    ClientOptions o;
    o.retry_deadline_ms = retry_ms;
    o.rpc_timeout_ms = 2000;
    o.fsname = std::move(fsname);
    return std::make_unique<RpcClient>(Loopback(port_), o);
  }

  LocalSocketsScope local_;
  std::unique_ptr<RpcServer> server_;
  uint16_t port_ = 0;
  std::atomic<int> writes_{0};
};

INSTANTIATE_TEST_SUITE_P(Lnd, RpcTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "Local" : "Tcp";
                         });

TEST_P(RpcTest, LoopbackPeersComeOverTheLocalSocketUnlessItIsOff) {
  auto c = NewClient();
  const std::string local = "127.0.0.1:local-pid-" + std::to_string(getpid());
  if (GetParam()) {
    EXPECT_EQ(PeerSeenBy(*c), local);
  } else {
    const std::string peer = PeerSeenBy(*c);
    ASSERT_EQ(peer.rfind("127.0.0.1:", 0), 0u) << peer;
    EXPECT_GT(std::stoi(peer.substr(10)), 0) << peer;  // a TCP port
  }
}

// More bulk than a socket's buffers hold, both ways: sends and receives come in parts.
TEST_P(RpcTest, BulkLargerThanTheSocketBuffersIsIntact) {
  auto c = NewClient();
  std::vector<uint8_t> data(9 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
  iovec iov{data.data(), data.size()};
  proto::OstIoRequest req;
  req.set_length(data.size());
  proto::OstIoReply rep;
  CallBulk out;
  out.out = {&iov, 1};
  ASSERT_TRUE(c->Call(proto::OP_OST_WRITE, req, &rep, out).ok());
  EXPECT_EQ(rep.object_size(), Crc32c(data.data(), data.size()));
  std::vector<uint8_t> got(data.size());
  size_t got_len = 0;
  req.set_offset(0);
  CallBulk in;
  in.in = got;
  in.in_len = &got_len;
  ASSERT_TRUE(c->Call(proto::OP_OST_READ, req, &rep, in).ok());
  ASSERT_EQ(got_len, got.size());
  for (size_t i = 0; i < got_len; ++i) ASSERT_EQ(got[i], static_cast<uint8_t>(i * 7));
}

TEST_P(RpcTest, PingEchoes) {
  auto c = NewClient();
  proto::Ping req, rep;
  req.set_payload("abc");
  ASSERT_TRUE(c->Call(proto::OP_PING, req, &rep).ok());
  EXPECT_EQ(rep.payload(), "abc");
}

TEST_P(RpcTest, BulkBothWaysIsIntact) {
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

TEST_P(RpcTest, HandlerErrorsArriveWithCodeAndMessage) {
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

TEST_P(RpcTest, ReplyLargerThanBufferIsAnError) {
  auto c = NewClient();
  std::vector<uint8_t> small(100);
  proto::OstIoRequest req;
  req.set_length(1000);
  proto::OstIoReply rep;
  CallBulk in;
  in.in = small;
  EXPECT_EQ(c->Call(proto::OP_OST_READ, req, &rep, in).code(), Code::kProtocol);
}

TEST_P(RpcTest, WrongFilesystemIsRefused) {
  auto c = NewClient(2000, "otherfs");
  proto::Ping req, rep;
  Status st = c->Call(proto::OP_PING, req, &rep);
  EXPECT_EQ(st.code(), Code::kWrongFs);
}

TEST_P(RpcTest, ManyThreadsInParallel) {
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

TEST_P(RpcTest, GarbageDropsOnlyThatConnection) {
  int fd = RawConnect(port_);
  std::string junk(200, 'Z');
  ASSERT_EQ(send(fd, junk.data(), junk.size(), MSG_NOSIGNAL), 200);
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);
  auto c = NewClient();
  proto::Ping req, rep;
  EXPECT_TRUE(c->Call(proto::OP_PING, req, &rep).ok());
}

TEST_P(RpcTest, OversizedFrameIsRefusedBeforeAllocation) {
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

TEST_P(RpcTest, RequestBeforeConnectIsRefused) {
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

TEST_P(RpcTest, StalledPeerIsDropped) {
  int fd = RawConnect(port_);
  ASSERT_EQ(send(fd, "STRA", 4, MSG_NOSIGNAL), 4);  // a partial header, then silence
  // stall_timeout is 1 s; the sweep runs every second.
  bool closed = false;
  for (int i = 0; i < 40 && !closed; ++i) closed = PeerClosed(fd);
  EXPECT_TRUE(closed);
  close(fd);
}

TEST_P(RpcTest, ClientReconnectsAfterServerRestart) {
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

TEST_P(RpcTest, DeadPeerFailsAfterTheRetryDeadline) {
  server_->Stop();
  auto c = NewClient(300);
  proto::Ping req, rep;
  Status st = c->Call(proto::OP_PING, req, &rep);
  EXPECT_EQ(st.code(), Code::kDisconnected);
  EXPECT_TRUE(st.retryable());
}

// A server started with local sockets off has no local listener: a client that would use
// one reaches it over TCP, to the same address and port.
TEST(LocalSocketTest, AServerWithoutOneIsReachedOverTcp) {
  ServerOptions opts;
  opts.name = "tcp-only";
  opts.fsname = "testfs";
  RpcServer server(opts);
  server.Register<proto::Ping, proto::Ping>(
      proto::OP_OST_STATFS, [](RpcContext& ctx, const proto::Ping&, proto::Ping* rep) {
        rep->set_payload(ctx.peer);
        return Status::Ok();
      });
  {
    LocalSocketsScope off(false);
    ASSERT_TRUE(server.Start(Loopback(0)).ok());
  }
  LocalSocketsScope on(true);
  ClientOptions o;
  o.fsname = "testfs";
  RpcClient c(Loopback(server.port()), o);
  proto::Ping req, rep;
  ASSERT_TRUE(c.Call(proto::OP_OST_STATFS, req, &rep).ok());
  EXPECT_EQ(rep.payload().find("local"), std::string::npos) << rep.payload();
}

// A server listening on every address is local at the loopback address; two servers on one
// host each answer on their own name.
TEST(LocalSocketTest, AnyAddressServersAreEachLocalAtTheirLoopbackPort) {
  LocalSocketsScope on(true);
  std::vector<std::unique_ptr<RpcServer>> servers;
  for (const char* name : {"first", "second"}) {
    ServerOptions opts;
    opts.name = name;
    opts.fsname = "testfs";
    auto s = std::make_unique<RpcServer>(opts);
    s->Register<proto::Ping, proto::Ping>(
        proto::OP_OST_STATFS, [name](RpcContext& ctx, const proto::Ping&, proto::Ping* rep) {
          rep->set_payload(std::string(name) + " " + ctx.peer);
          return Status::Ok();
        });
    Nid any;
    any.addr = "0.0.0.0";
    any.port = 0;
    ASSERT_TRUE(s->Start(any).ok());
    servers.push_back(std::move(s));
  }
  for (size_t i = 0; i < servers.size(); ++i) {
    ClientOptions o;
    o.fsname = "testfs";
    RpcClient c(Loopback(servers[i]->port()), o);
    proto::Ping req, rep;
    ASSERT_TRUE(c.Call(proto::OP_OST_STATFS, req, &rep).ok());
    const std::string name = i == 0 ? "first" : "second";
    EXPECT_EQ(rep.payload(), name + " 127.0.0.1:local-pid-" + std::to_string(getpid()));
  }
}

}  // namespace
}  // namespace stria::lnet

namespace stria::lnet {
namespace {

// A server that numbers every OP_MDS_SETATTR it runs (its transno) and reports a committed
// number the test controls; it records every request it sees, replays flagged.
struct TransnoServer {
  struct Seen {
    uint64_t xid;
    uint64_t ino;
    bool replay;
    uint64_t replay_transno;
    uint32_t valid;
  };
  std::unique_ptr<RpcServer> server;
  std::mutex mu;
  std::vector<Seen> seen;
  uint64_t next_transno = 100;
  uint64_t generation = 0;  // the start count its CONNECT replies carry
  uint64_t instance = 0;    // its instance (0: random)
  std::atomic<uint64_t> committed{0};
  // When set and true for a request: answered kNotReady, undone (a replay cut short).
  std::function<bool(const Seen&)> not_ready;
  // When set: called with each request's ino before it is run (a test holds one there).
  std::function<void(uint64_t ino)> hold;

  void Start(uint16_t port) {
    ServerOptions opts;
    opts.name = "transno";
    opts.fsname = "testfs";
    opts.generation = generation;
    opts.instance = instance;
    server = std::make_unique<RpcServer>(opts);
    server->Register<proto::SetattrRequest, proto::AttrReply>(
        proto::OP_MDS_SETATTR,
        [this](RpcContext& ctx, const proto::SetattrRequest& req, proto::AttrReply* rep) {
          if (hold) hold(req.ino());
          std::lock_guard lock(mu);
          seen.push_back({ctx.xid, req.ino(), ctx.replay, ctx.replay_transno, req.valid()});
          if (not_ready && not_ready(seen.back())) return Status(Code::kNotReady, "recovering");
          ctx.transno = ++next_transno;
          ctx.last_committed = committed.load();
          rep->mutable_attr()->set_ino(req.ino());
          return Status::Ok();
        });
    ASSERT_TRUE(server->Start(Loopback(port)).ok());
  }
};

proto::SetattrRequest Setattr(uint64_t ino) {
  proto::SetattrRequest r;
  r.set_ino(ino);
  return r;
}

// What every replay test's client uses: it keeps requests for replay.
ClientOptions ReplayingClient(int retry_deadline_ms = 5000) {
  ClientOptions o;
  o.fsname = "testfs";
  o.retry_deadline_ms = retry_deadline_ms;
  o.keep_replays = true;
  return o;
}

// A retry carries the xid of its first attempt and kFlagResend; a first attempt never does
// (the MDS looks for a persisted reply only for resends).
TEST(RpcResendTest, OnlyRetriesAreMarkedResent) {
  ServerOptions opts;
  opts.name = "test";
  opts.fsname = "testfs";
  RpcServer server(opts);
  std::mutex mu;
  std::vector<std::pair<uint64_t, bool>> seen;  // (xid, resent) of each attempt
  server.Register<proto::OstIoRequest, proto::OstIoReply>(
      proto::OP_OST_WRITE,
      [&](RpcContext& ctx, const proto::OstIoRequest& req, proto::OstIoReply*) {
        std::lock_guard lock(mu);
        seen.emplace_back(ctx.xid, ctx.resent);
        // The first attempt of the request at offset 1 is refused with a retryable status.
        const bool first = std::count_if(seen.begin(), seen.end(), [&](const auto& s) {
                             return s.first == ctx.xid;
                           }) == 1;
        return req.offset() == 1 && first ? Status(Code::kNotReady, "not yet") : Status::Ok();
      });
  ASSERT_TRUE(server.Start(Loopback(0)).ok());
  ClientOptions o;
  o.fsname = "testfs";
  o.retry_deadline_ms = 5000;
  RpcClient client(Loopback(server.port()), o);
  for (uint64_t off : {0, 1, 2}) {
    proto::OstIoRequest req;
    req.set_offset(off);
    proto::OstIoReply rep;
    ASSERT_TRUE(client.Call(proto::OP_OST_WRITE, req, &rep).ok()) << off;
  }
  server.Stop();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_FALSE(seen[0].second);
  EXPECT_FALSE(seen[1].second);                // offset 1, refused
  EXPECT_EQ(seen[2].first, seen[1].first);     // its retry: the same xid...
  EXPECT_TRUE(seen[2].second);                 // ...marked
  EXPECT_NE(seen[3].first, seen[2].first);
  EXPECT_FALSE(seen[3].second);
}

TEST(RpcReplayTest, UncommittedRequestsAreReplayedFirstAfterARestart) {
  TransnoServer s1;
  s1.Start(0);
  const uint16_t port = s1.server->port();
  ClientOptions o = ReplayingClient();
  std::atomic<int> patched{0};
  o.replay_patch = [&](uint16_t op, std::string* body, std::string_view reply) {
    EXPECT_EQ(op, proto::OP_MDS_SETATTR);
    proto::SetattrRequest r;
    ASSERT_TRUE(r.ParseFromString(*body));
    proto::AttrReply answered;
    ASSERT_TRUE(answered.ParseFromArray(reply.data(), static_cast<int>(reply.size())));
    EXPECT_EQ(answered.attr().ino(), r.ino()) << "the request's own reply";
    r.set_valid(77);  // what a replay must say
    r.SerializeToString(body);
    patched++;
  };
  RpcClient c(Loopback(port), o);
  proto::AttrReply rep;
  // Three changes answered, none committed; then a reply says the first is.
  for (uint64_t ino : {1, 2, 3}) {
    ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(ino), &rep).ok());
  }
  EXPECT_EQ(c.pending_replays(), 3u);
  EXPECT_EQ(patched.load(), 0) << "a kept request is patched only when it is replayed";
  s1.committed = 101;  // transno of ino 1
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(4), &rep).ok());
  EXPECT_EQ(c.pending_replays(), 3u) << "ino 1 is committed: 2, 3 and 4 are kept";
  std::vector<TransnoServer::Seen> first;
  {
    std::lock_guard lock(s1.mu);
    first = s1.seen;
  }
  s1.server->Stop();

  // The server comes back as another instance: before the new request, the three kept ones
  // arrive again, in transno order, flagged, with their xids and original transnos.
  TransnoServer s2;
  s2.next_transno = 500;
  s2.Start(port);
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(5), &rep).ok());
  std::vector<TransnoServer::Seen> again;
  {
    std::lock_guard lock(s2.mu);
    again = s2.seen;
  }
  ASSERT_EQ(again.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(again[i].replay) << i;
    EXPECT_EQ(again[i].ino, first[i + 1].ino) << i;
    EXPECT_EQ(again[i].xid, first[i + 1].xid) << "a replay keeps its xid";
    EXPECT_EQ(again[i].replay_transno, 102 + i) << "and says its first transno";
    EXPECT_EQ(again[i].valid, 77u) << "as replay_patch rewrote it";
  }
  EXPECT_FALSE(again[3].replay);
  EXPECT_EQ(again[3].ino, 5u);
  EXPECT_EQ(c.replays_sent(), 3u);
  EXPECT_EQ(patched.load(), 3) << "the three replayed, not ino 1, trimmed unreplayed";
  // Redone under new numbers and still uncommitted there: kept until a reply commits them.
  EXPECT_EQ(c.pending_replays(), 4u);
  s2.server->Stop();

  // A second restart before they commit: all four go again, each patched once in all.
  TransnoServer s3;
  s3.next_transno = 900;
  s3.Start(port);
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(6), &rep).ok());
  {
    std::lock_guard lock(s3.mu);
    ASSERT_EQ(s3.seen.size(), 5u);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_TRUE(s3.seen[i].replay) << i;
      EXPECT_EQ(s3.seen[i].valid, 77u) << i;
    }
  }
  EXPECT_EQ(patched.load(), 4) << "ino 5 once more; 2, 3 and 4 not again";
  s3.committed = 10'000;
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(7), &rep).ok());
  EXPECT_EQ(c.pending_replays(), 0u);
  s3.server->Stop();
}

// A replay cut short (here the server is not ready for the second one) goes on, on the next
// connection to the same instance, with what was not done yet: nothing is done twice, and
// nothing is lost where the new instance reused a kept request's transno (RocksDB numbers on
// from what it recovered, so it gives the lost numbers again).
TEST(RpcReplayTest, AReplayCutShortGoesOnWhereItStopped) {
  TransnoServer s1;
  s1.Start(0);
  const uint16_t port = s1.server->port();
  ClientOptions o = ReplayingClient();
  std::atomic<int> restarts{0};
  o.on_restart = [&] { restarts++; };
  RpcClient c(Loopback(port), o);
  proto::AttrReply rep;
  for (uint64_t ino : {1, 2, 3}) {  // transnos 101, 102, 103, none committed
    ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(ino), &rep).ok());
  }
  s1.server->Stop();

  TransnoServer s2;
  s2.next_transno = 101;  // ino 1 is redone as 102, the number ino 2 had
  bool refused = false;
  s2.not_ready = [&](const TransnoServer::Seen& r) {
    if (!r.replay || r.ino != 2 || refused) return false;
    return refused = true;
  };
  s2.Start(port);
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(4), &rep).ok());
  std::vector<std::pair<uint64_t, uint64_t>> got;  // (ino, replay transno) of each replay
  {
    std::lock_guard lock(s2.mu);
    for (const TransnoServer::Seen& r : s2.seen) {
      if (r.replay) got.emplace_back(r.ino, r.replay_transno);
    }
    ASSERT_FALSE(s2.seen.empty());
    EXPECT_FALSE(s2.seen.back().replay);
    EXPECT_EQ(s2.seen.back().ino, 4u);
  }
  EXPECT_EQ(got,
            (std::vector<std::pair<uint64_t, uint64_t>>{{1, 101}, {2, 102}, {2, 102}, {3, 103}}))
      << "ino 1 once; ino 2 again after the refusal, then ino 3";
  EXPECT_EQ(restarts.load(), 1) << "one restart, however many connections found it";
  EXPECT_EQ(c.replays_sent(), 3u);
  EXPECT_EQ(c.pending_replays(), 4u) << "1, 2 and 3 redone, and 4: none committed";
  s2.committed = 10'000;
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(5), &rep).ok());
  EXPECT_EQ(c.pending_replays(), 0u);
  s2.server->Stop();
}

// A replay cut short by another restart: what the cut-short instance redid goes again
// under the number it gave; what it never got goes without a number (0), since the number
// from two instances back may have been given again to something else, and a server takes
// a replay whose number it recovered for done. Only the reply journal can say.
TEST(RpcReplayTest, AReplayCutShortByAnotherRestartSendsStaleNumbersAsUnknown) {
  TransnoServer s1;
  s1.Start(0);
  const uint16_t port = s1.server->port();
  ClientOptions o = ReplayingClient(10'000);
  RpcClient c(Loopback(port), o);
  proto::AttrReply rep;
  for (uint64_t ino : {1, 2, 3}) {  // 101, 102, 103
    ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(ino), &rep).ok());
  }
  s1.server->Stop();

  auto s2 = std::make_unique<TransnoServer>();
  s2->next_transno = 101;  // ino 1 is redone as 102
  std::atomic<int> refusals{0};
  s2->not_ready = [&](const TransnoServer::Seen& r) {
    if (!r.replay || r.ino == 1) return false;
    refusals++;
    return true;  // never ready for the rest
  };
  s2->Start(port);
  Status st;
  std::thread caller([&] { st = c.Call(proto::OP_MDS_SETATTR, Setattr(4), &rep); });
  for (int i = 0; i < 500 && refusals.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(refusals.load(), 0);
  s2->server->Stop();

  TransnoServer s3;
  s3.next_transno = 200;
  s3.Start(port);
  caller.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  {
    std::lock_guard lock(s2->mu);
    size_t ino1 = 0;
    for (const TransnoServer::Seen& r : s2->seen) ino1 += r.ino == 1;
    EXPECT_EQ(ino1, 1u) << "redone once on the cut-short instance";
  }
  std::lock_guard lock(s3.mu);
  ASSERT_EQ(s3.seen.size(), 4u);
  const std::vector<std::pair<uint64_t, uint64_t>> want{{1, 102}, {2, 0}, {3, 0}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(s3.seen[i].replay) << i;
    EXPECT_EQ(s3.seen[i].ino, want[i].first) << i;
    EXPECT_EQ(s3.seen[i].replay_transno, want[i].second) << "ino " << want[i].first;
  }
  EXPECT_FALSE(s3.seen[3].replay);
  EXPECT_EQ(s3.seen[3].ino, 4u);
  EXPECT_EQ(c.pending_replays(), 4u);
  s3.server->Stop();
}

// A server whose start count jumps by more than one had an instance the client never saw,
// which may have given the kept requests' numbers to other changes: they all go without a
// number. The next start, one more, gets the numbers the seen instance gave.
TEST(RpcReplayTest, AnInstanceNeverSeenMakesEveryNumberUnknown) {
  TransnoServer s1;
  s1.generation = 4;
  s1.Start(0);
  const uint16_t port = s1.server->port();
  ClientOptions o = ReplayingClient();
  RpcClient c(Loopback(port), o);
  proto::AttrReply rep;
  for (uint64_t ino : {1, 2}) {  // 101, 102
    ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(ino), &rep).ok());
  }
  s1.server->Stop();

  auto replayed = [](TransnoServer& s) {
    std::vector<std::pair<uint64_t, uint64_t>> got;  // (ino, replay transno)
    std::lock_guard lock(s.mu);
    for (const TransnoServer::Seen& r : s.seen) {
      if (r.replay) got.emplace_back(r.ino, r.replay_transno);
    }
    return got;
  };
  TransnoServer s2;
  s2.generation = 6;  // start 5 came and went
  s2.next_transno = 300;
  s2.Start(port);
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(3), &rep).ok());  // 303
  EXPECT_EQ(replayed(s2), (std::vector<std::pair<uint64_t, uint64_t>>{{1, 0}, {2, 0}}));
  s2.server->Stop();

  TransnoServer s3;
  s3.generation = 7;
  s3.Start(port);
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(4), &rep).ok());
  EXPECT_EQ(replayed(s3),
            (std::vector<std::pair<uint64_t, uint64_t>>{{1, 301}, {2, 302}, {3, 303}}));
  s3.server->Stop();
}

// Forwards each connection accepted on its port to the port `target` names when it is
// accepted: one client address whose new connections reach another server instance while
// the old one's are still open (a late reply).
class SwitchingProxy {
 public:
  explicit SwitchingProxy(uint16_t target) : target_(target) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    EXPECT_EQ(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~SwitchingProxy() {
    stop_ = true;
    acceptor_.join();
    for (std::thread& t : pumps_) t.join();
    close(listen_fd_);
  }
  uint16_t port() const { return port_; }
  void set_target(uint16_t port) { target_ = port; }

 private:
  void Accept() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int in = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (in < 0) continue;
      const int out = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(target_.load());
      if (connect(out, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(in);
        close(out);
        continue;
      }
      pumps_.emplace_back([this, in, out] { Pump(in, out); });
    }
  }
  // Copies both ways until either side closes, then closes both.
  void Pump(int a, int b) {
    char buf[16384];
    pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    while (!stop_) {
      if (poll(p, 2, 20) <= 0) continue;
      bool done = false;
      for (int i = 0; i < 2 && !done; ++i) {
        if (p[i].revents == 0) continue;
        const ssize_t n = read(p[i].fd, buf, sizeof buf);
        done = n <= 0 || !SendAllBytes(p[1 - i].fd, buf, static_cast<size_t>(n));
      }
      if (done) break;
    }
    close(a);
    close(b);
  }
  static bool SendAllBytes(int fd, const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<uint16_t> target_;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> pumps_;  // joined at destruction
};

// Replies that arrive late, from an instance another thread's connection has already found
// replaced: the new instance's kept requests must not be trimmed by the old instance's
// last_committed, and a change the old one had not committed is replayed to the new one
// without a number (the old number means nothing there) before the next request.
TEST(RpcReplayTest, ALateReplyFromAReplacedInstanceTrimsNothingAndIsReplayed) {
  TransnoServer s1;
  std::mutex hold_mu;
  std::condition_variable hold_cv;
  int held = 0;
  std::set<uint64_t> released;
  s1.hold = [&](uint64_t ino) {
    if (ino < 8) return;
    std::unique_lock lk(hold_mu);
    ++held;
    hold_cv.notify_all();
    hold_cv.wait(lk, [&] { return released.count(ino) > 0; });
  };
  s1.Start(0);
  SwitchingProxy proxy(s1.server->port());
  RpcClient c(Loopback(proxy.port()), ReplayingClient());
  proto::AttrReply rep;
  for (uint64_t ino : {1, 2}) {  // 101, 102, not committed
    ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(ino), &rep).ok());
  }
  // Two requests in flight at s1, held before it runs them.
  Status st8, st9;
  proto::AttrReply rep8, rep9;
  std::thread t8([&] { st8 = c.Call(proto::OP_MDS_SETATTR, Setattr(8), &rep8); });
  std::thread t9([&] { st9 = c.Call(proto::OP_MDS_SETATTR, Setattr(9), &rep9); });
  {
    std::unique_lock lk(hold_mu);
    ASSERT_TRUE(hold_cv.wait_for(lk, std::chrono::seconds(10), [&] { return held == 2; }));
  }
  // New connections now reach s2, a new instance: ino 1 and 2 are replayed (201, 202).
  TransnoServer s2;
  s2.next_transno = 200;
  s2.Start(0);
  proxy.set_target(s2.server->port());
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(3), &rep).ok());  // 203
  EXPECT_EQ(c.pending_replays(), 3u);
  auto release = [&](uint64_t ino) {
    std::lock_guard lk(hold_mu);
    released.insert(ino);
    hold_cv.notify_all();
  };
  // s1 answers ino 8 uncommitted (transno 103), then ino 9 with everything it numbered
  // committed (last_committed 500, above every number s2 gave).
  release(8);
  t8.join();
  s1.committed = 500;
  release(9);
  t9.join();
  ASSERT_TRUE(st8.ok() && st9.ok()) << st8.ToString() << " " << st9.ToString();
  EXPECT_EQ(c.pending_replays(), 4u) << "201-203 still kept, and ino 8 waits for replay";

  // s1 still answers on the connections t8 and t9 gave back, the last ones idle: they are
  // closed, not used, and ino 8 is replayed to s2 before the next request. s2 is not ready
  // for it the first time: that connection is dropped, and the call's retry connects anew
  // and replays it there.
  {
    std::lock_guard lock(s2.mu);
    bool refused = false;
    s2.not_ready = [refused](const TransnoServer::Seen& r) mutable {
      if (!r.replay || r.ino != 8 || refused) return false;
      return refused = true;
    };
  }
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(5), &rep).ok());
  {
    std::lock_guard lock(s1.mu);
    for (const TransnoServer::Seen& r : s1.seen) EXPECT_NE(r.ino, 5u) << "sent to s1";
  }
  s1.server->Stop();
  {
    std::lock_guard lock(s2.mu);
    ASSERT_GE(s2.seen.size(), 5u);
    ASSERT_GE(s2.seen.size(), 6u);
    for (size_t back : {2, 3}) {  // refused, then done
      const TransnoServer::Seen& r = s2.seen[s2.seen.size() - back];
      EXPECT_TRUE(r.replay) << back;
      EXPECT_EQ(r.ino, 8u) << "replayed before the next request";
      EXPECT_EQ(r.replay_transno, 0u) << "s1's number means nothing to s2";
    }
    EXPECT_EQ(s2.seen.back().ino, 5u);
    EXPECT_FALSE(s2.seen.back().replay);
  }
  s2.server->Stop();

  TransnoServer s3;
  s3.next_transno = 900;
  s3.Start(0);
  proxy.set_target(s3.server->port());
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(6), &rep).ok());
  std::vector<std::pair<uint64_t, uint64_t>> got;  // (ino, replay transno)
  {
    std::lock_guard lock(s3.mu);
    for (const TransnoServer::Seen& r : s3.seen) {
      if (r.replay) got.emplace_back(r.ino, r.replay_transno);
    }
  }
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, uint64_t>>{
                     {1, 201}, {2, 202}, {3, 203}, {8, 204}, {5, 205}}))
      << "nothing s2 did was trimmed by s1's late last_committed";
  s3.server->Stop();
}

// A CONNECT answered by an instance the client has seen replaced is a late answer, not a
// restart: the connection is dropped and nothing is replayed to it. An instance never seen
// whose start count went back (a server restored from a backup) is a restart like any other,
// with every number unknown.
TEST(RpcReplayTest, AReplacedInstanceAnsweringLateIsNotARestart) {
  constexpr uint64_t kOld = 0x6666;
  TransnoServer s6;
  s6.generation = 6;
  s6.instance = kOld;
  s6.Start(0);
  SwitchingProxy proxy(s6.server->port());
  ClientOptions o = ReplayingClient(300);
  std::atomic<int> restarts{0};
  o.on_restart = [&] { restarts++; };
  o.max_connections = 1;
  RpcClient c(Loopback(proxy.port()), o);
  proto::AttrReply rep;
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(1), &rep).ok());  // 101, kept
  TransnoServer s7;
  s7.generation = 7;
  s7.Start(0);
  proxy.set_target(s7.server->port());
  s6.server->Stop();
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(2), &rep).ok());  // ino 1 replayed first
  EXPECT_EQ(restarts.load(), 1);

  TransnoServer late;  // the replaced instance, answering a CONNECT late
  late.generation = 6;
  late.instance = kOld;
  late.Start(0);
  proxy.set_target(late.server->port());
  s7.server->Stop();  // drops the client's connection: the next call connects to `late`
  Status st = c.Call(proto::OP_MDS_SETATTR, Setattr(3), &rep);
  EXPECT_EQ(st.code(), Code::kDisconnected) << st.ToString();
  EXPECT_NE(st.message().find("replaced"), std::string::npos) << st.ToString();
  EXPECT_EQ(restarts.load(), 1);
  {
    std::lock_guard lock(late.mu);
    EXPECT_TRUE(late.seen.empty()) << "no replay and no request went to it";
  }
  EXPECT_EQ(c.pending_replays(), 2u);
  late.server->Stop();

  TransnoServer restored;
  restored.generation = 5;
  restored.Start(0);
  proxy.set_target(restored.server->port());
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(4), &rep).ok());
  EXPECT_EQ(restarts.load(), 2);
  std::lock_guard lock(restored.mu);
  ASSERT_EQ(restored.seen.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(restored.seen[i].replay) << i;
    EXPECT_EQ(restored.seen[i].ino, i + 1) << i;
    EXPECT_EQ(restored.seen[i].replay_transno, 0u) << "a count that went back: numbers unknown";
  }
  EXPECT_EQ(restored.seen[2].ino, 4u);
  restored.server->Stop();
}

// A replay the restarted server refuses (a conflict: another client took the name) is
// logged and dropped; the others and the new request still go through.
TEST(RpcReplayTest, ARefusedReplayIsDroppedAndTheRestGoOn) {
  TransnoServer s1;
  s1.Start(0);
  const uint16_t port = s1.server->port();
  ClientOptions o = ReplayingClient();
  RpcClient c(Loopback(port), o);
  proto::AttrReply rep;
  for (uint64_t ino : {1, 2, 3}) {
    ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(ino), &rep).ok());
  }
  s1.server->Stop();

  ServerOptions opts;
  opts.name = "refusing";
  opts.fsname = "testfs";
  RpcServer s2(opts);
  std::vector<uint64_t> done;
  std::mutex mu;
  s2.Register<proto::SetattrRequest, proto::AttrReply>(
      proto::OP_MDS_SETATTR,
      [&](RpcContext& ctx, const proto::SetattrRequest& req, proto::AttrReply*) {
        std::lock_guard lock(mu);
        if (ctx.replay && req.ino() == 2) return Status(Code::kExist, "taken meanwhile");
        done.push_back(req.ino());
        return Status::Ok();  // transno 0: committed at once
      });
  ASSERT_TRUE(s2.Start(Loopback(port)).ok());
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(4), &rep).ok());
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(done, (std::vector<uint64_t>{1, 3, 4}));
  }
  EXPECT_EQ(c.replays_sent(), 3u);
  EXPECT_EQ(c.pending_replays(), 0u) << "the refused one is not kept for another try";
  s2.Stop();
}

TEST(RpcReplayTest, NothingIsKeptWithoutTheOption) {
  TransnoServer s;
  s.Start(0);
  ClientOptions o;
  o.fsname = "testfs";
  RpcClient c(Loopback(s.server->port()), o);
  proto::AttrReply rep;
  ASSERT_TRUE(c.Call(proto::OP_MDS_SETATTR, Setattr(1), &rep).ok());
  EXPECT_EQ(c.pending_replays(), 0u);
  s.server->Stop();
}

}  // namespace
}  // namespace stria::lnet
