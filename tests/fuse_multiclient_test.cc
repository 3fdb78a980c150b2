// Two stria-fuse mounts of one filesystem act as two separate clients (two processes, two
// libstria Clients, two kernel caches): close-to-open data and size, namespace changes seen
// by the other mount within the entry/attribute timeout (1 s, FsOptions in
// client/fuse/fuse_ops.h), and writers on both mounts into one shared file producing the
// exact bytes (the N-to-1 checkpoint pattern), aligned to nothing, and readdir complete
// while the other mount creates in the directory.
// One cluster (MDS + 2 OSS x 2 OSTs, mounts 0 and 1) is shared by every test in this file.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/shared_cluster_env.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

constexpr uint64_t kS = 64 << 10;     // stripe size of the striped test directories
constexpr double kCacheTimeoutS = 1.0;  // the mounts' entry and attribute timeouts

Cluster* g_cluster = nullptr;
client::Client* g_client = nullptr;

ClusterOptions EnvOptions() {
  ClusterOptions o;
  o.tag = "multiclient";
  o.fsname = "mcfs";
  o.num_mounts = 2;
  return o;
}

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(
    new SharedClusterEnv(EnvOptions(), &g_cluster, &g_client));

class MultiClientTest : public TwoMountTest {
 protected:
  MultiClientTest() : TwoMountTest(&g_cluster, &g_client) {}

  // mkdir DIR (on mount 0) with a 4-stripe, 64 KiB default layout.
  void MakeStripedDir(const std::string& rel) {
    ASSERT_EQ(mkdir(P(rel).c_str(), 0755), 0) << strerror(errno);
    Status st = SetDirLayout(*g_client, "/" + rel, Raid0(4, kS));
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  // Creates `rel` on mount 0 and opens it on both mounts with `flags` (O_WRONLY, O_RDWR).
  void OpenOnBoth(const std::string& rel, int flags, int* fd0, int* fd1) {
    *fd0 = open(P(rel).c_str(), O_CREAT | flags, 0644);
    ASSERT_GE(*fd0, 0) << strerror(errno);
    *fd1 = open(Q(rel).c_str(), flags);
    ASSERT_GE(*fd1, 0) << strerror(errno);
  }

  // `rel` reads back as exactly `want` (size and bytes) on both mounts.
  void ExpectContentOnBoth(const std::string& rel, const std::vector<uint8_t>& want) {
    for (const std::string& f : {P(rel), Q(rel)}) {
      SCOPED_TRACE(f);
      std::vector<uint8_t> got;
      ASSERT_EQ(ReadFile(f, &got), 0);
      EXPECT_EQ(got.size(), want.size());
      EXPECT_EQ(FirstDiff(got, want), -1);
    }
  }
};

TEST_F(MultiClientTest, CloseToOpenAcrossTwoMounts) {
  MakeStripedDir("cto");
  std::string m0 = P("cto/f"), m1 = Q("cto/f");
  auto a = Pattern(4 * kS + 3, 21);
  ASSERT_EQ(WriteFile(m0, a, 65536 + 1), 0);
  struct stat s1 = Stat(m1);
  EXPECT_EQ(s1.st_size, static_cast<off_t>(a.size()));
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(m1, &got), 0);
  EXPECT_EQ(FirstDiff(got, a), -1);

