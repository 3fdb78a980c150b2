// Service-level tests: the OST handlers on a real lnet::RpcServer over loopback TCP, driven by
// a real lnet::RpcClient; and OssServer's start-up checks and MGS registration against a
// small MGS stand-in (a real RpcServer answering OP_MGS_REGISTER_OST).
#include "oss/oss_service.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/layout.h"
#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "lnet/test_frames.h"
#include "oss/internal/test_util.h"
#include "oss/oss_server.h"
#include "proto/stria.pb.h"
#include "tests/harness/test_util.h"

namespace stria::oss {
namespace {

using testing::Pattern;
using testing::TempDir;

constexpr uint32_t kOst = 2;

class OssServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(FormatOst(dir_.path(), OstMeta{"testfs", kOst, NewUuid()}).ok());
    auto store = ObjectStore::Open(dir_.path(), kOst, "testfs");
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(service_.AddOst(std::move(*store)).ok());
    service_.ExpectOst(7);  // configured, not formatted
    lnet::ServerOptions so;
    so.name = "oss-test";
    so.worker_threads = 4;
    server_ = std::make_unique<lnet::RpcServer>(so);
    service_.Register(server_.get());
    Status st = server_->Start(lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", 0});
    ASSERT_TRUE(st.ok()) << st.ToString();
    lnet::ClientOptions co;
    co.retry_deadline_ms = 300;
    client_ = std::make_unique<lnet::RpcClient>(
        lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", server_->port()}, co);
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
  }

  static proto::ObjectId Obj(uint64_t id, uint32_t ost = kOst) {
    proto::ObjectId o;
    o.set_ost_idx(ost);
    o.set_object_id(id);
    return o;
  }

  Status Write(uint64_t id, uint64_t offset, const std::vector<uint8_t>& data,
               proto::OstIoReply* rep, uint32_t ost = kOst, int64_t claimed_len = -1) {
    proto::OstIoRequest req;
    *req.mutable_object() = Obj(id, ost);
    req.set_offset(offset);
    req.set_length(claimed_len >= 0 ? static_cast<uint64_t>(claimed_len) : data.size());
    iovec iov{const_cast<uint8_t*>(data.data()), data.size()};
    lnet::CallBulk bulk;
    bulk.out = std::span<const iovec>(&iov, 1);
    return client_->Call(proto::OP_OST_WRITE, req, rep, bulk);
  }

  Status Read(uint64_t id, uint64_t offset, uint64_t length, std::vector<uint8_t>* out,
              proto::OstIoReply* rep, uint32_t ost = kOst) {
    proto::OstIoRequest req;
    *req.mutable_object() = Obj(id, ost);
    req.set_offset(offset);
    req.set_length(length);
    out->assign(std::min<uint64_t>(length, kMaxReadBytes), 0xEE);
    size_t got = 0;
    lnet::CallBulk bulk;
    bulk.in = std::span<uint8_t>(*out);
    bulk.in_len = &got;
    Status st = client_->Call(proto::OP_OST_READ, req, rep, bulk);
    out->resize(st.ok() ? got : 0);
    return st;
  }

  TempDir dir_;
  OssService service_;
  std::unique_ptr<lnet::RpcServer> server_;
  std::unique_ptr<lnet::RpcClient> client_;
};

TEST_F(OssServiceTest, LargeWriteAndAwkwardReads) {
  const uint64_t base = 3 * 1024 * 1024 + 17;
  auto data = Pattern(8 << 20, base, 11);  // 8 MiB request bulk
  proto::OstIoReply rep;
  Status st = Write(1, base, data, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rep.length(), data.size());
  EXPECT_EQ(rep.object_size(), base + data.size());

  std::vector<uint8_t> out;
  // All of it.
  ASSERT_TRUE(Read(1, base, data.size(), &out, &rep).ok());
  EXPECT_EQ(out, data);
  // Unaligned middle range.
  ASSERT_TRUE(Read(1, base + 4095, 1'000'003, &out, &rep).ok());
  EXPECT_EQ(out, std::vector<uint8_t>(data.begin() + 4095, data.begin() + 4095 + 1'000'003));
  // Straddling the leading hole: zeros, then data.
  ASSERT_TRUE(Read(1, base - 100, 300, &out, &rep).ok());
  ASSERT_EQ(out.size(), 300u);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(out[i], 0);
  EXPECT_EQ(std::vector<uint8_t>(out.begin() + 100, out.end()),
            std::vector<uint8_t>(data.begin(), data.begin() + 200));
  // Straddling the end: shortened to what exists.
  ASSERT_TRUE(Read(1, base + data.size() - 10, 4096, &out, &rep).ok());
  EXPECT_EQ(out.size(), 10u);
  EXPECT_EQ(rep.length(), 10u);
  EXPECT_EQ(rep.object_size(), base + data.size());
  // Past the end and on a missing object: empty.
  ASSERT_TRUE(Read(1, base + data.size() + 1, 4096, &out, &rep).ok());
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(Read(424242, 0, 4096, &out, &rep).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(rep.object_size(), 0u);
  // Zero-length read.
  ASSERT_TRUE(Read(1, base, 0, &out, &rep).ok());
  EXPECT_TRUE(out.empty());
}

TEST_F(OssServiceTest, BadRequestsAreRefusedAndServiceKeepsServing) {
  auto data = Pattern(4096, 0, 1);
  proto::OstIoReply rep;
  EXPECT_EQ(Write(1, 0, data, &rep, /*ost=*/99).code(), Code::kNoOst);
  EXPECT_EQ(Write(1, 0, data, &rep, kOst, /*claimed_len=*/4095).code(), Code::kInval);
  EXPECT_EQ(Write(1, 0, data, &rep, kOst, /*claimed_len=*/8192).code(), Code::kInval);
  EXPECT_EQ(Write(1, kMaxFileSize - 100, data, &rep).code(), Code::kInval);
  EXPECT_EQ(Write(1, ~0ull - 10, data, &rep).code(), Code::kInval);
  std::vector<uint8_t> out;
  EXPECT_EQ(Read(1, 0, kMaxReadBytes + 1, &out, &rep).code(), Code::kInval);
  EXPECT_EQ(Read(1, ~0ull - 1, 10, &out, &rep).code(), Code::kInval);
  Status nr = Read(1, 0, 10, &out, &rep, /*ost=*/7);
  EXPECT_EQ(nr.code(), Code::kNotReady) << nr.ToString();
  proto::OstIoRequest no_object;
  no_object.set_length(0);
  EXPECT_EQ(client_->Call(proto::OP_OST_READ, no_object, &rep).code(), Code::kInval);
  // Nothing was created by the refused writes, and good requests still work.
  proto::OstGetattrRequest ga;
  *ga.mutable_object() = Obj(1);
  proto::OstGetattrReply gar;
  ASSERT_TRUE(client_->Call(proto::OP_OST_GETATTR, ga, &gar).ok());
  EXPECT_FALSE(gar.exists());
  ASSERT_TRUE(Write(1, 0, data, &rep).ok());
  ASSERT_TRUE(client_->Call(proto::OP_OST_GETATTR, ga, &gar).ok());
  EXPECT_TRUE(gar.exists());
  EXPECT_EQ(gar.size(), 4096u);
}

TEST_F(OssServiceTest, PunchTruncateDestroyGetattrStatfsSync) {
  auto data = Pattern(1 << 20, 0, 3);
  proto::OstIoReply rep;
  proto::OstIoRequest wreq;
  ASSERT_TRUE(Write(5, 0, data, &rep).ok());

  proto::OstPunchRequest punch;
  *punch.mutable_object() = Obj(5);
  punch.set_offset(4096);
  punch.set_length(8192);
  ASSERT_TRUE(client_->Call(proto::OP_OST_PUNCH, punch, &rep).ok());
  EXPECT_EQ(rep.object_size(), 1u << 20);
  std::vector<uint8_t> out;
  ASSERT_TRUE(Read(5, 4000, 10000, &out, &rep).ok());
  ASSERT_EQ(out.size(), 10000u);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t at = 4000 + i;
    ASSERT_EQ(out[i], (at >= 4096 && at < 4096 + 8192) ? 0 : data[at]) << at;
  }

  proto::OstTruncateRequest trunc;
  *trunc.mutable_object() = Obj(5);
  trunc.set_size(5000);
  ASSERT_TRUE(client_->Call(proto::OP_OST_TRUNCATE, trunc, &rep).ok());
  EXPECT_EQ(rep.object_size(), 5000u);
  trunc.set_size(2 << 20);
  ASSERT_TRUE(client_->Call(proto::OP_OST_TRUNCATE, trunc, &rep).ok());
  proto::OstGetattrRequest ga;
  *ga.mutable_object() = Obj(5);
  proto::OstGetattrReply gar;
  ASSERT_TRUE(client_->Call(proto::OP_OST_GETATTR, ga, &gar).ok());
  EXPECT_TRUE(gar.exists());
  EXPECT_EQ(gar.size(), 2u << 20);
  trunc.set_size(kMaxFileSize + 1);
  EXPECT_EQ(client_->Call(proto::OP_OST_TRUNCATE, trunc, &rep).code(), Code::kInval);

  proto::OstSyncRequest sync;
  *sync.add_objects() = Obj(5);
  *sync.add_objects() = Obj(6);  // missing: fine
  ASSERT_TRUE(client_->Call(proto::OP_OST_SYNC, sync, &rep).ok());
  proto::OstSyncRequest sync_all;
  sync_all.set_ost_idx(kOst);
  ASSERT_TRUE(client_->Call(proto::OP_OST_SYNC, sync_all, &rep).ok());
  sync_all.set_ost_idx(99);
  EXPECT_EQ(client_->Call(proto::OP_OST_SYNC, sync_all, &rep).code(), Code::kNoOst);

  proto::OstDestroyRequest destroy;
  *destroy.add_objects() = Obj(5);
  *destroy.add_objects() = Obj(12345);  // missing: fine
  ASSERT_TRUE(client_->Call(proto::OP_OST_DESTROY, destroy, &rep).ok());
  ASSERT_TRUE(client_->Call(proto::OP_OST_GETATTR, ga, &gar).ok());
  EXPECT_FALSE(gar.exists());
  proto::OstDestroyRequest bad_destroy;
  *bad_destroy.add_objects() = Obj(5, 99);
  EXPECT_EQ(client_->Call(proto::OP_OST_DESTROY, bad_destroy, &rep).code(), Code::kNoOst);

  proto::OstStatfsRequest sf;
  sf.set_ost_idx(kOst);
  proto::OstStatfsReply sfr;
  ASSERT_TRUE(client_->Call(proto::OP_OST_STATFS, sf, &sfr).ok());
  EXPECT_EQ(sfr.ost_idx(), kOst);
  EXPECT_GT(sfr.bsize(), 0u);
  EXPECT_GT(sfr.blocks(), 0u);
  EXPECT_LE(sfr.bavail(), sfr.blocks());
  EXPECT_GT(sfr.files(), 0u);
  sf.set_ost_idx(3);
  EXPECT_EQ(client_->Call(proto::OP_OST_STATFS, sf, &sfr).code(), Code::kNoOst);
}

TEST_F(OssServiceTest, ConcurrentWritersToDisjointRanges) {
  // The N-to-1 pattern: several clients' threads write disjoint 1 MiB pieces of one object.
  constexpr int kThreads = 4, kPieces = 8;
  constexpr size_t kPiece = 1 << 20;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int p = t; p < kPieces; p += kThreads) {
        auto data = Pattern(kPiece, p * kPiece, 21);
        proto::OstIoReply rep;
        if (!Write(9, p * kPiece, data, &rep).ok()) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::vector<uint8_t> out;
  proto::OstIoReply rep;
  ASSERT_TRUE(Read(9, 0, kPieces * kPiece, &out, &rep).ok());
  EXPECT_EQ(out, Pattern(kPieces * kPiece, 0, 21));
}

// ---- checksums on disk, over the wire ----

// Flips one bit of object `id`'s byte at `offset` in its file on the test OST, as a failing
// disk would.
void FlipObjectBit(const std::string& ost_dir, uint64_t id, uint64_t offset) {
  ASSERT_EQ(stria::testing::FlipBit(stria::testing::ObjectFilePath(ost_dir, id),
                                    stria::testing::ObjectFileOffset(offset)),
            0);
}

proto::OstScrubRequest ScrubRequest(uint32_t ost) {
  proto::OstScrubRequest req;
  req.set_ost_idx(ost);
  return req;
}

TEST_F(OssServiceTest, AWriteWhoseBulkFailsItsChecksumWritesNothing) {
  // The OSS checks a write's bulk against the frame's crc itself, from its chunk sums
  // (RpcServer::HandlerVerifiesBulk): a damaged bulk is refused (kChecksum, retryable)
  // before a byte reaches the disk, and the resend is written.
  using lnet::testing::RecvFrame;
  using lnet::testing::SendFrame;
  Result<int> fd = lnet::testing::ConnectRaw(server_->port());
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  std::string body;
  lnet::FrameHeader h;

  const std::vector<uint8_t> data = Pattern(3 * 4096 + 100, 4096 + 7, 11);
  proto::OstIoRequest req;
  *req.mutable_object() = Obj(61);
  req.set_offset(4096 + 7);
  req.set_length(data.size());
  req.SerializeToString(&body);
  h.opcode = proto::OP_OST_WRITE;
  h.xid = 2;
  ASSERT_TRUE(SendFrame(*fd, h, body, data, /*bulk_crc_flip=*/0x20).ok());
  Result<lnet::testing::Frame> reply = RecvFrame(*fd);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->h.status, static_cast<int32_t>(Code::kChecksum));
  std::vector<uint8_t> got;
  proto::OstIoReply rep;
  ASSERT_TRUE(Read(61, 0, 64 * 1024, &got, &rep).ok());
  EXPECT_TRUE(got.empty()) << "nothing of the damaged write was stored";

