// Create, lookup, getattr, setattr, unlink/rmdir, link, readlink, open/close, statfs and
// default layouts, with their errno cases.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;
using testing::User;

TEST(CreateTest, AllTypes) {
  MdsFixture f;
  f.AddOsts(1);
  auto dir = f.Mkdir(kRootIno, "d", 0750);
  EXPECT_EQ(dir.attr().mode(), static_cast<uint32_t>(S_IFDIR | 0750));
  EXPECT_EQ(dir.attr().nlink(), 2u);
  EXPECT_EQ(f.Getattr(kRootIno).nlink(), 3u);  // 2 + one subdirectory

  auto file = f.Mkfile(kRootIno, "f", 0640);
  EXPECT_EQ(file.attr().mode(), static_cast<uint32_t>(S_IFREG | 0640));
  EXPECT_EQ(file.attr().nlink(), 1u);
  EXPECT_EQ(file.layout().objects_size(), 1);

  proto::CreateRequest req;
  req.set_parent(kRootIno);
  req.set_name("l");
  req.set_mode(S_IFLNK | 0777);
  req.set_symlink_target("/some/where");
  proto::EntryReply rep;
  ASSERT_TRUE(Create(f.ns(), req, &rep).ok());
  EXPECT_TRUE(S_ISLNK(rep.attr().mode()));
  EXPECT_EQ(rep.attr().size(), 11u);
  proto::ReadlinkRequest rl;
  rl.set_ino(rep.attr().ino());
  proto::ReadlinkReply rlr;
  ASSERT_TRUE(Readlink(f.ns(), rl, &rlr).ok());
  EXPECT_EQ(rlr.target(), "/some/where");
  rl.set_ino(file.attr().ino());
  EXPECT_EQ(Readlink(f.ns(), rl, &rlr).code(), Code::kInval);

  for (uint32_t type : {S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK}) {
    proto::EntryReply n;
    ASSERT_TRUE(f.Create(kRootIno, "node" + std::to_string(type), type | 0600, Root(), &n).ok());
    EXPECT_EQ(n.attr().mode() & S_IFMT, type);
    EXPECT_EQ(n.layout().objects_size(), 0);
  }
  proto::CreateRequest dev;
  dev.set_parent(kRootIno);
  dev.set_name("tty");
  dev.set_mode(S_IFCHR | 0600);
  dev.set_rdev(0x0501);
  ASSERT_TRUE(Create(f.ns(), dev, &rep).ok());
  EXPECT_EQ(f.Getattr(rep.attr().ino()).rdev(), 0x0501u);
}

TEST(CreateTest, Errors) {
  MdsFixture f;
  f.AddOsts(1);
  f.Mkfile(kRootIno, "x");
  EXPECT_EQ(f.Create(kRootIno, "x", S_IFREG | 0644, Root()).code(), Code::kExist);
  EXPECT_EQ(f.Create(kRootIno, "x", S_IFDIR | 0755, Root()).code(), Code::kExist);
  EXPECT_EQ(f.Create(kRootIno, std::string(256, 'a'), S_IFREG, Root()).code(), Code::kNameTooLong);
  EXPECT_TRUE(f.Create(kRootIno, std::string(255, 'a'), S_IFREG, Root()).ok());
  for (const char* bad : {"", ".", "..", "a/b"}) {
    EXPECT_EQ(f.Create(kRootIno, bad, S_IFREG, Root()).code(), Code::kInval) << bad;
  }
  auto file = f.Mkfile(kRootIno, "plain");
  EXPECT_EQ(f.Create(file.attr().ino(), "y", S_IFREG, Root()).code(), Code::kNotDir);
  EXPECT_EQ(f.Create(999, "y", S_IFREG, Root()).code(), Code::kNoEnt);
  proto::CreateRequest req;
  req.set_parent(kRootIno);
  req.set_name("emptylink");
  req.set_mode(S_IFLNK | 0777);
  proto::EntryReply rep;
  EXPECT_EQ(Create(f.ns(), req, &rep).code(), Code::kNoEnt);
}

