// Real syscalls on a real stria-fuse mount: striped file data of awkward sizes, every
// namespace operation with its POSIX errors, attributes, xattrs, statfs, a 3,000-entry
// readdir and offsets past 4 GiB (two mounts: tests/fuse_multiclient_test.cc).
// One cluster (MDS + 2 OSS x 2 OSTs) is shared by every test in this file; each test works
// in its own directory.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/shared_cluster_env.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

constexpr uint64_t kS = 64 << 10;  // stripe size of the striped test directory

Cluster* g_cluster = nullptr;
client::Client* g_client = nullptr;

ClusterOptions FuseEnvOptions() {
  ClusterOptions o;
  o.tag = "posix";
  o.fsname = "posixfs";
  return o;
}

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(
    new SharedClusterEnv(FuseEnvOptions(), &g_cluster, &g_client));

class FusePosixTest : public MountedClusterTest {
 protected:
  FusePosixTest() : MountedClusterTest(&g_cluster, &g_client) {}

  // mkdir DIR and give it a 4-stripe, 64 KiB default layout.
  void MakeStripedDir(const std::string& rel, int count = 4) {
    ASSERT_EQ(mkdir(P(rel).c_str(), 0755), 0) << strerror(errno);
    Status st = SetDirLayout(*g_client, "/" + rel, Raid0(count, kS));
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  static struct stat Stat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(lstat(path.c_str(), &st), 0) << path << ": " << strerror(errno);
    return st;
  }
};

#define EXPECT_ERRNO(call, err)                                            \
  do {                                                                     \
    errno = 0;                                                             \
    EXPECT_EQ((call), -1) << #call;                                        \
    EXPECT_EQ(errno, (err)) << #call << ": " << strerror(errno);           \
  } while (0)

TEST_F(FusePosixTest, StripedFilesOfAwkwardSizes) {
  MakeStripedDir("awk");
  std::vector<uint64_t> sizes = {0, 1, kS - 1, kS, kS + 1, 4 * kS - 1, 4 * kS + 1,
                                 37 * kS + 123, 3 * (1 << 20) + 17};
  for (size_t i = 0; i < sizes.size(); ++i) {
    SCOPED_TRACE("size=" + std::to_string(sizes[i]));
    std::string path = P("awk/f" + std::to_string(i));
    auto data = Pattern(sizes[i], i + 1);
    // Alternate big writes and small odd ones (which start and end inside pages and stripes).
    ASSERT_EQ(WriteFile(path, data, i % 2 ? 4097 : (1 << 20)), 0);
    EXPECT_EQ(static_cast<uint64_t>(Stat(path).st_size), sizes[i]);
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(path, &got), 0);
    EXPECT_EQ(FirstDiff(got, data), -1);
    auto e = Resolve(*g_client, "/awk/f" + std::to_string(i));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_EQ(e->layout().stripe_count(), 4) << e->layout().ShortDebugString();
    EXPECT_EQ(e->layout().objects_size(), 4);
    EXPECT_EQ(e->attr().size(), sizes[i]) << "MDS size after close";
    auto glimpse = g_client->GlimpseSize(e->layout());
    ASSERT_TRUE(glimpse.ok());
    EXPECT_EQ(*glimpse, sizes[i]);
  }
}

TEST_F(FusePosixTest, SparseFileAndOverwrite) {
  MakeStripedDir("sparse");
  std::string path = P("sparse/f");
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  const uint64_t far = 3 * (1 << 20) + 5;
  std::vector<uint8_t> want(far + 10, 0);
  auto a = Pattern(100, 1), b = Pattern(10, 2), c = Pattern(300, 3);
  ASSERT_EQ(PWriteAll(fd, a.data(), a.size(), 0), 0);
  ASSERT_EQ(PWriteAll(fd, b.data(), b.size(), far), 0);
  ASSERT_EQ(PWriteAll(fd, c.data(), c.size(), kS - 150), 0);  // across a stripe boundary
  std::copy(a.begin(), a.end(), want.begin());
  std::copy(b.begin(), b.end(), want.begin() + far);
  std::copy(c.begin(), c.end(), want.begin() + kS - 150);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), far + 10);
  ASSERT_EQ(close(fd), 0);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(path, &got), 0);
  EXPECT_EQ(FirstDiff(got, want), -1);

  // O_APPEND goes to the end.
  fd = open(path.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "tail", 4), 4);
  ASSERT_EQ(close(fd), 0);
  want.insert(want.end(), {'t', 'a', 'i', 'l'});
  ASSERT_EQ(ReadFile(path, &got), 0);
  EXPECT_EQ(FirstDiff(got, want), -1);
}