  // The other way round, after mount 0 has the file's pages and attributes cached.
  auto b = Pattern(2 * kS + 77, 22);
  int fd = open(m1.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(PWriteAll(fd, b.data(), b.size(), 0), 0);
  ASSERT_EQ(close(fd), 0);
  fd = open(m0.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  struct stat s0 {};
  ASSERT_EQ(fstat(fd, &s0), 0);
  EXPECT_EQ(s0.st_size, static_cast<off_t>(b.size())) << "size after open on the other mount";
  close(fd);
  ASSERT_EQ(ReadFile(m0, &got), 0);
  EXPECT_EQ(FirstDiff(got, b), -1);

  // A file created on one mount is visible by name on the other at once, even right after
  // that mount was told it does not exist (no negative caching).
  EXPECT_FALSE(Exists(P("cto/new")));
  ASSERT_EQ(WriteFile(Q("cto/new"), a), 0);
  ASSERT_EQ(ReadFile(P("cto/new"), &got), 0);
  EXPECT_EQ(FirstDiff(got, a), -1);
}

TEST_F(MultiClientTest, NamespaceChangesSeenWithinTheEntryTimeout) {
  ASSERT_EQ(mkdir(P("ns").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("ns/d").c_str(), 0755), 0);
  auto a = Pattern(5000, 1);
  ASSERT_EQ(WriteFile(P("ns/a"), a), 0);
  // Mount 1 caches the entries and attributes.
  const ino_t ino = Stat(Q("ns/a")).st_ino;
  Stat(Q("ns/d"));
  const double limit = kCacheTimeoutS + 0.5;

  // rename on mount 0: the old name goes and the new one comes on mount 1.
  ASSERT_EQ(rename(P("ns/a").c_str(), P("ns/d/b").c_str()), 0) << strerror(errno);
  double t = SecondsUntil([&] { return !Exists(Q("ns/a")); });
  EXPECT_GE(t, 0) << "the old name never went";
  EXPECT_LE(t, limit);
  EXPECT_TRUE(Exists(Q("ns/d/b")));
  EXPECT_EQ(Stat(Q("ns/d/b")).st_ino, ino);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(Q("ns/d/b"), &got), 0);
  EXPECT_EQ(FirstDiff(got, a), -1);

  // unlink on mount 0.
  Stat(Q("ns/d/b"));
  ASSERT_EQ(unlink(P("ns/d/b").c_str()), 0);
  t = SecondsUntil([&] { return !Exists(Q("ns/d/b")); });
  EXPECT_GE(t, 0) << "the unlinked name never went";
  EXPECT_LE(t, limit);
  EXPECT_EQ(ReadFile(Q("ns/d/b"), &got), ENOENT);

  // A file replaced by rename on mount 1 while mount 0 has the old one cached.
  ASSERT_EQ(WriteFile(P("ns/x"), Pattern(10, 2)), 0);
  ASSERT_EQ(WriteFile(P("ns/y"), Pattern(20, 3)), 0);
  Stat(P("ns/x"));
  const ino_t y_ino = Stat(P("ns/y")).st_ino;
  ASSERT_EQ(rename(Q("ns/y").c_str(), Q("ns/x").c_str()), 0) << strerror(errno);
  t = SecondsUntil([&] {
    struct stat st {};
    return lstat(P("ns/x").c_str(), &st) == 0 && st.st_ino == y_ino;
  });
  EXPECT_GE(t, 0) << "mount 0 never saw the replacing inode";
  EXPECT_LE(t, limit);
  ASSERT_EQ(ReadFile(P("ns/x"), &got), 0);
  EXPECT_EQ(FirstDiff(got, Pattern(20, 3)), -1) << "close-to-open: the new file's bytes";

  // chmod and rmdir on mount 1, within the attribute and entry timeouts on mount 0.
  Stat(P("ns/d"));
  ASSERT_EQ(chmod(Q("ns/d").c_str(), 0700), 0);
  t = SecondsUntil([&] { return (Stat(P("ns/d")).st_mode & 07777) == 0700; });
  EXPECT_GE(t, 0);
  EXPECT_LE(t, limit);
  ASSERT_EQ(rmdir(Q("ns/d").c_str()), 0);
  t = SecondsUntil([&] { return !Exists(P("ns/d")); });
  EXPECT_GE(t, 0);
  EXPECT_LE(t, limit);
  EXPECT_EQ(mkdir(P("ns/d").c_str(), 0755), 0) << "the name is free again on mount 0";
}

TEST_F(MultiClientTest, DisjointWritersOnTwoMountsToOneFile) {
  // Two clients write disjoint halves of one shared file, both open at once; after both
  // close, the file has every byte and the full size.
  MakeStripedDir("n21");
  int fd0 = -1, fd1 = -1;
  ASSERT_NO_FATAL_FAILURE(OpenOnBoth("n21/shared", O_WRONLY, &fd0, &fd1));
  const size_t half = 4 * kS + 1000;  // not stripe aligned
  auto all = Pattern(2 * half, 41);
  // The second half first, from the other mount, so the first writer's idea of the size
  // is smaller than the file's.
  ASSERT_EQ(PWriteAll(fd1, all.data() + half, half, half), 0);
  ASSERT_EQ(PWriteAll(fd0, all.data(), half, 0), 0);
  ASSERT_EQ(close(fd1), 0);
  ASSERT_EQ(close(fd0), 0);
  ExpectContentOnBoth("n21/shared", all);
}

TEST_F(MultiClientTest, InterleavedUnalignedWritersOnTwoMounts) {
  // Records of an odd size, alternately from each mount, so every page and stripe boundary
  // is shared by both writers: neither may write back bytes it did not write.
  MakeStripedDir("ilv");
  int fd0 = -1, fd1 = -1;
  ASSERT_NO_FATAL_FAILURE(OpenOnBoth("ilv/shared", O_RDWR, &fd0, &fd1));
  const size_t kRec = 3001, kN = 120;  // 360 KB: ~5.5 stripes, every record unaligned
  auto all = Pattern(kRec * kN, 51);
  // Odd records from mount 1 first (back to front), then even ones from mount 0.
  for (size_t i = kN; i-- > 0;) {
    if (i % 2 == 1) {
      ASSERT_EQ(PWriteAll(fd1, all.data() + i * kRec, kRec, i * kRec), 0);
    }
  }
  for (size_t i = 0; i < kN; i += 2) {
    ASSERT_EQ(PWriteAll(fd0, all.data() + i * kRec, kRec, i * kRec), 0);
  }
  ASSERT_EQ(close(fd0), 0);
  ASSERT_EQ(close(fd1), 0);
  ExpectContentOnBoth("ilv/shared", all);
  EXPECT_EQ(Stat(Q("ilv/shared")).st_size, static_cast<off_t>(all.size()));
}

// readdir on one client while another creates in the same directory: every entry that
// existed before the listing began is listed exactly once, nothing is listed twice, and
// nothing is listed that was never created (POSIX leaves entries added during the listing
// free to appear or not).
TEST_F(MultiClientTest, ReaddirIsCompleteWhileAnotherClientCreates) {
  ASSERT_EQ(mkdir(P("busy").c_str(), 0755), 0);
  constexpr int kBefore = 2000, kDuring = 1000;
  std::set<std::string> before, during;
  for (int i = 0; i < kBefore; ++i) {
    const std::string name = "old-" + std::to_string(i);
    ASSERT_EQ(mknod(P("busy/" + name).c_str(), S_IFREG | 0644, 0), 0) << strerror(errno);
    before.insert(name);
  }
  for (int i = 0; i < kDuring; ++i) during.insert("new-" + std::to_string(i));
  std::atomic<int> created{0};
  std::thread creator([&] {
    for (const std::string& name : during) {
      if (mknod(Q("busy/" + name).c_str(), S_IFREG | 0644, 0) != 0) break;
      created.fetch_add(1);
    }
  });
  int listings = 0;
  while (created.load() < kDuring && listings < 50) {
    ++listings;
    DIR* d = opendir(P("busy").c_str());
    ASSERT_NE(d, nullptr);
    std::multiset<std::string> seen;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") seen.insert(name);
      if (seen.size() % 256 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    closedir(d);
    for (const std::string& name : seen) {
      ASSERT_EQ(seen.count(name), 1u) << "listed twice: " << name;
      ASSERT_TRUE(before.count(name) || during.count(name)) << "never created: " << name;
    }
    for (const std::string& name : before) {
      ASSERT_EQ(seen.count(name), 1u) << "missing from listing " << listings << ": " << name;
    }
  }
  creator.join();
  EXPECT_EQ(created.load(), kDuring);
  EXPECT_GE(listings, 2) << "the listings did not overlap the creates";
}

}  // namespace
}  // namespace stria::testing
