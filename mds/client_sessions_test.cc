// ClientSessions: locks per client, eviction of silent clients, recovery after a restart.
#include "mds/client_sessions.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "mds/destroy_queue.h"
#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using namespace std::chrono_literals;

proto::LockRequest WriteLock(uint64_t ino, uint64_t start, uint64_t end) {
  proto::LockRequest req;
  req.set_ino(ino);
  req.set_owner(1);
  req.set_cmd(proto::LOCKCMD_SET);
  req.set_type(proto::LOCKTYPE_WRITE);
  req.set_start(start);
  req.set_end(end);
  return req;
}

// A session table whose recovery window is already over.
struct Sessions {
  explicit Sessions(Namespace* ns, int lease_ms = 1000,
                    std::function<void(uint64_t)> writer_lost = nullptr)
      : s(ns, {.lease_ms = lease_ms, .writer_lost = std::move(writer_lost)}) {
    s.Tick(ClientSessions::Clock::now() + std::chrono::milliseconds(lease_ms));
  }
  ClientSessions s;
};

TEST(ClientSessionsTest, NewLocksWaitForTheRecoveryWindowButReplaysDoNot) {
  MdsFixture f;
  ClientSessions s(&f.ns(), {.lease_ms = 60'000, .writer_lost = nullptr});
  proto::LockReply rep;
  EXPECT_EQ(s.Lock("a", WriteLock(5, 0, 9), &rep).code(), Code::kNotReady);
  proto::LockRequest replay = WriteLock(5, 0, 9);
  replay.set_replay(true);
  EXPECT_TRUE(s.Lock("a", replay, &rep).ok());
  proto::KeepaliveReply ka;
  s.FillKeepalive(&ka);
  EXPECT_TRUE(ka.recovering());
  EXPECT_NE(ka.instance(), 0u);
  EXPECT_EQ(ka.lease_ms(), 60'000u);
}

TEST(ClientSessionsTest, ConflictsAreEagainAndTestReportsTheHolder) {
  MdsFixture f;
  Sessions t(&f.ns());
  proto::LockRequest req = WriteLock(5, 0, 9);
  req.set_pid(1234);
  proto::LockReply rep;
  ASSERT_TRUE(t.s.Lock("a", req, &rep).ok());
  EXPECT_EQ(t.s.Lock("b", WriteLock(5, 9, 20), &rep).code(), Code::kAgain);
  proto::LockRequest test = WriteLock(5, 5, 5);
  test.set_cmd(proto::LOCKCMD_TEST);
  ASSERT_TRUE(t.s.Lock("b", test, &rep).ok());
  EXPECT_EQ(rep.type(), proto::LOCKTYPE_WRITE);
  EXPECT_EQ(rep.pid(), 1234u);
  EXPECT_EQ(rep.end(), 9u);
}

TEST(ClientSessionsTest, MalformedRequestsAreEinval) {
  MdsFixture f;
  Sessions t(&f.ns());
  proto::LockReply rep;
  EXPECT_EQ(t.s.Lock("a", WriteLock(5, 10, 9), &rep).code(), Code::kInval);
  proto::LockRequest bad = WriteLock(5, 0, 9);
  bad.set_type(static_cast<proto::LockType>(77));
  EXPECT_EQ(t.s.Lock("a", bad, &rep).code(), Code::kInval);
}

TEST(ClientSessionsTest, SilentClientsAreEvictedWithTheirLocksAndHandles) {
  MdsFixture f;
  f.AddOsts(1);
  Sessions t(&f.ns(), 1000);
  const uint64_t ino = f.Mkfile(kRootIno, "f").attr().ino();
  proto::OpenRequest oreq;
  oreq.set_ino(ino);
  oreq.set_flags(O_RDONLY);
  proto::OpenReply orep;
  ASSERT_TRUE(Open(f.ns(), oreq, &orep).ok());
  t.s.Opened("a", orep.handle(), ino);
  proto::LockReply rep;
  ASSERT_TRUE(t.s.Lock("a", WriteLock(ino, 0, kLockEof), &rep).ok());
  ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
  t.s.Touch("b");
  EXPECT_EQ(t.s.Tick(ClientSessions::Clock::now()), 0u) << "nobody is silent yet";
  EXPECT_EQ(t.s.Tick(ClientSessions::Clock::now() + 2s), 2u);
  EXPECT_EQ(t.s.LockCount(), 0u);
  EXPECT_TRUE(t.s.Lock("b", WriteLock(ino, 0, 1), &rep).ok());
  // The evicted client's handle was closed: the unlinked file is gone.
  EXPECT_EQ(f.ns().GetInode(ino).status().code(), Code::kNoEnt);
}

TEST(ClientSessionsTest, WritersAreKnownPerFileAndAnEvictedOneIsReported) {
  MdsFixture f;
  f.AddOsts(1);
  std::vector<uint64_t> lost;
  Sessions t(&f.ns(), 1000, [&](uint64_t ino) { lost.push_back(ino); });
  const uint64_t ino = f.Mkfile(kRootIno, "w").attr().ino();
  uint64_t handles[3];
  for (uint64_t& h : handles) {
    proto::OpenRequest oreq;
    oreq.set_ino(ino);
    oreq.set_flags(O_RDWR);
    proto::OpenReply orep;
    ASSERT_TRUE(Open(f.ns(), oreq, &orep).ok());
    h = orep.handle();
  }
  t.s.Opened("a", handles[0], ino, 0, /*writer=*/true);
  t.s.Opened("a", handles[1], ino, 0, /*writer=*/true);
  t.s.Opened("b", handles[2], ino, 0, /*writer=*/false);  // a reader is nobody's concern
  EXPECT_EQ(t.s.OtherWriters(ino, "b"), std::vector<std::string>{"a"});
  EXPECT_TRUE(t.s.OtherWriters(ino, "a").empty()) << "a client is not asked about itself";
  EXPECT_TRUE(t.s.OtherWriters(ino + 1, "b").empty());
  t.s.Closed("a", handles[0]);
  EXPECT_EQ(t.s.OtherWriters(ino, "b"), std::vector<std::string>{"a"}) << "one handle left";
  t.s.Touch("b");
  EXPECT_EQ(t.s.Tick(ClientSessions::Clock::now() + 2s), 2u);
  EXPECT_EQ(lost, std::vector<uint64_t>{ino}) << "the evicted writer's file is glimpsed";
  EXPECT_TRUE(t.s.OtherWriters(ino, "b").empty());
}

TEST(ClientSessionsTest, ReopenedOrphansSurviveARestartOthersAreReaped) {
  MdsFixture f;
  f.AddOsts(1);
  const uint64_t kept = f.Mkfile(kRootIno, "kept").attr().ino();
  const uint64_t lost = f.Mkfile(kRootIno, "lost").attr().ino();
  uint64_t handles[2];
  for (int i = 0; i < 2; ++i) {
    proto::OpenRequest oreq;
    oreq.set_ino(i == 0 ? kept : lost);
    oreq.set_flags(O_RDONLY);
    proto::OpenReply orep;
    ASSERT_TRUE(Open(f.ns(), oreq, &orep).ok());
    handles[i] = orep.handle();
  }
  ASSERT_TRUE(f.Unlink(kRootIno, "kept", false).ok());
  ASSERT_TRUE(f.Unlink(kRootIno, "lost", false).ok());
  f.Reopen(/*reap_orphans=*/false);
  ClientSessions s(&f.ns(), {.lease_ms = 1000, .writer_lost = nullptr});
  proto::ReopenRequest rreq;
  rreq.set_ino(kept);
  rreq.set_handle(handles[0]);
  proto::ReopenReply rrep;
  ASSERT_TRUE(Reopen(f.ns(), rreq, &rrep).ok());
  s.Tick(ClientSessions::Clock::now());  // still recovering: nothing reaped
  EXPECT_TRUE(f.ns().GetInode(lost).ok());
  s.Tick(ClientSessions::Clock::now() + 2s);
  EXPECT_EQ(f.ns().GetInode(lost).status().code(), Code::kNoEnt);
  ASSERT_TRUE(f.ns().GetInode(kept).ok()) << "a reopened orphan was reaped";
  proto::CloseRequest creq;
  creq.set_ino(kept);
  creq.set_handle(handles[0]);
  proto::AttrReply crep;
  ASSERT_TRUE(Close(f.ns(), creq, &crep).ok());
  EXPECT_EQ(f.ns().GetInode(kept).status().code(), Code::kNoEnt) << "last close frees it";
}

}  // namespace
}  // namespace stria::mds
