// Rename: plain moves, replacement rules, loops, flags, nlink bookkeeping.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;

class RenameTest : public ::testing::Test {
 protected:
  void SetUp() override { f.AddOsts(2); }
  uint64_t Ino(uint64_t parent, const std::string& name) {
    auto a = f.Lookup(parent, name);
    EXPECT_TRUE(a.ok()) << name;
    return a.ok() ? a->ino() : 0;
  }
  MdsFixture f;
};

TEST_F(RenameTest, SameDirAndAcrossDirs) {
  auto file = f.Mkfile(kRootIno, "a");
  ASSERT_TRUE(f.Rename(kRootIno, "a", kRootIno, "b").ok());
  EXPECT_EQ(f.Lookup(kRootIno, "a").status().code(), Code::kNoEnt);
  EXPECT_EQ(Ino(kRootIno, "b"), file.attr().ino());
  auto d1 = f.Mkdir(kRootIno, "d1");
  auto d2 = f.Mkdir(kRootIno, "d2");
  ASSERT_TRUE(f.Rename(kRootIno, "b", d1.attr().ino(), "c").ok());
  EXPECT_EQ(Ino(d1.attr().ino(), "c"), file.attr().ino());
  // Moving a directory fixes both parents' nlink and its "..".
  auto sub = f.Mkdir(d1.attr().ino(), "sub");
  EXPECT_EQ(f.Getattr(d1.attr().ino()).nlink(), 3u);
  ASSERT_TRUE(f.Rename(d1.attr().ino(), "sub", d2.attr().ino(), "sub2").ok());
  EXPECT_EQ(f.Getattr(d1.attr().ino()).nlink(), 2u);
  EXPECT_EQ(f.Getattr(d2.attr().ino()).nlink(), 3u);
  auto up = f.Lookup(sub.attr().ino(), "..");
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->ino(), d2.attr().ino());
  EXPECT_EQ(f.Rename(kRootIno, "missing", kRootIno, "x").code(), Code::kNoEnt);
}

TEST_F(RenameTest, ReplaceCompatibleTypes) {
  auto a = f.Mkfile(kRootIno, "a");
  auto b = f.Mkfile(kRootIno, "b");
  const uint64_t inodes = f.ns().InodeCount();
  ASSERT_TRUE(f.Rename(kRootIno, "a", kRootIno, "b").ok());
  EXPECT_EQ(Ino(kRootIno, "b"), a.attr().ino());
  EXPECT_EQ(f.ns().InodeCount(), inodes - 1);  // the replaced file is gone

  f.Mkdir(kRootIno, "d");
  f.Mkdir(kRootIno, "e");
  f.Mkdir(kRootIno, "full");
  f.Mkfile(Ino(kRootIno, "full"), "x");
  EXPECT_EQ(f.Rename(kRootIno, "b", kRootIno, "d").code(), Code::kIsDir);
  EXPECT_EQ(f.Rename(kRootIno, "d", kRootIno, "b").code(), Code::kNotDir);
  EXPECT_EQ(f.Rename(kRootIno, "d", kRootIno, "full").code(), Code::kNotEmpty);
  const uint32_t root_nlink = f.Getattr(kRootIno).nlink();
  ASSERT_TRUE(f.Rename(kRootIno, "d", kRootIno, "e").ok());  // empty dir replaced
  EXPECT_EQ(f.Getattr(kRootIno).nlink(), root_nlink - 1);
  EXPECT_EQ(f.Lookup(kRootIno, "d").status().code(), Code::kNoEnt);
}

TEST_F(RenameTest, DirectoryIntoItsOwnSubtree) {
  auto a = f.Mkdir(kRootIno, "a");
  auto b = f.Mkdir(a.attr().ino(), "b");
  auto c = f.Mkdir(b.attr().ino(), "c");
  EXPECT_EQ(f.Rename(kRootIno, "a", c.attr().ino(), "a").code(), Code::kInval);
  EXPECT_EQ(f.Rename(kRootIno, "a", a.attr().ino(), "self").code(), Code::kInval);
  EXPECT_EQ(f.Rename(a.attr().ino(), "b", b.attr().ino(), "x").code(), Code::kInval);
  // Moving up is fine.
  ASSERT_TRUE(f.Rename(b.attr().ino(), "c", kRootIno, "c").ok());
}