// A batch (CreateRequest.more): each create checked and answered alone, in one commit.
TEST(CreateTest, ABatchCreatesEachNameAlone) {
  MdsFixture f;
  f.AddOsts(2);
  auto dir = f.Mkdir(kRootIno, "d", 0755);
  const uint64_t d = dir.attr().ino();
  f.Mkfile(d, "taken");
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(d);
  req.set_name("a");
  req.set_mode(S_IFREG | 0640);
  auto add = [&](const std::string& name, uint32_t mode) {
    proto::CreateRequest* item = req.add_more();
    item->set_name(name);
    item->set_mode(mode);
    return item;
  };
  add("b", S_IFREG | 0600)->set_umask(022);
  add("taken", S_IFREG | 0644);  // exists already
  add("a", S_IFREG | 0644);      // twice in the batch
  add("", S_IFREG | 0644);       // a bad name
  add("sub", S_IFDIR | 0750);
  add("l", S_IFLNK | 0777)->set_symlink_target("a");
  proto::CreateRequest* other = add("c", S_IFREG | 0644);
  other->set_parent(999);  // an item's own parent and credentials do not count
  other->mutable_cred()->set_uid(4242);
  proto::EntryReply rep;
  ASSERT_TRUE(Create(f.ns(), req, &rep).ok());
  using C = Code;
  const std::vector<C> want = {C::kOk,    C::kOk, C::kExist, C::kExist,
                               C::kInval, C::kOk, C::kOk,    C::kOk};
  ASSERT_EQ(rep.codes_size(), static_cast<int>(want.size()));
  ASSERT_EQ(rep.more_size(), static_cast<int>(want.size()) - 1);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(static_cast<C>(rep.codes(i)), want[i]) << i;
  // Each reply is its create's, with distinct inodes, and each name leads to it.
  const std::vector<std::pair<std::string, const proto::EntryReply*>> made = {{"a", &rep},
                                                                              {"b", &rep.more(0)},
                                                                              {"sub", &rep.more(4)},
                                                                              {"l", &rep.more(5)},
                                                                              {"c", &rep.more(6)}};
  std::set<uint64_t> inos;
  for (const auto& [name, r] : made) {
    auto looked = f.Lookup(d, name);
    ASSERT_TRUE(looked.ok()) << name;
    EXPECT_EQ(looked->ino(), r->attr().ino()) << name;
    inos.insert(r->attr().ino());
  }
  EXPECT_EQ(inos.size(), made.size());
  EXPECT_EQ(rep.attr().mode(), static_cast<uint32_t>(S_IFREG | 0640));
  EXPECT_EQ(rep.layout().objects_size(), 1);
  EXPECT_EQ(rep.more(0).attr().mode(), static_cast<uint32_t>(S_IFREG | 0600));
  EXPECT_EQ(rep.more(1).attr().ino(), 0u);  // failed: empty
  EXPECT_TRUE(S_ISDIR(rep.more(4).attr().mode()));
  EXPECT_EQ(rep.more(5).attr().size(), 1u);
  EXPECT_EQ(rep.more(6).attr().uid(), 0u);
  EXPECT_FALSE(f.Lookup(999, "c").ok());
  // The parent after all of them: one more subdirectory.
  EXPECT_EQ(rep.parent_attr().nlink(), 3u);
  EXPECT_EQ(f.Getattr(d).nlink(), 3u);
}

TEST(CreateTest, ABatchThatCreatesNothingWritesNothing) {
  MdsFixture f;
  f.AddOsts(1);
  f.Mkfile(kRootIno, "x");
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(kRootIno);
  req.set_name("x");
  req.set_mode(S_IFREG | 0644);
  req.add_more()->set_name("x");
  const uint64_t seq = f.ns().db()->GetLatestSequenceNumber();
  proto::EntryReply rep;
  ASSERT_TRUE(Create(f.ns(), req, &rep).ok());
  ASSERT_EQ(rep.codes_size(), 2);
  EXPECT_EQ(static_cast<Code>(rep.codes(0)), Code::kExist);
  EXPECT_EQ(static_cast<Code>(rep.codes(1)), Code::kExist);
  EXPECT_EQ(f.ns().db()->GetLatestSequenceNumber(), seq);
  // The parent's own check fails the whole batch.
  req.set_parent(999);
  EXPECT_EQ(Create(f.ns(), req, &rep).code(), Code::kNoEnt);
  req.set_parent(kRootIno);
  EXPECT_EQ(f.Create(kRootIno, "y", S_IFREG | 0644, User(1000, 1000)).code(), Code::kAccess);
  *req.mutable_cred() = User(1000, 1000);
  req.set_name("y");
  EXPECT_EQ(Create(f.ns(), req, &rep).code(), Code::kAccess);
}

TEST(CreateTest, ABatchCannotOpenAndHasABound) {
  MdsFixture f;
  f.AddOsts(1);
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(kRootIno);
  req.set_name("a");
  req.set_mode(S_IFREG | 0644);
  req.add_more()->set_name("b");
  req.mutable_more(0)->set_mode(S_IFREG | 0644);
  req.mutable_more(0)->set_open(true);
  proto::EntryReply rep;
  EXPECT_EQ(Create(f.ns(), req, &rep).code(), Code::kInval);
  req.mutable_more(0)->set_open(false);
  req.set_open(true);
  EXPECT_EQ(Create(f.ns(), req, &rep).code(), Code::kInval);
  req.set_open(false);
  for (int i = 1; i < kMaxCreateBatch; ++i) {
    proto::CreateRequest* item = req.add_more();
    item->set_name("n" + std::to_string(i));
    item->set_mode(S_IFREG | 0644);
  }
  EXPECT_EQ(Create(f.ns(), req, &rep).code(), Code::kInval);
  EXPECT_FALSE(f.Lookup(kRootIno, "a").ok());
  req.mutable_more()->RemoveLast();  // kMaxCreateBatch in all
  rep.Clear();
  ASSERT_TRUE(Create(f.ns(), req, &rep).ok());
  EXPECT_EQ(rep.codes_size(), kMaxCreateBatch);
  EXPECT_TRUE(f.Lookup(kRootIno, "n126").ok());
  EXPECT_FALSE(f.Lookup(kRootIno, "n127").ok());
}

