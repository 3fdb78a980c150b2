// Permission checks for non-root callers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "mds/internal/perm.h"
#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;
using testing::User;

const proto::Credentials kAlice = User(1000, 1000);
const proto::Credentials kBob = User(1001, 1001, {1000});
const proto::Credentials kEve = User(1002, 1002);

TEST(PermTest, CheckAccessBits) {
  proto::Attr a;
  a.set_mode(S_IFREG | 0640);
  a.set_uid(1000);
  a.set_gid(1000);
  EXPECT_TRUE(CheckAccess(a, kAlice, kMayRead | kMayWrite).ok());
  EXPECT_EQ(CheckAccess(a, kAlice, kMayExec).code(), Code::kAccess);
  EXPECT_TRUE(CheckAccess(a, kBob, kMayRead).ok());  // via supplementary group
  EXPECT_EQ(CheckAccess(a, kBob, kMayWrite).code(), Code::kAccess);
  EXPECT_EQ(CheckAccess(a, kEve, kMayRead).code(), Code::kAccess);
  EXPECT_TRUE(CheckAccess(a, Root(), kMayRead | kMayWrite).ok());
  // Root may not execute a file with no x bit, but may search any directory.
  EXPECT_EQ(CheckAccess(a, Root(), kMayExec).code(), Code::kAccess);
  a.set_mode(S_IFREG | 0100);
  EXPECT_TRUE(CheckAccess(a, Root(), kMayExec).ok());
  a.set_mode(S_IFDIR | 0000);
  EXPECT_TRUE(CheckAccess(a, Root(), kMayExec).ok());
}

TEST(PermTest, CreateNeedsWriteAndSearch) {
  MdsFixture f;
  f.AddOsts(1);
  EXPECT_EQ(f.Create(kRootIno, "x", S_IFREG | 0644, kAlice).code(), Code::kAccess);
  auto home = f.Mkdir(kRootIno, "home", 0777);
  ASSERT_TRUE(f.Create(home.attr().ino(), "x", S_IFREG | 0644, kAlice).ok());
  auto priv = f.Mkdir(kRootIno, "priv", 0700);
  f.Mkfile(priv.attr().ino(), "secret");
  EXPECT_EQ(f.Lookup(priv.attr().ino(), "secret", kAlice).status().code(), Code::kAccess);
  EXPECT_TRUE(f.Lookup(priv.attr().ino(), "secret", Root()).ok());
  proto::ReaddirRequest rd;
  *rd.mutable_cred() = kAlice;
  rd.set_ino(priv.attr().ino());
  proto::ReaddirReply rr;
  EXPECT_EQ(Readdir(f.ns(), rd, &rr).code(), Code::kAccess);
  // Write but no search on a directory: still no create.
  auto wo = f.Mkdir(kRootIno, "wo", 0666);
  EXPECT_EQ(f.Create(wo.attr().ino(), "y", S_IFREG | 0644, kAlice).code(), Code::kAccess);
}

TEST(PermTest, ChmodChownChgrp) {
  MdsFixture f;
  f.AddOsts(1);
  auto home = f.Mkdir(kRootIno, "home", 0777);
  proto::EntryReply file;
  ASSERT_TRUE(f.Create(home.attr().ino(), "f", S_IFREG | 0644, kAlice, &file).ok());
  proto::SetattrRequest req;
  req.set_ino(file.attr().ino());
  proto::AttrReply rep;
  req.set_valid(proto::SETATTR_MODE);
  req.mutable_attr()->set_mode(0600);
  *req.mutable_cred() = kEve;
  EXPECT_EQ(Setattr(f.ns(), req, &rep).code(), Code::kPerm);
  *req.mutable_cred() = kAlice;
  EXPECT_TRUE(Setattr(f.ns(), req, &rep).ok());
  // Only root chowns.
  req.set_valid(proto::SETATTR_UID);
  req.mutable_attr()->set_uid(1001);
  EXPECT_EQ(Setattr(f.ns(), req, &rep).code(), Code::kPerm);
  *req.mutable_cred() = Root();
  EXPECT_TRUE(Setattr(f.ns(), req, &rep).ok());
  EXPECT_EQ(f.Getattr(file.attr().ino()).uid(), 1001u);
  // Bob (now owner, member of 1000 and 1001) may chgrp to his groups only.
  *req.mutable_cred() = kBob;
  req.set_valid(proto::SETATTR_GID);
  req.mutable_attr()->set_gid(1000);
  EXPECT_TRUE(Setattr(f.ns(), req, &rep).ok());
  req.mutable_attr()->set_gid(5);
  EXPECT_EQ(Setattr(f.ns(), req, &rep).code(), Code::kPerm);
  // Truncate needs write permission; explicit times need ownership; "now" needs write.
  *req.mutable_cred() = kEve;
  req.set_valid(proto::SETATTR_SIZE);
  EXPECT_EQ(Setattr(f.ns(), req, &rep).code(), Code::kAccess);
  req.set_valid(proto::SETATTR_MTIME);
  EXPECT_EQ(Setattr(f.ns(), req, &rep).code(), Code::kPerm);
  req.set_valid(proto::SETATTR_MTIME | proto::SETATTR_MTIME_NOW);
  EXPECT_EQ(Setattr(f.ns(), req, &rep).code(), Code::kAccess);
}

