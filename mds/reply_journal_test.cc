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

// The trim's range starts at xid 0 of its client, and only that key is taken for one (the
// MDS keeps those out of its memtable's insert hints; OldRecordsAreTrimmed aborts in
// RocksDB's skiplist when one gets in).
TEST(ReplyJournalTest, OnlyAClientsXidZeroIsATrimStart) {
  const std::string uuid = "0b7c2a4e-1c9d-4f2a-9b0e-5d6f7a8b9c0d";
  EXPECT_TRUE(IsTrimStartKey(ReplyKey(uuid, 0)));
  EXPECT_TRUE(IsTrimStartKey(ReplyKey("c", 0)));
  EXPECT_FALSE(IsTrimStartKey(ReplyKey(uuid, 1)));
  EXPECT_FALSE(IsTrimStartKey(ReplyKey(uuid, uint64_t{1} << 63)));
  EXPECT_FALSE(IsTrimStartKey(DestroyKey(0)));  // zeros too, but not a reply key
  std::string longer = ReplyKey("c", 0);
  longer.push_back('\0');
  EXPECT_FALSE(IsTrimStartKey(longer));
  EXPECT_FALSE(IsTrimStartKey(std::string(1, kPrefixReply)));
  EXPECT_FALSE(IsTrimStartKey(""));
}

}  // namespace
}  // namespace stria::mds
