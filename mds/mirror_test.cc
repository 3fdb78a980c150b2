// Mirrored files at the MDS: allocation apart from the other mirror's OSS (and stale on a
// silent one), OP_MDS_MIRROR's stale marks (durable, generation bumped, the last good copy
// kept), the resync over a gateway that keeps objects in memory, extend and split.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <map>
#include <mutex>

#include "mds/mds_test_util.h"
#include "mds/mirror_resync.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "proto/layout_components.h"
#include "proto/layout_mirrors.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;
using testing::User;

constexpr uint64_t M = 1 << 20;

// OST objects as byte vectors: what the resync reads and writes.
class MemoryGateway : public testing::RecordingGateway {
 public:
  Result<size_t> ReadObject(const proto::OstInfo& ost, const proto::ObjectId& o, uint64_t offset,
                            std::span<uint8_t> buf) override {
    std::lock_guard lock(mu_);
    if (down_.count(ost.index())) return Status(Code::kDisconnected, "OST down");
    auto it = objects_.find(Key(o));
    if (it == objects_.end() || offset >= it->second.size()) return size_t{0};
    const size_t n = std::min<size_t>(buf.size(), it->second.size() - offset);
    std::memcpy(buf.data(), it->second.data() + offset, n);
    return n;
  }
  Status WriteObject(const proto::OstInfo& ost, const proto::ObjectId& o, uint64_t offset,
                     std::span<const uint8_t> data) override {
    std::lock_guard lock(mu_);
    if (down_.count(ost.index())) return Status(Code::kDisconnected, "OST down");
    auto& obj = objects_[Key(o)];
    if (obj.size() < offset + data.size()) obj.resize(offset + data.size());
    std::memcpy(obj.data() + offset, data.data(), data.size());
    return Status::Ok();
  }
  Status TruncateObject(const proto::OstInfo& ost, const proto::ObjectId& o,
                        uint64_t size) override {
    std::lock_guard lock(mu_);
    if (down_.count(ost.index())) return Status(Code::kDisconnected, "OST down");
    objects_[Key(o)].resize(size);
    return Status::Ok();
  }
  Status SyncObjects(const proto::OstInfo& ost, const std::vector<proto::ObjectId>&) override {
    std::lock_guard lock(mu_);
    if (down_.count(ost.index())) return Status(Code::kDisconnected, "OST down");
    ++syncs_;
    return Status::Ok();
  }

  void Put(const proto::StripeObject& o, std::vector<uint8_t> bytes) {
    std::lock_guard lock(mu_);
    objects_[{o.ost_idx(), o.object_id()}] = std::move(bytes);
  }
  std::vector<uint8_t> Get(const proto::StripeObject& o) {
    std::lock_guard lock(mu_);
    return objects_[{o.ost_idx(), o.object_id()}];
  }
  void SetDown(uint32_t ost, bool down) {
    std::lock_guard lock(mu_);
    if (down) {
      down_.insert(ost);
    } else {
      down_.erase(ost);
    }
  }

 private:
  static std::pair<uint32_t, uint64_t> Key(const proto::ObjectId& o) {
    return {o.ost_idx(), o.object_id()};
  }
  std::mutex mu_;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint8_t>> objects_;
  std::set<uint32_t> down_;
  int syncs_ = 0;
};

// Two OSSes, two OSTs each: OSTs 0, 1 on 127.0.0.1:9000, OSTs 2, 3 on 127.0.0.1:9001.
void AddTwoOsses(MdsFixture& f) {
  for (uint32_t i = 0; i < 4; ++i) {
    proto::RegisterOstRequest req;
    req.set_fsname("testfs");
    req.set_index(i);
    req.set_uuid("ost" + std::to_string(i));
    req.set_nid("127.0.0.1@tcp:" + std::to_string(9000 + i / 2));
    proto::RegisterOstReply rep;
    ASSERT_TRUE(RegisterOst(f.ns(), req, &rep).ok());
  }
}

std::string NidOf(MdsFixture& f, uint32_t ost) {
  for (const proto::OstInfo& o : f.ns().OstTable()) {
    if (o.index() == ost) return o.nid();
  }
  return "";
}