TEST(CreateTest, NoOstsIsNoSpaceForFilesOnly) {
  MdsFixture f;
  Status st = f.Create(kRootIno, "f", S_IFREG | 0644, Root());
  EXPECT_EQ(st.code(), Code::kNoSpc);
  EXPECT_NE(st.message().find("no OSTs registered"), std::string::npos);
  EXPECT_TRUE(f.Create(kRootIno, "d", S_IFDIR | 0755, Root()).ok());
  EXPECT_TRUE(f.Create(kRootIno, "p", S_IFIFO | 0644, Root()).ok());
  EXPECT_FALSE(f.Lookup(kRootIno, "f").ok());
}

TEST(CreateTest, UmaskAndSetgidDirectory) {
  MdsFixture f;
  f.AddOsts(1);
  auto d = f.Mkdir(kRootIno, "shared", 02777);
  proto::SetattrRequest chgrp;
  chgrp.set_ino(d.attr().ino());
  chgrp.set_valid(proto::SETATTR_GID);
  chgrp.mutable_attr()->set_gid(500);
  proto::AttrReply ar;
  ASSERT_TRUE(Setattr(f.ns(), chgrp, &ar).ok());
  // A user not in group 500 creates inside: inherits gid 500; subdirs inherit setgid.
  proto::EntryReply sub;
  ASSERT_TRUE(f.Create(d.attr().ino(), "sub", S_IFDIR | 0755, User(1000, 1000), &sub).ok());
  EXPECT_EQ(sub.attr().gid(), 500u);
  EXPECT_TRUE(sub.attr().mode() & S_ISGID);
  proto::EntryReply file;
  ASSERT_TRUE(f.Create(d.attr().ino(), "file", S_IFREG | 0666, User(1000, 1000), &file).ok());
  EXPECT_EQ(file.attr().gid(), 500u);
  EXPECT_EQ(file.attr().uid(), 1000u);
  proto::CreateRequest req;
  req.set_parent(kRootIno);
  req.set_name("masked");
  req.set_mode(S_IFREG | 0666);
  req.set_umask(022);
  proto::EntryReply rep;
  ASSERT_TRUE(Create(f.ns(), req, &rep).ok());
  EXPECT_EQ(rep.attr().mode() & 07777, 0644u);
}

// Mutations read directories through the namespace's directory cache: each one must see
// what the one before it committed, and nothing removed may come back from it.
TEST(DirCacheTest, EachChangeToADirectorySeesTheOneBefore) {
  MdsFixture f;
  f.AddOsts(1);
  const uint64_t d = f.Mkdir(kRootIno, "d", 0755).attr().ino();
  for (int i = 0; i < 5; ++i) f.Mkdir(d, "sub" + std::to_string(i));
  EXPECT_EQ(f.Getattr(d).nlink(), 7u) << "each mkdir counted on the one before";

  // A chmod, then a create that rewrites the directory's times: the mode stays.
  proto::SetattrRequest chmod;
  chmod.set_ino(d);
  chmod.set_valid(proto::SETATTR_MODE);
  chmod.mutable_attr()->set_mode(0700);
  proto::AttrReply attr;
  ASSERT_TRUE(Setattr(f.ns(), chmod, &attr).ok());
  f.Mkfile(d, "f");
  EXPECT_EQ(f.Getattr(d).mode(), static_cast<uint32_t>(S_IFDIR | 0700));
  EXPECT_EQ(f.Getattr(d).nlink(), 7u);

  // Removed: gone for creates too, and a new directory under the same name starts afresh.
  ASSERT_TRUE(f.Unlink(d, "f", false).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.Unlink(d, "sub" + std::to_string(i), true).ok());
  ASSERT_TRUE(f.Unlink(kRootIno, "d", true).ok());
  EXPECT_EQ(f.Create(d, "late", S_IFREG | 0644, Root()).code(), Code::kNoEnt);
  const uint64_t again = f.Mkdir(kRootIno, "d", 0755).attr().ino();
  f.Mkfile(again, "g");
  EXPECT_EQ(f.Getattr(again).nlink(), 2u);
  EXPECT_EQ(f.Getattr(kRootIno).nlink(), 3u);

  // A reopened namespace (a restarted MDS) reads what was written.
  f.Reopen();
  f.Mkdir(again, "h");
  EXPECT_EQ(f.Getattr(again).nlink(), 3u);
}

TEST(LookupTest, DotDotAndErrors) {
  MdsFixture f;
  auto d = f.Mkdir(kRootIno, "d");
  auto dot = f.Lookup(d.attr().ino(), ".");
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ(dot->ino(), d.attr().ino());
  auto up = f.Lookup(d.attr().ino(), "..");
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->ino(), kRootIno);
  EXPECT_EQ(f.Lookup(kRootIno, "missing").status().code(), Code::kNoEnt);
  EXPECT_EQ(f.Lookup(kRootIno, std::string(300, 'x')).status().code(), Code::kNameTooLong);
}

