// LeaseTable: grants, the race and contention rules, and revocations sent over real RPC to
// a callback server (what a FUSE mount runs), including one that never answers.
#include "mds/leases.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <set>

#include "lnet/rpc_server.h"
#include "mds/mds_test_util.h"
#include "mds/schema.h"
#include "proto/stria.pb.h"

namespace stria::mds {
namespace {

using Kind = LeaseTable::Kind;

// A client's callback server that records what it was told to forget.
class Callbacks {
 public:
  Callbacks() : server_(lnet::ServerOptions{.name = "test-callbacks", .fsname = "fs"}) {
    server_.Register<proto::LeaseRevokeRequest, proto::LeaseRevokeReply>(
        proto::OP_CLIENT_LEASE_REVOKE,
        [this](lnet::RpcContext&, const proto::LeaseRevokeRequest& req,
               proto::LeaseRevokeReply*) {
          std::lock_guard lock(mu_);
          ++calls_;
          dirs_.insert(req.dirs().begin(), req.dirs().end());
          inos_.insert(req.inos().begin(), req.inos().end());
          return Status::Ok();
        });
    Status st = server_.Start(lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", 0});
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  std::string nid() const { return "127.0.0.1@tcp:" + std::to_string(server_.port()); }
  void Stop() { server_.Stop(); }
  int calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::set<uint64_t> dirs() const {
    std::lock_guard lock(mu_);
    return dirs_;
  }
  std::set<uint64_t> inos() const {
    std::lock_guard lock(mu_);
    return inos_;
  }

 private:
  lnet::RpcServer server_;
  mutable std::mutex mu_;
  int calls_ = 0;
  std::set<uint64_t> dirs_, inos_;
};

MdChanges Changes(std::set<uint64_t> dirs, std::set<uint64_t> inos) {
  MdChanges c;
  c.dirs = std::move(dirs);
  c.inos = std::move(inos);
  return c;
}

LeaseOptions Options() {
  LeaseOptions o;
  o.lease_ms = 30'000;
  o.revoke_timeout_ms = 300;
  o.contended_ms = 60'000;
  o.fsname = "fs";
  return o;
}

TEST(LeaseTableTest, OnlyRegisteredClientsGetLeases) {
  LeaseTable t(Options());
  Callbacks a;
  EXPECT_EQ(t.Grant("A", Kind::kEntry, 10, t.Snapshot()), 0u);
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  EXPECT_EQ(t.Grant("A", Kind::kEntry, 10, t.Snapshot()), 30'000u);
  EXPECT_EQ(t.Grant("A", Kind::kAttr, 0, t.Snapshot()), 0u) << "inode 0 is nothing";
  EXPECT_FALSE(t.Register("B", "not a nid").ok());
  EXPECT_FALSE(t.Registered("B"));
  // A callback address the MDS cannot reach is refused at once (where nothing listens).
  Status st = t.Register("D", "127.0.0.1@tcp:1");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot reach"), std::string::npos) << st.ToString();
  EXPECT_FALSE(t.Registered("D"));
  EXPECT_EQ(t.Grant("D", Kind::kEntry, 10, t.Snapshot()), 0u);
}

TEST(LeaseTableTest, ChangesAreRevokedFromOtherHoldersOnlyAndExactly) {
  LeaseTable t(Options());
  Callbacks a, b;
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  ASSERT_TRUE(t.Register("B", b.nid()).ok());
  ASSERT_GT(t.Grant("A", Kind::kEntry, 10, t.Snapshot()), 0u);
  ASSERT_GT(t.Grant("A", Kind::kAttr, 11, t.Snapshot()), 0u);
  ASSERT_GT(t.Grant("A", Kind::kAttr, 12, t.Snapshot()), 0u);
  ASSERT_GT(t.Grant("B", Kind::kEntry, 10, t.Snapshot()), 0u);

  // B changes directory 10 and inode 11: A is told (and waits for nothing else), B is not.
  t.Revoke("B", Changes({10}, {11, 99}));
  EXPECT_EQ(a.calls(), 1);
  EXPECT_EQ(a.dirs(), std::set<uint64_t>({10}));
  EXPECT_EQ(a.inos(), std::set<uint64_t>({11})) << "only what A held";
  EXPECT_EQ(b.calls(), 0) << "the requester keeps its own leases";

  // A no longer holds 10 or 11: a second change revokes nothing more.
  t.Revoke("B", Changes({10}, {11}));
  EXPECT_EQ(a.calls(), 1);
  // A change by nobody (background work) reaches every holder, B's too.
  t.Revoke("", Changes({10}, {12}));
  EXPECT_EQ(a.calls(), 2);
  EXPECT_EQ(a.inos(), std::set<uint64_t>({11, 12}));
  EXPECT_EQ(b.calls(), 1);
  EXPECT_EQ(b.dirs(), std::set<uint64_t>({10}));
  EXPECT_EQ(t.counters().revocations, 3u);
}

TEST(LeaseTableTest, AReadThatStraddlesAnotherClientsChangeGetsNoLease) {
  LeaseTable t(Options());
  Callbacks a, b;
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  ASSERT_TRUE(t.Register("B", b.nid()).ok());
  const uint64_t before = t.Snapshot();  // A's read begins...
  t.Revoke("B", Changes({}, {5}));        // ...B changes inode 5 meanwhile...
  EXPECT_EQ(t.Grant("A", Kind::kAttr, 5, before), 0u) << "A may have read the old inode";
  EXPECT_GT(t.Grant("B", Kind::kAttr, 5, before), 0u) << "B's own change is no race for B";
  EXPECT_GT(t.Grant("A", Kind::kAttr, 5, t.Snapshot()), 0u) << "a read after the change";
  EXPECT_GT(t.Grant("A", Kind::kAttr, 6, before), 0u) << "another inode is unaffected";
  EXPECT_EQ(t.counters().refused, 1u);
}

TEST(LeaseTableTest, WhatWasRevokedIsContendedAndGetsNoNewLeases) {
  LeaseTable t(Options());
  Callbacks a, b;
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  ASSERT_TRUE(t.Register("B", b.nid()).ok());
  ASSERT_GT(t.Grant("A", Kind::kEntry, 7, t.Snapshot()), 0u);
  t.Revoke("B", Changes({7}, {}));
  ASSERT_EQ(a.calls(), 1);
  EXPECT_EQ(t.Grant("A", Kind::kEntry, 7, t.Snapshot()), 0u);
  // So B's next creates in directory 7 revoke nothing and wait for nobody; B itself, whose
  // changes revoke nothing of its own, still gets leases there.
  t.Revoke("B", Changes({7}, {}));
  EXPECT_EQ(a.calls(), 1);
  EXPECT_GT(t.Grant("B", Kind::kEntry, 7, t.Snapshot()), 0u);
  // When A changes it in turn, B is revoked once and A becomes the one that may cache it.
  t.Revoke("A", Changes({7}, {}));
  EXPECT_EQ(b.calls(), 1);
  EXPECT_EQ(t.Grant("B", Kind::kEntry, 7, t.Snapshot()), 0u);
  EXPECT_GT(t.Grant("A", Kind::kEntry, 7, t.Snapshot()), 0u);
}

TEST(LeaseTableTest, AWriteBackGrantIsExclusiveAndRecalledBeforeAnotherClientsRequest) {
  LeaseTable t(Options());
  Callbacks a, b;
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  ASSERT_TRUE(t.Register("B", b.nid()).ok());
  // Not while another client holds a lease over the directory, or its attributes.
  ASSERT_GT(t.Grant("B", Kind::kEntry, 20, t.Snapshot()), 0u);
  EXPECT_EQ(t.GrantWriteback("A", 20, t.Snapshot()), 0u);
  ASSERT_GT(t.Grant("B", Kind::kAttr, 21, t.Snapshot()), 0u);
  EXPECT_EQ(t.GrantWriteback("A", 21, t.Snapshot()), 0u);
  EXPECT_EQ(t.GrantWriteback("Z", 22, t.Snapshot()), 0u) << "not registered";
  EXPECT_FALSE(t.OthersHoldWriteback("B"));

  ASSERT_EQ(t.GrantWriteback("A", 22, t.Snapshot()), 30'000u);
  EXPECT_EQ(t.counters().writeback_granted, 1u);
  EXPECT_FALSE(t.OthersHoldWriteback("A")) << "its own grant";
  EXPECT_TRUE(t.OthersHoldWriteback("B"));
  // While A holds it nobody else gets a lease over the directory.
  EXPECT_EQ(t.Grant("B", Kind::kEntry, 22, t.Snapshot()), 0u);
  EXPECT_EQ(t.Grant("B", Kind::kAttr, 22, t.Snapshot()), 0u);
  EXPECT_GT(t.Grant("A", Kind::kEntry, 22, t.Snapshot()), 0u) << "the holder does";
  EXPECT_EQ(t.GrantWriteback("B", 22, t.Snapshot()), 0u);
  // A's own requests recall nothing; B's request about another inode neither.
  t.RecallWriteback("A", {22});
  t.RecallWriteback("B", {23, 0});
  EXPECT_EQ(a.calls(), 0);
  // B's request naming the directory recalls it: A is told (its entry lease on 22 goes).
  t.RecallWriteback("B", {5, 22});
  EXPECT_EQ(a.calls(), 1);
  EXPECT_EQ(a.dirs(), std::set<uint64_t>({22}));
  EXPECT_EQ(t.counters().writeback_recalled, 1u);
  // Ended: B's leases are given again, a second request recalls nothing, and A gets no new
  // grant while it is contended.
  EXPECT_GT(t.Grant("B", Kind::kEntry, 22, t.Snapshot()), 0u);
  t.RecallWriteback("B", {22});
  EXPECT_EQ(a.calls(), 1);
  EXPECT_FALSE(t.OthersHoldWriteback("B"));
  EXPECT_EQ(t.GrantWriteback("A", 22, t.Snapshot()), 0u);
}

// A grant past its end that the sweep has not reached yet (more than kSweepBatch resources
// came due before it) goes to another client: the first holder's own requests must recall
// it from then on (its count of grants held went with it).
TEST(LeaseTableTest, AGrantTakenOverBeforeItWasSweptIsRecalledFromItsNewHolder) {
  auto now =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  LeaseOptions o = Options();
  o.clock = [now] { return *now; };
  LeaseTable t(o);
  Callbacks a, b;
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  ASSERT_TRUE(t.Register("B", b.nid()).ok());
  for (uint64_t ino = 1000; ino < 1000 + LeaseTable::kSweepBatch + 100; ++ino) {
    ASSERT_GT(t.Grant("A", Kind::kAttr, ino, t.Snapshot()), 0u);
  }
  *now += std::chrono::milliseconds(1);
  ASSERT_GT(t.GrantWriteback("A", 22, t.Snapshot()), 0u);
  EXPECT_TRUE(t.OthersHoldWriteback("B"));
  *now += std::chrono::hours(1);  // everything is past its end
  ASSERT_GT(t.GrantWriteback("B", 22, t.Snapshot()), 0u) << "A's grant had ended";
  EXPECT_TRUE(t.OthersHoldWriteback("A")) << "B holds one now";
  EXPECT_FALSE(t.OthersHoldWriteback("B"));
  t.RecallWriteback("A", {22});
  EXPECT_EQ(b.calls(), 1);
  EXPECT_FALSE(t.OthersHoldWriteback("A"));
}

TEST(LeaseTableTest, AnotherClientsChangeOrForgettingTheHolderEndsAWriteBackGrant) {
  LeaseTable t(Options());
  Callbacks a, b;
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  ASSERT_TRUE(t.Register("B", b.nid()).ok());
  ASSERT_GT(t.GrantWriteback("A", 30, t.Snapshot()), 0u);
  t.Revoke("A", Changes({30}, {31}));  // A's own unlinks keep it
  EXPECT_EQ(t.Grant("B", Kind::kEntry, 30, t.Snapshot()), 0u);
  t.Revoke("", Changes({30}, {}));  // background work changed the directory
  EXPECT_EQ(a.calls(), 1);
  EXPECT_EQ(a.dirs(), std::set<uint64_t>({30}));
  t.RecallWriteback("B", {30});
  EXPECT_EQ(a.calls(), 1) << "nothing left to recall";

  ASSERT_GT(t.GrantWriteback("A", 32, t.Snapshot()), 0u);
  t.Forget("A");
  EXPECT_GT(t.Grant("B", Kind::kEntry, 32, t.Snapshot()), 0u);
  t.RecallWriteback("B", {32});
  EXPECT_EQ(a.calls(), 1);
}

TEST(LeaseTableTest, AHolderThatDoesNotAnswerLosesEveryLeaseOnce) {
  LeaseTable t(Options());
  Callbacks a, c;
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  ASSERT_TRUE(t.Register("C", c.nid()).ok());
  ASSERT_GT(t.Grant("C", Kind::kEntry, 1, t.Snapshot()), 0u);
  ASSERT_GT(t.Grant("C", Kind::kAttr, 2, t.Snapshot()), 0u);
  ASSERT_GT(t.Grant("A", Kind::kAttr, 3, t.Snapshot()), 0u);
  c.Stop();  // C's callback server goes away
  t.Revoke("A", Changes({1}, {}));
  EXPECT_EQ(t.counters().revoke_failures, 1u);
  EXPECT_FALSE(t.Registered("C")) << "C must register again (its keepalive tells it)";
  EXPECT_EQ(t.Grant("C", Kind::kAttr, 4, t.Snapshot()), 0u);
  // C's other lease went with it: changing inode 2 asks nobody.
  t.Revoke("A", Changes({}, {2}));
  EXPECT_EQ(t.counters().revocations, 1u);
  EXPECT_EQ(t.counters().held, 1u) << "A's lease on inode 3 stays";
}

// A table whose clock the test moves.
struct FakeClock {
  LeaseTable::Clock::time_point now = LeaseTable::Clock::now();
};

LeaseOptions Options(const std::shared_ptr<FakeClock>& clock) {
  LeaseOptions o = Options();
  o.clock = [clock] { return clock->now; };
  return o;
}

// A table on a clock the test moves, with client A registered.
class ClockedLeaseTableTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(t.Register("A", a.nid()).ok()); }

  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  LeaseTable t{Options(clock)};
  Callbacks a;
};

TEST_F(ClockedLeaseTableTest, ASweepLooksOnlyAtWhatEndedAndAtABatchAtATime) {
  constexpr uint64_t kEnded = 3 * LeaseTable::kSweepBatch + 5;
  constexpr uint64_t kLive = 100;
  constexpr uint64_t kLiveBase = 1'000'000;
  for (uint64_t i = 1; i <= kEnded; ++i) ASSERT_GT(t.Grant("A", Kind::kAttr, i, 0), 0u);
  clock->now += std::chrono::seconds(20);
  for (uint64_t i = 0; i < kLive; ++i) {
    ASSERT_GT(t.Grant("A", Kind::kEntry, kLiveBase + i, 0), 0u);
  }
  EXPECT_EQ(t.counters().swept, 0u) << "nothing was due";
  EXPECT_EQ(t.counters().held, kEnded + kLive);

  // The first leases ended 5 s ago, the others have 15 s left. Each grant's sweep looks at
  // one batch of what ended, and never at a live lease (this one is renewed, too).
  clock->now += std::chrono::seconds(15);
  ASSERT_GT(t.Grant("A", Kind::kEntry, kLiveBase, 0), 0u);
  EXPECT_EQ(t.counters().swept, LeaseTable::kSweepBatch);
  EXPECT_EQ(t.counters().held, kEnded + kLive - LeaseTable::kSweepBatch);
  for (int pass = 0; pass < 4; ++pass) ASSERT_GT(t.Grant("A", Kind::kEntry, kLiveBase, 0), 0u);
  EXPECT_EQ(t.counters().swept, kEnded) << "each ended lease once, no live one";
  EXPECT_EQ(t.counters().held, kLive);

  // What ended is gone (changing it asks nobody); what lives is still revoked.
  t.Revoke("", Changes({}, {1, 2, kEnded}));
  EXPECT_EQ(a.calls(), 0);
  t.Revoke("", Changes({kLiveBase + 1}, {}));
  EXPECT_EQ(a.calls(), 1);
  EXPECT_EQ(a.dirs(), std::set<uint64_t>({kLiveBase + 1}));
}

TEST(LeaseTableTest, AChangeIsRememberedUntilItAgesOutThenReadsBeforeItGetNoLease) {
  auto clock = std::make_shared<FakeClock>();
  LeaseTable t(Options(clock));  // contended for 60 s
  Callbacks a, b;
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  ASSERT_TRUE(t.Register("B", b.nid()).ok());
  ASSERT_GT(t.Grant("A", Kind::kAttr, 5, t.Snapshot()), 0u);
  const uint64_t before = t.Snapshot();
  t.Revoke("B", Changes({}, {5}));
  ASSERT_EQ(a.calls(), 1);
  // A's lease would have ended now: the sweep looks, and keeps the (contended) change.
  clock->now += std::chrono::seconds(31);
  EXPECT_EQ(t.Grant("A", Kind::kAttr, 5, t.Snapshot()), 0u) << "contended";
  EXPECT_EQ(t.counters().swept, 1u);
  clock->now += std::chrono::seconds(30);
  EXPECT_GT(t.Grant("A", Kind::kAttr, 6, t.Snapshot()), 0u);
  EXPECT_EQ(t.counters().swept, 2u) << "looked at once more, when it stopped being contended";
  // Forgotten now: a read that began before the change gets no lease, on anything.
  EXPECT_EQ(t.Grant("A", Kind::kAttr, 7, before), 0u);
  EXPECT_GT(t.Grant("A", Kind::kAttr, 5, t.Snapshot()), 0u);
  EXPECT_EQ(t.counters().held, 2u);
}

// The index holds resources by tick: one is looked at once its whole tick has passed,
// never before its time, and no more than a tick after it.
TEST_F(ClockedLeaseTableTest, AResourceIsSweptNotBeforeItsTimeAndAtMostATickAfter) {
  ASSERT_GT(t.Grant("A", Kind::kAttr, 1, 0), 0u);  // ends in 30 s
  clock->now += std::chrono::seconds(30) - std::chrono::microseconds(1);
  ASSERT_GT(t.Grant("A", Kind::kAttr, 2, 0), 0u);
  EXPECT_EQ(t.counters().swept, 0u) << "looked at before its lease ended";
  clock->now += std::chrono::microseconds(1) + LeaseTable::kTick;
  ASSERT_GT(t.Grant("A", Kind::kAttr, 2, 0), 0u);
  EXPECT_EQ(t.counters().swept, 1u) << "not looked at a tick after its lease ended";
  EXPECT_EQ(t.counters().held, 1u);
  EXPECT_EQ(t.counters().resources, 1u);
}

// A directory whose entry lease ended while its write-back grant runs on (the grant lasts
// a little longer, mds/leases.cc) and whose change aged out: the sweep looks at it again
// when the grant ends, not at every pass until then (it used to be put back as due at once,
// and looked at a whole batch of times by each grant's sweep).
TEST_F(ClockedLeaseTableTest, AWriteBackGrantPastItsLeaseIsLookedAtWhenItEndsOnly) {
  t.Revoke("A", Changes({22}, {}));                        // A's own change: ages out in 10 s
  ASSERT_GT(t.GrantWriteback("A", 22, t.Snapshot()), 0u);  // lease: 30 s
  clock->now += std::chrono::seconds(11);
  ASSERT_GT(t.Grant("A", Kind::kAttr, 5, t.Snapshot()), 0u);
  EXPECT_EQ(t.counters().swept, 1u) << "the change aged out";
  clock->now += std::chrono::seconds(20);  // the lease ended, the grant has 2 s left
  ASSERT_GT(t.Grant("A", Kind::kAttr, 5, t.Snapshot()), 0u);
  EXPECT_EQ(t.counters().swept, 2u);
  EXPECT_TRUE(t.OthersHoldWriteback("B")) << "the grant outlives the lease by 2 s";
  clock->now += std::chrono::milliseconds(500);  // ticks later; the grant runs 1.5 s more
  ASSERT_GT(t.Grant("A", Kind::kAttr, 5, t.Snapshot()), 0u);
  EXPECT_EQ(t.counters().swept, 2u) << "looked at again before the grant ended";
  clock->now += std::chrono::seconds(2);
  ASSERT_GT(t.Grant("A", Kind::kAttr, 5, t.Snapshot()), 0u);
  EXPECT_EQ(t.counters().swept, 3u);
  EXPECT_FALSE(t.OthersHoldWriteback("B"));
  EXPECT_EQ(t.counters().resources, 1u) << "the directory is forgotten; inode 5 stays";
}

TEST(LeaseTableTest, CommitsOutsideACaptureAreRevokedInTheBackground) {
  LeaseTable t(Options());
  Callbacks a;
  ASSERT_TRUE(t.Register("A", a.nid()).ok());
  ASSERT_GT(t.Grant("A", Kind::kAttr, 8, t.Snapshot()), 0u);
  t.RevokeLater(Changes({}, {8}));
  for (int i = 0; i < 200 && a.calls() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(a.inos(), std::set<uint64_t>({8}));
}

TEST(LeaseTableTest, ACaptureGathersWhatNestedCommitsChanged) {
  MdChanges outer;
  ScopedChangeCapture c1(&outer);
  EXPECT_EQ(ScopedChangeCapture::Active(), &outer);
  {
    MdChanges inner;
    ScopedChangeCapture c2(&inner);
    EXPECT_EQ(ScopedChangeCapture::Active(), &inner);
  }
  EXPECT_EQ(ScopedChangeCapture::Active(), &outer);
}

TEST(LeaseTableTest, CommitsReportTheDirectoriesAndInodesTheyChange) {
  testing::MdsFixture f;
  f.AddOsts(2);
  const uint64_t d = f.Mkdir(kRootIno, "d").attr().ino();
  MdChanges created;
  proto::EntryReply file;
  {
    ScopedChangeCapture capture(&created);
    ASSERT_TRUE(f.Create(d, "f", S_IFREG | 0644, testing::Root(), &file).ok());
  }
  const uint64_t ino = file.attr().ino();
  EXPECT_EQ(created.dirs, std::set<uint64_t>({d}));
  EXPECT_EQ(created.inos, std::set<uint64_t>({d, ino})) << "the new file and its parent's times";

  MdChanges renamed;
  {
    ScopedChangeCapture capture(&renamed);
    ASSERT_TRUE(f.Rename(d, "f", kRootIno, "g").ok());
  }
  EXPECT_EQ(renamed.dirs, std::set<uint64_t>({d, kRootIno}));
  EXPECT_TRUE(renamed.inos.count(ino)) << "the moved file's ctime";

  // Without a capture, the namespace's listener gets them (background work).
  MdChanges heard;
  f.ns().set_change_listener([&heard](MdChanges c) { heard.Merge(c); });
  ASSERT_TRUE(f.Unlink(kRootIno, "g", false).ok());
  f.ns().set_change_listener(nullptr);
  EXPECT_EQ(heard.dirs, std::set<uint64_t>({kRootIno}));
  EXPECT_TRUE(heard.inos.count(ino));
  // A failed change changes nothing and reports nothing.
  MdChanges failed;
  {
    ScopedChangeCapture capture(&failed);
    EXPECT_FALSE(f.Unlink(kRootIno, "missing", false).ok());
  }
  EXPECT_TRUE(failed.empty());
}

}  // namespace
}  // namespace stria::mds
