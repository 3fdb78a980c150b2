// The MDS across a simulated power loss (mds/internal/power_loss_fs.h): what was synced
// survives, the database stays consistent, and no inode number or object id that a reply
// made known is handed out again.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "mds/internal/power_loss_fs.h"
#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using internal::PowerLossFs;
using testing::MdsFixture;
using testing::Root;

// One operation as MdsService runs it with a commit interval: answered without waiting for
// the WAL sync unless it reserved ids (DeferredSync::Done).
proto::EntryReply LazyCreate(Namespace& ns, uint64_t parent, const std::string& name,
                             uint32_t mode) {
  DeferredSync durable(&ns);
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(parent);
  req.set_name(name);
  req.set_mode(mode);
  proto::EntryReply rep;
  Status st = Create(ns, req, &rep);
  EXPECT_TRUE(st.ok()) << name << ": " << st.ToString();
  EXPECT_TRUE(durable.Done(/*wait=*/false).ok());
  return rep;
}

TEST(PowerLossTest, SyncedChangesSurviveAndIdsAreNeverHandedOutTwice) {
  std::shared_ptr<PowerLossFs> fs;
  std::unique_ptr<rocksdb::Env> env = PowerLossFs::NewEnv(&fs);
  MdsFixture f;
  f.Reopen(true, env.get());
  f.AddOsts(2);  // MGS changes: synced

  uint64_t max_ino = 0;
  std::map<uint32_t, uint64_t> max_object;  // per OST index
  auto note = [&](const proto::EntryReply& rep) {
    max_ino = std::max<uint64_t>(max_ino, rep.attr().ino());
    for (const proto::StripeObject& o : rep.layout().objects()) {
      max_object[o.ost_idx()] = std::max<uint64_t>(max_object[o.ost_idx()], o.object_id());
    }
  };
  // Made durable before the cut, as fsync of the directory does (OP_MDS_SYNC).
  const proto::EntryReply kept = LazyCreate(f.ns(), kRootIno, "kept", S_IFDIR | 0755);
  note(kept);
  note(LazyCreate(f.ns(), kept.attr().ino(), "a", S_IFREG | 0644));
  ASSERT_TRUE(f.ns().SyncAll().ok());
  // Answered, never synced.
  const proto::EntryReply lost = LazyCreate(f.ns(), kRootIno, "lost", S_IFDIR | 0755);
  note(lost);
  constexpr int kLazy = 50;
  for (int i = 0; i < kLazy; ++i) note(LazyCreate(f.ns(), lost.attr().ino(), "f" + std::to_string(i), S_IFREG | 0644));
  ASSERT_GT(max_object.size(), 0u);

  fs->CutPower();
  f.Close();  // its WAL sync and close write nothing now
  EXPECT_GT(fs->DropUnsynced(), 0u) << "the lazy creates left unsynced WAL bytes";
  f.Reopen(true, nullptr);  // the machine is back: plain disk

  // Synced before the cut: there.
  auto k = f.Lookup(kRootIno, "kept");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_TRUE(f.Lookup(k->ino(), "a").ok());
  // The unsynced tail is gone, and what is left is consistent: every name leads to an inode.
  int survived = 0;
  if (auto l = f.Lookup(kRootIno, "lost"); l.ok()) {
    for (int i = 0; i < kLazy; ++i) {
      auto e = f.Lookup(l->ino(), "f" + std::to_string(i));
      if (!e.ok()) continue;
      ++survived;
      EXPECT_EQ(f.Getattr(e->ino()).ino(), e->ino());
    }
  }
  EXPECT_LT(survived, kLazy) << "a power cut lost none of the unsynced creates: not a cut";

  // New inodes and objects come after everything handed out before the cut.
  proto::EntryReply fresh = LazyCreate(f.ns(), kRootIno, "after", S_IFREG | 0644);
  EXPECT_GT(fresh.attr().ino(), max_ino);
  for (int i = 0; i < 4; ++i) {
    proto::EntryReply r = LazyCreate(f.ns(), kRootIno, "after" + std::to_string(i), S_IFREG | 0644);
    for (const proto::StripeObject& o : r.layout().objects()) {
      EXPECT_GT(o.object_id(), max_object[o.ost_idx()]) << "object id reused on OST " << o.ost_idx();
    }
  }
}

