// The MDS over real RPC: lnet::RpcServer on 127.0.0.1 port 0, lnet::RpcClient.
#include "mds/mds_service.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>
#include <thread>

#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "lnet/test_frames.h"
#include "mds/client_sessions.h"
#include "mds/destroy_queue.h"
#include "mds/lnet_ost_gateway.h"
#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;

class MdsServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue_ = std::make_unique<DestroyQueue>(&f_.ns(), &f_.gateway(), 50);
    service_ = std::make_unique<MdsService>(&f_.ns(), queue_.get());
    StartServer();
    auto peer = lnet::Nid::Parse("127.0.0.1@tcp:" + std::to_string(server_->port()));
    ASSERT_TRUE(peer.ok());
    lnet::ClientOptions co;
    co.fsname = "testfs";
    co.retry_deadline_ms = 10'000;
    client_ = std::make_unique<lnet::RpcClient>(*peer, co);
    queue_->Start();
  }
  // A new RPC server for service_ on a free port (a restart: its reply cache starts empty).
  void StartServer() {
    if (server_) server_->Stop();
    lnet::ServerOptions so;
    so.name = "mds-test";
    so.fsname = "testfs";
    so.worker_threads = 4;
    so.reply_cache_opcodes = MdsService::ReplyCacheOpcodes();
    server_ = std::make_unique<lnet::RpcServer>(so);
    service_->Register(server_.get());
    auto nid = lnet::Nid::Parse("127.0.0.1@tcp:0");
    ASSERT_TRUE(nid.ok());
    ASSERT_TRUE(server_->Start(*nid).ok());
  }
  void TearDown() override {
    client_.reset();
    server_->Stop();
    queue_->Stop();
  }
  MdsFixture f_;
  std::unique_ptr<lnet::RpcServer> server_;
  std::unique_ptr<DestroyQueue> queue_;
  std::unique_ptr<MdsService> service_;
  std::unique_ptr<lnet::RpcClient> client_;
};

TEST_F(MdsServiceTest, NamespaceOverRpc) {
  proto::RegisterOstRequest reg;
  reg.set_fsname("testfs");
  reg.set_index(0);
  reg.set_uuid("u0");
  reg.set_nid("127.0.0.1@tcp:9999");
  proto::RegisterOstReply regr;
  ASSERT_TRUE(client_->Call(proto::OP_MGS_REGISTER_OST, reg, &regr).ok());
  reg.set_fsname("wrong");
  EXPECT_EQ(client_->Call(proto::OP_MGS_REGISTER_OST, reg, &regr).code(), Code::kWrongFs);

  proto::CreateRequest c;
  c.set_parent(kRootIno);
  c.set_name("dir");
  c.set_mode(S_IFDIR | 0755);
  proto::EntryReply e;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_CREATE, c, &e).ok());
  const uint64_t dir = e.attr().ino();
  c.set_parent(dir);
  c.set_name("file");
  c.set_mode(S_IFREG | 0644);
  ASSERT_TRUE(client_->Call(proto::OP_MDS_CREATE, c, &e).ok());
  EXPECT_EQ(e.layout().objects_size(), 1);
  Status st = client_->Call(proto::OP_MDS_CREATE, c, &e);
  EXPECT_EQ(st.code(), Code::kExist);

  proto::LookupRequest l;
  l.set_parent(dir);
  l.set_name("file");
  proto::EntryReply le;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_LOOKUP, l, &le).ok());
  EXPECT_EQ(le.attr().ino(), e.attr().ino());
  l.set_name("missing");
  EXPECT_EQ(client_->Call(proto::OP_MDS_LOOKUP, l, &le).code(), Code::kNoEnt);

  proto::ReaddirRequest rd;
  rd.set_ino(dir);
  rd.set_want_attrs(true);
  proto::ReaddirReply rr;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_READDIR, rd, &rr).ok());
  ASSERT_EQ(rr.entries_size(), 1);
  EXPECT_EQ(rr.entries(0).name(), "file");
  EXPECT_TRUE(rr.eof());

  proto::FsConfig cfg;
  ASSERT_TRUE(client_->Call(proto::OP_MGS_GET_CONFIG, proto::GetConfigRequest(), &cfg).ok());
  EXPECT_EQ(cfg.fsname(), "testfs");
  EXPECT_EQ(cfg.osts_size(), 1);

  proto::StatfsReply sf;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_STATFS, proto::StatfsRequest(), &sf).ok());
  EXPECT_EQ(sf.files() - sf.ffree(), 3u);

  // Unlink kicks the destroy queue, which drains through the gateway.
  proto::UnlinkRequest u;
  u.set_parent(dir);
  u.set_name("file");
  proto::UnlinkReply ur;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_UNLINK, u, &ur).ok());
  EXPECT_EQ(ur.attr().nlink(), 0u);
  for (int i = 0; i < 1000 && f_.gateway().destroyed().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(f_.gateway().destroyed().size(), 1u);
}

