// Data-on-MDT on the MDS: layouts under lod.*.dom_stripesize, the blocks in RocksDB (writes
// across blocks, holes, bounds), truncate, unlink, read-on-open, and the param's checks.
#include "mds/dom.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "mds/mds_test_util.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "proto/layout_components.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;

constexpr uint64_t kK = 1024;

proto::Layout DomThenOst(uint64_t dom_end) {
  proto::Layout l;
  proto::LayoutComponent* a = l.add_components();
  a->set_end(dom_end);
  a->mutable_layout()->set_pattern(proto::PATTERN_MDT);
  proto::LayoutComponent* b = l.add_components();
  b->set_start(dom_end);
  b->set_end(kLayoutEof);
  b->mutable_layout()->set_stripe_count(1);
  b->mutable_layout()->set_stripe_offset(-1);
  return l;
}

Result<proto::EntryReply> CreateWith(MdsFixture& f, const std::string& name,
                                     const proto::Layout& layout) {
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(kRootIno);
  req.set_name(name);
  req.set_mode(S_IFREG | 0644);
  *req.mutable_layout() = layout;
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(Create(f.ns(), req, &rep));
  return rep;
}

Status Write(MdsFixture& f, uint64_t ino, uint64_t offset, const std::string& bytes) {
  proto::DomIoRequest req;
  req.set_ino(ino);
  req.set_offset(offset);
  req.set_length(bytes.size());
  proto::DomIoReply rep;
  return DomWrite(
      f.ns(), req,
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), &rep);
}

Result<std::string> Read(MdsFixture& f, uint64_t ino, uint64_t offset, uint64_t length) {
  proto::DomIoRequest req;
  req.set_ino(ino);
  req.set_offset(offset);
  req.set_length(length);
  proto::DomIoReply rep;
  lnet::Buffer buf;
  STRIA_RETURN_IF_ERROR(DomRead(f.ns(), req, &buf, &rep));
  EXPECT_EQ(rep.length(), buf.size());
  return std::string(reinterpret_cast<const char*>(buf.data()), buf.size());
}

Status SetParam(MdsFixture& f, const std::string& name, const std::string& value) {
  proto::SetParamRequest req;
  req.set_name(name);
  req.set_value(value);
  proto::SetParamReply rep;
  return stria::mds::SetParam(f.ns(), req, &rep);
}

size_t DomBlocks(MdsFixture& f, uint64_t ino) {
  std::unique_ptr<rocksdb::Iterator> it(f.ns().db()->NewIterator(rocksdb::ReadOptions()));
  size_t n = 0;
  const std::string prefix = DomKey(ino);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) ++n;
  return n;
}

TEST(DomTest, LayoutIsInstantiatedOnTheMdtWithNoObjects) {
  MdsFixture f;
  f.AddOsts(2);
  auto e = CreateWith(f, "f", DomThenOst(256 * kK));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const proto::Layout& l = e->layout();
  EXPECT_EQ(l.ino(), e->attr().ino());
  ASSERT_EQ(l.components_size(), 2);
  const proto::LayoutComponent& dom = l.components(0);
  EXPECT_EQ(dom.flags(), kLcmeFlInit);
  EXPECT_EQ(dom.layout().pattern(), proto::PATTERN_MDT);
  EXPECT_EQ(dom.layout().objects_size(), 0);
  EXPECT_EQ(dom.layout().stripe_size(), 256 * kK);
  EXPECT_EQ(l.components(1).layout().objects_size(), 0) << "OST part not instantiated yet";
  EXPECT_EQ(DomEnd(l), 256 * kK);
  EXPECT_TRUE(HasObjects(l));
}

