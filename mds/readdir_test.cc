// Readdir paging: complete, ordered, without duplicates, max_entries honoured.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>

#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;

std::vector<proto::DirEntry> ReadAll(MdsFixture& f, uint64_t dir, uint32_t page, bool attrs,
                                     int* pages = nullptr) {
  std::vector<proto::DirEntry> out;
  proto::ReaddirRequest req;
  req.set_ino(dir);
  req.set_max_entries(page);
  req.set_want_attrs(attrs);
  for (int n = 0; n < 100000; ++n) {
    proto::ReaddirReply rep;
    Status st = Readdir(f.ns(), req, &rep);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) break;
    EXPECT_LE(rep.entries_size(), static_cast<int>(page));
    for (const auto& e : rep.entries()) out.push_back(e);
    if (pages) ++*pages;
    if (rep.eof()) break;
    req.set_cookie(rep.next_cookie());
  }
  return out;
}

TEST(ReaddirTest, PagesOverFiveThousandEntries) {
  MdsFixture f;
  auto d = f.Mkdir(kRootIno, "big");
  const int kN = 5000;
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(f.Create(d.attr().ino(), "entry-" + std::to_string(i), S_IFIFO | 0644, Root()).ok());
  }
  int pages = 0;
  auto all = ReadAll(f, d.attr().ino(), 128, false, &pages);
  ASSERT_EQ(all.size(), static_cast<size_t>(kN));
  EXPECT_GE(pages, kN / 128);
  std::set<std::string> names;
  std::string prev;
  for (const auto& e : all) {
    EXPECT_TRUE(names.insert(e.name()).second) << "duplicate " << e.name();
    EXPECT_LT(prev, e.name());
    prev = e.name();
    EXPECT_EQ(e.type(), proto::FT_FIFO);
  }
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(names.count("entry-" + std::to_string(i)));
}

TEST(ReaddirTest, AttrsEofAndChangesBetweenPages) {
  MdsFixture f;
  f.AddOsts(1);
  auto d = f.Mkdir(kRootIno, "d");
  for (int i = 0; i < 10; ++i) f.Mkfile(d.attr().ino(), "f" + std::to_string(i));
  f.Mkdir(d.attr().ino(), "sub");
  auto all = ReadAll(f, d.attr().ino(), 3, true);
  ASSERT_EQ(all.size(), 11u);
  for (const auto& e : all) {
    EXPECT_EQ(e.attr().ino(), e.ino());
    EXPECT_EQ(e.type() == proto::FT_DIR, S_ISDIR(e.attr().mode()));
  }

  // Delete the cookie entry and add names on both sides between two pages.
  proto::ReaddirRequest req;
  req.set_ino(d.attr().ino());
  req.set_max_entries(4);
  proto::ReaddirReply first;
  ASSERT_TRUE(Readdir(f.ns(), req, &first).ok());
  EXPECT_FALSE(first.eof());
  ASSERT_EQ(first.entries_size(), 4);
  ASSERT_TRUE(f.Unlink(d.attr().ino(), first.next_cookie(), false).ok());
  f.Mkfile(d.attr().ino(), "a-before");
  f.Mkfile(d.attr().ino(), "z-after");
  req.set_cookie(first.next_cookie());
  req.set_max_entries(1000);
  proto::ReaddirReply rest;
  ASSERT_TRUE(Readdir(f.ns(), req, &rest).ok());
  EXPECT_TRUE(rest.eof());
  std::set<std::string> seen;
  for (const auto& e : first.entries()) seen.insert(e.name());
  for (const auto& e : rest.entries()) EXPECT_TRUE(seen.insert(e.name()).second) << e.name();
  EXPECT_TRUE(seen.count("z-after"));
  EXPECT_FALSE(seen.count("a-before"));  // sorted before the cookie: not revisited
  EXPECT_EQ(seen.size(), 12u);           // 11 - 1 + z-after + (the deleted cookie, seen in page 1)
}

TEST(ReaddirTest, EmptyAndErrors) {
  MdsFixture f;
  f.AddOsts(1);
  auto d = f.Mkdir(kRootIno, "empty");
  proto::ReaddirRequest req;
  req.set_ino(d.attr().ino());
  proto::ReaddirReply rep;
  ASSERT_TRUE(Readdir(f.ns(), req, &rep).ok());
  EXPECT_TRUE(rep.eof());
  EXPECT_EQ(rep.entries_size(), 0);
  auto file = f.Mkfile(kRootIno, "file");
  req.set_ino(file.attr().ino());
  EXPECT_EQ(Readdir(f.ns(), req, &rep).code(), Code::kNotDir);
  req.set_ino(777);
  EXPECT_EQ(Readdir(f.ns(), req, &rep).code(), Code::kNoEnt);
  // An entry in another directory with a name sorting right after never leaks in.
  f.Mkfile(d.attr().ino() + 0, "x");
  auto other = f.Mkdir(kRootIno, "other");
  f.Mkfile(other.attr().ino(), "y");
  auto all = ReadAll(f, d.attr().ino(), 10, false);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].name(), "x");
}

}  // namespace
}  // namespace stria::mds