// open(O_CREAT) in one round trip: the create's reply carries an open handle that close
// releases, and asking it of a directory is refused. OP_MDS_SYNC (fsync of a directory)
// syncs the WAL; a close without sync does not wait for one.
TEST_F(MdsServiceTest, CreateWithOpenAndSync) {
  f_.AddOsts(1);
  proto::CreateRequest c;
  c.set_parent(kRootIno);
  c.set_name("opened");
  c.set_mode(S_IFREG | 0644);
  c.set_open(true);
  proto::EntryReply e;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_CREATE, c, &e).ok());
  ASSERT_NE(e.handle(), 0u);
  {
    std::lock_guard lock(f_.ns().open_mutex());
    EXPECT_TRUE(f_.ns().HandleOpenLocked(e.handle(), e.attr().ino()));
  }
  c.set_name("dir");
  c.set_mode(S_IFDIR | 0755);
  EXPECT_EQ(client_->Call(proto::OP_MDS_CREATE, c, &e).code(), Code::kInval);

  proto::CloseRequest cl;
  proto::LookupRequest l;
  l.set_parent(kRootIno);
  l.set_name("opened");
  proto::EntryReply le;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_LOOKUP, l, &le).ok());
  cl.set_ino(le.attr().ino());
  cl.set_wrote(true);
  cl.set_size(4096);
  const uint64_t syncs = f_.ns().wal_syncs();
  proto::AttrReply ar;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_CLOSE, cl, &ar).ok());
  EXPECT_EQ(ar.attr().size(), 4096u);
  EXPECT_EQ(f_.ns().wal_syncs(), syncs) << "a size reported at close waited for a WAL sync";
  proto::SyncReply sr;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_SYNC, proto::SyncRequest(), &sr).ok());
  EXPECT_EQ(f_.ns().wal_syncs(), syncs + 1) << "OP_MDS_SYNC did not sync the unsynced close";
}