TEST(DomTest, BlocksHoldBytesAcrossBoundariesWithHoles) {
  MdsFixture f;
  f.AddOsts(1);
  auto e = CreateWith(f, "f", DomThenOst(256 * kK));
  ASSERT_TRUE(e.ok());
  const uint64_t ino = e->attr().ino();
  EXPECT_EQ(Read(f, ino, 0, 100)->size(), 0u) << "nothing written: nothing returned";
  const std::string a(10 * kK, 'a'), b(3, 'b');
  ASSERT_TRUE(Write(f, ino, 60 * kK, a).ok());   // spans blocks 0 and 1
  ASSERT_TRUE(Write(f, ino, 200 * kK, b).ok());  // block 3; block 2 is a hole
  auto all = Read(f, ino, 0, 256 * kK);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 200 * kK + 3);
  EXPECT_EQ(all->substr(0, 60 * kK), std::string(60 * kK, '\0'));
  EXPECT_EQ(all->substr(60 * kK, 10 * kK), a);
  EXPECT_EQ(all->substr(70 * kK, 130 * kK), std::string(130 * kK, '\0'));
  EXPECT_EQ(all->substr(200 * kK), b);
  // Overwrite inside a block keeps its neighbours.
  ASSERT_TRUE(Write(f, ino, 61 * kK, "xyz").ok());
  EXPECT_EQ(*Read(f, ino, 61 * kK - 1, 5), "axyza");
  // Bounds: past the DoM component, and on a file without one.
  EXPECT_EQ(Write(f, ino, 256 * kK - 1, "12").code(), Code::kFBig);
  EXPECT_EQ(Read(f, ino, 256 * kK, 1).status().code(), Code::kFBig);
  auto plain = f.Mkfile(kRootIno, "plain");
  EXPECT_EQ(Write(f, plain.attr().ino(), 0, "x").code(), Code::kInval);
  EXPECT_EQ(Read(f, 424242, 0, 1).status().code(), Code::kNoEnt);
  // A write whose bulk does not match its length.
  proto::DomIoRequest req;
  req.set_ino(ino);
  req.set_length(5);
  proto::DomIoReply rep;
  EXPECT_EQ(DomWrite(f.ns(), req, {}, &rep).code(), Code::kInval);
  // Survives a reopen of the database.
  f.Reopen();
  EXPECT_EQ(Read(f, ino, 60 * kK, 10 * kK)->substr(1 * kK, 3), "xyz");
}

TEST(DomTest, TruncateCutsAndUnlinkFreesTheBlocks) {
  MdsFixture f;
  f.AddOsts(1);
  auto e = CreateWith(f, "f", DomThenOst(256 * kK));
  ASSERT_TRUE(e.ok());
  const uint64_t ino = e->attr().ino();
  ASSERT_TRUE(Write(f, ino, 0, std::string(200 * kK, 'z')).ok());
  EXPECT_EQ(DomBlocks(f, ino), 4u);
  proto::SetattrRequest sr;
  *sr.mutable_cred() = Root();
  sr.set_ino(ino);
  sr.set_valid(proto::SETATTR_SIZE);
  sr.mutable_attr()->set_size(70 * kK);
  proto::AttrReply ar;
  ASSERT_TRUE(Setattr(f.ns(), sr, &ar).ok());
  EXPECT_EQ(DomBlocks(f, ino), 2u);
  EXPECT_EQ(Read(f, ino, 0, 256 * kK)->size(), 70 * kK);
  // Growing again reads zeros where the cut bytes were.
  sr.mutable_attr()->set_size(200 * kK);
  ASSERT_TRUE(Setattr(f.ns(), sr, &ar).ok());
  // (a read returns up to the last stored byte; the client reads the rest as zeros)
  EXPECT_EQ(*Read(f, ino, 70 * kK - 1, 2), "z");
  EXPECT_EQ(*Read(f, ino, 70 * kK, 1000), "");
  ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
  EXPECT_EQ(DomBlocks(f, ino), 0u);
}

