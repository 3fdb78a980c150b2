// The destroy queue: records written with the unlink, survive a reopen, drain through the
// gateway, partial failures retried.
#include "mds/destroy_queue.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <set>
#include <thread>

#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;

proto::Layout CreateStriped(MdsFixture& f, const std::string& name, int32_t count) {
  proto::CreateRequest req;
  req.set_parent(kRootIno);
  req.set_name(name);
  req.set_mode(S_IFREG | 0644);
  req.mutable_layout()->set_stripe_count(count);
  req.mutable_layout()->set_stripe_offset(-1);
  proto::EntryReply rep;
  Status st = Create(f.ns(), req, &rep);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return rep.layout();
}

std::set<std::pair<uint32_t, uint64_t>> Ids(const std::vector<proto::ObjectId>& v) {
  std::set<std::pair<uint32_t, uint64_t>> s;
  for (const auto& o : v) s.insert({o.ost_idx(), o.object_id()});
  return s;
}

TEST(DestroyQueueTest, PersistedWithUnlinkAndDrained) {
  MdsFixture f;
  f.AddOsts(2);
  proto::Layout l = CreateStriped(f, "f", 2);
  ASSERT_EQ(l.objects_size(), 2);
  {
    DestroyQueue q(&f.ns(), &f.gateway());
    EXPECT_EQ(*q.Pending(), 0u);
    ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
    EXPECT_EQ(*q.Pending(), 1u);  // written in the unlink's own batch
  }
  f.Reopen();  // as after a crash: the record is still there
  DestroyQueue q(&f.ns(), &f.gateway());
  EXPECT_EQ(*q.Pending(), 1u);
  EXPECT_TRUE(f.gateway().destroyed().empty());

  f.gateway().FailOst(l.objects(1).ost_idx(), true);
  auto r = q.RunOnce();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0u);
  EXPECT_EQ(*q.Pending(), 1u);  // rewritten with the object that failed
  EXPECT_EQ(f.gateway().destroyed().size(), 1u);

  f.gateway().FailOst(l.objects(1).ost_idx(), false);
  r = q.RunOnce();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 1u);
  EXPECT_EQ(*q.Pending(), 0u);
  std::set<std::pair<uint32_t, uint64_t>> want;
  for (const auto& o : l.objects()) want.insert({o.ost_idx(), o.object_id()});
  EXPECT_EQ(Ids(f.gateway().destroyed()), want);
}

// The queue's numbers are not stored with each unlink: a reopened MDS takes the next one
// after its last record, so a new record never overwrites a waiting one.
TEST(DestroyQueueTest, NumbersGoOnAfterTheLastRecordAcrossAReopen) {
  MdsFixture f;
  f.AddOsts(1);
  for (const char* n : {"a", "b", "c"}) CreateStriped(f, n, 1);
  ASSERT_TRUE(f.Unlink(kRootIno, "a", false).ok());
  ASSERT_TRUE(f.Unlink(kRootIno, "b", false).ok());
  f.Reopen();
  ASSERT_TRUE(f.Unlink(kRootIno, "c", false).ok());
  DestroyQueue q(&f.ns(), &f.gateway());
  EXPECT_EQ(*q.Pending(), 3u);
  ASSERT_TRUE(q.RunOnce().ok());
  EXPECT_EQ(f.gateway().destroyed().size(), 3u);
}

TEST(DestroyQueueTest, HardLinkKeepsObjects) {
  MdsFixture f;
  f.AddOsts(1);
  auto file = f.Mkfile(kRootIno, "a");
  proto::LinkRequest l;
  l.set_ino(file.attr().ino());
  l.set_new_parent(kRootIno);
  l.set_new_name("b");
  proto::EntryReply rep;
  ASSERT_TRUE(Link(f.ns(), l, &rep).ok());
  DestroyQueue q(&f.ns(), &f.gateway());
  ASSERT_TRUE(f.Unlink(kRootIno, "a", false).ok());
  EXPECT_EQ(*q.Pending(), 0u);
  ASSERT_TRUE(f.Unlink(kRootIno, "b", false).ok());
  EXPECT_EQ(*q.Pending(), 1u);
}

TEST(DestroyQueueTest, BackgroundThreadDrains) {
  MdsFixture f;
  f.AddOsts(3);
  for (int i = 0; i < 20; ++i) CreateStriped(f, "f" + std::to_string(i), -1);
  DestroyQueue q(&f.ns(), &f.gateway(), /*interval_ms=*/50);
  q.Start();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(f.Unlink(kRootIno, "f" + std::to_string(i), false).ok());
  q.Kick();
  // Wait for the condition (no timing assertion): generous bound against a hang.
  for (int i = 0; i < 2000 && *q.Pending() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  q.Stop();
  EXPECT_EQ(*q.Pending(), 0u);
  EXPECT_EQ(f.gateway().destroyed().size(), 60u);
  EXPECT_EQ(Ids(f.gateway().destroyed()).size(), 60u);
}

}  // namespace
}  // namespace stria::mds