  ASSERT_TRUE(SendFrame(*fd, h, body, data).ok());  // the resend, intact
  reply = RecvFrame(*fd);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->h.status, 0);
  ASSERT_TRUE(Read(61, 4096 + 7, data.size(), &got, &rep).ok());
  EXPECT_EQ(got, data);
  close(*fd);
}

TEST_F(OssServiceTest, ReadOfACorruptChunkFailsWithCorruptNotData) {
  auto data = Pattern(64 << 10, 0, 30);
  proto::OstIoReply rep;
  ASSERT_TRUE(Write(20, 0, data, &rep).ok());
  FlipObjectBit(dir_.path(), 20, 40000);
  std::vector<uint8_t> out;
  Status st = Read(20, 0, data.size(), &out, &rep);
  EXPECT_EQ(st.code(), Code::kCorrupt) << st.ToString();
  EXPECT_FALSE(st.retryable());  // the same bytes would fail again
  EXPECT_EQ(st.ToErrno(), EIO);
  EXPECT_TRUE(out.empty());
  // The rest of the object reads fine.
  ASSERT_TRUE(Read(20, 0, 36864, &out, &rep).ok());
  EXPECT_EQ(out, std::vector<uint8_t>(data.begin(), data.begin() + 36864));
}

TEST_F(OssServiceTest, ScrubReportsExactlyTheCorruptObjectThenCleanAfterRewrite) {
  proto::OstIoReply rep;
  const size_t sizes[] = {100, 3 << 20, 9000};
  uint64_t total = 0;
  for (uint64_t id = 30; id < 33; ++id) {
    ASSERT_TRUE(Write(id, 0, Pattern(sizes[id - 30], 0, id), &rep).ok());
    total += sizes[id - 30];
  }
  FlipObjectBit(dir_.path(), 31, (1 << 20) + 4097);

  proto::OstScrubReply sr;
  ASSERT_TRUE(client_->Call(proto::OP_OST_SCRUB, ScrubRequest(kOst), &sr).ok());
  EXPECT_EQ(sr.ost_idx(), kOst);
  EXPECT_EQ(sr.objects(), 3u);
  EXPECT_EQ(sr.bytes(), total);
  EXPECT_EQ(sr.corrupt_objects(), 1u);
  ASSERT_EQ(sr.corruptions_size(), 1);
  EXPECT_EQ(sr.corruptions(0).object().object_id(), 31u);
  EXPECT_EQ(sr.corruptions(0).object().ost_idx(), kOst);
  EXPECT_EQ(sr.corruptions(0).offset(), (1u << 20) + 4096);
  EXPECT_EQ(sr.corruptions(0).bad_chunks(), 1u);

  // Rewriting the damaged chunk repairs it.
  ASSERT_TRUE(Write(31, (1 << 20) + 4096, Pattern(4096, 0, 99), &rep).ok());
  ASSERT_TRUE(client_->Call(proto::OP_OST_SCRUB, ScrubRequest(kOst), &sr).ok());
  EXPECT_EQ(sr.corrupt_objects(), 0u);
  EXPECT_EQ(sr.corruptions_size(), 0);
}

