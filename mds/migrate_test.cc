// OP_MDS_MIGRATE: begin, commit and abort; writers and changes make it EBUSY; the old (or,
// on abort, the new) objects go to the destroy queue; the inode and its FID stay.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>
#include <utility>

#include "mds/destroy_queue.h"
#include "mds/mds_test_util.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "proto/layout_components.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;
using testing::User;

using Ids = std::set<std::pair<uint32_t, uint64_t>>;

Ids IdsOf(const proto::Layout& l) {
  Ids out;
  for (const proto::StripeObject* o : AllObjects(l)) out.insert({o->ost_idx(), o->object_id()});
  return out;
}

Result<proto::MigrateReply> Step(MdsFixture& f, uint64_t ino, proto::MigrateStep step,
                                 const proto::Layout& layout, const proto::MigrateReply* version,
                                 const proto::Credentials& cred = Root()) {
  proto::MigrateRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_step(step);
  *req.mutable_layout() = layout;
  if (version != nullptr) {
    req.set_size(version->size());
    req.set_mtime_ns(version->mtime_ns());
    req.set_generation(version->generation());
  }
  proto::MigrateReply rep;
  STRIA_RETURN_IF_ERROR(Migrate(f.ns(), req, &rep));
  return rep;
}

proto::Layout Count(int32_t n) {
  proto::Layout l;
  l.set_stripe_count(n);
  l.set_stripe_offset(-1);
  return l;
}

TEST(MigrateTest, CommitSwapsTheLayoutAndDestroysTheOldObjects) {
  MdsFixture f;
  f.AddOsts(4);
  auto file = f.Mkfile(kRootIno, "f");
  const uint64_t ino = file.attr().ino();
  const Ids old_ids = IdsOf(file.layout());
  auto begun = Step(f, ino, proto::MIGRATE_BEGIN, Count(4), nullptr);
  ASSERT_TRUE(begun.ok()) << begun.status().ToString();
  EXPECT_EQ(begun->layout().objects_size(), 4);
  EXPECT_EQ(begun->layout().ino(), ino);
  auto done = Step(f, ino, proto::MIGRATE_COMMIT, begun->layout(), &*begun);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->layout().generation(), file.layout().generation() + 1);
  proto::GetattrRequest gr;
  gr.set_ino(ino);
  proto::AttrReply ar;
  ASSERT_TRUE(Getattr(f.ns(), gr, &ar).ok());
  EXPECT_EQ(IdsOf(ar.layout()), IdsOf(begun->layout()));
  EXPECT_EQ(f.Lookup(kRootIno, "f")->ino(), ino) << "same inode, same FID";
  DestroyQueue q(&f.ns(), &f.gateway());
  ASSERT_TRUE(q.RunOnce().ok());
  Ids destroyed;
  for (const auto& o : f.gateway().destroyed()) destroyed.insert({o.ost_idx(), o.object_id()});
  EXPECT_EQ(destroyed, old_ids);
}

TEST(MigrateTest, NewLayoutsNeverShareObjectIds) {
  MdsFixture f;
  f.AddOsts(2);
  auto a = f.Mkfile(kRootIno, "a");
  auto b = f.Mkfile(kRootIno, "b");
  // BEGIN changes no record (its ids come from the reserved range): the counters must still
  // move, or the next allocation hands out the same objects.
  auto ma = Step(f, a.attr().ino(), proto::MIGRATE_BEGIN, Count(2), nullptr);
  auto mb = Step(f, b.attr().ino(), proto::MIGRATE_BEGIN, Count(2), nullptr);
  ASSERT_TRUE(ma.ok() && mb.ok());
  auto c = f.Mkfile(kRootIno, "c");
  Ids all;
  size_t n = 0;
  for (const proto::Layout* l :
       {&a.layout(), &b.layout(), &ma->layout(), &mb->layout(), &c.layout()}) {
    const Ids ids = IdsOf(*l);
    n += ids.size();
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), n) << "an object id was handed out twice";
}