TEST_F(FusePosixTest, CreateAndUnlink) {
  ASSERT_EQ(mkdir(P("cu").c_str(), 0755), 0);
  std::string f = P("cu/a");
  int fd = open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  ASSERT_GE(fd, 0) << strerror(errno);
  close(fd);
  EXPECT_ERRNO(open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600), EEXIST);
  struct stat st = Stat(f);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_EQ(unlink(f.c_str()), 0);
  struct stat st2 {};
  EXPECT_ERRNO(lstat(f.c_str(), &st2), ENOENT);
  EXPECT_ERRNO(unlink(f.c_str()), ENOENT);
  EXPECT_ERRNO(open(P("cu/missing/x").c_str(), O_CREAT | O_WRONLY, 0644), ENOENT);
  EXPECT_ERRNO(unlink(P("cu").c_str()), EISDIR);
  std::string longname(300, 'n');
  EXPECT_ERRNO(open(P("cu/" + longname).c_str(), O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
}

TEST_F(FusePosixTest, MkdirRmdir) {
  std::string d = P("md");
  ASSERT_EQ(mkdir(d.c_str(), 0750), 0);
  EXPECT_ERRNO(mkdir(d.c_str(), 0750), EEXIST);
  struct stat st = Stat(d);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  ASSERT_EQ(mkdir((d + "/sub").c_str(), 0755), 0);
  EXPECT_EQ(Stat(d).st_nlink, 3u) << "a directory's nlink is 2 + its subdirectories";
  ASSERT_EQ(WriteFile(d + "/sub/file", Pattern(10, 1)), 0);
  EXPECT_ERRNO(rmdir((d + "/sub").c_str()), ENOTEMPTY);
  EXPECT_ERRNO(rmdir((d + "/sub/file").c_str()), ENOTDIR);
  ASSERT_EQ(unlink((d + "/sub/file").c_str()), 0);
  EXPECT_EQ(rmdir((d + "/sub").c_str()), 0);
  EXPECT_EQ(Stat(d).st_nlink, 2u);
  EXPECT_EQ(rmdir(d.c_str()), 0);
  struct stat st2 {};
  EXPECT_ERRNO(stat(d.c_str(), &st2), ENOENT);
}

TEST_F(FusePosixTest, Rename) {
  ASSERT_EQ(mkdir(P("rn").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("rn/d1").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("rn/d2").c_str(), 0755), 0);
  auto a = Pattern(5000, 1), b = Pattern(7000, 2);
  ASSERT_EQ(WriteFile(P("rn/a"), a), 0);
  ASSERT_EQ(WriteFile(P("rn/b"), b), 0);
  ino_t a_ino = Stat(P("rn/a")).st_ino;

  // Plain rename, then a rename that replaces an existing target.
  ASSERT_EQ(rename(P("rn/a").c_str(), P("rn/a2").c_str()), 0) << strerror(errno);
  EXPECT_EQ(Stat(P("rn/a2")).st_ino, a_ino);
  ASSERT_EQ(rename(P("rn/a2").c_str(), P("rn/b").c_str()), 0) << strerror(errno);
  struct stat st {};
  EXPECT_ERRNO(lstat(P("rn/a2").c_str(), &st), ENOENT);
  EXPECT_EQ(Stat(P("rn/b")).st_ino, a_ino);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("rn/b"), &got), 0);
  EXPECT_EQ(FirstDiff(got, a), -1) << "the replaced target must hold the source's bytes";

  // Across directories.
  ASSERT_EQ(rename(P("rn/b").c_str(), P("rn/d1/b").c_str()), 0) << strerror(errno);
  ASSERT_EQ(ReadFile(P("rn/d1/b"), &got), 0);
  EXPECT_EQ(FirstDiff(got, a), -1);
  ASSERT_EQ(rename(P("rn/d1").c_str(), P("rn/d2/d1").c_str()), 0) << strerror(errno);
  ASSERT_EQ(ReadFile(P("rn/d2/d1/b"), &got), 0);
  EXPECT_EQ(FirstDiff(got, a), -1);
  EXPECT_EQ(Stat(P("rn/d2")).st_nlink, 3u);

  // A directory into its own subtree.
  EXPECT_ERRNO(rename(P("rn/d2").c_str(), P("rn/d2/d1/x").c_str()), EINVAL);
  // A directory over a non-empty directory; a file over a directory; a dir over a file.
  ASSERT_EQ(mkdir(P("rn/e").c_str(), 0755), 0);
  EXPECT_ERRNO(rename(P("rn/e").c_str(), P("rn/d2").c_str()), ENOTEMPTY);
  ASSERT_EQ(WriteFile(P("rn/f"), b), 0);
  EXPECT_ERRNO(rename(P("rn/f").c_str(), P("rn/e").c_str()), EISDIR);
  EXPECT_ERRNO(rename(P("rn/e").c_str(), P("rn/f").c_str()), ENOTDIR);
  // A directory over an empty directory works.
  ASSERT_EQ(mkdir(P("rn/empty").c_str(), 0755), 0);
  EXPECT_EQ(rename(P("rn/e").c_str(), P("rn/empty").c_str()), 0) << strerror(errno);
  // RENAME_NOREPLACE.
  ASSERT_EQ(WriteFile(P("rn/g"), a), 0);
  EXPECT_ERRNO(renameat2(AT_FDCWD, P("rn/g").c_str(), AT_FDCWD, P("rn/f").c_str(),
                         RENAME_NOREPLACE),
               EEXIST);
  EXPECT_ERRNO(rename(P("rn/nothere").c_str(), P("rn/x").c_str()), ENOENT);
}