TEST_F(MdsServiceTest, CloseBatchDoesEachInOrderAndRefusesASyncedOne) {
  f_.AddOsts(1);
  proto::CreateRequest c;
  c.set_parent(kRootIno);
  c.set_mode(S_IFREG | 0644);
  c.set_open(true);
  proto::CloseBatchRequest batch;
  std::vector<std::pair<uint64_t, uint64_t>> opened;  // handle, ino
  for (int i = 0; i < 3; ++i) {
    c.set_name("b" + std::to_string(i));
    proto::EntryReply e;
    Status st = client_->Call(proto::OP_MDS_CREATE, c, &e);
    ASSERT_TRUE(st.ok()) << st.ToString();
    opened.emplace_back(e.handle(), e.attr().ino());
    proto::CloseRequest* cl = batch.add_closes();
    cl->set_ino(e.attr().ino());
    cl->set_handle(e.handle());
  }
  proto::CloseRequest* unknown = batch.add_closes();  // a handle lost with a restart
  unknown->set_ino(opened[0].second);
  unknown->set_handle(opened.back().first + 1000);

  // A synced close has no place in a batch, nor one that names no handle and reports no
  // write: the whole batch is refused.
  proto::CloseBatchRequest bad = batch;
  bad.mutable_closes(1)->set_sync(true);
  proto::CloseBatchReply rep;
  EXPECT_EQ(client_->Call(proto::OP_MDS_CLOSE_BATCH, bad, &rep).code(), Code::kInval);
  bad = batch;
  bad.mutable_closes(1)->set_handle(0);
  EXPECT_EQ(client_->Call(proto::OP_MDS_CLOSE_BATCH, bad, &rep).code(), Code::kInval);
  proto::CloseBatchRequest big;
  for (int i = 0; i <= kMaxCloseBatch; ++i) *big.add_closes() = batch.closes(0);
  EXPECT_EQ(client_->Call(proto::OP_MDS_CLOSE_BATCH, big, &rep).code(), Code::kInval);
  {
    std::lock_guard lock(f_.ns().open_mutex());
    for (auto [h, ino] : opened) EXPECT_TRUE(f_.ns().HandleOpenLocked(h, ino));
  }

  // A size report (a flush: no handle) goes first, in order, before the handle's release.
  proto::CloseRequest size;
  size.set_ino(opened[2].second);
  size.set_wrote(true);
  size.set_size(12'345);
  size.set_mtime_ns(1'700'000'000'000'000'000);
  batch.mutable_closes()->Add(std::move(size));
  batch.mutable_closes()->SwapElements(2, batch.closes_size() - 1);
  ASSERT_TRUE(client_->Call(proto::OP_MDS_CLOSE_BATCH, batch, &rep).ok());
  EXPECT_EQ(rep.closed(), 5u);  // an unknown handle's close drops nothing, as OP_MDS_CLOSE
  {
    std::lock_guard lock(f_.ns().open_mutex());
    for (auto [h, ino] : opened) EXPECT_FALSE(f_.ns().HandleOpenLocked(h, ino));
  }
  Result<InodeRecord> rec = f_.ns().GetInode(opened[2].second);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->attr.size(), 12'345u);
  EXPECT_EQ(rec->attr.mtime_ns(), 1'700'000'000'000'000'000);
}

// The closes of a batch that change something share one transaction: each still takes
// effect (sizes, a read's atime without a handle), one whose file is gone fails alone, and
// the last close of a file unlinked while open removes it, after which a later close of
// it in the same batch changes nothing (it must not write the removed inode back).
TEST_F(MdsServiceTest, CloseBatchAppliesItsChangesTogetherAndAFailureSparesTheOthers) {
  f_.AddOsts(1);
  proto::CreateRequest c;
  c.set_parent(kRootIno);
  c.set_mode(S_IFREG | 0644);
  c.set_open(true);
  std::vector<proto::EntryReply> files(3);
  for (int i = 0; i < 3; ++i) {
    c.set_name("t" + std::to_string(i));
    Status st = client_->Call(proto::OP_MDS_CREATE, c, &files[i]);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  // t2 is unlinked while open: an orphan until its last close.
  proto::UnlinkRequest ul;
  ul.set_parent(kRootIno);
  ul.set_name("t2");
  proto::UnlinkReply ulr;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_UNLINK, ul, &ulr).ok());
  const int64_t read_ns = files[1].attr().mtime_ns() + 5'000'000'000;

  proto::CloseBatchRequest batch;
  proto::CloseRequest* c0 = batch.add_closes();  // t0: its size, with its handle
  c0->set_ino(files[0].attr().ino());
  c0->set_handle(files[0].handle());
  c0->set_wrote(true);
  c0->set_size(100);
  proto::CloseRequest* gone = batch.add_closes();  // a file that is not there
  gone->set_ino(files[2].attr().ino() + 1000);
  gone->set_wrote(true);
  gone->set_size(1);
  proto::CloseRequest* c1 = batch.add_closes();  // t1: a read's atime, no handle
  c1->set_ino(files[1].attr().ino());
  c1->set_atime_ns(read_ns);
  proto::CloseRequest* c2 = batch.add_closes();  // t2's last close
  c2->set_ino(files[2].attr().ino());
  c2->set_handle(files[2].handle());
  proto::CloseRequest* after = batch.add_closes();  // and an atime of it after that
  after->set_ino(files[2].attr().ino());
  after->set_atime_ns(read_ns);
  proto::CloseBatchReply rep;
  Status st = client_->Call(proto::OP_MDS_CLOSE_BATCH, batch, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rep.closed(), 3u);
  EXPECT_EQ(rep.failed(), 2u);
  Result<InodeRecord> t0 = f_.ns().GetInode(files[0].attr().ino());
  ASSERT_TRUE(t0.ok()) << t0.status().ToString();
  EXPECT_EQ(t0->attr.size(), 100u);
  Result<InodeRecord> t1 = f_.ns().GetInode(files[1].attr().ino());
  ASSERT_TRUE(t1.ok()) << t1.status().ToString();
  EXPECT_EQ(t1->attr.atime_ns(), read_ns);
  EXPECT_EQ(f_.ns().GetInode(files[2].attr().ino()).status().code(), Code::kNoEnt)
      << "the orphan goes at its last close, and stays gone";
  {
    std::lock_guard lock(f_.ns().open_mutex());
    EXPECT_FALSE(f_.ns().HandleOpenLocked(files[0].handle(), files[0].attr().ino()));
  }
}

