// Files unlinked while open stay readable (inode and objects) until the last close.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "mds/destroy_queue.h"
#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;

uint64_t OpenFile(MdsFixture& f, uint64_t ino) {
  proto::OpenRequest req;
  req.set_ino(ino);
  req.set_flags(O_RDWR);
  proto::OpenReply rep;
  Status st = Open(f.ns(), req, &rep);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return rep.handle();
}

Status CloseFile(MdsFixture& f, uint64_t ino, uint64_t handle, bool wrote = false) {
  proto::CloseRequest req;
  req.set_ino(ino);
  req.set_handle(handle);
  req.set_wrote(wrote);
  req.set_size(100);
  proto::AttrReply rep;
  return Close(f.ns(), req, &rep);
}

Status GetattrStatus(MdsFixture& f, uint64_t ino) {
  proto::GetattrRequest req;
  req.set_ino(ino);
  proto::AttrReply rep;
  return Getattr(f.ns(), req, &rep);
}

TEST(OrphanTest, UnlinkWhileOpenKeepsFileUntilLastClose) {
  MdsFixture f;
  f.AddOsts(1);
  DestroyQueue q(&f.ns(), &f.gateway());
  const uint64_t ino = f.Mkfile(kRootIno, "f").attr().ino();
  const uint64_t h1 = OpenFile(f, ino);
  const uint64_t h2 = OpenFile(f, ino);
  EXPECT_NE(h1, h2);
  ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
  EXPECT_EQ(f.Lookup(kRootIno, "f").status().code(), Code::kNoEnt);
  ASSERT_TRUE(GetattrStatus(f, ino).ok());
  EXPECT_EQ(f.Getattr(ino).nlink(), 0u);
  EXPECT_EQ(*q.Pending(), 0u);  // objects still in use
  EXPECT_TRUE(f.ns().Get(OrphanKey(ino))->has_value());

  ASSERT_TRUE(CloseFile(f, ino, h1, /*wrote=*/true).ok());
  ASSERT_TRUE(GetattrStatus(f, ino).ok());
  EXPECT_EQ(f.Getattr(ino).size(), 100u);
  ASSERT_TRUE(CloseFile(f, ino, h2).ok());
  EXPECT_EQ(GetattrStatus(f, ino).code(), Code::kNoEnt);
  EXPECT_EQ(*q.Pending(), 1u);
  EXPECT_FALSE(f.ns().Get(OrphanKey(ino))->has_value());  // the mark went with the inode
}

TEST(OrphanTest, RenameOverOpenFile) {
  MdsFixture f;
  f.AddOsts(1);
  DestroyQueue q(&f.ns(), &f.gateway());
  f.Mkfile(kRootIno, "new");
  const uint64_t victim = f.Mkfile(kRootIno, "old").attr().ino();
  const uint64_t h = OpenFile(f, victim);
  ASSERT_TRUE(f.Rename(kRootIno, "new", kRootIno, "old").ok());
  ASSERT_TRUE(GetattrStatus(f, victim).ok());
  EXPECT_EQ(*q.Pending(), 0u);
  ASSERT_TRUE(CloseFile(f, victim, h).ok());
  EXPECT_EQ(GetattrStatus(f, victim).code(), Code::kNoEnt);
  EXPECT_EQ(*q.Pending(), 1u);
}

TEST(OrphanTest, OrphansAreReapedAtRestart) {
  MdsFixture f;
  f.AddOsts(1);
  const uint64_t ino = f.Mkfile(kRootIno, "f").attr().ino();
  const uint64_t inodes = f.ns().InodeCount();
  OpenFile(f, ino);
  ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
  EXPECT_EQ(f.ns().InodeCount(), inodes);
  f.Reopen();  // handles do not survive a restart
  EXPECT_EQ(GetattrStatus(f, ino).code(), Code::kNoEnt);
  EXPECT_EQ(f.ns().InodeCount(), inodes - 1);
  DestroyQueue q(&f.ns(), &f.gateway());
  EXPECT_EQ(*q.Pending(), 1u);
  // A stale handle from before the restart is ignored.
  EXPECT_EQ(CloseFile(f, ino, 1).code(), Code::kNoEnt);
}

TEST(OrphanTest, ClosedFilesAreRemovedImmediately) {
  MdsFixture f;
  f.AddOsts(1);
  DestroyQueue q(&f.ns(), &f.gateway());
  const uint64_t ino = f.Mkfile(kRootIno, "f").attr().ino();
  const uint64_t h = OpenFile(f, ino);
  ASSERT_TRUE(CloseFile(f, ino, h).ok());
  ASSERT_TRUE(CloseFile(f, ino, h).ok());  // a double close is harmless
  ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
  EXPECT_EQ(GetattrStatus(f, ino).code(), Code::kNoEnt);
  EXPECT_EQ(*q.Pending(), 1u);
}

}  // namespace
}  // namespace stria::mds