TEST_F(FusePosixTest, HardLinks) {
  ASSERT_EQ(mkdir(P("ln").c_str(), 0755), 0);
  auto a = Pattern(9000, 4);
  ASSERT_EQ(WriteFile(P("ln/a"), a), 0);
  ASSERT_EQ(link(P("ln/a").c_str(), P("ln/b").c_str()), 0) << strerror(errno);
  struct stat sa = Stat(P("ln/a")), sb = Stat(P("ln/b"));
  EXPECT_EQ(sa.st_ino, sb.st_ino);
  EXPECT_EQ(sa.st_nlink, 2u);
  EXPECT_EQ(sb.st_nlink, 2u);
  EXPECT_ERRNO(link(P("ln/a").c_str(), P("ln/b").c_str()), EEXIST);
  EXPECT_ERRNO(link(P("ln").c_str(), P("ln/dirlink").c_str()), EPERM);
  ASSERT_EQ(unlink(P("ln/a").c_str()), 0);
  EXPECT_EQ(Stat(P("ln/b")).st_nlink, 1u);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("ln/b"), &got), 0);
  EXPECT_EQ(FirstDiff(got, a), -1);
}

TEST_F(FusePosixTest, Symlinks) {
  ASSERT_EQ(mkdir(P("sl").c_str(), 0755), 0);
  auto a = Pattern(123, 5);
  ASSERT_EQ(WriteFile(P("sl/target"), a), 0);
  ASSERT_EQ(symlink("target", P("sl/rel").c_str()), 0) << strerror(errno);
  ASSERT_EQ(symlink("/no/such/place", P("sl/dangling").c_str()), 0);
  char buf[256];
  ssize_t n = readlink(P("sl/rel").c_str(), buf, sizeof(buf));
  ASSERT_EQ(n, 6);
  EXPECT_EQ(std::string(buf, n), "target");
  n = readlink(P("sl/dangling").c_str(), buf, sizeof(buf));
  ASSERT_EQ(n, 14);
  EXPECT_EQ(std::string(buf, n), "/no/such/place");
  struct stat st = Stat(P("sl/rel"));
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(st.st_size, 6);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("sl/rel"), &got), 0);  // follows the link
  EXPECT_EQ(FirstDiff(got, a), -1);
  EXPECT_ERRNO(readlink(P("sl/target").c_str(), buf, sizeof(buf)), EINVAL);
  std::string long_target(4000, 'x');
  ASSERT_EQ(symlink(long_target.c_str(), P("sl/long").c_str()), 0) << strerror(errno);
  std::vector<char> lb(5000);
  n = readlink(P("sl/long").c_str(), lb.data(), lb.size());
  ASSERT_EQ(n, 4000);
  EXPECT_EQ(std::string(lb.data(), n), long_target);
}