TEST(PermTest, ChmodByNonMemberDropsSetgid) {
  MdsFixture f;
  f.AddOsts(1);
  auto home = f.Mkdir(kRootIno, "home", 0777);
  proto::EntryReply file;
  ASSERT_TRUE(f.Create(home.attr().ino(), "f", S_IFREG | 0644, kAlice, &file).ok());
  proto::SetattrRequest req;
  req.set_ino(file.attr().ino());
  *req.mutable_cred() = User(1000, 7);  // primary group no longer 1000
  req.set_valid(proto::SETATTR_MODE);
  req.mutable_attr()->set_mode(02755);
  proto::AttrReply rep;
  ASSERT_TRUE(Setattr(f.ns(), req, &rep).ok());
  EXPECT_EQ(rep.attr().mode() & 07777, 0755u);
}

TEST(PermTest, WriterMayOnlyClearSuidSgid) {
  // What the kernel sends when a non-owner writes or truncates a set-id file (FUSE without
  // handle_killpriv): a mode change that only clears S_ISUID/S_ISGID.
  MdsFixture f;
  f.AddOsts(1);
  auto home = f.Mkdir(kRootIno, "home", 0777);
  f.Mkfile(home.attr().ino(), "w", 06777);
  f.Mkfile(home.attr().ino(), "r", 06755);
  auto setmode = [&](const char* name, uint32_t mode, const proto::Credentials& cred) {
    proto::SetattrRequest req;
    req.set_ino(f.Lookup(home.attr().ino(), name)->ino());
    *req.mutable_cred() = cred;
    req.set_valid(proto::SETATTR_MODE);
    req.mutable_attr()->set_mode(mode);
    proto::AttrReply rep;
    Status st = Setattr(f.ns(), req, &rep);
    return st.ok() ? Result<uint32_t>(rep.attr().mode() & 07777) : Result<uint32_t>(st);
  };
  EXPECT_EQ(setmode("w", 0777, kEve).status().code(), Code::kOk);
  EXPECT_EQ(*setmode("w", 0777, kEve), 0777u);
  EXPECT_EQ(setmode("w", 0775, kEve).status().code(), Code::kPerm) << "other bits: owner only";
  EXPECT_EQ(setmode("w", 04777, kEve).status().code(), Code::kPerm) << "setting: owner only";
  EXPECT_EQ(setmode("r", 0755, kEve).status().code(), Code::kAccess) << "needs write permission";
  EXPECT_EQ(*setmode("r", 0755, Root()), 0755u);
}

TEST(PermTest, StickyDirectory) {
  MdsFixture f;
  f.AddOsts(1);
  auto tmp = f.Mkdir(kRootIno, "tmp", 01777);
  ASSERT_TRUE(f.Create(tmp.attr().ino(), "alice", S_IFREG | 0666, kAlice).ok());
  EXPECT_EQ(f.Unlink(tmp.attr().ino(), "alice", false, kEve).code(), Code::kPerm);
  EXPECT_EQ(f.Rename(tmp.attr().ino(), "alice", tmp.attr().ino(), "mine", 0, kEve).code(),
            Code::kPerm);
  ASSERT_TRUE(f.Create(tmp.attr().ino(), "eve", S_IFREG | 0666, kEve).ok());
  EXPECT_EQ(f.Rename(tmp.attr().ino(), "eve", tmp.attr().ino(), "alice", 0, kEve).code(),
            Code::kPerm);  // may not replace alice's file either
  EXPECT_TRUE(f.Unlink(tmp.attr().ino(), "alice", false, kAlice).ok());
  EXPECT_TRUE(f.Unlink(tmp.attr().ino(), "eve", false, Root()).ok());
}

TEST(PermTest, UnlinkAndRenameNeedWriteOnParents) {
  MdsFixture f;
  f.AddOsts(1);
  auto ro = f.Mkdir(kRootIno, "ro", 0755);
  auto rw = f.Mkdir(kRootIno, "rw", 0777);
  f.Mkfile(ro.attr().ino(), "f", 0666);
  EXPECT_EQ(f.Unlink(ro.attr().ino(), "f", false, kAlice).code(), Code::kAccess);
  EXPECT_EQ(f.Rename(ro.attr().ino(), "f", rw.attr().ino(), "g", 0, kAlice).code(),
            Code::kAccess);
  ASSERT_TRUE(f.Create(rw.attr().ino(), "mine", S_IFREG | 0644, kAlice).ok());
  EXPECT_EQ(f.Rename(rw.attr().ino(), "mine", ro.attr().ino(), "mine", 0, kAlice).code(),
            Code::kAccess);
  EXPECT_TRUE(f.Rename(rw.attr().ino(), "mine", rw.attr().ino(), "mine2", 0, kAlice).ok());
  // Open-time checks.
  proto::OpenRequest open;
  *open.mutable_cred() = kAlice;
  open.set_ino(f.Lookup(ro.attr().ino(), "f")->ino());
  open.set_flags(O_RDWR);
  proto::OpenReply orep;
  EXPECT_TRUE(Open(f.ns(), open, &orep).ok());  // 0666
}

}  // namespace
}  // namespace stria::mds