TEST(LookupTest, ABatchAnswersEachNameAlone) {
  MdsFixture f;
  f.AddOsts(1);
  auto dir = f.Mkdir(kRootIno, "d", 0755);
  const uint64_t d = dir.attr().ino();
  auto a = f.Mkfile(d, "a");
  auto sub = f.Mkdir(d, "sub");
  proto::LookupRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(d);
  req.set_name("a");
  for (const char* name : {"missing", "sub", "", "..", "a"}) req.add_more_names(name);
  req.add_more_names(std::string(300, 'x'));
  proto::EntryReply rep;
  ASSERT_TRUE(Lookup(f.ns(), req, &rep).ok());
  using C = Code;
  const std::vector<C> want = {C::kOk, C::kNoEnt, C::kOk,         C::kInval,
                               C::kOk, C::kOk,    C::kNameTooLong};
  ASSERT_EQ(rep.codes_size(), static_cast<int>(want.size()));
  ASSERT_EQ(rep.more_size(), static_cast<int>(want.size()) - 1);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(static_cast<C>(rep.codes(i)), want[i]) << i;
  // Each reply is its own name's.
  EXPECT_EQ(rep.attr().ino(), a.attr().ino());
  EXPECT_EQ(rep.layout().objects_size(), 1);
  EXPECT_EQ(rep.more(0).attr().ino(), 0u);  // failed: empty
  EXPECT_EQ(rep.more(1).attr().ino(), sub.attr().ino());
  EXPECT_EQ(rep.more(3).attr().ino(), kRootIno);
  EXPECT_EQ(rep.more(4).attr().ino(), a.attr().ino());

  // negative_ok: a missing name is answered, empty, as a single lookup answers it.
  req.set_negative_ok(true);
  rep.Clear();
  ASSERT_TRUE(Lookup(f.ns(), req, &rep).ok());
  EXPECT_EQ(static_cast<C>(rep.codes(1)), C::kOk);
  EXPECT_EQ(rep.more(0).attr().ino(), 0u);
}

// A batch in a directory that cannot be searched answers each name with why (a batch
// refused as a whole is one an MDS from before batches read as its first name); only one
// too large is refused whole.
TEST(LookupTest, ABatchInADirectoryThatCannotBeSearchedAnswersEachName) {
  MdsFixture f;
  auto dir = f.Mkdir(kRootIno, "private", 0700);
  proto::LookupRequest req;
  *req.mutable_cred() = User(1000, 1000);
  req.set_parent(dir.attr().ino());
  req.set_name("a");
  req.add_more_names("b");
  for (auto [parent, code] :
       {std::pair{dir.attr().ino(), Code::kAccess}, std::pair{uint64_t{424242}, Code::kNoEnt}}) {
    req.set_parent(parent);
    proto::EntryReply rep;
    ASSERT_TRUE(Lookup(f.ns(), req, &rep).ok());
    ASSERT_EQ(rep.codes_size(), 2);
    ASSERT_EQ(rep.more_size(), 1);
    EXPECT_EQ(static_cast<Code>(rep.codes(0)), code);
    EXPECT_EQ(static_cast<Code>(rep.codes(1)), code);
    EXPECT_EQ(rep.attr().ino(), 0u);
  }
  // Alone, the lookup is refused as before.
  req.clear_more_names();
  proto::EntryReply rep;
  EXPECT_EQ(Lookup(f.ns(), req, &rep).code(), Code::kNoEnt);
  // At most kMaxLookupBatch names in all.
  *req.mutable_cred() = Root();
  req.set_parent(kRootIno);
  req.clear_more_names();
  for (int i = 1; i < kMaxLookupBatch; ++i) req.add_more_names("n" + std::to_string(i));
  rep.Clear();
  ASSERT_TRUE(Lookup(f.ns(), req, &rep).ok());
  EXPECT_EQ(rep.codes_size(), kMaxLookupBatch);
  req.add_more_names("one-too-many");
  EXPECT_EQ(Lookup(f.ns(), req, &rep).code(), Code::kInval);
}

TEST(LookupTest, AnOpenIntentIsReadOnlyAndMayBeBatched) {
  MdsFixture f;
  f.AddOsts(1);
  f.Mkfile(kRootIno, "f", 0644);
  proto::LookupRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(kRootIno);
  req.set_name("f");
  req.set_open(true);
  for (uint32_t flags : {uint32_t{O_RDONLY}, uint32_t{O_RDONLY | O_NONBLOCK}}) {
    req.set_open_flags(flags);
    proto::EntryReply rep;
    EXPECT_TRUE(Lookup(f.ns(), req, &rep).ok()) << flags;
    EXPECT_NE(rep.attr().ino(), 0u);
  }
  for (uint32_t flags : {uint32_t{O_WRONLY}, uint32_t{O_RDWR}, uint32_t{O_RDONLY | O_TRUNC}}) {
    req.set_open_flags(flags);
    proto::EntryReply rep;
    EXPECT_EQ(Lookup(f.ns(), req, &rep).code(), Code::kInval) << flags;
  }
  // A batch (the opens are the service's: mds_service.cc, OpenWithLookup).
  f.Mkfile(kRootIno, "g", 0644);
  req.set_open_flags(O_RDONLY);
  req.add_more_names("g");
  proto::EntryReply rep;
  ASSERT_TRUE(Lookup(f.ns(), req, &rep).ok());
  ASSERT_EQ(rep.codes_size(), 2);
  EXPECT_EQ(rep.codes(1), 0);
  EXPECT_NE(rep.more(0).attr().ino(), 0u);
  req.set_open_flags(O_RDWR);
  EXPECT_EQ(Lookup(f.ns(), req, &rep).code(), Code::kInval) << "read-only, batched or not";
}