TEST_F(FusePosixTest, ReaddirOfThreeThousandEntries) {
  ASSERT_EQ(mkdir(P("big").c_str(), 0755), 0);
  const int kN = 3000;
  std::set<std::string> want;
  for (int i = 0; i < kN; ++i) {
    std::string name = "entry-" + std::to_string(i) + (i % 7 ? "" : "-with-a-longer-name");
    int fd = open(P("big/" + name).c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    ASSERT_GE(fd, 0) << name << ": " << strerror(errno);
    close(fd);
    want.insert(name);
  }
  for (int pass = 0; pass < 2; ++pass) {
    DIR* d = opendir(P("big").c_str());
    ASSERT_NE(d, nullptr);
    std::multiset<std::string> seen;
    errno = 0;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      seen.insert(name);
      EXPECT_EQ(e->d_type, DT_REG) << name;
    }
    EXPECT_EQ(errno, 0) << strerror(errno);
    closedir(d);
    EXPECT_EQ(seen.size(), static_cast<size_t>(kN)) << "pass " << pass;
    std::set<std::string> unique(seen.begin(), seen.end());
    EXPECT_EQ(unique.size(), seen.size()) << "duplicate entries";
    EXPECT_TRUE(unique == want) << "missing or extra entries";
  }
  EXPECT_EQ(Stat(P("big")).st_nlink, 2u);
}