// lfs mirror create -N2 (-c count): two mirror components over [0, EOF).
proto::Layout TwoMirrors(int32_t count = 1) {
  proto::Layout l;
  for (uint32_t m = 1; m <= 2; ++m) {
    proto::LayoutComponent* c = l.add_components();
    c->set_id(ComponentId(m, 0));
    c->set_start(0);
    c->set_end(kLayoutEof);
    c->mutable_layout()->set_stripe_count(count);
    c->mutable_layout()->set_stripe_size(M);
    c->mutable_layout()->set_stripe_offset(-1);
  }
  return l;
}

proto::EntryReply CreateMirrored(MdsFixture& f, const std::string& name, int32_t count = 1) {
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(kRootIno);
  req.set_name(name);
  req.set_mode(S_IFREG | 0644);
  *req.mutable_layout() = TwoMirrors(count);
  proto::EntryReply rep;
  Status st = Create(f.ns(), req, &rep);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return rep;
}

Result<proto::MirrorReply> Stale(MdsFixture& f, uint64_t ino, uint32_t mirror, uint64_t start,
                                 uint64_t end, const proto::Credentials& cred = Root(),
                                 bool damaged = false) {
  proto::MirrorRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_command(proto::MIRROR_STALE);
  req.set_mirror_id(mirror);
  req.set_start(start);
  req.set_end(end);
  req.set_damaged(damaged);
  proto::MirrorReply rep;
  STRIA_RETURN_IF_ERROR(Mirror(f.ns(), nullptr, req, &rep));
  return rep;
}

bool OnResyncList(MdsFixture& f, uint64_t ino) {
  auto v = f.ns().Get(MirrorStaleKey(ino));
  return v.ok() && v->has_value();
}

void SetSize(MdsFixture& f, uint64_t ino, uint64_t size) {
  proto::SetattrRequest req;
  *req.mutable_cred() = Root();
  req.set_ino(ino);
  req.set_valid(proto::SETATTR_SIZE);
  req.mutable_attr()->set_size(size);
  proto::AttrReply rep;
  ASSERT_TRUE(Setattr(f.ns(), req, &rep).ok());
}

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

TEST(MirrorTest, MirrorsOfAStripeLandOnDifferentOsses) {
  MdsFixture f;
  AddTwoOsses(f);
  for (int i = 0; i < 6; ++i) {
    const proto::Layout l = CreateMirrored(f, "f" + std::to_string(i), i % 2 + 1).layout();
    ASSERT_EQ(l.components_size(), 2);
    EXPECT_EQ(l.components(0).id(), ComponentId(1, 1));
    EXPECT_EQ(l.components(1).id(), ComponentId(2, 2));
    ASSERT_EQ(MirrorCount(l), 2u);
    EXPECT_FALSE(HasStale(l));
    const proto::Layout& a = l.components(0).layout();
    const proto::Layout& b = l.components(1).layout();
    ASSERT_EQ(a.objects_size(), b.objects_size());
    for (int s = 0; s < a.objects_size(); ++s) {
      EXPECT_NE(NidOf(f, a.objects(s).ost_idx()), NidOf(f, b.objects(s).ost_idx()))
          << "file " << i << " stripe " << s;
    }
  }
}

TEST(MirrorTest, AMirrorOnASilentOssStartsStale) {
  MdsFixture f;
  AddTwoOsses(f);
  {
    // OSS 1 (OSTs 2, 3) last heartbeated long ago.
    std::lock_guard lock(f.ns().mutex());
    for (uint32_t i : {2u, 3u}) f.ns().osts_locked().at(i).info.set_last_seen_ns(1);
  }
  const proto::EntryReply e = CreateMirrored(f, "f");
  const proto::Layout& l = e.layout();
  ASSERT_EQ(l.components_size(), 2);
  // Mirror 1 on the live OSS, mirror 2 apart on the silent one, stale until a resync.
  EXPECT_LT(l.components(0).layout().objects(0).ost_idx(), 2u);
  EXPECT_GE(l.components(1).layout().objects(0).ost_idx(), 2u);
  EXPECT_FALSE(l.components(0).flags() & kLcmeFlStale);
  EXPECT_TRUE(l.components(1).flags() & kLcmeFlStale);
  EXPECT_TRUE(OnResyncList(f, e.attr().ino()));
}

