// Shared bulk (lnet/shared_bulk.h): a local server puts reply bulk straight into the
// client's arena, only there, only where asked, and never after the client gave up.
#include "lnet/shared_bulk.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lnet/buffer.h"
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

// A read at this offset is answered late: after the client's timeout.
constexpr uint64_t kSlowOffset = 999;
constexpr int kSlowMs = 1500;

class SharedBulkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LndConfig c = saved_;
    c.local_sockets = true;
    c.local_shared_bulk = true;
    ConfigureLnds(c);
    arena_ = BulkArena::Create();
    ASSERT_NE(arena_, nullptr);
    ServerOptions opts;
    opts.name = "shared";
    opts.fsname = "testfs";
    opts.worker_threads = 4;
    server_ = std::make_unique<RpcServer>(opts);
    server_->Register<proto::OstIoRequest, proto::OstIoReply>(
        proto::OP_OST_READ,
        [](RpcContext& ctx, const proto::OstIoRequest& req, proto::OstIoReply* rep) {
          if (req.offset() == kSlowOffset) {
            std::this_thread::sleep_for(std::chrono::milliseconds(kSlowMs));
          }
          const size_t len = req.length();
          std::span<uint8_t> dst = ctx.ReplyBulkRoom(len);
          for (size_t i = 0; i < len; ++i) dst[i] = Pattern(req.offset(), i);
          ctx.ReplyBulkFilled(len);
          rep->set_length(len);
          return Status::Ok();
        });
    // Writes: OP_OST_WRITE reads its bulk in place, OP_MDS_DOM_WRITE gets a copy. Each
    // records what it was given; a write at kSlowOffset reads its bytes after the client's
    // timeout.
    for (auto op : {proto::OP_OST_WRITE, proto::OP_MDS_DOM_WRITE}) {
      server_->Register<proto::OstIoRequest, proto::OstIoReply>(
          op, [this](RpcContext& ctx, const proto::OstIoRequest& req, proto::OstIoReply* rep) {
            if (req.offset() == kSlowOffset) {
              std::this_thread::sleep_for(std::chrono::milliseconds(kSlowMs));
            }
            std::lock_guard lk(seen_mu_);
            seen_.push_back({ctx.bulk_in.data(), ctx.bulk_in.size(),
                             Wrong(ctx.bulk_in, req.offset())});
            rep->set_length(ctx.bulk_in.size());
            return Status::Ok();
          });
    }
    server_->ReadsBulkInPlace(proto::OP_OST_WRITE);
    ASSERT_TRUE(server_->Start(tf::Loopback(0)).ok());
  }
  void TearDown() override {
    server_->Stop();
    for (auto [p, cap] : blocks_) arena_->Free(p, cap);
    ConfigureLnds(saved_);
  }

  ClientOptions Options() const {
    ClientOptions o;
    o.fsname = "testfs";
    return o;
  }
  // A client that gives up on an exchange after 300 ms, and does not retry it.
  ClientOptions Impatient() const {
    ClientOptions o = Options();
    o.rpc_timeout_ms = 300;
    o.retry_deadline_ms = 0;
    return o;
  }

  // Reads buf.size() bytes at `offset` into buf; the call's status.
  static Status Read(RpcClient& client, uint64_t offset, std::span<uint8_t> buf) {
    size_t got_len = 0;
    proto::OstIoRequest r;
    r.set_offset(offset);
    r.set_length(buf.size());
    proto::OstIoReply rep;
    CallBulk in;
    in.in = buf;
    in.in_len = &got_len;
    Status st = client.Call(proto::OP_OST_READ, r, &rep, in);
    if (st.ok() && got_len != buf.size()) return Status(Code::kIO, "short read");
    return st;
  }

  // Writes the bytes of `bufs` (the pattern at `offset`) with opcode `op`.
  static Status Write(RpcClient& client, uint64_t offset, std::vector<std::span<uint8_t>> bufs,
                      proto::Opcode op = proto::OP_OST_WRITE) {
    std::vector<iovec> iov;
    size_t done = 0;
    for (std::span<uint8_t> b : bufs) {
      for (size_t i = 0; i < b.size(); ++i) b[i] = Pattern(offset, done + i);
      done += b.size();
      iov.push_back({b.data(), b.size()});
    }
    proto::OstIoRequest r;
    r.set_offset(offset);
    proto::OstIoReply rep;
    CallBulk out;
    out.out = iov;
    return client.Call(op, r, &rep, out);
  }

  struct Seen {
    const uint8_t* data;  // where the handler's bulk_in was
    size_t size;
    size_t wrong;  // bytes not as written
  };
  std::vector<Seen> TakeSeen() {
    std::lock_guard lk(seen_mu_);
    return std::exchange(seen_, {});
  }
  // Whether p lies in this process's mapping of the client's arena: the server's (one per
  // arena and process, SharedRegion::Map).
  bool InServersMapping(const uint8_t* p) {
    Result<std::shared_ptr<SharedRegion>> r = SharedRegion::Map(dup(arena_->fd()), arena_->size());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && p >= (*r)->base() && p < (*r)->base() + (*r)->size();
  }

  static size_t Wrong(std::span<const uint8_t> buf, uint64_t offset) {
    size_t wrong = 0;
    for (size_t i = 0; i < buf.size(); ++i) wrong += buf[i] != Pattern(offset, i);
    return wrong;
  }

  std::span<uint8_t> ArenaBuffer(size_t size) {
    size_t cap = 0;
    uint8_t* p = arena_->Allocate(size, &cap);
    EXPECT_NE(p, nullptr);
    blocks_.emplace_back(p, cap);
    return {p, size};
  }

  // Sends a request with a shared bulk descriptor on a raw connection (bulk_len: of a
  // request whose bulk is in the arena) and reads its reply.
  static Result<tf::Frame> AskRaw(int raw, proto::Opcode op, const proto::OstIoRequest& req,
                                  uint32_t flags, uint64_t descriptor, uint64_t xid,
                                  uint64_t bulk_len = 0) {
    std::string body;
    req.SerializeToString(&body);
    FrameHeader h;
    h.opcode = op;
    h.xid = xid;
    h.flags = flags;
    h.bulk_len = bulk_len;
    h.last_committed = descriptor;
    STRIA_RETURN_IF_ERROR(tf::SendFrame(raw, h, body, {}));
    return tf::RecvFrame(raw);
  }

  // Sends OP_LNET_SHARE_BULK on a raw connection, passing fd (-1: none); the reply's status.
  static Code ShareRaw(int raw, int fd) {
    proto::ShareBulkRequest req;
    req.set_size(1 << 20);
    std::string body;
    req.SerializeToString(&body);
    FrameHeader h;
    h.opcode = proto::OP_LNET_SHARE_BULK;
    h.xid = 7;
    if (!tf::SendFrame(raw, h, body, {}, 0, fd).ok()) return Code::kDisconnected;
    Result<tf::Frame> reply = tf::RecvFrame(raw);
    return reply.ok() ? static_cast<Code>(reply->h.status) : Code::kDisconnected;
  }

  LndConfig saved_ = CurrentLndConfig();
  BulkArena* arena_ = nullptr;
  std::vector<std::pair<uint8_t*, size_t>> blocks_;
  std::unique_ptr<RpcServer> server_;
  std::mutex seen_mu_;
  std::vector<Seen> seen_;  // GUARDED_BY(seen_mu_)
};