TEST_F(FusePosixTest, ChmodChownUtimens) {
  ASSERT_EQ(mkdir(P("attr").c_str(), 0755), 0);
  std::string f = P("attr/f");
  ASSERT_EQ(WriteFile(f, Pattern(10, 1)), 0);
  struct stat before = Stat(f);
  ASSERT_EQ(chmod(f.c_str(), 04751), 0) << strerror(errno);
  EXPECT_EQ(Stat(f).st_mode & 07777, 04751u);
  ASSERT_EQ(chown(f.c_str(), 1234, 5678), 0) << strerror(errno);
  struct stat st = Stat(f);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);
  EXPECT_GE(st.st_ctim.tv_sec, before.st_ctim.tv_sec);
  timespec ts[2];
  ts[0].tv_sec = 1'000'000'000;
  ts[0].tv_nsec = 123'456'789;
  ts[1].tv_sec = 1'500'000'000;
  ts[1].tv_nsec = 987'654'321;
  ASSERT_EQ(utimensat(AT_FDCWD, f.c_str(), ts, 0), 0) << strerror(errno);
  st = Stat(f);
  EXPECT_EQ(st.st_atim.tv_sec, ts[0].tv_sec);
  EXPECT_EQ(st.st_atim.tv_nsec, ts[0].tv_nsec);
  EXPECT_EQ(st.st_mtim.tv_sec, ts[1].tv_sec);
  EXPECT_EQ(st.st_mtim.tv_nsec, ts[1].tv_nsec);
  EXPECT_EQ(st.st_size, 10);
  // UTIME_NOW sets a current time; UTIME_OMIT leaves the other alone.
  ts[0].tv_nsec = UTIME_OMIT;
  ts[1].tv_nsec = UTIME_NOW;
  ASSERT_EQ(utimensat(AT_FDCWD, f.c_str(), ts, 0), 0);
  st = Stat(f);
  EXPECT_EQ(st.st_atim.tv_sec, 1'000'000'000);
  EXPECT_GT(st.st_mtim.tv_sec, 1'500'000'000);
  // The same on a directory.
  ASSERT_EQ(chmod(P("attr").c_str(), 0700), 0);
  EXPECT_EQ(Stat(P("attr")).st_mode & 07777, 0700u);
  EXPECT_TRUE(S_ISDIR(Stat(P("attr")).st_mode));
}

TEST_F(FusePosixTest, TruncateGrowAndShrink) {
  MakeStripedDir("trunc");
  std::string f = P("trunc/f");
  auto data = Pattern(5 * kS + 333, 6);
  ASSERT_EQ(WriteFile(f, data), 0);
  std::vector<uint8_t> got;
  // Shrink into the middle of the second stripe.
  ASSERT_EQ(truncate(f.c_str(), kS + 100), 0) << strerror(errno);
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(kS + 100));
  ASSERT_EQ(ReadFile(f, &got), 0);
  EXPECT_EQ(FirstDiff(got, std::vector<uint8_t>(data.begin(), data.begin() + kS + 100)), -1);
  // Grow: the old bytes must not come back, the new range reads as zeros.
  ASSERT_EQ(truncate(f.c_str(), 6 * kS), 0) << strerror(errno);
  EXPECT_EQ(Stat(f).st_size, static_cast<off_t>(6 * kS));
  std::vector<uint8_t> want(data.begin(), data.begin() + kS + 100);
  want.resize(6 * kS, 0);
  ASSERT_EQ(ReadFile(f, &got), 0);
  EXPECT_EQ(FirstDiff(got, want), -1);
  // ftruncate on an open descriptor, then O_TRUNC.
  int fd = open(f.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 10), 0);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 10);
  close(fd);
  fd = open(f.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_EQ(Stat(f).st_size, 0);
  auto e = Resolve(*g_client, "/trunc/f");
  ASSERT_TRUE(e.ok());
  auto glimpse = g_client->GlimpseSize(e->layout());
  ASSERT_TRUE(glimpse.ok());
  EXPECT_EQ(*glimpse, 0u) << "objects must be truncated on the OSTs too";
}

TEST_F(FusePosixTest, Xattrs) {
  ASSERT_EQ(mkdir(P("xa").c_str(), 0755), 0);
  std::string f = P("xa/f");
  ASSERT_EQ(WriteFile(f, Pattern(10, 1)), 0);
  const char* name = "user.stria.test";
  std::string value("va\0lue", 6);
  ASSERT_EQ(setxattr(f.c_str(), name, value.data(), value.size(), 0), 0) << strerror(errno);
  char buf[4096];
  EXPECT_EQ(getxattr(f.c_str(), name, nullptr, 0), 6) << "size query";
  ssize_t n = getxattr(f.c_str(), name, buf, sizeof(buf));
  ASSERT_EQ(n, 6);
  EXPECT_EQ(std::string(buf, n), value);
  EXPECT_ERRNO(getxattr(f.c_str(), name, buf, 2), ERANGE);
  EXPECT_ERRNO(setxattr(f.c_str(), name, "x", 1, XATTR_CREATE), EEXIST);
  EXPECT_ERRNO(setxattr(f.c_str(), "user.absent", "x", 1, XATTR_REPLACE), ENODATA);
  ASSERT_EQ(setxattr(f.c_str(), name, "new", 3, XATTR_REPLACE), 0);
  ASSERT_EQ(getxattr(f.c_str(), name, buf, sizeof(buf)), 3);
  std::string big(3000, 'b');
  ASSERT_EQ(setxattr(f.c_str(), "user.big", big.data(), big.size(), 0), 0);
  n = listxattr(f.c_str(), buf, sizeof(buf));
  ASSERT_GT(n, 0) << strerror(errno);
  std::set<std::string> names;
  for (ssize_t i = 0; i < n;) {
    std::string s(buf + i);
    names.insert(s);
    i += s.size() + 1;
  }
  EXPECT_TRUE(names.count(name)) << "listxattr lacks " << name;
  EXPECT_TRUE(names.count("user.big"));
  EXPECT_EQ(listxattr(f.c_str(), nullptr, 0), n);
  ASSERT_EQ(removexattr(f.c_str(), name), 0) << strerror(errno);
  EXPECT_ERRNO(getxattr(f.c_str(), name, buf, sizeof(buf)), ENODATA);
  EXPECT_ERRNO(removexattr(f.c_str(), name), ENODATA);
  // Xattrs on a directory too.
  ASSERT_EQ(setxattr(P("xa").c_str(), "user.d", "1", 1, 0), 0);
  EXPECT_EQ(getxattr(P("xa").c_str(), "user.d", buf, sizeof(buf)), 1);
}