// The client's session forgets a handle closed in a batch as it does one closed alone: an
// eviction later has nothing left to close, and the bookkeeping does not grow.
TEST_F(MdsServiceTest, CloseBatchEndsTheHandlesAndWritersInTheClientsSession) {
  f_.AddOsts(1);
  ClientSessions sessions(&f_.ns(), {});
  MdsService service(&f_.ns(), nullptr, {}, &sessions);
  lnet::ServerOptions so;
  so.name = "mds-test-sessions";
  so.fsname = "testfs";
  lnet::RpcServer server(so);
  service.Register(&server);
  ASSERT_TRUE(server.Start(*lnet::Nid::Parse("127.0.0.1@tcp:0")).ok());
  lnet::ClientOptions co;
  co.fsname = "testfs";
  co.client_uuid = "batching-client";
  lnet::RpcClient client(*lnet::Nid::Parse("127.0.0.1@tcp:" + std::to_string(server.port())),
                         co);
  proto::CreateRequest c;
  c.set_parent(kRootIno);
  c.set_mode(S_IFREG | 0644);
  c.set_open(true);
  proto::CloseBatchRequest batch;
  std::vector<std::pair<uint64_t, uint64_t>> opened;
  for (int i = 0; i < 2; ++i) {
    c.set_name("s" + std::to_string(i));
    proto::EntryReply e;
    ASSERT_TRUE(client.Call(proto::OP_MDS_CREATE, c, &e).ok());
    opened.emplace_back(e.handle(), e.attr().ino());
    EXPECT_TRUE(sessions.HandleCapaOps("batching-client", e.handle(), e.attr().ino()));
    EXPECT_EQ(sessions.OtherWriters(e.attr().ino(), "another"),
              std::vector<std::string>{"batching-client"});
    proto::CloseRequest* cl = batch.add_closes();
    cl->set_ino(e.attr().ino());
    cl->set_handle(e.handle());
  }
  proto::CloseBatchReply rep;
  ASSERT_TRUE(client.Call(proto::OP_MDS_CLOSE_BATCH, batch, &rep).ok());
  for (auto [h, ino] : opened) {
    EXPECT_FALSE(sessions.HandleCapaOps("batching-client", h, ino));
    EXPECT_TRUE(sessions.OtherWriters(ino, "another").empty());
  }
  // A handle replayed after an MDS restart says whether it writes: the MDS asks its client
  // for the size as it would have before.
  proto::ReopenRequest reopen;
  reopen.set_ino(opened[0].second);
  reopen.set_handle(opened[0].first);
  reopen.set_writer(true);
  proto::ReopenReply reopened;
  ASSERT_TRUE(client.Call(proto::OP_MDS_REOPEN, reopen, &reopened).ok());
  EXPECT_EQ(sessions.OtherWriters(opened[0].second, "another"),
            std::vector<std::string>{"batching-client"});
  server.Stop();
}