// A buffer from the arena: the server's handler writes the bytes into it itself (nothing
// in the stream); the reply says how many.
TEST_F(SharedBulkTest, AReplyLandsInTheArenaBuffer) {
  RpcClient client(tf::Loopback(server_->port()), Options());
  std::span<uint8_t> buf = ArenaBuffer(1 << 20);
  ASSERT_TRUE(Read(client, 5, buf).ok());
  EXPECT_EQ(Wrong(buf, 5), 0u);
  EXPECT_EQ(server_->load().bulk_shared, 1u);
  EXPECT_EQ(server_->load().bulk_spliced, 0u);
}

// Memory outside the arena, or a range not on page boundaries, goes over the socket.
TEST_F(SharedBulkTest, OtherBuffersGoOverTheSocket) {
  RpcClient client(tf::Loopback(server_->port()), Options());
  std::vector<uint8_t> priv(1 << 20);
  ASSERT_TRUE(Read(client, 1, priv).ok());
  EXPECT_EQ(Wrong(priv, 1), 0u);
  std::span<uint8_t> arena = ArenaBuffer(1 << 20);
  ASSERT_TRUE(Read(client, 2, arena.subspan(100, 100'000)).ok());
  EXPECT_EQ(Wrong(arena.subspan(100, 100'000), 2), 0u);
  EXPECT_EQ(server_->load().bulk_shared, 0u);
  ASSERT_TRUE(Read(client, 3, arena.first(8192)).ok());
  EXPECT_EQ(server_->load().bulk_shared, 1u);
}

// The client gives up on a read (its timeout) while the server is still at it. The server
// then writes the reply's bytes into its mapping; the caller, who reused the buffer, sees
// none of them: the range was given private pages when the exchange failed.
TEST_F(SharedBulkTest, AReadTheClientGaveUpOnCannotWriteIntoTheBufferLater) {
  RpcClient client(tf::Loopback(server_->port()), Impatient());
  std::span<uint8_t> buf = ArenaBuffer(1 << 20);
  ASSERT_TRUE(arena_->Offset(buf.data(), buf.size()).has_value());
  Status st = Read(client, kSlowOffset, buf);
  ASSERT_EQ(st.code(), Code::kTimeout) << st.ToString();
  std::memset(buf.data(), 0x11, buf.size());  // the caller's next use of it
  std::this_thread::sleep_for(std::chrono::milliseconds(kSlowMs + 500));
  size_t changed = 0;
  for (uint8_t b : buf) changed += b != 0x11;
  EXPECT_EQ(changed, 0u);
  EXPECT_FALSE(arena_->Offset(buf.data(), buf.size()).has_value());  // no longer shared
  // Read again, the detached buffer is served over the socket.
  ASSERT_TRUE(Read(client, 4, buf).ok());
  EXPECT_EQ(Wrong(buf, 4), 0u);
  // Freed, it is retired: the next block of its size is another, and shared.
  auto [p, cap] = blocks_.back();
  blocks_.pop_back();
  arena_->Free(p, cap);
  BulkBlock next(buf.size());
  EXPECT_NE(next.data(), p);
  EXPECT_TRUE(arena_->Offset(next.data(), next.size()).has_value());
}

// A write whose bytes are in the arena sends only their descriptor: the handler reads them
// in the server's mapping of the arena, with no wire crc (nothing crossed a wire), and a
// length that is not a whole number of pages is exact.
TEST_F(SharedBulkTest, AWriteIsReadInPlaceFromTheArena) {
  RpcClient client(tf::Loopback(server_->port()), Options());
  std::span<uint8_t> buf = ArenaBuffer(100'000);
  ASSERT_TRUE(Write(client, 7, {buf}).ok());
  std::vector<Seen> seen = TakeSeen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].size, 100'000u);
  EXPECT_EQ(seen[0].wrong, 0u);
  EXPECT_TRUE(InServersMapping(seen[0].data));
  const RpcServer::Load load = server_->load();
  EXPECT_EQ(load.bulk_in_shared, 1u);
  EXPECT_EQ(load.bulk_checked + load.bulk_unchecked, 0u);  // none came in the stream
}

// Bulk not in the arena, not starting on a page, or in two pieces goes in the stream, with
// its crc; shared bulk for an opcode that does not read in place is copied out of the arena
// before its handler runs.
TEST_F(SharedBulkTest, OtherWritesGoOverTheSocketAndOthersGetACopy) {
  RpcClient client(tf::Loopback(server_->port()), Options());
  std::vector<uint8_t> priv(65536);
  ASSERT_TRUE(Write(client, 1, {priv}).ok());
  std::span<uint8_t> a = ArenaBuffer(1 << 20);
  ASSERT_TRUE(Write(client, 2, {a.subspan(100, 8192)}).ok());
  ASSERT_TRUE(Write(client, 3, {a.first(4096), a.subspan(8192, 4096)}).ok());
  for (const Seen& s : TakeSeen()) {
    EXPECT_EQ(s.wrong, 0u);
    EXPECT_FALSE(InServersMapping(s.data));
  }
  EXPECT_EQ(server_->load().bulk_in_shared, 0u);
  EXPECT_EQ(server_->load().bulk_checked, 3u);
  ASSERT_TRUE(Write(client, 4, {a.first(8192)}, proto::OP_MDS_DOM_WRITE).ok());
  std::vector<Seen> seen = TakeSeen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].wrong, 0u);
  EXPECT_FALSE(InServersMapping(seen[0].data));
  EXPECT_EQ(server_->load().bulk_in_shared, 1u);
}

// The client gives up on a write (its timeout) while the server has yet to read its bytes,
// and reuses the buffer. The late read still finds the bytes the request meant: the range
// was retired with private pages of the same bytes for the caller. A resend goes over the
// socket.
TEST_F(SharedBulkTest, AWriteTheClientGaveUpOnIsReadLateAsItWasSent) {
  RpcClient client(tf::Loopback(server_->port()), Impatient());
  std::span<uint8_t> buf = ArenaBuffer(1 << 20);
  Status st = Write(client, kSlowOffset, {buf});
  ASSERT_EQ(st.code(), Code::kTimeout) << st.ToString();
  EXPECT_EQ(Wrong(buf, kSlowOffset), 0u);  // the caller's view keeps the bytes
  EXPECT_FALSE(arena_->Offset(buf.data(), buf.size()).has_value());  // no longer shared
  std::memset(buf.data(), 0x11, buf.size());  // the caller's next use of it
  std::this_thread::sleep_for(std::chrono::milliseconds(kSlowMs + 500));
  std::vector<Seen> seen = TakeSeen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].wrong, 0u);  // what was sent, not the 0x11s
  ASSERT_TRUE(Write(client, 5, {buf}).ok());
  seen = TakeSeen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].wrong, 0u);
  EXPECT_FALSE(InServersMapping(seen[0].data));
  EXPECT_EQ(server_->load().bulk_in_shared, 1u);
}