TEST_F(OssServiceTest, ScrubOfAnOstNotServedHereIsRefused) {
  proto::OstScrubReply sr;
  EXPECT_EQ(client_->Call(proto::OP_OST_SCRUB, ScrubRequest(99), &sr).code(), Code::kNoOst);
}

TEST_F(OssServiceTest, ConcurrentUnalignedWritesToSharedChunksKeepTheirChecksums) {
  // Disjoint 100-byte pieces, many in each 4 KiB chunk, from several threads: each write's
  // read-modify-write of its chunk must see the others' bytes, or a chunk's crc goes stale.
  constexpr int kThreads = 4, kPieces = 400;
  constexpr size_t kPiece = 100;
  const auto data = Pattern(kPieces * kPiece, 0, 40);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int p = t; p < kPieces; p += kThreads) {
        std::vector<uint8_t> piece(data.begin() + p * kPiece, data.begin() + (p + 1) * kPiece);
        proto::OstIoReply rep;
        if (!Write(41, p * kPiece, piece, &rep).ok()) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::vector<uint8_t> out;
  proto::OstIoReply rep;
  Status st = Read(41, 0, data.size(), &out, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out, data);
}

// ---- OssServer: start-up checks and registration ----

TEST(OssServerTest, RefusesDirectoryOfAnotherIndexOrFilesystem) {
  TempDir a, b;
  ASSERT_TRUE(FormatOst(a.path(), OstMeta{"fs1", 0, NewUuid()}).ok());
  ASSERT_TRUE(FormatOst(b.path(), OstMeta{"fs2", 1, NewUuid()}).ok());
  OssOptions o;
  o.mgs_nids = {lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", 1}};
  o.osts = {OstSpec{5, a.path()}};
  auto wrong_index = OssServer::Start(o);
  ASSERT_FALSE(wrong_index.ok());
  EXPECT_EQ(wrong_index.status().code(), Code::kInval);
  o.osts = {OstSpec{0, a.path()}, OstSpec{1, b.path()}};
  auto two_fs = OssServer::Start(o);
  ASSERT_FALSE(two_fs.ok());
  EXPECT_EQ(two_fs.status().code(), Code::kWrongFs);
  o.osts = {OstSpec{0, a.path()}, OstSpec{0, b.path()}};
  EXPECT_EQ(OssServer::Start(o).status().code(), Code::kInval);
}

TEST(OssServerTest, ParseOstSpec) {
  auto s = ParseOstSpec("12:/data/ost12");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 12u);
  EXPECT_EQ(s->dir, "/data/ost12");
  EXPECT_FALSE(ParseOstSpec("x:/d").ok());
  EXPECT_FALSE(ParseOstSpec("1").ok());
  EXPECT_FALSE(ParseOstSpec("1:").ok());
  EXPECT_FALSE(ParseOstSpec("70000:/d").ok());
}