// A create whose reply was lost, resent (kFlagResend, the same client uuid and xid) to the
// service after a restart (a new server: no reply cache), gets the reply of the first
// attempt from the reply journal: the same inode, not EEXIST. The journal is looked up only
// for resends: the same xid unmarked is a new request.
TEST_F(MdsServiceTest, AResendAfterARestartGetsTheJournaledReply) {
  f_.AddOsts(1);
  proto::CreateRequest c;
  c.set_parent(kRootIno);
  c.set_name("once");
  c.set_mode(S_IFREG | 0644);
  std::string body;
  c.SerializeToString(&body);
  auto send = [&](uint16_t port, uint32_t flags) -> Result<lnet::testing::Frame> {
    STRIA_ASSIGN_OR_RETURN(int fd, lnet::testing::ConnectRaw(port, "resending-client"));
    lnet::FrameHeader h;
    h.opcode = proto::OP_MDS_CREATE;
    h.xid = 42;
    h.flags = flags;
    Status st = lnet::testing::SendFrame(fd, h, body, {});
    Result<lnet::testing::Frame> r = st.ok() ? lnet::testing::RecvFrame(fd)
                                             : Result<lnet::testing::Frame>(st);
    close(fd);
    return r;
  };
  auto first = send(server_->port(), 0);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->h.status, 0) << first->body;
  proto::EntryReply created;
  ASSERT_TRUE(created.ParseFromString(first->body));

  StartServer();
  auto resent = send(server_->port(), lnet::kFlagResend);
  ASSERT_TRUE(resent.ok()) << resent.status().ToString();
  ASSERT_EQ(resent->h.status, 0) << resent->body;
  proto::EntryReply again;
  ASSERT_TRUE(again.ParseFromString(resent->body));
  EXPECT_EQ(again.attr().ino(), created.attr().ino());

  StartServer();
  auto unmarked = send(server_->port(), 0);
  ASSERT_TRUE(unmarked.ok()) << unmarked.status().ToString();
  EXPECT_EQ(unmarked->h.status, static_cast<int32_t>(Code::kExist)) << unmarked->body;
}

TEST_F(MdsServiceTest, AResentBatchOfUnlinksGetsEachNamesJournaledResult) {
  f_.AddOsts(1);
  f_.Mkfile(kRootIno, "p");
  f_.Mkfile(kRootIno, "q");
  proto::UnlinkRequest u;
  u.set_parent(kRootIno);
  u.set_name("p");
  u.add_more_names("nope");
  u.add_more_names("q");
  std::string body;
  u.SerializeToString(&body);
  auto send = [&](uint32_t flags) -> std::vector<int32_t> {
    auto fd = lnet::testing::ConnectRaw(server_->port(), "resending-client");
    EXPECT_TRUE(fd.ok());
    if (!fd.ok()) return {};
    lnet::FrameHeader h;
    h.opcode = proto::OP_MDS_UNLINK;
    h.xid = 43;
    h.flags = flags;
    EXPECT_TRUE(lnet::testing::SendFrame(*fd, h, body, {}).ok());
    auto r = lnet::testing::RecvFrame(*fd);
    close(*fd);
    proto::UnlinkReply rep;
    if (!r.ok() || r->h.status != 0 || !rep.ParseFromString(r->body)) return {};
    return {rep.codes().begin(), rep.codes().end()};
  };
  const std::vector<int32_t> done = {0, static_cast<int32_t>(Code::kNoEnt), 0};
  EXPECT_EQ(send(0), done);
  StartServer();  // a restart: the resend is answered from the reply journal
  EXPECT_EQ(send(lnet::kFlagResend), done);
  StartServer();
  const int32_t noent = static_cast<int32_t>(Code::kNoEnt);
  EXPECT_EQ(send(0), (std::vector<int32_t>{noent, noent, noent})) << "run again";
}

TEST_F(MdsServiceTest, GarbageBodyIsProtocolErrorAndServerKeepsServing) {
  std::string reply;
  Status st = client_->CallRaw(proto::OP_MDS_CREATE, std::string("\xff\xff\xff\xff", 4), &reply);
  EXPECT_EQ(st.code(), Code::kProtocol);
  proto::GetattrRequest g;
  g.set_ino(kRootIno);
  proto::AttrReply ar;
  ASSERT_TRUE(client_->Call(proto::OP_MDS_GETATTR, g, &ar).ok());
  EXPECT_EQ(ar.attr().ino(), kRootIno);
}

TEST(RootSquashTest, RootRunsAsSquashedUser) {
  MdsFixture f;
  lnet::ServerOptions so;
  so.fsname = "testfs";
  lnet::RpcServer server(so);
  MdsServiceOptions opts;
  opts.squash.root_squash = true;
  MdsService service(&f.ns(), nullptr, opts);
  service.Register(&server);
  ASSERT_TRUE(server.Start(*lnet::Nid::Parse("127.0.0.1@tcp:0")).ok());
  lnet::RpcClient client(*lnet::Nid::Parse("127.0.0.1@tcp:" + std::to_string(server.port())),
                         lnet::ClientOptions());
  proto::CreateRequest c;  // uid 0 in the request
  c.set_parent(kRootIno);
  c.set_name("d");
  c.set_mode(S_IFDIR | 0755);
  proto::EntryReply e;
  EXPECT_EQ(client.Call(proto::OP_MDS_CREATE, c, &e).code(), Code::kAccess);  // root dir 0755
  proto::GetattrRequest g;
  g.set_ino(kRootIno);
  proto::AttrReply ar;
  EXPECT_TRUE(client.Call(proto::OP_MDS_GETATTR, g, &ar).ok());  // no cred needed
  server.Stop();
}