TEST(MirrorTest, StaleMarksAreDurableAndNeverTakeTheLastGoodCopy) {
  MdsFixture f;
  AddTwoOsses(f);
  const proto::EntryReply e = CreateMirrored(f, "f");
  const uint64_t ino = e.attr().ino();
  const uint32_t gen = e.layout().generation();
  EXPECT_FALSE(OnResyncList(f, ino));

  auto r = Stale(f, ino, 2, M, 3 * M);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->layout().generation(), gen + 1);
  EXPECT_TRUE(StaleCovers(r->layout(), 2, M, 3 * M));
  EXPECT_FALSE(StaleCovers(r->layout(), 2, 0, M));
  // Marked again: nothing changes.
  auto again = Stale(f, ino, 2, 2 * M, 3 * M);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->layout().generation(), gen + 1);

  // Mirror 1 is the only good copy of [M, 3M): it cannot be marked there, elsewhere it can.
  EXPECT_EQ(Stale(f, ino, 1, 2 * M, 2 * M + 1).status().code(), Code::kIO);
  EXPECT_TRUE(Stale(f, ino, 1, 4 * M, 5 * M).ok());

  // Bad requests: an empty range, a mirror the file lacks; without write access only a
  // damage report (read access) is taken.
  EXPECT_EQ(Stale(f, ino, 2, 5, 5).status().code(), Code::kInval);
  EXPECT_EQ(Stale(f, ino, 3, 0, 1).status().code(), Code::kInval);
  const proto::Credentials other = User(1000, 1000);
  EXPECT_EQ(Stale(f, ino, 2, 8 * M, 9 * M, other).status().code(), Code::kAccess);
  EXPECT_TRUE(Stale(f, ino, 2, 8 * M, 9 * M, other, /*damaged=*/true).ok());

  // Durable: a restart keeps the marks and the resync list.
  f.Reopen();
  proto::GetattrRequest gr;
  *gr.mutable_cred() = Root();
  gr.set_ino(ino);
  proto::AttrReply ar;
  ASSERT_TRUE(Getattr(f.ns(), gr, &ar).ok());
  EXPECT_TRUE(StaleCovers(ar.layout(), 2, M, 3 * M));
  EXPECT_TRUE(StaleCovers(ar.layout(), 1, 4 * M, 5 * M));
  EXPECT_EQ(LcmFlags(ar.layout()), kLcmFlWritePending);
  EXPECT_TRUE(OnResyncList(f, ino));

  // A plain file has no mirror to mark.
  const uint64_t plain = f.Mkfile(kRootIno, "plain").attr().ino();
  EXPECT_EQ(Stale(f, plain, 1, 0, 1).status().code(), Code::kInval);
}

TEST(MirrorTest, ResyncCopiesTheStaleRangesAndClearsTheMarks) {
  MdsFixture f;
  AddTwoOsses(f);
  MemoryGateway gw;
  MirrorResync resync(&f.ns(), &gw);
  const proto::EntryReply e = CreateMirrored(f, "f");
  const uint64_t ino = e.attr().ino();
  const proto::StripeObject& good = e.layout().components(0).layout().objects(0);
  const proto::StripeObject& bad = e.layout().components(1).layout().objects(0);
  const std::vector<uint8_t> data = Bytes(3 * M + 123, 5);
  gw.Put(good, data);
  std::vector<uint8_t> old = Bytes(3 * M + 123, 9);
  old.resize(5 * M);  // bytes past the file's end, which the resync must cut
  gw.Put(bad, old);
  SetSize(f, ino, data.size());
  ASSERT_TRUE(Stale(f, ino, 2, M, kLayoutEof).ok());

  // A writer holds the file: the resync waits for its close.
  proto::OpenRequest oreq;
  *oreq.mutable_cred() = Root();
  oreq.set_ino(ino);
  oreq.set_flags(O_WRONLY);
  proto::OpenReply orep;
  ASSERT_TRUE(Open(f.ns(), oreq, &orep).ok());
  EXPECT_EQ(resync.ResyncFile(ino).status().code(), Code::kBusy);
  proto::CloseRequest creq;
  *creq.mutable_cred() = Root();
  creq.set_ino(ino);
  creq.set_handle(orep.handle());
  proto::AttrReply crep;
  ASSERT_TRUE(Close(f.ns(), creq, &crep).ok());

  // Its OST down: the copy fails and the marks stay.
  gw.SetDown(bad.ost_idx(), true);
  EXPECT_FALSE(resync.ResyncFile(ino).ok());
  EXPECT_TRUE(OnResyncList(f, ino));
  gw.SetDown(bad.ost_idx(), false);

  auto copied = resync.ResyncFile(ino);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(*copied, data.size() - M);  // only the stale range, clipped to the size
  // Only the stale range was copied (the first MiB keeps what it had), and the object is
  // cut to the file's size.
  std::vector<uint8_t> want(old.begin(), old.begin() + M);
  want.insert(want.end(), data.begin() + M, data.end());
  EXPECT_EQ(gw.Get(bad), want);
  proto::GetattrRequest gr;
  *gr.mutable_cred() = Root();
  gr.set_ino(ino);
  proto::AttrReply ar;
  ASSERT_TRUE(Getattr(f.ns(), gr, &ar).ok());
  EXPECT_FALSE(HasStale(ar.layout()));
  EXPECT_EQ(LcmFlags(ar.layout()), kLcmFlRdonly);
  EXPECT_FALSE(OnResyncList(f, ino));
  EXPECT_NE(resync.Format().find("stale_files: 0"), std::string::npos) << resync.Format();
}