// Request bulk buffers come from the arena only once a server took request bulk from it:
// a process that talks to no such server keeps them private (BufferPool).
TEST_F(SharedBulkTest, ShareableBuffersComeFromTheArenaOnceAServerTakesThem) {
  EXPECT_FALSE(Buffer::Shareable(1 << 20).shared());
  RpcClient client(tf::Loopback(server_->port()), Options());
  std::span<uint8_t> buf = ArenaBuffer(8192);
  ASSERT_TRUE(Write(client, 6, {buf}).ok());  // connects, shares the arena
  const Buffer b = Buffer::Shareable(100'000);
  EXPECT_TRUE(b.shared());
  EXPECT_TRUE(arena_->Offset(b.data(), 102'400).has_value());
}

// Two exchanges of the same bytes (a mirrored write: one buffer to each mirror, in chunks
// of different sizes) both given up on: the second retirement covers its whole range, the
// part the first one retired too. The caller's view keeps the bytes; the shared pages keep
// them for late readers, whatever the caller writes next.
TEST_F(SharedBulkTest, ARetirementCoversItsWholeRangeAfterAnOverlappingOne) {
  std::span<uint8_t> buf = ArenaBuffer(1 << 20);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = Pattern(3, i);
  arena_->Retire(buf.data(), 64 << 10);
  arena_->Retire(buf.data(), buf.size());
  EXPECT_FALSE(arena_->Offset(buf.data() + (64 << 10), 64 << 10).has_value());
  EXPECT_FALSE(arena_->Offset(buf.data() + buf.size() - 4096, 4096).has_value());
  EXPECT_EQ(Wrong(buf, 3), 0u);
  std::memset(buf.data(), 0x22, buf.size());
  Result<std::shared_ptr<SharedRegion>> r = SharedRegion::Map(dup(arena_->fd()), arena_->size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const size_t at = static_cast<size_t>(buf.data() - arena_->base());
  EXPECT_EQ(Wrong({(*r)->base() + at, buf.size()}, 3), 0u);
}

// Freed blocks keep their pages up to 64 MiB; beyond it those of the blocks freed longest
// ago go back to the system, and the one freed last, handed out next, keeps its own.
TEST_F(SharedBulkTest, FreedBlocksBeyondTheCapGiveTheirPagesBack) {
  auto resident = [&] {
    struct stat st;
    EXPECT_EQ(fstat(arena_->fd(), &st), 0);
    return static_cast<size_t>(st.st_blocks) * 512;
  };
  const size_t before = resident();
  std::vector<std::pair<uint8_t*, size_t>> blocks;
  for (int i = 0; i < 96; ++i) {
    size_t cap = 0;
    uint8_t* p = arena_->Allocate(1 << 20, &cap);
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, cap);
    blocks.emplace_back(p, cap);
  }
  const size_t touched = resident();
  EXPECT_GE(touched, before + (96u << 20));
  for (auto [p, cap] : blocks) arena_->Free(p, cap);
  EXPECT_LE(resident(), touched - (30u << 20));
  EXPECT_GE(resident(), before + (60u << 20));  // the cap's worth stays
  const size_t now = resident();
  size_t cap = 0;
  uint8_t* p = arena_->Allocate(1 << 20, &cap);
  EXPECT_EQ(p, blocks.back().first);
  std::memset(p, 2, cap);  // no page to fault in
  EXPECT_EQ(resident(), now);
  arena_->Free(p, cap);
  // A larger block freed alone in its size keeps its pages too: older smaller ones give
  // theirs.
  size_t big_cap = 0;
  uint8_t* big = arena_->Allocate(2 << 20, &big_cap);
  ASSERT_NE(big, nullptr);
  std::memset(big, 3, big_cap);
  arena_->Free(big, big_cap);
  const size_t after_big = resident();
  EXPECT_EQ(arena_->Allocate(2 << 20, &big_cap), big);
  std::memset(big, 4, big_cap);
  EXPECT_EQ(resident(), after_big);
  arena_->Free(big, big_cap);
}

// A server that offers no request bulk in place (STRIA_LNET_SHARED_WRITES=0, or one from
// before that replies to OP_LNET_SHARE_BULK with an empty body) gets writes in the stream.
TEST_F(SharedBulkTest, WritesOffMeansOverTheSocket) {
  LndConfig c = CurrentLndConfig();
  c.local_shared_writes = false;
  ConfigureLnds(c);
  RpcClient client(tf::Loopback(server_->port()), Options());
  std::span<uint8_t> buf = ArenaBuffer(1 << 20);
  ASSERT_TRUE(Write(client, 9, {buf}).ok());
  std::vector<Seen> seen = TakeSeen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].wrong, 0u);
  EXPECT_EQ(server_->load().bulk_in_shared, 0u);
  ASSERT_TRUE(Read(client, 8, buf).ok());  // replies still land in place
  EXPECT_EQ(server_->load().bulk_shared, 1u);
}

// A request that says its bulk is in a shared arena, on a connection that shared none or
// with a descriptor beyond the region or shorter than its bulk, gets a clear error, and
// the connection goes on serving.
TEST_F(SharedBulkTest, ARequestBulkDescriptorThatIsNotSharedIsAnError) {
  Result<int> raw = tf::ConnectRaw(server_->port());
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  auto write = [&](uint64_t descriptor, uint64_t bulk_len, uint64_t xid) {
    return AskRaw(*raw, proto::OP_OST_WRITE, {}, kFlagRequestBulkShared, descriptor, xid,
                  bulk_len);
  };
  Result<tf::Frame> unshared = write(PackSharedBulk(0, 8192), 8192, 20);
  ASSERT_TRUE(unshared.ok()) << unshared.status().ToString();
  EXPECT_EQ(static_cast<Code>(unshared->h.status), Code::kProtocol);
  EXPECT_NE(unshared->body.find("shared none"), std::string::npos) << unshared->body;
  const int mfd = memfd_create("region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(mfd, 1 << 20), 0);
  ASSERT_EQ(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  ASSERT_EQ(ShareRaw(*raw, mfd), Code::kOk);
  Result<tf::Frame> beyond = write(PackSharedBulk(1 << 20, 8192), 8192, 21);
  ASSERT_TRUE(beyond.ok()) << beyond.status().ToString();
  EXPECT_EQ(static_cast<Code>(beyond->h.status), Code::kProtocol);
  EXPECT_NE(beyond->body.find("outside the shared region"), std::string::npos) << beyond->body;
  Result<tf::Frame> longer = write(PackSharedBulk(0, 8192), 8193, 22);
  ASSERT_TRUE(longer.ok()) << longer.status().ToString();
  EXPECT_EQ(static_cast<Code>(longer->h.status), Code::kProtocol);
  Result<tf::Frame> good = write(PackSharedBulk(4096, 8192), 8000, 23);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->h.status, 0) << good->body;
  std::vector<Seen> seen = TakeSeen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].size, 8000u);
  close(mfd);
  close(*raw);
}