// The real LnetOstGateway against an RPC server that answers as an OSS would.
TEST(LnetOstGatewayTest, DestroyAndStatfsOverRpc) {
  std::mutex mu;
  std::vector<uint64_t> destroyed;
  lnet::ServerOptions so;
  so.name = "fake-oss";
  so.fsname = "testfs";
  lnet::RpcServer oss(so);
  oss.Register<proto::OstDestroyRequest, proto::OstIoReply>(
      proto::OP_OST_DESTROY,
      [&](lnet::RpcContext&, const proto::OstDestroyRequest& req, proto::OstIoReply*) {
        std::lock_guard lock(mu);
        for (const auto& o : req.objects()) destroyed.push_back(o.object_id());
        return Status::Ok();
      });
  oss.Register<proto::OstStatfsRequest, proto::OstStatfsReply>(
      proto::OP_OST_STATFS,
      [](lnet::RpcContext&, const proto::OstStatfsRequest& req, proto::OstStatfsReply* rep) {
        rep->set_ost_idx(req.ost_idx());
        rep->set_bsize(4096);
        rep->set_blocks(1000);
        rep->set_bfree(600);
        rep->set_bavail(500);
        return Status::Ok();
      });
  ASSERT_TRUE(oss.Start(*lnet::Nid::Parse("127.0.0.1@tcp:0")).ok());
  const std::string nid = "127.0.0.1@tcp:" + std::to_string(oss.port());

  LnetOstGateway gw("testfs", /*keys=*/nullptr, 2000);
  testing::TempDir tmp;
  NamespaceOptions o;
  o.data_dir = tmp.path() + "/db";
  o.fsname = "testfs";
  auto ns = Namespace::Open(o, &gw);
  ASSERT_TRUE(ns.ok());
  for (uint32_t i = 0; i < 2; ++i) {
    proto::RegisterOstRequest r;
    r.set_fsname("testfs");
    r.set_index(i);
    r.set_uuid("u" + std::to_string(i));
    // OST 1 points at a port nobody listens on: its destroys must wait in the queue.
    r.set_nid(i == 0 ? nid : "127.0.0.1@tcp:1");
    proto::RegisterOstReply rr;
    ASSERT_TRUE(RegisterOst(**ns, r, &rr).ok());
  }
  proto::StatfsReply sf;
  ASSERT_TRUE(Statfs(**ns, proto::StatfsRequest(), &sf).ok());
  EXPECT_EQ(sf.blocks(), 1000u);  // only the live OST counts
  EXPECT_EQ(sf.bavail(), 500u);

  proto::CreateRequest c;
  c.set_parent(kRootIno);
  c.set_name("f");
  c.set_mode(S_IFREG | 0644);
  c.mutable_layout()->set_stripe_count(-1);
  c.mutable_layout()->set_stripe_offset(-1);
  proto::EntryReply e;
  ASSERT_TRUE(Create(**ns, c, &e).ok());
  ASSERT_EQ(e.layout().objects_size(), 2);
  proto::UnlinkRequest u;
  u.set_parent(kRootIno);
  u.set_name("f");
  proto::UnlinkReply ur;
  ASSERT_TRUE(Unlink(**ns, u, &ur).ok());
  DestroyQueue q(ns->get(), &gw);
  ASSERT_TRUE(q.RunOnce().ok());
  EXPECT_EQ(*q.Pending(), 1u);  // OST 1 is unreachable: its object stays queued
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(destroyed.size(), 1u);
    const auto& obj0 = e.layout().objects(0).ost_idx() == 0 ? e.layout().objects(0)
                                                            : e.layout().objects(1);
    EXPECT_EQ(destroyed[0], obj0.object_id());
  }
  oss.Stop();
}

}  // namespace
}  // namespace stria::mds