// The MDS's start count (ConnectReply.generation) is on disk before it serves: a power
// loss that takes back what came after it keeps it, so the next start is one more.
TEST(PowerLossTest, TheStartCountSurvivesAndGrowsByOne) {
  std::shared_ptr<PowerLossFs> fs;
  std::unique_ptr<rocksdb::Env> env = PowerLossFs::NewEnv(&fs);
  MdsFixture f;
  f.Reopen(true, env.get());
  auto first = f.ns().CountStart();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, 1u);
  fs->CutPower();
  f.Close();
  fs->DropUnsynced();
  f.Reopen(true, nullptr);
  auto second = f.ns().CountStart();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, 2u);
  f.Reopen(true, nullptr);
  EXPECT_EQ(*f.ns().CountStart(), 3u);
}

// Ids reserved a range at a time: a create that needs a new range is synced on the spot
// (DeferredSync::required), one within the range is not.
TEST(PowerLossTest, OnlyRangeReservationsForceASync) {
  MdsFixture f;
  f.AddOsts(1);
  LazyCreate(f.ns(), kRootIno, "first", S_IFREG | 0644);  // reserves inode and object ranges
  const uint64_t syncs = f.ns().wal_syncs();
  for (int i = 0; i < 20; ++i) LazyCreate(f.ns(), kRootIno, "f" + std::to_string(i), S_IFREG | 0644);
  EXPECT_EQ(f.ns().wal_syncs(), syncs) << "creates within the reserved ranges waited for syncs";
  ASSERT_TRUE(f.ns().SyncAll().ok());
  EXPECT_EQ(f.ns().wal_syncs(), syncs + 1);
}

}  // namespace
}  // namespace stria::mds

namespace stria::mds {
namespace {

proto::CreateRequest ReplayOf(const std::string& name, const proto::EntryReply& first) {
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(kRootIno);
  req.set_name(name);
  req.set_mode(S_IFREG | 0644);
  req.set_replay_ino(first.attr().ino());
  *req.mutable_replay_layout() = first.layout();
  return req;
}

// A client replays a create the power loss took back (docs/durability.md#replay): it comes
// back under the inode number and objects its first reply gave. A replay naming an inode or
// an object the MDS never handed out, or an inode in use, is refused.
TEST(PowerLossTest, ReplayedCreatesKeepTheirInodeAndObjects) {
  std::shared_ptr<PowerLossFs> fs;
  std::unique_ptr<rocksdb::Env> env = PowerLossFs::NewEnv(&fs);
  MdsFixture f;
  f.Reopen(true, env.get());
  f.AddOsts(2);
  // Reserve the inode range and an object id range on every OST, and make them durable, so
  // the next create needs no synced reservation of its own.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(LazyCreate(f.ns(), kRootIno, "warm" + std::to_string(i), S_IFREG | 0644).has_attr());
  }
  ASSERT_TRUE(f.ns().SyncAll().ok());
  const proto::EntryReply lost = LazyCreate(f.ns(), kRootIno, "lost", S_IFREG | 0644);
  ASSERT_GT(lost.layout().objects_size(), 0);
  fs->CutPower();
  f.Close();
  ASSERT_GT(fs->DropUnsynced(), 0u);
  f.Reopen(true, nullptr);
  ASSERT_FALSE(f.Lookup(kRootIno, "lost").ok()) << "the create was not taken back";

  proto::EntryReply rep;
  ASSERT_TRUE(Create(f.ns(), ReplayOf("lost", lost), &rep).ok());
  EXPECT_EQ(rep.attr().ino(), lost.attr().ino());
  ASSERT_EQ(rep.layout().objects_size(), lost.layout().objects_size());
  for (int i = 0; i < lost.layout().objects_size(); ++i) {
    EXPECT_EQ(rep.layout().objects(i).object_id(), lost.layout().objects(i).object_id());
    EXPECT_EQ(rep.layout().objects(i).ost_idx(), lost.layout().objects(i).ost_idx());
  }
  auto back = f.Lookup(kRootIno, "lost");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->ino(), lost.attr().ino());

  // The same inode again (another name): in use.
  EXPECT_EQ(Create(f.ns(), ReplayOf("twice", lost), &rep).code(), Code::kInval);
  // An inode number beyond everything handed out.
  proto::EntryReply never = lost;
  never.mutable_attr()->set_ino(lost.attr().ino() + 1'000'000);
  EXPECT_EQ(Create(f.ns(), ReplayOf("never", never), &rep).code(), Code::kInval);
  // A free inode number, but an object id no OST ever had.
  proto::EntryReply bad_object = lost;
  bad_object.mutable_attr()->set_ino(lost.attr().ino() + 1);
  bad_object.mutable_layout()->mutable_objects(0)->set_object_id(1ull << 50);
  const Status st = Create(f.ns(), ReplayOf("bad", bad_object), &rep);
  EXPECT_EQ(st.code(), Code::kInval) << st.ToString();
  EXPECT_FALSE(f.Lookup(kRootIno, "bad").ok());
}

}  // namespace
}  // namespace stria::mds