// A server maps only a sealed memfd, passed with the frame; it refuses anything else with
// kInval and goes on serving the connection.
TEST_F(SharedBulkTest, TheServerMapsOnlyASealedMemfd) {
  Result<int> raw = tf::ConnectRaw(server_->port());
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  ASSERT_TRUE(IsLocalSocket(*raw));
  EXPECT_EQ(ShareRaw(*raw, -1), Code::kInval);  // no descriptor
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  EXPECT_EQ(ShareRaw(*raw, p[0]), Code::kInval);  // not a memfd
  close(p[0]);
  close(p[1]);
  const int unsealed = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(unsealed, 1 << 20), 0);
  EXPECT_EQ(ShareRaw(*raw, unsealed), Code::kInval);  // it could be truncated under the server
  ASSERT_EQ(fcntl(unsealed, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  EXPECT_EQ(ShareRaw(*raw, unsealed), Code::kOk);
  close(unsealed);
  close(*raw);
}

// On a raw connection that shared a 1 MiB memfd: a descriptor beyond it is a clear error
// and the connection goes on; one inside it gets the bytes in the memfd and none in the
// stream.
TEST_F(SharedBulkTest, ADescriptorOutsideTheRegionIsAnError) {
  Result<int> raw = tf::ConnectRaw(server_->port());
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  const int mfd = memfd_create("region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(mfd, 1 << 20), 0);
  ASSERT_EQ(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  ASSERT_EQ(ShareRaw(*raw, mfd), Code::kOk);
  auto* region =
      static_cast<uint8_t*>(mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0));
  ASSERT_NE(region, MAP_FAILED);
  auto ask = [&](uint64_t descriptor, uint64_t xid) {
    proto::OstIoRequest req;
    req.set_offset(6);
    req.set_length(8192);
    return AskRaw(*raw, proto::OP_OST_READ, req, kFlagBulkShared, descriptor, xid);
  };
  Result<tf::Frame> bad = ask(PackSharedBulk(1 << 20, 8192), 10);
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(static_cast<Code>(bad->h.status), Code::kProtocol);
  EXPECT_NE(bad->body.find("outside the shared region"), std::string::npos) << bad->body;
  Result<tf::Frame> good = ask(PackSharedBulk(4096, 8192), 11);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->h.status, 0);
  EXPECT_TRUE(good->h.flags & kFlagBulkShared);
  EXPECT_EQ(good->h.bulk_len, 8192u);
  EXPECT_EQ(Wrong({region + 4096, 8192}, 6), 0u);
  munmap(region, 1 << 20);
  close(mfd);
  close(*raw);
}

// Turned off, a server maps nothing, and the client's arena buffers go over the socket.
TEST_F(SharedBulkTest, OffMeansOverTheSocket) {
  LndConfig c = CurrentLndConfig();
  c.local_shared_bulk = false;
  ConfigureLnds(c);
  Result<int> raw = tf::ConnectRaw(server_->port());
  ASSERT_TRUE(raw.ok());
  const int mfd = memfd_create("region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(mfd, 1 << 20), 0);
  ASSERT_EQ(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  EXPECT_EQ(ShareRaw(*raw, mfd), Code::kInval);
  close(mfd);
  close(*raw);
  RpcClient client(tf::Loopback(server_->port()), Options());
  std::span<uint8_t> buf = ArenaBuffer(1 << 20);
  ASSERT_TRUE(Read(client, 8, buf).ok());
  EXPECT_EQ(Wrong(buf, 8), 0u);
  EXPECT_EQ(server_->load().bulk_shared, 0u);
}

// A server maps one arena once, however many connections pass it (each mapping's pages
// pay their first touches again on this project's VM), and never beyond its limit.
TEST(SharedRegionTest, OneMappingPerArenaAndNoneBeyondTheLimit) {
  const int mfd = memfd_create("region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(mfd, 1 << 20), 0);
  ASSERT_EQ(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  Result<std::shared_ptr<SharedRegion>> a = SharedRegion::Map(dup(mfd), 1 << 20);
  Result<std::shared_ptr<SharedRegion>> b = SharedRegion::Map(dup(mfd), 1 << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ((*a)->size(), 1u << 20);
  EXPECT_EQ(SharedRegion::Map(dup(mfd), 512 << 10).status().code(), Code::kInval);
  (*a)->base()[4096] = 42;  // the memfd's pages, as the client sees them
  a->reset();
  b->reset();
  Result<std::shared_ptr<SharedRegion>> c = SharedRegion::Map(dup(mfd), 1 << 20);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->base()[4096], 42);
  close(mfd);
}

// A block the arena has no room for comes from the BufferPool: private, and its reads go
// over the socket.
TEST(BulkBlockTest, BeyondTheArenaABlockIsPrivate) {
  BulkArena* arena = BulkArena::Create();
  ASSERT_NE(arena, nullptr);
  BulkBlock small(1 << 20);
  EXPECT_TRUE(small.shared());
  EXPECT_TRUE(arena->Offset(small.data(), small.size()).has_value());
  BulkBlock huge(arena->size() + 1);  // address space only: never touched
  EXPECT_FALSE(huge.shared());
  EXPECT_FALSE(arena->Offset(huge.data(), 1 << 20).has_value());
}

// The kB that /proc/self/smaps counts as `field` in the mapping holding `p`; -1 if none.
long SmapsField(const void* p, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// A block of a huge page or more starts on a huge page boundary, and PreferHugePages makes
// it one huge page of the memfd (so an O_DIRECT read into it is one disk request), keeping
// its bytes.
TEST(BulkBlockTest, ABlockOfAHugePageOrMoreBecomesOneKeepingItsBytes) {
  BulkArena* arena = BulkArena::Create();
  ASSERT_NE(arena, nullptr);
  BulkBlock small(4096);  // the next large block still starts on a boundary
  BulkBlock block((1 << 20) + 4096);
  ASSERT_TRUE(block.shared());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block.data()) % (2 << 20), 0u);
  for (size_t i = 0; i < block.size(); ++i) block.data()[i] = static_cast<uint8_t>(i * 7 + 1);
  {  // Whether this kernel can (MADV_COLLAPSE of memfd pages, Linux 6.1), asked of a memfd
     // of the test's own.
    const int fd = memfd_create("probe", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 4 << 20), 0);
    void* m = mmap(nullptr, 4 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(m, MAP_FAILED);
    void* aligned = reinterpret_cast<void*>(
        (reinterpret_cast<uintptr_t>(m) + (2 << 20) - 1) & ~uintptr_t{(2 << 20) - 1});
    std::memset(m, 1, 4 << 20);
    const bool can = madvise(aligned, 2 << 20, 25 /* MADV_COLLAPSE */) == 0;
    munmap(m, 4 << 20);
    close(fd);
    if (!can) GTEST_SKIP() << "this kernel cannot collapse memfd pages (MADV_COLLAPSE)";
  }
  const long before = SmapsField(block.data(), "ShmemPmdMapped");
  EXPECT_EQ(block.PreferHugePages(), size_t{2} << 20);
  EXPECT_GE(SmapsField(block.data(), "ShmemPmdMapped"), before + 2048);
  for (size_t i = 0; i < block.size(); ++i) {
    ASSERT_EQ(block.data()[i], static_cast<uint8_t>(i * 7 + 1)) << "byte " << i;
  }
  // A block smaller than a huge page has no aligned range to make one of.
  EXPECT_EQ(small.PreferHugePages(), 0u);
}

}  // namespace
}  // namespace stria::lnet