TEST_F(FusePosixTest, Statfs) {
  struct statvfs sv {};
  ASSERT_EQ(statvfs(mnt_.c_str(), &sv), 0) << strerror(errno);
  EXPECT_GT(sv.f_bsize, 0u);
  EXPECT_GT(sv.f_blocks, 0u);
  EXPECT_LE(sv.f_bfree, sv.f_blocks);
  EXPECT_LE(sv.f_bavail, sv.f_bfree);
  EXPECT_GT(sv.f_namemax, 0u);
  auto osts = g_client->OstStatfs();
  ASSERT_TRUE(osts.ok());
  double total = 0;
  for (const auto& o : *osts) total += static_cast<double>(o.blocks()) * o.bsize();
  double frsize = sv.f_frsize ? sv.f_frsize : sv.f_bsize;
  EXPECT_NEAR(static_cast<double>(sv.f_blocks) * frsize, total, total * 0.001)
      << "statfs on the mount is the sum of the OSTs";

  // Inodes are the MDS's: used goes up by one per create, and free is bounded by its disk.
  ASSERT_EQ(mkdir(P("inodes").c_str(), 0755), 0);
  ASSERT_EQ(statvfs(mnt_.c_str(), &sv), 0);
  const uint64_t used_before = sv.f_files - sv.f_ffree;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(mknod(P("inodes/f" + std::to_string(i)).c_str(), S_IFREG | 0644, 0), 0);
  }
  struct statvfs after {};
  ASSERT_EQ(statvfs(mnt_.c_str(), &after), 0);
  EXPECT_EQ(after.f_files - after.f_ffree, used_before + 5);
  struct statvfs mdt {};
  ASSERT_EQ(statvfs((g_cluster->dir() + "/mds").c_str(), &mdt), 0);
  EXPECT_LE(static_cast<double>(after.f_ffree),
            static_cast<double>(mdt.f_bavail) * mdt.f_frsize / 1024)
      << "free inodes must follow the MDS's free space";
}

TEST_F(FusePosixTest, OffsetsBeyondFourGiB) {
  MakeStripedDir("huge");
  std::string f = P("huge/f");
  int fd = open(f.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  const off_t far = (5ll << 30) + 12345;  // past 32-bit offsets, inside a stripe
  auto d = Pattern(70'000, 31);           // crosses a stripe boundary
  ASSERT_EQ(PWriteAll(fd, d.data(), d.size(), far), 0) << strerror(errno);
  ASSERT_EQ(close(fd), 0);
  EXPECT_EQ(Stat(f).st_size, far + static_cast<off_t>(d.size()));
  fd = open(f.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> got(d.size());
  ASSERT_EQ(pread(fd, got.data(), got.size(), far), static_cast<ssize_t>(got.size()));
  EXPECT_EQ(FirstDiff(got, d), -1);
  std::vector<uint8_t> hole(4096, 0xAA);
  ASSERT_EQ(pread(fd, hole.data(), hole.size(), 3ll << 30), 4096);
  EXPECT_TRUE(std::all_of(hole.begin(), hole.end(), [](uint8_t b) { return b == 0; }));
  close(fd);
}

}  // namespace
}  // namespace stria::testing
