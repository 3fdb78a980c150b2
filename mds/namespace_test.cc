#include "mds/namespace.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <thread>
#include <vector>

#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;

TEST(NamespaceTest, FormatCreatesRoot) {
  MdsFixture f;
  proto::Attr a = f.Getattr(kRootIno);
  EXPECT_EQ(a.ino(), kRootIno);
  EXPECT_EQ(a.mode(), static_cast<uint32_t>(S_IFDIR | 0755));
  EXPECT_EQ(a.uid(), 0u);
  EXPECT_EQ(a.gid(), 0u);
  EXPECT_EQ(a.nlink(), 2u);
  EXPECT_GT(a.mtime_ns(), 0);
  EXPECT_EQ(f.ns().fsname(), "testfs");
  EXPECT_EQ(f.ns().InodeCount(), 1u);
}

TEST(NamespaceTest, RefusesAnotherFsname) {
  testing::TempDir tmp;
  NamespaceOptions o;
  o.data_dir = tmp.path() + "/db";
  o.fsname = "alpha";
  {
    auto ns = Namespace::Open(o, nullptr);
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
  }
  o.fsname = "beta";
  auto ns = Namespace::Open(o, nullptr);
  ASSERT_FALSE(ns.ok());
  EXPECT_EQ(ns.status().code(), Code::kWrongFs);
  EXPECT_NE(ns.status().message().find("alpha"), std::string::npos);
  o.fsname = "alpha";
  EXPECT_TRUE(Namespace::Open(o, nullptr).ok());
}

TEST(NamespaceTest, RejectsBadFsname) {
  testing::TempDir tmp;
  NamespaceOptions o;
  o.data_dir = tmp.path() + "/db";
  o.fsname = "";
  EXPECT_EQ(Namespace::Open(o, nullptr).status().code(), Code::kInval);
}

TEST(NamespaceTest, StatePersistsAcrossReopen) {
  MdsFixture f;
  f.AddOsts(2);
  auto d = f.Mkdir(kRootIno, "dir");
  auto file = f.Mkfile(d.attr().ino(), "file");
  const uint64_t gen = f.ns().ConfigGeneration();
  f.Reopen();
  auto a = f.Lookup(kRootIno, "dir");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->ino(), d.attr().ino());
  auto b = f.Lookup(d.attr().ino(), "file");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->ino(), file.attr().ino());
  EXPECT_EQ(f.ns().InodeCount(), 3u);
  EXPECT_EQ(f.ns().ConfigGeneration(), gen);
  EXPECT_EQ(f.ns().OstTable().size(), 2u);
  // Inode numbers are never reused after a reopen.
  auto c = f.Mkfile(kRootIno, "after");
  EXPECT_GT(c.attr().ino(), file.attr().ino());
}

TEST(NamespaceTest, InodeRecordRoundTrips) {
  InodeRecord r;
  r.attr.set_ino(7);
  r.attr.set_mode(S_IFDIR | 0700);
  r.has_default_layout = true;
  r.default_layout.set_stripe_count(3);
  r.parent = 5;
  auto d = InodeRecord::Decode(r.Encode());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->attr.ino(), 7u);
  EXPECT_TRUE(d->has_default_layout);
  EXPECT_EQ(d->default_layout.stripe_count(), 3);
  EXPECT_EQ(d->parent, 5u);
  EXPECT_EQ(InodeRecord::Decode("\xff\xff garbage").status().code(), Code::kCorrupt);
}

TEST(NamespaceTest, GroupCommitSharesWalSyncsAcrossConcurrentCreates) {
  testing::MdsFixture f;
  f.AddOsts(1);
  constexpr int kThreads = 8, kPerThread = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&f, &failures, t] {
      for (int i = 0; i < kPerThread; ++i) {
        DeferredSync durable(&f.ns());
        Status st = f.Create(kRootIno, "f" + std::to_string(t) + "-" + std::to_string(i),
                             S_IFREG | 0644, testing::Root());
        if (st.ok()) st = durable.Wait();
        if (!st.ok()) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const uint64_t syncs = f.ns().wal_syncs();
  EXPECT_GE(syncs, 1u);
  EXPECT_LT(syncs, static_cast<uint64_t>(kThreads * kPerThread))
      << "every create synced the WAL on its own";
  f.Reopen();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(f.Lookup(kRootIno, "f" + std::to_string(t) + "-0").ok());
  }
}

TEST(NamespaceTest, DeferredSyncWithoutWritesIsFree) {
  testing::MdsFixture f;
  DeferredSync durable(&f.ns());
  EXPECT_TRUE(f.Lookup(kRootIno, "none").status().code() == Code::kNoEnt);
  EXPECT_TRUE(durable.Wait().ok());
  EXPECT_EQ(f.ns().wal_syncs(), 0u);
}

}  // namespace
}  // namespace stria::mds
