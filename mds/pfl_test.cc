// Composite (PFL) layouts on the MDS: creation, inherited templates, instantiation by
// OP_MDS_LAYOUT_INTENT (once, generation bumped, persisted), access checks, and the
// destruction of every component's objects.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>
#include <utility>

#include "mds/destroy_queue.h"
#include "mds/internal/layout_alloc.h"
#include "mds/mds_test_util.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "proto/layout_components.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;
using testing::User;

constexpr uint64_t kMiB = 1ull << 20;

// -E 4M -c 1 -S 1M  -E 64M -c 2  -E -1 -c -1
proto::Layout ThreeComponents() {
  proto::Layout l;
  auto add = [&](uint64_t start, uint64_t end, int32_t count, uint64_t size) {
    proto::LayoutComponent* c = l.add_components();
    c->set_start(start);
    c->set_end(end);
    c->mutable_layout()->set_stripe_count(count);
    c->mutable_layout()->set_stripe_size(size);
    c->mutable_layout()->set_stripe_offset(-1);
  };
  add(0, 4 * kMiB, 1, kMiB);
  add(4 * kMiB, 64 * kMiB, 2, 0);
  add(64 * kMiB, kLayoutEof, -1, 0);
  return l;
}

Result<proto::EntryReply> CreateWith(MdsFixture& f, uint64_t parent, const std::string& name,
                                     const proto::Layout* layout,
                                     const proto::Credentials& cred = Root()) {
  proto::CreateRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(parent);
  req.set_name(name);
  req.set_mode(S_IFREG | 0644);
  if (layout != nullptr) *req.mutable_layout() = *layout;
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(Create(f.ns(), req, &rep));
  return rep;
}

Result<proto::Layout> Intent(MdsFixture& f, uint64_t ino, uint64_t start, uint64_t end,
                             const proto::Credentials& cred = Root()) {
  proto::LayoutIntentRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_start(start);
  req.set_end(end);
  proto::LayoutIntentReply rep;
  STRIA_RETURN_IF_ERROR(LayoutIntent(f.ns(), req, &rep));
  return rep.layout();
}

TEST(PflTest, CreateInstantiatesOnlyTheFirstComponent) {
  MdsFixture f;
  f.AddOsts(4);
  proto::Layout req = ThreeComponents();
  auto e = CreateWith(f, kRootIno, "f", &req);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const proto::Layout& l = e->layout();
  ASSERT_EQ(l.components_size(), 3);
  EXPECT_EQ(l.generation(), 1u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(l.components(i).id(), static_cast<uint32_t>(i + 1));
  EXPECT_EQ(l.components(0).flags(), kLcmeFlInit);
  EXPECT_EQ(l.components(0).layout().objects_size(), 1);
  EXPECT_EQ(l.components(0).layout().stripe_size(), kMiB);
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(l.components(i).flags(), 0u);
    EXPECT_EQ(l.components(i).layout().objects_size(), 0);
    // Unset fields were filled from the defaults: 4 MiB stripes.
    EXPECT_EQ(l.components(i).layout().stripe_size(), 4 * kMiB);
  }
  EXPECT_EQ(l.components(2).layout().stripe_count(), -1);
  EXPECT_TRUE(RangeInstantiated(l, 0, 4 * kMiB));
  EXPECT_FALSE(RangeInstantiated(l, 4 * kMiB - 1, 4 * kMiB + 1));
}

TEST(PflTest, IntentInstantiatesOnceAndPersists) {
  MdsFixture f;
  f.AddOsts(4);
  proto::Layout req = ThreeComponents();
  auto e = CreateWith(f, kRootIno, "f", &req);
  ASSERT_TRUE(e.ok());
  const uint64_t ino = e->attr().ino();

  // Inside the first component: nothing changes.
  auto same = Intent(f, ino, 0, 4 * kMiB);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->generation(), 1u);

  // One byte into the second.
  auto second = Intent(f, ino, 4 * kMiB - 1, 4 * kMiB + 1);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->generation(), 2u);
  EXPECT_EQ(second->components(1).flags(), kLcmeFlInit);
  ASSERT_EQ(second->components(1).layout().objects_size(), 2);
  EXPECT_EQ(second->components(2).layout().objects_size(), 0);

  // Asking again (another client) gets the same objects, no new generation.
  auto again = Intent(f, ino, 5 * kMiB, 6 * kMiB);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->SerializeAsString(), second->SerializeAsString());

  // A sparse write far into the last component: count -1 means every OST.
  auto third = Intent(f, ino, 1ull << 40, (1ull << 40) + 1);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->generation(), 3u);
  ASSERT_EQ(third->components(2).layout().objects_size(), 4);
  std::set<std::pair<uint32_t, uint64_t>> ids;
  for (const proto::StripeObject* o : AllObjects(*third))
    ids.insert({o->ost_idx(), o->object_id()});
  EXPECT_EQ(ids.size(), 7u);  // 1 + 2 + 4 distinct objects

  f.Reopen();
  proto::GetattrRequest gr;
  gr.set_ino(ino);
  proto::AttrReply ar;
  ASSERT_TRUE(Getattr(f.ns(), gr, &ar).ok());
  EXPECT_EQ(ar.layout().SerializeAsString(), third->SerializeAsString());
}