// A stand-in MGS: answers OP_MGS_GET_CONFIG and OP_MGS_REGISTER_OST as the real one does
// (an OST naming another filesystem is refused) and records the registrations it heard.
class FakeMgs {
 public:
  explicit FakeMgs(std::string fsname) : fsname_(std::move(fsname)) {
    server_ = std::make_unique<lnet::RpcServer>(lnet::ServerOptions{});
    server_->Register<proto::GetConfigRequest, proto::FsConfig>(
        proto::OP_MGS_GET_CONFIG,
        [this](lnet::RpcContext&, const proto::GetConfigRequest&, proto::FsConfig* rep) {
          rep->set_fsname(fsname_);
          return Status::Ok();
        });
    server_->Register<proto::RegisterOstRequest, proto::RegisterOstReply>(
        proto::OP_MGS_REGISTER_OST,
        [this](lnet::RpcContext&, const proto::RegisterOstRequest& req,
               proto::RegisterOstReply* rep) {
          std::lock_guard<std::mutex> lock(mu_);
          if (req.fsname() != fsname_) return Status(Code::kWrongFs, "wrong fsname");
          heard_.push_back(req);
          cv_.notify_all();
          rep->set_fsname(fsname_);
          return Status::Ok();
        });
  }
  Status Start(uint16_t port = 0) {
    return server_->Start(lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", port});
  }
  uint16_t port() const { return server_->port(); }

  // Waits until `n` registrations were heard (or 30 s, a failure guard, not a timing check).
  std::vector<proto::RegisterOstRequest> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return heard_.size() >= n; });
    return heard_;
  }

 private:
  std::string fsname_;
  std::unique_ptr<lnet::RpcServer> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<proto::RegisterOstRequest> heard_;
};