TEST_F(RenameTest, NoReplaceAndExchange) {
  auto a = f.Mkfile(kRootIno, "a");
  auto d = f.Mkdir(kRootIno, "d");
  auto in = f.Mkfile(d.attr().ino(), "inner");
  EXPECT_EQ(f.Rename(kRootIno, "a", kRootIno, "d", kRenameNoReplace).code(), Code::kExist);
  ASSERT_TRUE(f.Rename(kRootIno, "a", kRootIno, "a2", kRenameNoReplace).ok());
  EXPECT_EQ(f.Rename(kRootIno, "a2", kRootIno, "zz", kRenameExchange).code(), Code::kNoEnt);
  EXPECT_EQ(f.Rename(kRootIno, "a2", kRootIno, "d", 3).code(), Code::kInval);
  EXPECT_EQ(f.Rename(kRootIno, "a2", kRootIno, "d", 8).code(), Code::kInval);
  // Exchange a file in the root with a file in d.
  ASSERT_TRUE(f.Rename(kRootIno, "a2", d.attr().ino(), "inner", kRenameExchange).ok());
  EXPECT_EQ(Ino(kRootIno, "a2"), in.attr().ino());
  EXPECT_EQ(Ino(d.attr().ino(), "inner"), a.attr().ino());
  // Exchange a directory and a file across directories: nlinks follow the directory.
  auto e = f.Mkdir(kRootIno, "e");
  auto sub = f.Mkdir(e.attr().ino(), "sub");
  const uint32_t d_nlink = f.Getattr(d.attr().ino()).nlink();
  ASSERT_TRUE(f.Rename(e.attr().ino(), "sub", d.attr().ino(), "inner", kRenameExchange).ok());
  EXPECT_EQ(Ino(d.attr().ino(), "inner"), sub.attr().ino());
  EXPECT_EQ(Ino(e.attr().ino(), "sub"), a.attr().ino());
  EXPECT_EQ(f.Getattr(d.attr().ino()).nlink(), d_nlink + 1);
  EXPECT_EQ(f.Getattr(e.attr().ino()).nlink(), 2u);
  auto up = f.Lookup(sub.attr().ino(), "..");
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->ino(), d.attr().ino());
}

TEST_F(RenameTest, HardLinksToSameInodeIsNoop) {
  auto a = f.Mkfile(kRootIno, "a");
  proto::LinkRequest l;
  l.set_ino(a.attr().ino());
  l.set_new_parent(kRootIno);
  l.set_new_name("b");
  proto::EntryReply rep;
  ASSERT_TRUE(Link(f.ns(), l, &rep).ok());
  ASSERT_TRUE(f.Rename(kRootIno, "a", kRootIno, "b").ok());
  EXPECT_TRUE(f.Lookup(kRootIno, "a").ok());
  EXPECT_TRUE(f.Lookup(kRootIno, "b").ok());
  EXPECT_EQ(f.Getattr(a.attr().ino()).nlink(), 2u);
}

TEST_F(RenameTest, ReplacingLastLinkQueuesObjects) {
  auto a = f.Mkfile(kRootIno, "a");
  auto b = f.Mkfile(kRootIno, "b");
  ASSERT_TRUE(f.Rename(kRootIno, "a", kRootIno, "b").ok());
  // The queue record sits in RocksDB under Q keys.
  std::unique_ptr<rocksdb::Iterator> it(f.ns().db()->NewIterator(rocksdb::ReadOptions()));
  int n = 0;
  for (it->Seek("Q"); it->Valid() && it->key().starts_with("Q"); it->Next()) {
    proto::OstDestroyRequest q;
    ASSERT_TRUE(q.ParseFromString(it->value().ToString()));
    ASSERT_EQ(q.objects_size(), 1);
    EXPECT_EQ(q.objects(0).object_id(), b.layout().objects(0).object_id());
    EXPECT_EQ(q.objects(0).ost_idx(), b.layout().objects(0).ost_idx());
    ++n;
  }
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace stria::mds