TEST(PflTest, IntentChecksAccessAndRange) {
  MdsFixture f;
  f.AddOsts(2);
  proto::Layout req = ThreeComponents();
  req.mutable_components(2)->set_end(128 * kMiB);  // a layout that stops at 128 MiB
  auto e = CreateWith(f, kRootIno, "f", &req);
  ASSERT_TRUE(e.ok());
  const uint64_t ino = e->attr().ino();
  // 0644 root's: another user may not write, so may not instantiate either.
  EXPECT_EQ(Intent(f, ino, 4 * kMiB, 5 * kMiB, User(1000, 1000)).status().code(), Code::kAccess);
  EXPECT_EQ(Intent(f, ino, 5 * kMiB, 5 * kMiB).status().code(), Code::kInval);
  EXPECT_EQ(Intent(f, ino, 127 * kMiB, 129 * kMiB).status().code(), Code::kFBig);
  auto dir = f.Mkdir(kRootIno, "d");
  EXPECT_EQ(Intent(f, dir.attr().ino(), 0, 1).status().code(), Code::kInval);
  EXPECT_EQ(Intent(f, 999999, 0, 1).status().code(), Code::kNoEnt);
  // Nothing was allocated by the refusals.
  auto ok = Intent(f, ino, 0, 1);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->generation(), 1u);
  // Plain files are complete already.
  auto plain = f.Mkfile(kRootIno, "plain");
  auto p = Intent(f, plain.attr().ino(), 1ull << 30, (1ull << 30) + 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->SerializeAsString(), plain.layout().SerializeAsString());
}

TEST(PflTest, MalformedCompositeRequestsAreRefused) {
  MdsFixture f;
  f.AddOsts(2);
  auto expect_inval = [&](proto::Layout l, const char* why) {
    auto e = CreateWith(f, kRootIno, std::string("bad") + why, &l);
    EXPECT_EQ(e.status().code(), Code::kInval) << why;
  };
  proto::Layout gap = ThreeComponents();
  gap.mutable_components(1)->set_start(5 * kMiB);
  expect_inval(gap, "gap");
  proto::Layout first = ThreeComponents();
  first.mutable_components(0)->set_start(kMiB);
  expect_inval(first, "first-not-at-0");
  proto::Layout unaligned = ThreeComponents();
  unaligned.mutable_components(0)->set_end(4 * kMiB + 4096);
  unaligned.mutable_components(1)->set_start(4 * kMiB + 4096);
  expect_inval(unaligned, "unaligned");
  proto::Layout by_size = ThreeComponents();
  by_size.mutable_components(0)->mutable_layout()->set_stripe_size(3 * kMiB);
  expect_inval(by_size, "end-not-multiple-of-stripe");
  proto::Layout flagged = ThreeComponents();
  flagged.mutable_components(1)->set_flags(kLcmeFlInit);
  expect_inval(flagged, "flags");
  proto::Layout after_eof = ThreeComponents();
  proto::LayoutComponent* extra = after_eof.add_components();
  extra->set_start(kLayoutEof);
  extra->set_end(kLayoutEof);
  expect_inval(after_eof, "after-eof");
  // Nothing was created.
  EXPECT_FALSE(f.Lookup(kRootIno, "badgap").ok());
}

TEST(PflTest, DirectoryTemplateIsInheritedAndPlainRequestOverridesIt) {
  MdsFixture f;
  f.AddOsts(3);
  auto dir = f.Mkdir(kRootIno, "pfl");
  proto::SetDefaultLayoutRequest sr;
  *sr.mutable_cred() = Root();
  sr.set_ino(dir.attr().ino());
  *sr.mutable_layout() = ThreeComponents();
  proto::SetDefaultLayoutReply srep;
  ASSERT_TRUE(SetDefaultLayout(f.ns(), sr, &srep).ok());

  proto::GetDefaultLayoutRequest gr;
  gr.set_ino(dir.attr().ino());
  proto::GetDefaultLayoutReply grep;
  ASSERT_TRUE(GetDefaultLayout(f.ns(), gr, &grep).ok());
  EXPECT_TRUE(grep.is_set());
  ASSERT_EQ(grep.layout().components_size(), 3);
  EXPECT_EQ(grep.layout().components(1).layout().stripe_size(), 4 * kMiB);

  auto file = f.Mkfile(dir.attr().ino(), "inherits");
  ASSERT_EQ(file.layout().components_size(), 3);
  EXPECT_EQ(file.layout().components(0).layout().objects_size(), 1);

  // A subdirectory copies the template, as Lustre does.
  auto sub = f.Mkdir(dir.attr().ino(), "sub");
  auto deep = f.Mkfile(sub.attr().ino(), "deep");
  EXPECT_EQ(deep.layout().components_size(), 3);

  proto::Layout plain;
  plain.set_stripe_count(2);
  plain.set_stripe_offset(-1);
  auto p = CreateWith(f, dir.attr().ino(), "plain", &plain);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->layout().components_size(), 0);
  EXPECT_EQ(p->layout().objects_size(), 2);
}

TEST(PflTest, UnlinkDestroysTheObjectsOfEveryComponent) {
  MdsFixture f;
  f.AddOsts(4);
  proto::Layout req = ThreeComponents();
  auto e = CreateWith(f, kRootIno, "f", &req);
  ASSERT_TRUE(e.ok());
  auto l = Intent(f, e->attr().ino(), 0, 100 * kMiB);
  ASSERT_TRUE(l.ok());
  std::set<std::pair<uint32_t, uint64_t>> want;
  for (const proto::StripeObject* o : AllObjects(*l)) want.insert({o->ost_idx(), o->object_id()});
  ASSERT_EQ(want.size(), 7u);
  DestroyQueue q(&f.ns(), &f.gateway());
  ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
  ASSERT_TRUE(q.RunOnce().ok());
  std::set<std::pair<uint32_t, uint64_t>> got;
  for (const proto::ObjectId& o : f.gateway().destroyed()) got.insert({o.ost_idx(), o.object_id()});
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace stria::mds