TEST(SetattrTest, ModeOwnerSizeTimes) {
  MdsFixture f;
  f.AddOsts(1);
  auto file = f.Mkfile(kRootIno, "f", 0644);
  const uint64_t ino = file.attr().ino();
  proto::SetattrRequest req;
  req.set_ino(ino);
  req.set_valid(proto::SETATTR_MODE | proto::SETATTR_UID | proto::SETATTR_GID);
  req.mutable_attr()->set_mode(0600);
  req.mutable_attr()->set_uid(42);
  req.mutable_attr()->set_gid(43);
  proto::AttrReply rep;
  ASSERT_TRUE(Setattr(f.ns(), req, &rep).ok());
  EXPECT_EQ(rep.attr().mode(), static_cast<uint32_t>(S_IFREG | 0600));
  EXPECT_EQ(rep.attr().uid(), 42u);
  EXPECT_EQ(rep.attr().gid(), 43u);
  EXPECT_GE(rep.attr().ctime_ns(), file.attr().ctime_ns());

  req.set_valid(proto::SETATTR_SIZE);
  req.mutable_attr()->set_size(12345);
  ASSERT_TRUE(Setattr(f.ns(), req, &rep).ok());
  EXPECT_EQ(f.Getattr(ino).size(), 12345u);
  req.mutable_attr()->set_size(10);  // exact, also downwards
  ASSERT_TRUE(Setattr(f.ns(), req, &rep).ok());
  EXPECT_EQ(f.Getattr(ino).size(), 10u);

  req.set_valid(proto::SETATTR_ATIME | proto::SETATTR_MTIME);
  req.mutable_attr()->set_atime_ns(1'000'000'000);
  req.mutable_attr()->set_mtime_ns(2'000'000'000);
  ASSERT_TRUE(Setattr(f.ns(), req, &rep).ok());
  EXPECT_EQ(f.Getattr(ino).atime_ns(), 1'000'000'000);
  EXPECT_EQ(f.Getattr(ino).mtime_ns(), 2'000'000'000);
  req.set_valid(proto::SETATTR_MTIME | proto::SETATTR_MTIME_NOW);
  ASSERT_TRUE(Setattr(f.ns(), req, &rep).ok());
  EXPECT_GT(f.Getattr(ino).mtime_ns(), 2'000'000'000);
  EXPECT_EQ(f.Getattr(ino).atime_ns(), 1'000'000'000);

  auto d = f.Mkdir(kRootIno, "d");
  req.set_ino(d.attr().ino());
  req.set_valid(proto::SETATTR_SIZE);
  EXPECT_EQ(Setattr(f.ns(), req, &rep).code(), Code::kIsDir);
  req.set_ino(ino);
  req.mutable_attr()->set_size(1ull << 62);
  EXPECT_EQ(Setattr(f.ns(), req, &rep).code(), Code::kFBig);
  req.set_ino(4242);
  EXPECT_EQ(Setattr(f.ns(), req, &rep).code(), Code::kNoEnt);
}

TEST(UnlinkTest, UnlinkAndRmdir) {
  MdsFixture f;
  f.AddOsts(1);
  auto d = f.Mkdir(kRootIno, "d");
  f.Mkfile(d.attr().ino(), "f");
  EXPECT_EQ(f.Unlink(kRootIno, "d", /*is_dir=*/false).code(), Code::kIsDir);
  EXPECT_EQ(f.Unlink(kRootIno, "d", true).code(), Code::kNotEmpty);
  EXPECT_EQ(f.Unlink(d.attr().ino(), "f", true).code(), Code::kNotDir);
  EXPECT_EQ(f.Unlink(d.attr().ino(), "nope", false).code(), Code::kNoEnt);
  EXPECT_EQ(f.Unlink(kRootIno, ".", true).code(), Code::kInval);
  const uint64_t inodes = f.ns().InodeCount();
  ASSERT_TRUE(f.Unlink(d.attr().ino(), "f", false).ok());
  EXPECT_EQ(f.ns().InodeCount(), inodes - 1);
  EXPECT_EQ(f.Getattr(kRootIno).nlink(), 3u);
  ASSERT_TRUE(f.Unlink(kRootIno, "d", true).ok());
  EXPECT_EQ(f.Getattr(kRootIno).nlink(), 2u);
  EXPECT_EQ(f.Lookup(kRootIno, "d").status().code(), Code::kNoEnt);
  proto::GetattrRequest g;
  g.set_ino(d.attr().ino());
  proto::AttrReply ar;
  EXPECT_EQ(Getattr(f.ns(), g, &ar).code(), Code::kNoEnt);
}

TEST(UnlinkTest, ABatchUnlinksEachFileAloneInOneTransaction) {
  MdsFixture f;
  f.AddOsts(1);
  const proto::Credentials alice = User(1001, 1001), eve = User(1002, 1002);
  const uint64_t d = f.Mkdir(kRootIno, "d", 01777).attr().ino();  // sticky: eve's stays
  for (const char* name : {"a", "h1", "x"}) {
    ASSERT_TRUE(f.Create(d, name, S_IFREG | 0644, alice).ok());
  }
  ASSERT_TRUE(f.Create(d, "b", S_IFREG | 0644, eve).ok());
  ASSERT_TRUE(f.Create(d, "sub", S_IFDIR | 0755, alice).ok());
  proto::LinkRequest link;
  *link.mutable_cred() = Root();
  link.set_ino(f.Lookup(d, "h1")->ino());
  link.set_new_parent(d);
  link.set_new_name("h2");
  proto::EntryReply linked;
  ASSERT_TRUE(Link(f.ns(), link, &linked).ok());
  const uint64_t inodes = f.ns().InodeCount();
  const proto::Attr before = f.Getattr(d);

  proto::UnlinkRequest req;
  *req.mutable_cred() = alice;
  req.set_parent(d);
  req.set_name("a");
  for (const char* name : {"b", "sub", "nope", "a", "h1", "h2", "..", "x"}) {
    req.add_more_names(name);
  }
  proto::UnlinkReply rep;
  ASSERT_TRUE(Unlink(f.ns(), req, &rep).ok());
  auto code = [](Code c) { return static_cast<int32_t>(c); };
  const std::vector<int32_t> want = {0,                   // a
                                     code(Code::kPerm),   // b: eve's, in a sticky directory
                                     code(Code::kIsDir),  // sub
                                     code(Code::kNoEnt),  // nope
                                     code(Code::kNoEnt),  // a, twice in the batch
                                     0,
                                     0,                   // h1 and h2: both links of one file
                                     code(Code::kInval),  // ..
                                     0};                  // x
  EXPECT_EQ(std::vector<int32_t>(rep.codes().begin(), rep.codes().end()), want);
  EXPECT_FALSE(rep.has_attr());
  EXPECT_EQ(f.ns().InodeCount(), inodes - 3);
  for (const char* gone : {"a", "h1", "h2", "x"}) {
    EXPECT_EQ(f.Lookup(d, gone).status().code(), Code::kNoEnt) << gone;
  }
  EXPECT_TRUE(f.Lookup(d, "b").ok());
  EXPECT_TRUE(f.Lookup(d, "sub").ok());
  const proto::Attr after = f.Getattr(d);
  EXPECT_EQ(after.nlink(), before.nlink());
  EXPECT_GT(after.mtime_ns(), before.mtime_ns());
  EXPECT_EQ(rep.parent_attr().mtime_ns(), after.mtime_ns());

  // A name twice whose file has another link outside the batch: the second is not there
  // (entries are read from the database, which the transaction changes at its commit).
  ASSERT_TRUE(f.Create(d, "k1", S_IFREG | 0644, alice).ok());
  link.set_ino(f.Lookup(d, "k1")->ino());
  link.set_new_name("k2");
  ASSERT_TRUE(Link(f.ns(), link, &linked).ok());
  const uint64_t with_k = f.ns().InodeCount();
  proto::UnlinkRequest twice;
  *twice.mutable_cred() = alice;
  twice.set_parent(d);
  twice.set_name("k1");
  twice.add_more_names("k1");
  rep.Clear();
  ASSERT_TRUE(Unlink(f.ns(), twice, &rep).ok());
  EXPECT_EQ(std::vector<int32_t>(rep.codes().begin(), rep.codes().end()),
            (std::vector<int32_t>{0, code(Code::kNoEnt)}));
  auto k2 = f.Lookup(d, "k2");
  ASSERT_TRUE(k2.ok());
  EXPECT_EQ(k2->nlink(), 1u);
  EXPECT_EQ(f.ns().InodeCount(), with_k);

  // A batch whose every name fails changes nothing.
  const proto::Attr unchanged = f.Getattr(d);
  proto::UnlinkRequest none;
  *none.mutable_cred() = alice;
  none.set_parent(d);
  none.set_name("b");
  none.add_more_names("nope");
  rep.Clear();
  ASSERT_TRUE(Unlink(f.ns(), none, &rep).ok());
  EXPECT_EQ(std::vector<int32_t>(rep.codes().begin(), rep.codes().end()),
            (std::vector<int32_t>{code(Code::kPerm), code(Code::kNoEnt)}));
  EXPECT_EQ(f.Getattr(d).mtime_ns(), unchanged.mtime_ns());

  // The parent's check fails the whole batch; directories are not unlinked in batches, and
  // a batch has at most kMaxUnlinkBatch names.
  proto::UnlinkRequest again;
  *again.mutable_cred() = eve;
  again.set_parent(f.Mkdir(kRootIno, "ro", 0755).attr().ino());
  again.set_name("b");
  again.add_more_names("c");
  EXPECT_EQ(Unlink(f.ns(), again, &rep).code(), Code::kAccess);
  again.set_parent(d);
  again.set_is_dir(true);
  EXPECT_EQ(Unlink(f.ns(), again, &rep).code(), Code::kInval);
  EXPECT_TRUE(f.Lookup(d, "b").ok());
  proto::UnlinkRequest big;
  *big.mutable_cred() = Root();
  big.set_parent(d);
  big.set_name("b");
  for (int i = 1; i < kMaxUnlinkBatch; ++i) big.add_more_names("n" + std::to_string(i));
  rep.Clear();
  ASSERT_TRUE(Unlink(f.ns(), big, &rep).ok()) << "kMaxUnlinkBatch names in all";
  EXPECT_EQ(rep.codes_size(), kMaxUnlinkBatch);
  EXPECT_EQ(f.Lookup(d, "b").status().code(), Code::kNoEnt);
  big.add_more_names("one-more");
  EXPECT_EQ(Unlink(f.ns(), big, &rep).code(), Code::kInval);
}

TEST(LinkTest, HardLinks) {
  MdsFixture f;
  f.AddOsts(1);
  auto file = f.Mkfile(kRootIno, "a");
  auto d = f.Mkdir(kRootIno, "d");
  proto::LinkRequest req;
  req.set_ino(file.attr().ino());
  req.set_new_parent(d.attr().ino());
  req.set_new_name("b");
  proto::EntryReply rep;
  ASSERT_TRUE(Link(f.ns(), req, &rep).ok());
  EXPECT_EQ(rep.attr().nlink(), 2u);
  EXPECT_EQ(Link(f.ns(), req, &rep).code(), Code::kExist);
  req.set_ino(d.attr().ino());
  req.set_new_name("dirlink");
  EXPECT_EQ(Link(f.ns(), req, &rep).code(), Code::kPerm);

  ASSERT_TRUE(f.Unlink(kRootIno, "a", false).ok());
  auto b = f.Lookup(d.attr().ino(), "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->nlink(), 1u);
  EXPECT_EQ(b->ino(), file.attr().ino());
  EXPECT_EQ(f.ns().InodeCount(), 3u);  // root, d, the file
}

TEST(OpenCloseTest, AccessAndSize) {
  MdsFixture f;
  f.AddOsts(2);
  auto file = f.Mkfile(kRootIno, "f", 0644);
  const uint64_t ino = file.attr().ino();
  proto::OpenRequest open;
  open.set_ino(ino);
  open.set_flags(O_RDWR);
  proto::OpenReply orep;
  ASSERT_TRUE(Open(f.ns(), open, &orep).ok());
  EXPECT_EQ(orep.layout().objects_size(), 1);
  EXPECT_GT(orep.handle(), 0u);
  *open.mutable_cred() = User(1000, 1000);
  open.set_flags(O_WRONLY);
  EXPECT_EQ(Open(f.ns(), open, &orep).code(), Code::kAccess);
  open.set_flags(O_RDONLY);
  EXPECT_TRUE(Open(f.ns(), open, &orep).ok());
  open.set_ino(kRootIno);
  open.set_flags(O_WRONLY);
  *open.mutable_cred() = Root();
  EXPECT_EQ(Open(f.ns(), open, &orep).code(), Code::kIsDir);

  proto::CloseRequest close;
  close.set_ino(ino);
  close.set_wrote(true);
  close.set_size(5000);
  close.set_mtime_ns(3'000'000'000);
  proto::AttrReply crep;
  ASSERT_TRUE(Close(f.ns(), close, &crep).ok());
  EXPECT_EQ(crep.attr().size(), 5000u);
  EXPECT_EQ(crep.attr().mtime_ns(), 3'000'000'000);
  close.set_size(100);  // a smaller report never shrinks the file
  ASSERT_TRUE(Close(f.ns(), close, &crep).ok());
  EXPECT_EQ(f.Getattr(ino).size(), 5000u);
  // ctime is the write's time, as reported, not the time of the report; never backwards.
  const int64_t ctime0 = f.Getattr(ino).ctime_ns();
  close.set_mtime_ns(ctime0 + 1'000);
  ASSERT_TRUE(Close(f.ns(), close, &crep).ok());
  EXPECT_EQ(f.Getattr(ino).ctime_ns(), ctime0 + 1'000);
  close.set_mtime_ns(ctime0 - 5'000);
  ASSERT_TRUE(Close(f.ns(), close, &crep).ok());
  EXPECT_EQ(f.Getattr(ino).ctime_ns(), ctime0 + 1'000);
  close.set_wrote(false);
  close.set_size(9999);
  ASSERT_TRUE(Close(f.ns(), close, &crep).ok());
  EXPECT_EQ(f.Getattr(ino).size(), 5000u);
}

TEST(StatfsTest, SumsOstsAndSkipsFailures) {
  MdsFixture f;
  f.AddOsts(3);
  f.gateway().FailOst(2, true);
  proto::StatfsReply rep;
  ASSERT_TRUE(Statfs(f.ns(), proto::StatfsRequest(), &rep).ok());
  EXPECT_EQ(rep.bsize(), 4096u);
  EXPECT_EQ(rep.blocks(), 2 * 1000u);  // 4000 KiB-blocks = 1000 4K-blocks per OST
  EXPECT_EQ(rep.bfree(), 2 * 750u);
  EXPECT_EQ(rep.bavail(), 2 * 500u);
  EXPECT_EQ(rep.namelen(), 255u);
  EXPECT_EQ(rep.files() - rep.ffree(), 1u);
}

TEST(DefaultLayoutTest, SetGetRemoveInherit) {
  MdsFixture f;
  f.AddOsts(4);
  auto d = f.Mkdir(kRootIno, "d");
  proto::SetDefaultLayoutRequest set;
  set.set_ino(d.attr().ino());
  set.mutable_layout()->set_stripe_count(3);
  set.mutable_layout()->set_stripe_size(1 << 20);
  set.mutable_layout()->set_stripe_offset(-1);
  proto::SetDefaultLayoutReply srep;
  ASSERT_TRUE(SetDefaultLayout(f.ns(), set, &srep).ok());
  proto::GetDefaultLayoutRequest get;
  get.set_ino(d.attr().ino());
  proto::GetDefaultLayoutReply grep;
  ASSERT_TRUE(GetDefaultLayout(f.ns(), get, &grep).ok());
  EXPECT_TRUE(grep.is_set());
  EXPECT_EQ(grep.layout().stripe_count(), 3);
  auto file = f.Mkfile(d.attr().ino(), "f");
  EXPECT_EQ(file.layout().objects_size(), 3);
  EXPECT_EQ(file.layout().stripe_size(), 1u << 20);
  // As in Lustre, a new subdirectory starts with a copy of its parent's default, and files
  // made in it get that layout.
  auto sub = f.Mkdir(d.attr().ino(), "sub");
  proto::GetDefaultLayoutRequest get_sub;
  get_sub.set_ino(sub.attr().ino());
  ASSERT_TRUE(GetDefaultLayout(f.ns(), get_sub, &grep).ok());
  EXPECT_TRUE(grep.is_set());
  EXPECT_EQ(grep.layout().stripe_count(), 3);
  EXPECT_EQ(f.Mkfile(sub.attr().ino(), "g").layout().objects_size(), 3);
  // A directory without its own default inherits the root's, the filesystem default.
  set.set_remove(true);
  ASSERT_TRUE(SetDefaultLayout(f.ns(), set, &srep).ok());
  ASSERT_TRUE(GetDefaultLayout(f.ns(), get, &grep).ok());
  EXPECT_FALSE(grep.is_set());
  EXPECT_EQ(grep.layout().stripe_count(), 1);
  EXPECT_EQ(grep.layout().stripe_size(), 4u << 20);

  set.set_remove(false);
  set.mutable_layout()->set_stripe_size(1000);  // not a multiple of 64 KiB
  EXPECT_EQ(SetDefaultLayout(f.ns(), set, &srep).code(), Code::kInval);
  set.mutable_layout()->set_stripe_size(0);
  set.mutable_layout()->set_stripe_offset(17);
  EXPECT_EQ(SetDefaultLayout(f.ns(), set, &srep).code(), Code::kInval);
  set.set_ino(file.attr().ino());
  set.mutable_layout()->set_stripe_offset(-1);
  EXPECT_EQ(SetDefaultLayout(f.ns(), set, &srep).code(), Code::kNotDir);
  set.set_ino(d.attr().ino());
  *set.mutable_cred() = User(1000, 1000);
  EXPECT_EQ(SetDefaultLayout(f.ns(), set, &srep).code(), Code::kPerm);

  // Root default = filesystem default, inherited by every directory without its own.
  set.set_ino(kRootIno);
  *set.mutable_cred() = Root();
  set.mutable_layout()->set_stripe_count(2);
  ASSERT_TRUE(SetDefaultLayout(f.ns(), set, &srep).ok());
  auto g = f.Mkfile(d.attr().ino(), "g");
  EXPECT_EQ(g.layout().objects_size(), 2);
}

}  // namespace
}  // namespace stria::mds

namespace stria::mds {
namespace {

TEST(ConcurrencyTest, ParallelMkdirsKeepCountsExact) {
  testing::MdsFixture f;
  auto d = f.Mkdir(kRootIno, "d");
  const int kThreads = 4, kEach = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Status st = f.Create(d.attr().ino(), "t" + std::to_string(t) + "-" + std::to_string(i),
                             S_IFDIR | 0755, testing::Root());
        if (!st.ok()) failures++;
        // Everyone also races on one name: exactly one wins overall.
        st = f.Create(d.attr().ino(), "race" + std::to_string(i), S_IFDIR | 0755,
                      testing::Root());
        if (!st.ok() && st.code() != Code::kExist) failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(f.Getattr(d.attr().ino()).nlink(), 2u + kThreads * kEach + kEach);
  EXPECT_EQ(f.ns().InodeCount(), 2u + kThreads * kEach + kEach);
}

}  // namespace
}  // namespace stria::mds
