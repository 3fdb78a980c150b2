// The mount's side of metadata leases (client/fuse/lease_cache.h) against a real MDS, without
// a kernel: the leases a LeaseCache registers for, the timeouts it gives, what a revocation
// (another client's change) makes it forget, complete directories, re-registration, and what
// its callback server does with bad input.
#include "client/fuse/lease_cache.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/metadata.h"
#include "lnet/frame.h"
#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "lnet/socket.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/shared_cluster_env.h"

namespace stria::testing {
namespace {

Cluster* g_cluster = nullptr;
client::Client* g_client = nullptr;  // "another client": its changes revoke the cache's leases

ClusterOptions EnvOptions() {
  ClusterOptions o;
  o.tag = "leasecache";
  o.fsname = "lcfs";
  o.mount = false;
  o.num_oss = 1;
  o.osts_per_oss = 1;
  return o;
}

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(
    new SharedClusterEnv(EnvOptions(), &g_cluster, &g_client));

using client::LeaseCache;

class LeaseCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (g_client == nullptr) GTEST_SKIP() << "cluster did not start";
    auto c = ConnectClient(*g_cluster);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    mine_ = std::move(*c);
    cache_ = std::make_unique<LeaseCache>(
        mine_.get(), client::LeaseCacheOptions{.fsname = g_cluster->options().fsname});
    auto mds = lnet::Nid::Parse(g_cluster->mgs_nid());
    ASSERT_TRUE(mds.ok());
    Status st = cache_->Start(nullptr, *mds);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(cache_->enabled());
  }
  void TearDown() override {
    cache_.reset();
    mine_.reset();
  }

