// Link records and OP_MDS_FID2PATH: every name of an inode, kept through link, unlink,
// rename (over a target, of a directory, exchange) and restarts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "mds/mds_test_util.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;
using testing::User;

Result<std::vector<std::string>> Paths(MdsFixture& f, uint64_t ino,
                                       const proto::Credentials& cred = Root()) {
  proto::Fid2PathRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  proto::Fid2PathReply rep;
  STRIA_RETURN_IF_ERROR(Fid2Path(f.ns(), req, &rep));
  std::vector<std::string> out;
  for (const auto& n : rep.names()) out.push_back(n.path());
  std::sort(out.begin(), out.end());
  return out;
}

using Names = std::vector<std::string>;

Status Link(MdsFixture& f, uint64_t ino, uint64_t parent, const std::string& name) {
  proto::LinkRequest req;
  *req.mutable_cred() = Root();
  req.set_ino(ino);
  req.set_new_parent(parent);
  req.set_new_name(name);
  proto::EntryReply rep;
  return stria::mds::Link(f.ns(), req, &rep);
}

TEST(Fid2PathTest, EveryNameThroughLinkUnlinkAndRename) {
  MdsFixture f;
  f.AddOsts(1);
  const uint64_t a = f.Mkdir(kRootIno, "a").attr().ino();
  const uint64_t b = f.Mkdir(a, "b").attr().ino();
  const uint64_t file = f.Mkfile(b, "f").attr().ino();
  EXPECT_EQ(*Paths(f, file), (Names{"a/b/f"}));
  EXPECT_EQ(*Paths(f, b), (Names{"a/b"}));
  EXPECT_EQ(*Paths(f, kRootIno), (Names{""}));

  ASSERT_TRUE(Link(f, file, a, "g").ok());
  EXPECT_EQ(*Paths(f, file), (Names{"a/b/f", "a/g"}));

  // A directory moves: the paths through it follow.
  ASSERT_TRUE(f.Rename(a, "b", kRootIno, "c").ok());
  EXPECT_EQ(*Paths(f, file), (Names{"a/g", "c/f"}));

  // Rename over another file: the victim loses that name, the source takes it.
  const uint64_t victim = f.Mkfile(a, "v").attr().ino();
  ASSERT_TRUE(Link(f, victim, kRootIno, "v2").ok());
  ASSERT_TRUE(f.Rename(a, "g", a, "v").ok());
  EXPECT_EQ(*Paths(f, file), (Names{"a/v", "c/f"}));
  EXPECT_EQ(*Paths(f, victim), (Names{"v2"}));

  // Exchange swaps the names.
  ASSERT_TRUE(f.Rename(a, "v", kRootIno, "v2", kRenameExchange).ok());
  EXPECT_EQ(*Paths(f, file), (Names{"c/f", "v2"}));
  EXPECT_EQ(*Paths(f, victim), (Names{"a/v"}));

  ASSERT_TRUE(f.Unlink(kRootIno, "v2", false).ok());
  EXPECT_EQ(*Paths(f, file), (Names{"c/f"}));

  f.Reopen();
  EXPECT_EQ(*Paths(f, file), (Names{"c/f"}));
  EXPECT_EQ(*Paths(f, victim), (Names{"a/v"}));

  ASSERT_TRUE(f.Unlink(b, "f", false).ok());
  EXPECT_EQ(Paths(f, file).status().code(), Code::kNoEnt);
}

TEST(Fid2PathTest, RootOnlyAndUnknownInodes) {
  MdsFixture f;
  f.AddOsts(1);
  const uint64_t file = f.Mkfile(kRootIno, "f").attr().ino();
  EXPECT_EQ(Paths(f, file, User(1000, 1000)).status().code(), Code::kPerm);
  EXPECT_EQ(Paths(f, 987654).status().code(), Code::kNoEnt);
  // Names past the record limit are not listed, but every listed one is right.
  for (size_t i = 1; i < kMaxLinkRecords + 5; ++i) {
    ASSERT_TRUE(Link(f, file, kRootIno, "l" + std::to_string(i)).ok());
  }
  auto many = Paths(f, file);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->size(), kMaxLinkRecords);
  EXPECT_TRUE(std::find(many->begin(), many->end(), "f") != many->end());
}

}  // namespace
}  // namespace stria::mds
