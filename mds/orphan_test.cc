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

// As linkat(2) of an unlinked file on Linux: ENOENT. A new link would keep the orphan's mark
// on a linked file (and the restart's reap would remove it).
TEST(OrphanTest, AFileUnlinkedWhileOpenGetsNoNewLink) {
  MdsFixture f;
  f.AddOsts(1);
  const uint64_t ino = f.Mkfile(kRootIno, "f").attr().ino();
  const uint64_t h = OpenFile(f, ino);
  ASSERT_TRUE(f.Unlink(kRootIno, "f", false).ok());
  proto::LinkRequest req;
  req.set_ino(ino);
  req.set_new_parent(kRootIno);
  req.set_new_name("back");
  proto::EntryReply rep;
  EXPECT_EQ(Link(f.ns(), req, &rep).code(), Code::kNoEnt);
  EXPECT_EQ(f.Lookup(kRootIno, "back").status().code(), Code::kNoEnt);
  ASSERT_TRUE(CloseFile(f, ino, h).ok());
  EXPECT_EQ(GetattrStatus(f, ino).code(), Code::kNoEnt);
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

// A batched close that reports nothing leaves the inode unread unless the file may have lost
// its last link while open: every way a file becomes an orphan still has it removed at its
// last close, and only then.
Status CloseBatched(MdsFixture& f, uint64_t ino, uint64_t handle) {
  proto::CloseBatchRequest req;
  proto::CloseRequest* c = req.add_closes();
  c->set_ino(ino);
  c->set_handle(handle);
  proto::CloseBatchReply rep;
  STRIA_RETURN_IF_ERROR(CloseBatch(f.ns(), req, &rep));
  if (rep.closed() != 1) return Status(Code::kIO, "the close was not counted as done");
  return Status::Ok();
}

TEST(OrphanTest, BatchedClosesThatReportNothingRemoveAnOrphanAtItsLast) {
  MdsFixture f;
  f.AddOsts(1);
  {
    DestroyQueue q(&f.ns(), &f.gateway());
    // Unlinked with two handles open.
    const uint64_t a = f.Mkfile(kRootIno, "a").attr().ino();
    const uint64_t a1 = OpenFile(f, a), a2 = OpenFile(f, a);
    ASSERT_TRUE(f.Unlink(kRootIno, "a", false).ok());
    ASSERT_TRUE(CloseBatched(f, a, a1).ok());
    EXPECT_TRUE(GetattrStatus(f, a).ok()) << "a handle is left";
    ASSERT_TRUE(CloseBatched(f, a, a2).ok());
    EXPECT_EQ(GetattrStatus(f, a).code(), Code::kNoEnt);
    EXPECT_EQ(*q.Pending(), 1u);
    // Renamed over while open.
    f.Mkfile(kRootIno, "new");
    const uint64_t b = f.Mkfile(kRootIno, "b").attr().ino();
    const uint64_t bh = OpenFile(f, b);
    ASSERT_TRUE(f.Rename(kRootIno, "new", kRootIno, "b").ok());
    ASSERT_TRUE(CloseBatched(f, b, bh).ok());
    EXPECT_EQ(GetattrStatus(f, b).code(), Code::kNoEnt);
    EXPECT_EQ(*q.Pending(), 2u);
  }
  // Unlinked while open before a restart: the handle given back by the client's reopen, and
  // a new open of the orphan by its number before the reap.
  const uint64_t c = f.Mkfile(kRootIno, "c").attr().ino();
  const uint64_t ch = OpenFile(f, c);
  ASSERT_TRUE(f.Unlink(kRootIno, "c", false).ok());
  const uint64_t d = f.Mkfile(kRootIno, "d").attr().ino();
  OpenFile(f, d);
  ASSERT_TRUE(f.Unlink(kRootIno, "d", false).ok());
  f.Reopen(/*reap_orphans=*/false);
  proto::ReopenRequest reopen;
  reopen.set_ino(c);
  reopen.set_handle(ch);
  proto::ReopenReply reopened;
  ASSERT_TRUE(Reopen(f.ns(), reopen, &reopened).ok());
  ASSERT_TRUE(CloseBatched(f, c, ch).ok());
  EXPECT_EQ(GetattrStatus(f, c).code(), Code::kNoEnt);
  const uint64_t dh = OpenFile(f, d);
  ASSERT_TRUE(CloseBatched(f, d, dh).ok());
  EXPECT_EQ(GetattrStatus(f, d).code(), Code::kNoEnt);
  // A file with its link: left as it was.
  const uint64_t e = f.Mkfile(kRootIno, "e").attr().ino();
  ASSERT_TRUE(CloseBatched(f, e, OpenFile(f, e)).ok());
  ASSERT_TRUE(GetattrStatus(f, e).ok());
  EXPECT_EQ(f.Getattr(e).nlink(), 1u);
}

}  // namespace
}  // namespace stria::mds