TEST(OssServerTest, FormatsNewOstWithMgsFsnameAndHeartbeats) {
  FakeMgs mgs("trainfs");
  ASSERT_TRUE(mgs.Start().ok());
  TempDir d;
  const std::string dir = d.path() + "/ost4";
  OssOptions o;
  o.mgs_nids = {lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", mgs.port()}};
  o.osts = {OstSpec{4, dir}};
  o.heartbeat_ms = 50;
  auto oss = OssServer::Start(o);
  ASSERT_TRUE(oss.ok()) << oss.status().ToString();
  auto heard = mgs.WaitFor(3);  // the first registration and two heartbeats
  ASSERT_GE(heard.size(), 3u);
  EXPECT_EQ(heard[0].index(), 4u);
  EXPECT_EQ(heard[0].fsname(), "trainfs");  // formatted before its first registration
  EXPECT_EQ(heard[0].nid(), (*oss)->nid());
  EXPECT_EQ(heard.back().uuid(), heard[0].uuid());
  auto meta = ReadOstMeta(dir);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->fsname, "trainfs");
  EXPECT_EQ(meta->uuid, heard[0].uuid());
  EXPECT_TRUE((*oss)->service().Find(4).ok());
  (*oss)->Stop();
}

// A free TCP port on 127.0.0.1 (bound, read, released).
uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(a.sin_port);
}

TEST(OssServerTest, MissingMgsIsRetriedUntilItAppears) {
  const uint16_t port = FreePort();
  ASSERT_NE(port, 0);
  TempDir d;
  OssOptions o;
  o.mgs_nids = {lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", port}};
  o.osts = {OstSpec{1, d.path() + "/ost1"}};
  o.heartbeat_ms = 50;
  o.mgs_rpc_deadline_ms = 100;
  auto oss = OssServer::Start(o);  // starts although no MGS answers
  ASSERT_TRUE(oss.ok()) << oss.status().ToString();
  EXPECT_EQ((*oss)->service().Find(1).status().code(), Code::kNotReady);
  FakeMgs mgs("latefs");
  ASSERT_TRUE(mgs.Start(port).ok());
  auto heard = mgs.WaitFor(1);
  ASSERT_GE(heard.size(), 1u);
  EXPECT_EQ(heard[0].index(), 1u);
  EXPECT_EQ(heard[0].fsname(), "latefs");
  EXPECT_TRUE((*oss)->service().Find(1).ok());
  (*oss)->Stop();
}

}  // namespace
}  // namespace stria::oss