TEST(MigrateTest, SwapExchangesLayoutsAndSizes) {
  MdsFixture f;
  f.AddOsts(2);
  auto a = f.Mkfile(kRootIno, "a");
  auto b = f.Mkfile(kRootIno, "b");
  proto::SetattrRequest sr;
  *sr.mutable_cred() = Root();
  sr.set_ino(a.attr().ino());
  sr.set_valid(proto::SETATTR_SIZE);
  sr.mutable_attr()->set_size(12345);
  proto::AttrReply ar;
  ASSERT_TRUE(Setattr(f.ns(), sr, &ar).ok());
  proto::MigrateRequest req;
  *req.mutable_cred() = Root();
  req.set_step(proto::MIGRATE_SWAP);
  req.set_ino(a.attr().ino());
  req.set_ino2(b.attr().ino());
  proto::MigrateReply rep;
  ASSERT_TRUE(Migrate(f.ns(), req, &rep).ok());
  proto::GetattrRequest gr;
  gr.set_ino(a.attr().ino());
  proto::AttrReply ga, gb;
  ASSERT_TRUE(Getattr(f.ns(), gr, &ga).ok());
  gr.set_ino(b.attr().ino());
  ASSERT_TRUE(Getattr(f.ns(), gr, &gb).ok());
  EXPECT_EQ(IdsOf(ga.layout()), IdsOf(b.layout()));
  EXPECT_EQ(IdsOf(gb.layout()), IdsOf(a.layout()));
  EXPECT_EQ(ga.attr().size(), 0u);
  EXPECT_EQ(gb.attr().size(), 12345u);
  EXPECT_EQ(ga.layout().ino(), a.attr().ino());
  EXPECT_GT(ga.layout().generation(), a.layout().generation());
  req.set_ino2(a.attr().ino());
  EXPECT_EQ(Migrate(f.ns(), req, &rep).code(), Code::kInval) << "with itself";
  auto dir = f.Mkdir(kRootIno, "d");
  req.set_ino2(dir.attr().ino());
  EXPECT_EQ(Migrate(f.ns(), req, &rep).code(), Code::kInval) << "with a directory";
}

TEST(MigrateTest, WritersAndChangesMakeItBusy) {
  MdsFixture f;
  f.AddOsts(2);
  auto file = f.Mkfile(kRootIno, "f");
  const uint64_t ino = file.attr().ino();
  // A writer at the start.
  proto::OpenRequest orq;
  *orq.mutable_cred() = Root();
  orq.set_ino(ino);
  orq.set_flags(O_WRONLY);
  proto::OpenReply w;
  ASSERT_TRUE(Open(f.ns(), orq, &w).ok());
  EXPECT_EQ(Step(f, ino, proto::MIGRATE_BEGIN, Count(2), nullptr).status().code(), Code::kBusy);
  // A reader does not stop it.
  orq.set_flags(O_RDONLY);
  proto::OpenReply r;
  ASSERT_TRUE(Open(f.ns(), orq, &r).ok());
  proto::CloseRequest cr;
  *cr.mutable_cred() = Root();
  cr.set_ino(ino);
  cr.set_handle(w.handle());
  proto::AttrReply car;
  ASSERT_TRUE(Close(f.ns(), cr, &car).ok());
  auto begun = Step(f, ino, proto::MIGRATE_BEGIN, Count(2), nullptr);
  ASSERT_TRUE(begun.ok()) << begun.status().ToString();
  // A write during the copy (reported at close): the commit is refused.
  cr.set_handle(0);
  cr.set_wrote(true);
  cr.set_size(100);
  cr.set_mtime_ns(begun->mtime_ns() + 1);
  ASSERT_TRUE(Close(f.ns(), cr, &car).ok());
  EXPECT_EQ(Step(f, ino, proto::MIGRATE_COMMIT, begun->layout(), &*begun).status().code(),
            Code::kBusy);
  // Abort gives the new objects back; the file keeps its layout.
  ASSERT_TRUE(Step(f, ino, proto::MIGRATE_ABORT, begun->layout(), nullptr).ok());
  DestroyQueue q(&f.ns(), &f.gateway());
  ASSERT_TRUE(q.RunOnce().ok());
  Ids destroyed;
  for (const auto& o : f.gateway().destroyed()) destroyed.insert({o.ost_idx(), o.object_id()});
  EXPECT_EQ(destroyed, IdsOf(begun->layout()));
  proto::GetattrRequest gr;
  gr.set_ino(ino);
  proto::AttrReply ar;
  ASSERT_TRUE(Getattr(f.ns(), gr, &ar).ok());
  EXPECT_EQ(IdsOf(ar.layout()), IdsOf(file.layout()));
  // Only who may write may migrate.
  EXPECT_EQ(Step(f, ino, proto::MIGRATE_BEGIN, Count(2), nullptr, User(1000, 1000)).status().code(),
            Code::kAccess);
}

}  // namespace
}  // namespace stria::mds
