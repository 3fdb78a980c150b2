// The reply journal: a mutation's reply is persisted in its own batch and found after a
// reopen; reads and failed mutations persist nothing.
#include "mds/reply_journal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;

TEST(ReplyJournalTest, CreateReplySurvivesReopen) {
  MdsFixture f;
  f.AddOsts(1);
  proto::CreateRequest req;
  req.set_parent(kRootIno);
  req.set_name("f");
  req.set_mode(S_IFREG | 0644);
  proto::EntryReply rep;
  {
    ReplyJournal j{"client-1", 77, &rep};
    ScopedReplyJournal scope(&j);
    ASSERT_TRUE(Create(f.ns(), req, &rep).ok());
    // The same request again fails with EEXIST and records nothing new.
    proto::EntryReply again;
    ReplyJournal j2{"client-1", 78, &again};
    ScopedReplyJournal scope2(&j2);
    EXPECT_EQ(Create(f.ns(), req, &again).code(), Code::kExist);
  }
  EXPECT_EQ(ActiveReplyJournal(), nullptr);
  f.Reopen();
  auto old = FindPersistedReply(f.ns(), "client-1", 77);
  ASSERT_TRUE(old.ok());
  ASSERT_TRUE(old->has_value());
  proto::EntryReply parsed;
  ASSERT_TRUE(parsed.ParseFromString(**old));
  EXPECT_EQ(parsed.attr().ino(), rep.attr().ino());
  EXPECT_EQ(parsed.layout().objects_size(), 1);
  EXPECT_FALSE(FindPersistedReply(f.ns(), "client-1", 78)->has_value());
  EXPECT_FALSE(FindPersistedReply(f.ns(), "client-2", 77)->has_value());
}

TEST(ReplyJournalTest, OldRecordsAreTrimmed) {
  MdsFixture f;
  for (uint64_t xid = 1; xid <= kTrimEvery + 128; ++xid) {
    proto::SetParamRequest req;
    req.set_name("jobid_var");
    req.set_value("V" + std::to_string(xid));
    proto::SetParamReply rep;
    ReplyJournal j{"c", xid, &rep};
    ScopedReplyJournal scope(&j);
    ASSERT_TRUE(SetParam(f.ns(), req, &rep).ok());
  }
  EXPECT_FALSE(FindPersistedReply(f.ns(), "c", 1)->has_value());
  EXPECT_FALSE(FindPersistedReply(f.ns(), "c", kTrimEvery - kKeepPerClient - 1)->has_value());
  EXPECT_TRUE(FindPersistedReply(f.ns(), "c", kTrimEvery - kKeepPerClient)->has_value());
  EXPECT_TRUE(FindPersistedReply(f.ns(), "c", kTrimEvery + 128)->has_value());
}

}  // namespace
}  // namespace stria::mds
