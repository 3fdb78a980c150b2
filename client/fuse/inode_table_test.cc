#include "client/fuse/inode_table.h"

#include <gtest/gtest.h>

namespace stria::client::fuse {
namespace {

proto::Attr FileAttr(uint64_t ino, uint64_t size) {
  proto::Attr a;
  a.set_ino(ino);
  a.set_mode(0100644);
  a.set_size(size);
  return a;
}

TEST(InodeTable, LookupCountsAndForget) {
  InodeTable t;
  EXPECT_NE(t.Get(kRootIno), nullptr);
  EXPECT_EQ(t.Get(5), nullptr);
  t.Ref(FileAttr(5, 10), nullptr);
  t.Ref(FileAttr(5, 10), nullptr);
  ASSERT_NE(t.Get(5), nullptr);
  t.Forget(5, 1);
  EXPECT_NE(t.Get(5), nullptr);
  t.Forget(5, 1);
  EXPECT_EQ(t.Get(5), nullptr);
  t.Forget(5, 3);  // unknown: ignored
  t.Forget(kRootIno, 100);
  EXPECT_NE(t.Get(kRootIno), nullptr);
}

TEST(InodeTable, HandleKeepsInodeAfterForget) {
  InodeTable t;
  auto inode = t.Ref(FileAttr(7, 0), nullptr);
  t.Forget(7, 1);
  EXPECT_EQ(t.Get(7), nullptr);
  inode->NoteWrite(100);  // still usable through the handle's reference
  EXPECT_EQ(inode->known_size.load(), 100u);
}

// A READDIRPLUS page read before the file grew, served after an open saw it grow: the
// older attributes count the kernel's reference and change nothing else.
TEST(InodeTable, OlderAttributesNeverShrinkTheSizeAnOpenSaw) {
  InodeTable t;
  proto::Attr before = FileAttr(9, 10);
  before.set_ctime_ns(100);
  proto::Attr grown = FileAttr(9, 5000);
  grown.set_ctime_ns(200);
  auto inode = t.Ref(grown, nullptr);
  t.Ref(before, nullptr);
  EXPECT_EQ(inode->known_size.load(), 5000u);
  EXPECT_EQ(inode->attr()->ctime_ns(), 200);
  t.Forget(9, 1);
  EXPECT_NE(t.Get(9), nullptr) << "the older one's reference counts";
  proto::Attr same_time = FileAttr(9, 6000);  // a size report that kept the ctime
  same_time.set_ctime_ns(200);
  t.Ref(same_time, nullptr);
  EXPECT_EQ(inode->known_size.load(), 6000u);
}

TEST(InodeTable, LayoutCached) {
  InodeTable t;
  proto::Layout l;
  l.set_stripe_size(1 << 20);
  l.add_objects()->set_object_id(9);
  auto inode = t.Ref(FileAttr(8, 0), &l);
  ASSERT_NE(inode->layout(), nullptr);
  EXPECT_EQ(inode->layout()->objects(0).object_id(), 9u);
}

TEST(InodeTable, OlderLayoutNeverReplacesANewerOne) {
  InodeTable t;
  proto::Layout gen2;
  gen2.set_generation(2);
  gen2.add_components()->mutable_layout()->add_objects()->set_object_id(1);
  gen2.add_components()->mutable_layout()->add_objects()->set_object_id(2);
  auto inode = t.Ref(FileAttr(8, 0), &gen2);
  std::shared_ptr<const proto::Layout> held = inode->layout();
  ASSERT_NE(held, nullptr);
  // A reply sent before the instantiation arrives late: ignored.
  proto::Layout gen1 = gen2;
  gen1.set_generation(1);
  gen1.mutable_components(1)->mutable_layout()->clear_objects();
  EXPECT_EQ(inode->set_layout(gen1)->generation(), 2u);
  EXPECT_EQ(inode->layout()->components(1).layout().objects_size(), 1);
  // A layout without objects (a template) is never held.
  EXPECT_EQ(inode->set_layout(proto::Layout())->generation(), 2u);
  // A newer one is; the snapshot taken before stays as it was.
  proto::Layout gen3 = gen2;
  gen3.set_generation(3);
  EXPECT_EQ(inode->set_layout(gen3)->generation(), 3u);
  EXPECT_EQ(held->generation(), 2u);
}

TEST(Inode, SizeWhileWriting) {
  Inode i(3);
  i.ObserveMdsSize(50);
  EXPECT_EQ(i.ReportedSize(50), 50u);
  i.writers = 1;
  i.NoteWrite(200);
  EXPECT_EQ(i.ReportedSize(50), 200u);   // our writes beyond the MDS size show
  i.ObserveMdsSize(10);                  // a stale MDS size does not shrink it
  EXPECT_EQ(i.known_size.load(), 200u);
  i.NoteTruncate(20);
  EXPECT_EQ(i.ReportedSize(20), 20u);
  EXPECT_EQ(i.written_end.load(), 20u);
  i.writers = 0;
  i.ObserveMdsSize(5);  // no writer here: the MDS is the truth
  EXPECT_EQ(i.known_size.load(), 5u);
}

// A reply to a request sent while this client still held the size (its report gathered
// with the closes) may predate the report, even when the report was answered before the
// reply is seen: it must not take the size back.
TEST(Inode, AReplyThatMayPredateOurSizeReportDoesNotShrinkTheSize) {
  Inode i(4);
  i.writers = 1;
  i.NoteWrite(31);
  i.writers = 0;
  i.unreported_sizes = 1;               // closed: the size 31 waits in the close batcher
  const bool held = i.HoldsSize();      // an OPEN is sent now
  i.unreported_sizes = 0;               // the batch was answered meanwhile
  i.ObserveMdsSize(28, held);           // the OPEN's reply: computed before the batch landed
  EXPECT_EQ(i.known_size.load(), 31u);  // reads still reach the end
  i.ObserveMdsSize(12);                 // a later request, sent after: the MDS is the truth
  EXPECT_EQ(i.known_size.load(), 12u);
}

}  // namespace
}  // namespace stria::client::fuse