TEST(DomTest, OpenCarriesSmallFilesData) {
  MdsFixture f;
  f.AddOsts(1);
  auto e = CreateWith(f, "f", DomThenOst(256 * kK));
  ASSERT_TRUE(e.ok());
  const uint64_t ino = e->attr().ino();
  ASSERT_TRUE(Write(f, ino, 0, "hello").ok());
  proto::CloseRequest cr;
  *cr.mutable_cred() = Root();
  cr.set_ino(ino);
  cr.set_wrote(true);
  cr.set_size(8);  // 3 bytes of hole at the end
  proto::AttrReply car;
  ASSERT_TRUE(Close(f.ns(), cr, &car).ok());
  proto::OpenRequest orq;
  *orq.mutable_cred() = Root();
  orq.set_ino(ino);
  orq.set_flags(O_RDONLY);
  proto::OpenReply orep;
  ASSERT_TRUE(Open(f.ns(), orq, &orep).ok());
  EXPECT_TRUE(orep.has_data());
  EXPECT_EQ(orep.data(), std::string("hello\0\0\0", 8));
  // Not for writers-only, nor for files whose bytes are not all on the MDS.
  orq.set_flags(O_WRONLY);
  proto::OpenReply wrep;
  ASSERT_TRUE(Open(f.ns(), orq, &wrep).ok());
  EXPECT_FALSE(wrep.has_data());
  auto plain = f.Mkfile(kRootIno, "plain");
  orq.set_ino(plain.attr().ino());
  orq.set_flags(O_RDONLY);
  proto::OpenReply prep;
  ASSERT_TRUE(Open(f.ns(), orq, &prep).ok());
  EXPECT_FALSE(prep.has_data());
}

TEST(DomTest, StripeSizeParamCapsAndDisablesDom) {
  MdsFixture f;
  f.AddOsts(1);
  EXPECT_EQ(*DomStripeSize(f.ns().db(), f.ns().fsname()), kDefaultDomStripeSize);
  // -L mdt alone: the whole file on the MDS, up to the limit.
  proto::Layout only;
  only.set_pattern(proto::PATTERN_MDT);
  auto e = CreateWith(f, "only", only);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->layout().components_size(), 1);
  EXPECT_EQ(e->layout().components(0).end(), kDefaultDomStripeSize);

  // Bad values are refused and never stored.
  for (const char* bad : {"100k", "-1", "2G", "abc", "64KB"}) {
    EXPECT_EQ(SetParam(f, "lod.*.dom_stripesize", bad).code(), Code::kInval) << bad;
  }
  ASSERT_TRUE(SetParam(f, "lod.*.dom_stripesize", "128K").ok());
  EXPECT_EQ(*DomStripeSize(f.ns().db(), f.ns().fsname()), 128 * kK);
  // A larger DoM component is cut to the limit, the next one starts there.
  auto cut = CreateWith(f, "cut", DomThenOst(1 << 20));
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(cut->layout().components(0).end(), 128 * kK);
  EXPECT_EQ(cut->layout().components(1).start(), 128 * kK);
  // The more specific name wins over the glob.
  ASSERT_TRUE(SetParam(f, "lod." + f.ns().fsname() + "-MDT0000-mdtlov.dom_stripesize", "64K").ok());
  EXPECT_EQ(*DomStripeSize(f.ns().db(), f.ns().fsname()), 64 * kK);
  // 0 disables Data-on-MDT.
  ASSERT_TRUE(SetParam(f, "lod.*.dom_stripesize", "0").ok());
  ASSERT_TRUE(SetParam(f, "lod." + f.ns().fsname() + "-MDT0000-mdtlov.dom_stripesize", "").ok());
  EXPECT_EQ(CreateWith(f, "off", DomThenOst(64 * kK)).status().code(), Code::kInval);
  EXPECT_FALSE(f.Lookup(kRootIno, "off").ok());
  // A DoM component anywhere but first is refused.
  proto::Layout second = DomThenOst(64 * kK);
  second.mutable_components(0)->mutable_layout()->set_pattern(proto::PATTERN_RAID0);
  second.mutable_components(1)->mutable_layout()->set_pattern(proto::PATTERN_MDT);
  second.mutable_components(1)->set_end(128 * kK);
  EXPECT_EQ(CreateWith(f, "second", second).status().code(), Code::kInval);
}

}  // namespace
}  // namespace stria::mds
