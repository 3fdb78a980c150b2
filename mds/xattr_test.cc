// Extended attributes: flags, size queries, limits, namespaces, permissions.
#include <gtest/gtest.h>
#include <rocksdb/write_batch.h>
#include <sys/stat.h>

#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;
using testing::User;

class XattrTest : public ::testing::Test {
 protected:
  void SetUp() override {
    f.AddOsts(1);
    ino = f.Mkfile(kRootIno, "f", 0644).attr().ino();
  }
  Status Set(const std::string& name, const std::string& value, uint32_t flags = 0,
             const proto::Credentials& cred = Root()) {
    proto::XattrRequest req;
    *req.mutable_cred() = cred;
    req.set_ino(ino);
    req.set_name(name);
    req.set_value(value);
    req.set_flags(flags);
    proto::XattrReply rep;
    return Setxattr(f.ns(), req, &rep);
  }
  Status Get(const std::string& name, uint32_t size, proto::XattrReply* rep,
             const proto::Credentials& cred = Root()) {
    proto::XattrRequest req;
    *req.mutable_cred() = cred;
    req.set_ino(ino);
    req.set_name(name);
    req.set_size(size);
    return Getxattr(f.ns(), req, rep);
  }
  Status List(uint32_t size, proto::XattrReply* rep, const proto::Credentials& cred = Root()) {
    proto::XattrRequest req;
    *req.mutable_cred() = cred;
    req.set_ino(ino);
    req.set_size(size);
    return Listxattr(f.ns(), req, rep);
  }
  Status Remove(const std::string& name, const proto::Credentials& cred = Root()) {
    proto::XattrRequest req;
    *req.mutable_cred() = cred;
    req.set_ino(ino);
    req.set_name(name);
    proto::XattrReply rep;
    return Removexattr(f.ns(), req, &rep);
  }
  MdsFixture f;
  uint64_t ino = 0;
};

TEST_F(XattrTest, SetGetListRemove) {
  ASSERT_TRUE(Set("user.a", "hello").ok());
  ASSERT_TRUE(Set("user.b", std::string("\0bin\0", 5)).ok());
  proto::XattrReply rep;
  ASSERT_TRUE(Get("user.a", 0, &rep).ok());  // size query
  EXPECT_EQ(rep.size(), 5u);
  EXPECT_TRUE(rep.value().empty());
  EXPECT_EQ(Get("user.a", 4, &rep).code(), Code::kRange);
  ASSERT_TRUE(Get("user.a", 100, &rep).ok());
  EXPECT_EQ(rep.value(), "hello");
  ASSERT_TRUE(Get("user.b", 5, &rep).ok());
  EXPECT_EQ(rep.value(), std::string("\0bin\0", 5));
  EXPECT_EQ(Get("user.none", 100, &rep).code(), Code::kNoData);

  ASSERT_TRUE(List(0, &rep).ok());
  EXPECT_EQ(rep.size(), 14u);  // "user.a\0user.b\0"
  EXPECT_EQ(List(13, &rep).code(), Code::kRange);
  ASSERT_TRUE(List(14, &rep).ok());
  EXPECT_EQ(rep.value(), std::string("user.a\0user.b\0", 14));

  ASSERT_TRUE(Remove("user.a").ok());
  EXPECT_EQ(Remove("user.a").code(), Code::kNoData);
  EXPECT_EQ(Get("user.a", 100, &rep).code(), Code::kNoData);
}

TEST_F(XattrTest, CreateReplaceFlags) {
  EXPECT_EQ(Set("user.x", "1", kXattrReplace).code(), Code::kNoData);
  ASSERT_TRUE(Set("user.x", "1", kXattrCreate).ok());
  EXPECT_EQ(Set("user.x", "2", kXattrCreate).code(), Code::kExist);
  ASSERT_TRUE(Set("user.x", "3", kXattrReplace).ok());
  proto::XattrReply rep;
  ASSERT_TRUE(Get("user.x", 10, &rep).ok());
  EXPECT_EQ(rep.value(), "3");
  EXPECT_EQ(Set("user.x", "3", kXattrCreate | kXattrReplace).code(), Code::kInval);
}

TEST_F(XattrTest, Limits) {
  EXPECT_EQ(Set("user." + std::string(251, 'n'), "v").code(), Code::kRange);
  EXPECT_TRUE(Set("user." + std::string(250, 'n'), "v").ok());
  EXPECT_EQ(Set("", "v").code(), Code::kRange);
  EXPECT_EQ(Set("user.big", std::string(64 * 1024 + 1, 'v')).code(), Code::kTooBig);
  EXPECT_TRUE(Set("user.big", std::string(64 * 1024, 'v')).ok());
  EXPECT_EQ(Set("weird.ns", "v").code(), Code::kNotSup);
}

TEST_F(XattrTest, Permissions) {
  const auto alice = User(1000, 1000);
  EXPECT_EQ(Set("user.a", "v", 0, alice).code(), Code::kAccess);  // 0644 root-owned
  ASSERT_TRUE(Set("user.a", "v").ok());
  proto::XattrReply rep;
  EXPECT_TRUE(Get("user.a", 10, &rep, alice).ok());
  EXPECT_EQ(Set("trusted.t", "v", 0, alice).code(), Code::kPerm);
  ASSERT_TRUE(Set("trusted.t", "v").ok());
  EXPECT_EQ(Get("trusted.t", 10, &rep, alice).code(), Code::kNoData);
  ASSERT_TRUE(List(100, &rep, alice).ok());
  EXPECT_EQ(rep.value(), std::string("user.a\0", 7));  // trusted.* hidden
  ASSERT_TRUE(List(100, &rep).ok());
  EXPECT_EQ(rep.value().size(), 17u);
  EXPECT_EQ(Remove("user.a", alice).code(), Code::kAccess);
}

TEST_F(XattrTest, RemovedWithInode) {
  ASSERT_TRUE(Set("user.a", "v").ok());
  ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
  auto v = f.ns().Get(XattrKey(ino, "user.a"));
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->has_value());
}

// An inode record from before rec::Inode.xattrs (0: not known) may have xattrs: its removal
// looks for them. One created since says it has none, and its removal does not look.
TEST_F(XattrTest, RemovedWithARecordThatDoesNotSayWhetherItHasAny) {
  auto rec = f.ns().GetInode(ino);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->xattrs, InodeRecord::Xattrs::kNone);
  rec->xattrs = InodeRecord::Xattrs::kUnknown;
  rocksdb::WriteBatch b;
  b.Put(InodeKey(ino), rec->Encode());
  b.Put(XattrKey(ino, "user.old"), "v");  // as a setxattr of an older build left it
  ASSERT_TRUE(f.ns().Write(&b).ok());
  ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
  auto v = f.ns().Get(XattrKey(ino, "user.old"));
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->has_value());
}

}  // namespace
}  // namespace stria::mds