TEST(MirrorTest, ATruncateWhileStaleMarksWhatLiesPastTheNewSize) {
  MdsFixture f;
  AddTwoOsses(f);
  const proto::EntryReply e = CreateMirrored(f, "f");
  const uint64_t ino = e.attr().ino();
  SetSize(f, ino, 8 * M);
  ASSERT_TRUE(Stale(f, ino, 2, 0, M).ok());
  SetSize(f, ino, 2 * M);
  proto::GetattrRequest gr;
  *gr.mutable_cred() = Root();
  gr.set_ino(ino);
  proto::AttrReply ar;
  ASSERT_TRUE(Getattr(f.ns(), gr, &ar).ok());
  // The stale mirror kept its old bytes past 2M: they are to be resynced (as zeros) too.
  EXPECT_TRUE(StaleCovers(ar.layout(), 2, 2 * M, 100 * M));
  EXPECT_FALSE(StaleCovers(ar.layout(), 2, M, 2 * M));
  EXPECT_FALSE(HasStale(MirrorView(ar.layout(), 1)));
}

TEST(MirrorTest, ExtendAddsACopiedMirrorAndSplitTakesItAway) {
  MdsFixture f;
  AddTwoOsses(f);
  MemoryGateway gw;
  MirrorResync resync(&f.ns(), &gw);
  const proto::EntryReply e = f.Mkfile(kRootIno, "f");  // plain, one stripe
  const uint64_t ino = e.attr().ino();
  const std::vector<uint8_t> data = Bytes(M + 77, 3);
  gw.Put(e.layout().objects(0), data);
  SetSize(f, ino, data.size());

  proto::MirrorRequest req;
  *req.mutable_cred() = Root();
  req.set_ino(ino);
  req.set_command(proto::MIRROR_EXTEND);
  proto::MirrorReply rep;
  Status st = Mirror(f.ns(), &resync, req, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const proto::Layout& l = rep.layout();
  ASSERT_EQ(MirrorCount(l), 2u);
  EXPECT_FALSE(HasStale(l));  // copied already
  EXPECT_EQ(rep.resynced_bytes(), data.size());
  // The original objects are mirror 1's; mirror 2 is apart from them.
  EXPECT_EQ(l.components(0).layout().objects(0).object_id(), e.layout().objects(0).object_id());
  const proto::StripeObject& copy = l.components(1).layout().objects(0);
  EXPECT_NE(NidOf(f, copy.ost_idx()), NidOf(f, e.layout().objects(0).ost_idx()));
  EXPECT_EQ(gw.Get(copy), data);

  // Split mirror 1 off into a file of its own; the original keeps mirror 2.
  proto::MirrorRequest split;
  *split.mutable_cred() = Root();
  split.set_ino(ino);
  split.set_command(proto::MIRROR_SPLIT);
  split.set_mirror_id(1);
  split.set_new_parent(kRootIno);
  split.set_new_name("f.mirror~1");
  proto::MirrorReply srep;
  st = Mirror(f.ns(), &resync, split, &srep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(MirrorIds(srep.layout()), std::vector<uint32_t>{2});
  auto half = f.Lookup(kRootIno, "f.mirror~1");
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->size(), data.size());
  EXPECT_EQ(half->ino(), srep.new_ino());

  // The last mirror cannot be split.
  split.set_mirror_id(2);
  split.set_destroy(true);
  EXPECT_EQ(Mirror(f.ns(), &resync, split, &srep).code(), Code::kInval);
}

}  // namespace
}  // namespace stria::mds