  uint64_t Mkdir(client::Client* c, uint64_t parent, const std::string& name,
                 proto::EntryReply* rep_out = nullptr) {
    client::Metadata md(c);
    client::Metadata::CreateArgs a;
    a.parent = parent;
    a.name = name;
    a.mode = S_IFDIR | 0755;
    auto rep = md.Create(RootCred(), a);
    EXPECT_TRUE(rep.ok()) << rep.status().ToString();
    if (rep_out != nullptr && rep.ok()) *rep_out = *rep;
    return rep.ok() ? rep->attr().ino() : 0;
  }
  Status Touch(client::Client* c, uint64_t parent, const std::string& name) {
    client::Metadata md(c);
    client::Metadata::CreateArgs a;
    a.parent = parent;
    a.name = name;
    a.mode = S_IFREG | 0644;
    return md.Create(RootCred(), a).status();
  }
  // Waits (bounded) until the cache served `n` revocations: the MDS's call returns before
  // the change's reply, so this holds at once; the loop only covers scheduling.
  void ExpectRevocations(uint64_t n) {
    for (int i = 0; i < 100 && cache_->counters().revocations < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(cache_->counters().revocations, n);
  }

  std::unique_ptr<client::Client> mine_;
  std::unique_ptr<LeaseCache> cache_;
};

TEST_F(LeaseCacheTest, LeasesBecomeLongTimeoutsAndAnotherClientsChangeRevokesThem) {
  client::Metadata md(mine_.get());
  const uint64_t d = Mkdir(g_client, 1, "revoked");
  const LeaseCache::Stamp stamp = cache_->Begin();
  auto absent = md.Lookup(RootCred(), d, "x", /*negative_ok=*/true);
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  EXPECT_EQ(absent->attr().ino(), 0u);
  ASSERT_GT(absent->entry_lease_ms(), 0u);
  const double t = cache_->EntryTimeout(d, "x", absent->entry_lease_ms(), stamp);
  EXPECT_GT(t, 20.0) << "about 90% of a 30 s lease";
  EXPECT_LE(t, 30.0);
  auto attr = md.Getattr(RootCred(), d);
  ASSERT_TRUE(attr.ok());
  EXPECT_GT(cache_->AttrTimeout(d, attr->attr_lease_ms(), stamp), 20.0);
  EXPECT_EQ(cache_->counters().cached, 2u);

  // The other client creates the absent name: before its create returns, the cache was
  // told to forget the directory's names (and the directory's attributes: its mtime).
  ASSERT_TRUE(Touch(g_client, d, "x").ok());
  ExpectRevocations(1);
  EXPECT_EQ(cache_->counters().cached, 0u);
  EXPECT_EQ(cache_->counters().invalidated, 2u);
  // A reply to a request that was in flight across that revocation gets the short timeout.
  EXPECT_EQ(cache_->EntryTimeout(d, "x", 30'000, stamp), 1.0);
  // Without a lease, the short timeout too.
  EXPECT_EQ(cache_->EntryTimeout(d, "y", 0, cache_->Begin()), 1.0);
}

// The mount's write-back grants (client/fuse/unlink_writeback.h) hear of each revoked
// directory; an answer that took over kSlowAnswer may have come after the MDS gave up on
// this client and dropped its grants, so the cache then ends them all.
TEST_F(LeaseCacheTest, AnAnswerToARevocationThatTookOverASecondEndsEveryWriteBackGrant) {
  std::mutex mu;
  std::vector<std::pair<std::vector<uint64_t>, bool>> calls;
  std::chrono::milliseconds delay{0};
  cache_->set_on_revoked_dirs([&](const std::vector<uint64_t>& dirs, bool all) {
    std::chrono::milliseconds wait;
    {
      std::lock_guard lock(mu);
      calls.emplace_back(dirs, all);
      wait = all ? std::chrono::milliseconds(0) : delay;
    }
    std::this_thread::sleep_for(wait);  // the queued unlinks take this long to send
  });
  struct Unset {  // on every way out: the callback uses this test's locals
    LeaseCache* cache;
    ~Unset() { cache->set_on_revoked_dirs(nullptr); }
  } unset{cache_.get()};
  client::Metadata md(mine_.get());
  // A directory revoked once is contended for a while (no new lease): one each round.
  for (const char* dir : {"quick-answer", "slow-answer"}) {
    const uint64_t d = Mkdir(g_client, 1, dir);
    auto absent = md.Lookup(RootCred(), d, "x", /*negative_ok=*/true);
    ASSERT_TRUE(absent.ok()) << absent.status().ToString();
    ASSERT_GT(absent->entry_lease_ms(), 0u);
    ASSERT_TRUE(Touch(g_client, d, "x").ok());  // revokes d, answered after the callback
    std::unique_lock lock(mu);
    for (int i = 0; i < 500 && calls.size() < (delay.count() == 0 ? 1u : 3u); ++i) {
      lock.unlock();  // bounded: only if the MDS stopped waiting for the slow answer
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      lock.lock();
    }
    if (delay.count() == 0) {
      // A quick answer: the directory's grant alone ends.
      ASSERT_EQ(calls.size(), 1u);
      EXPECT_EQ(calls[0].first, std::vector<uint64_t>{d});
      EXPECT_FALSE(calls[0].second);
      delay = LeaseCache::kSlowAnswer + std::chrono::milliseconds(200);
    } else {
      ASSERT_EQ(calls.size(), 3u) << "the directory's, then every grant";
      EXPECT_EQ(calls[1].first, std::vector<uint64_t>{d});
      EXPECT_FALSE(calls[1].second);
      EXPECT_TRUE(calls[2].second);
    }
  }
}

TEST_F(LeaseCacheTest, ADirectoryThisClientMadeIsKnownUntilAnotherChangesIt) {
  proto::EntryReply made;
  const LeaseCache::Stamp stamp = cache_->Begin();
  const uint64_t d = Mkdir(mine_.get(), 1, "complete", &made);
  ASSERT_GT(made.dir_lease_ms(), 0u);
  cache_->DirCreated(d, made.dir_lease_ms(), stamp);
  double t = 0;
  EXPECT_TRUE(cache_->KnownAbsent(d, "a", &t));
  EXPECT_GT(t, 20.0);
  // This client's own create: known, and its own changes revoke nothing of its own.
  ASSERT_TRUE(Touch(mine_.get(), d, "a").ok());
  cache_->NameAdded(d, "a", 0, LeaseCache::Stamp{});
  EXPECT_FALSE(cache_->KnownAbsent(d, "a", &t)) << "a exists";
  EXPECT_TRUE(cache_->KnownAbsent(d, "b", &t));
  cache_->NameRemoved(d, "a");
  EXPECT_TRUE(cache_->KnownAbsent(d, "a", &t));
  cache_->NameAdded(d, "a", 0, LeaseCache::Stamp{});
  EXPECT_EQ(cache_->counters().revocations, 0u);

  // Another client creates in it: it is not known any more.
  ASSERT_TRUE(Touch(g_client, d, "b").ok());
  ExpectRevocations(1);
  EXPECT_FALSE(cache_->KnownAbsent(d, "b", &t));
  EXPECT_FALSE(cache_->KnownAbsent(d, "zzz", &t));
  // A change of this client's that failed also ends it.
  const uint64_t e = Mkdir(mine_.get(), 1, "unsure", &made);
  cache_->DirCreated(e, made.dir_lease_ms(), cache_->Begin());
  EXPECT_TRUE(cache_->KnownAbsent(e, "q", &t));
  cache_->DirUnsure(e);
  EXPECT_FALSE(cache_->KnownAbsent(e, "q", &t));
}

// A batch of lookups (client/entry_batches.h) gets each name's leases, as single lookups
// would: an entry lease on the directory and an attribute lease on each file found, which
// another client's change of that file then revokes.
TEST_F(LeaseCacheTest, EachLookupOfABatchGetsItsLeases) {
  const uint64_t d = Mkdir(g_client, 1, "batched");
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(Touch(g_client, d, name).ok());
  const LeaseCache::Stamp stamp = cache_->Begin();
  proto::LookupRequest req;
  *req.mutable_cred() = RootCred();
  req.set_parent(d);
  req.set_name("a");
  for (const char* name : {"b", "missing", "c"}) req.add_more_names(name);
  req.set_negative_ok(true);
  proto::EntryReply rep;
  Status st = mine_->MdsCall(proto::OP_MDS_LOOKUP, req, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(rep.codes_size(), 4);
  ASSERT_EQ(rep.more_size(), 3);
  std::vector<const proto::EntryReply*> each = {&rep, &rep.more(0), &rep.more(1), &rep.more(2)};
  for (size_t i = 0; i < each.size(); ++i) {
    EXPECT_EQ(rep.codes(static_cast<int>(i)), 0) << i;
    EXPECT_GT(each[i]->entry_lease_ms(), 0u) << i;
    if (i == 2) {
      EXPECT_EQ(each[i]->attr().ino(), 0u) << "missing";
      EXPECT_EQ(each[i]->attr_lease_ms(), 0u);
      continue;
    }
    ASSERT_GT(each[i]->attr_lease_ms(), 0u) << i;
    EXPECT_GT(cache_->AttrTimeout(each[i]->attr().ino(), each[i]->attr_lease_ms(), stamp), 20.0);
  }
  // The other client changes c, the batch's last name: the MDS revokes this client's lease
  // on it before it answers.
  proto::SetattrRequest chmod;
  chmod.set_ino(rep.more(2).attr().ino());
  chmod.set_valid(proto::SETATTR_MODE);
  chmod.mutable_attr()->set_mode(0600);
  ASSERT_TRUE(client::Metadata(g_client).Setattr(RootCred(), chmod).ok());
  ExpectRevocations(1);
  EXPECT_EQ(cache_->counters().cached, 2u) << "a's and b's attributes stay";
}

TEST_F(LeaseCacheTest, LostLeasesAreDroppedAndRegisteredAgain) {
  client::Metadata md(mine_.get());
  const LeaseCache::Stamp stamp = cache_->Begin();
  auto attr = md.Getattr(RootCred(), 1);
  ASSERT_TRUE(attr.ok());
  ASSERT_GT(cache_->AttrTimeout(1, attr->attr_lease_ms(), stamp), 1.0);
  EXPECT_EQ(cache_->counters().cached, 1u);
  cache_->CheckRegistered(true);  // the keepalive's normal answer: nothing happens
  EXPECT_EQ(cache_->counters().cached, 1u);
  cache_->CheckRegistered(false);  // the MDS lost us: drop all, register again
  EXPECT_EQ(cache_->counters().cached, 0u);
  EXPECT_EQ(cache_->counters().invalidated, 1u);
  EXPECT_TRUE(cache_->enabled());
  const LeaseCache::Stamp again = cache_->Begin();
  attr = md.Getattr(RootCred(), 1);
  ASSERT_TRUE(attr.ok());
  EXPECT_GT(cache_->AttrTimeout(1, attr->attr_lease_ms(), again), 1.0);
}

// Whether the peer closed `fd` within 5 s (what it sent before is read and dropped).
bool PeerClosed(int fd) {
  char b[4096];
  for (int i = 0; i < 50; ++i) {
    const ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN)) return true;
    if (n < 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Sends `bytes` on a new TCP connection to the callback server; says whether it was dropped.
bool DroppedAfter(const lnet::Nid& nid, std::string_view bytes) {
  Result<int> fd = lnet::TcpConnect(nid, 2'000);
  EXPECT_TRUE(fd.ok()) << fd.status().ToString();
  if (!fd.ok()) return false;
  EXPECT_EQ(send(*fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  const bool closed = PeerClosed(*fd);
  close(*fd);
  return closed;
}

std::string Header(const lnet::FrameHeader& h) {
  std::string out(lnet::kFrameHeaderSize, '\0');
  lnet::EncodeHeader(h, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

// Whatever reaches the callback server, it answers or drops that one request or connection,
// forgets nothing it was not told to, and goes on serving: the MDS's revocations depend on it.
TEST_F(LeaseCacheTest, TheCallbackServerSurvivesBadRevocationsAndStillServesGoodOnes) {
  client::Metadata md(mine_.get());
  const uint64_t d = Mkdir(g_client, 1, "hostile");
  const LeaseCache::Stamp stamp = cache_->Begin();
  auto absent = md.Lookup(RootCred(), d, "x", /*negative_ok=*/true);
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  ASSERT_GT(cache_->EntryTimeout(d, "x", absent->entry_lease_ms(), stamp), 1.0);
  auto attr = md.Getattr(RootCred(), d);
  ASSERT_TRUE(attr.ok());
  ASSERT_GT(cache_->AttrTimeout(d, attr->attr_lease_ms(), stamp), 1.0);
  ASSERT_EQ(cache_->counters().cached, 2u);

  auto nid = lnet::Nid::Parse(cache_->callback_nid());
  ASSERT_TRUE(nid.ok()) << cache_->callback_nid();
  lnet::ClientOptions o;
  o.fsname = g_cluster->options().fsname;
  o.rpc_timeout_ms = 10'000;
  o.retry_deadline_ms = 2'000;
  lnet::RpcClient peer(*nid, o);
  std::string reply;

  // (a) A body that is no LeaseRevokeRequest: an error reply saying so; nothing is served.
  Status st = peer.CallRaw(proto::OP_CLIENT_LEASE_REVOKE, "\xff\xff\xff\xff", &reply);
  EXPECT_EQ(st.code(), Code::kProtocol) << st.ToString();
  EXPECT_NE(st.message().find("does not parse"), std::string::npos) << st.ToString();
  EXPECT_EQ(cache_->counters().revocations, 0u);

  // (b) Revocations of what this mount does not hold, inode 0 and the largest inode among
  // them, and then of half a million of them in one request: answered OK, because the MDS
  // takes an error for a dead client and drops all its leases, and a lease the mount never
  // recorded (its reply lost, or given a short timeout) is one it no longer holds. Nothing
  // cached is forgotten or invalidated.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  proto::LeaseRevokeRequest strangers;
  for (uint64_t i : {uint64_t{0}, d + 1'000'000, kMax}) strangers.add_dirs(i);
  for (uint64_t i : {uint64_t{0}, uint64_t{1}, d + 1'000'000, kMax}) strangers.add_inos(i);
  proto::LeaseRevokeReply ok;
  st = peer.Call(proto::OP_CLIENT_LEASE_REVOKE, strangers, &ok);
  EXPECT_TRUE(st.ok()) << st.ToString();
  proto::LeaseRevokeRequest many;
  for (uint64_t i = 0; i < 250'000; ++i) {
    many.add_dirs((uint64_t{1} << 40) + i);
    many.add_inos((uint64_t{1} << 40) + i);
  }
  st = peer.Call(proto::OP_CLIENT_LEASE_REVOKE, many, &ok);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(cache_->counters().revocations, 2u);
  EXPECT_EQ(cache_->counters().cached, 2u) << "what it holds was not named";
  EXPECT_EQ(cache_->counters().invalidated, 0u);

  // (c) Bytes that are no frame, a frame too large to take, and a request before CONNECT:
  // that connection is dropped (the last after an error reply), and only that one.
  EXPECT_TRUE(DroppedAfter(*nid, std::string(200, 'Z')));
  lnet::FrameHeader huge;
  huge.opcode = proto::OP_CLIENT_LEASE_REVOKE;
  huge.body_len = std::numeric_limits<uint32_t>::max();
  EXPECT_TRUE(DroppedAfter(*nid, Header(huge)));
  {
    lnet::FrameHeader early;
    early.opcode = proto::OP_CLIENT_LEASE_REVOKE;
    Result<int> fd = lnet::TcpConnect(*nid, 2'000);
    ASSERT_TRUE(fd.ok()) << fd.status().ToString();
    const std::string bytes = Header(early);
    ASSERT_EQ(send(*fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
    uint8_t got[lnet::kFrameHeaderSize];
    st = lnet::RecvAll(*fd, got, sizeof got, lnet::Clock::now() + std::chrono::seconds(5));
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto h = lnet::DecodeHeader(got, lnet::FrameLimits{});
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->status, static_cast<int32_t>(Code::kProtocol));
    EXPECT_TRUE(PeerClosed(*fd));
    close(*fd);
  }
  EXPECT_EQ(cache_->counters().revocations, 2u);
  EXPECT_EQ(cache_->counters().cached, 2u);

  // Still serving: a revocation of what it holds is applied, on the connection used above...
  proto::LeaseRevokeRequest good;
  good.add_dirs(d);
  good.add_inos(d);
  st = peer.Call(proto::OP_CLIENT_LEASE_REVOKE, good, &ok);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(cache_->counters().revocations, 3u);
  EXPECT_EQ(cache_->counters().cached, 0u);
  EXPECT_EQ(cache_->counters().invalidated, 2u);
  // ...and the MDS's own, for another client's change, still comes through.
  const LeaseCache::Stamp again = cache_->Begin();
  absent = md.Lookup(RootCred(), d, "y", /*negative_ok=*/true);
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  ASSERT_GT(cache_->EntryTimeout(d, "y", absent->entry_lease_ms(), again), 1.0);
  ASSERT_TRUE(Touch(g_client, d, "y").ok());
  ExpectRevocations(4);
  EXPECT_EQ(cache_->counters().cached, 0u);
  EXPECT_EQ(cache_->counters().invalidated, 3u);
}

}  // namespace
}  // namespace stria::testing
