// The OST's pool of empty object files (oss/internal/object_pool.h), through ObjectStore: new
// objects take precreated files, destroyed objects' files come back emptied, nothing of an
// old object shows through in a new one.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "oss/internal/test_util.h"
#include "oss/object_store.h"

namespace stria::oss {
namespace {

using testing::Pattern;
using testing::TempDir;

std::unique_ptr<ObjectStore> MakeStore(const std::string& dir, size_t pool = 4096,
                                       size_t precreate = 256, bool format = true) {
  if (format) {
    Status st = FormatOst(dir, OstMeta{"testfs", 0, NewUuid()});
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  ObjectStoreOptions o;
  o.object_pool = pool;
  o.precreate = precreate;
  auto store = ObjectStore::Open(dir, 0, "testfs", o);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

std::string ObjectPath(const std::string& dir, uint64_t id) {
  return dir + "/O/0/d" + std::to_string(id % 32) + "/" + std::to_string(id);
}

uint64_t InodeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

// The inode and size of every file in the pool's directory.
std::map<uint64_t, off_t> PoolFiles(const std::string& dir) {
  std::map<uint64_t, off_t> out;
  const std::string p = dir + "/P";
  DIR* d = opendir(p.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    struct stat st;
    if (stat((p + "/" + e->d_name).c_str(), &st) == 0) out[st.st_ino] = st.st_size;
  }
  closedir(d);
  return out;
}

std::vector<uint8_t> ReadAll(ObjectStore& s, uint64_t id, size_t len, uint64_t* size) {
  std::vector<uint8_t> buf(len, 0xEE);
  auto n = s.Read(0, id, 0, buf, size);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  buf.resize(n.ok() ? *n : 0);
  return buf;
}

TEST(ObjectPoolTest, ANewObjectIsAFilePrecreatedInThePool) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s && s->pool());
  // The first object finds the pool empty: it creates its own file and asks for a batch.
  ASSERT_TRUE(s->Write(0, 1, 0, Pattern(4096, 0, 1), false).ok());
  s->pool()->WaitIdle();
  const auto before = PoolFiles(d.path());
  ASSERT_GE(before.size(), 4u);
  EXPECT_EQ(s->pool()->ready(), before.size());
  for (const auto& [ino, size] : before) EXPECT_EQ(size, 0) << ino;

  const auto data = Pattern(100000, 0, 2);
  ASSERT_TRUE(s->Write(0, 2, 0, data, false).ok());
  EXPECT_TRUE(before.count(InodeOf(ObjectPath(d.path(), 2))))
      << "the object's file is not one of the pool's";
  s->pool()->WaitIdle();
  EXPECT_FALSE(PoolFiles(d.path()).count(InodeOf(ObjectPath(d.path(), 2))));
  // Taking one left fewer than half a batch ready: the next, larger batch was made.
  EXPECT_GT(s->pool()->ready(), before.size());
  uint64_t size = 0;
  EXPECT_EQ(ReadAll(*s, 2, 200000, &size), data);
  EXPECT_EQ(size, data.size());
}

TEST(ObjectPoolTest, ADestroyedObjectsFileComesBackEmptyForTheNextObject) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s && s->pool());
  ASSERT_TRUE(s->Write(0, 7, 0, Pattern(300000, 0, 7), false).ok());
  const uint64_t ino = InodeOf(ObjectPath(d.path(), 7));
  s->pool()->WaitIdle();  // the batch asked for by object 7's create is in
  ASSERT_TRUE(s->Destroy(0, 7).ok());
  EXPECT_FALSE(s->Getattr(0, 7)->exists);
  uint64_t size = 1;
  EXPECT_TRUE(ReadAll(*s, 7, 4096, &size).empty());
  EXPECT_EQ(size, 0u);

  // Kept, and already empty: its space is free once the destroy is answered.
  const auto pool = PoolFiles(d.path());
  ASSERT_TRUE(pool.count(ino)) << "the destroyed object's file was not kept";
  EXPECT_EQ(pool.at(ino), 0) << "kept, but not emptied";

  // The next object gets that file (the pool hands out the latest first) and holds only its
  // own bytes: nothing of object 7 past its end, and its checksums are its own.
  const auto data = Pattern(5000, 0, 8);
  ASSERT_TRUE(s->Write(0, 8, 0, data, false).ok());
  EXPECT_EQ(InodeOf(ObjectPath(d.path(), 8)), ino);
  EXPECT_EQ(ReadAll(*s, 8, 300000, &size), data);
  EXPECT_EQ(size, data.size());
  auto scrub = s->ScrubObject(0, 8);
  ASSERT_TRUE(scrub.ok()) << scrub.status().ToString();
  EXPECT_EQ(scrub->bad_chunks, 0u);
  EXPECT_EQ(scrub->bytes, data.size());
}

TEST(ObjectPoolTest, BeyondItsLimitADestroyUnlinks) {
  TempDir d;
  auto s = MakeStore(d.path(), /*pool=*/2, /*precreate=*/0);
  ASSERT_TRUE(s && s->pool());
  for (uint64_t id = 1; id <= 4; ++id)
    ASSERT_TRUE(s->Write(0, id, 0, Pattern(100, 0, 1), false).ok());
  for (uint64_t id = 1; id <= 4; ++id) ASSERT_TRUE(s->Destroy(0, id).ok());
  s->pool()->WaitIdle();
  EXPECT_EQ(PoolFiles(d.path()).size(), 2u);
  EXPECT_EQ(s->pool()->ready(), 2u);
  // With precreate 0 nothing is precreated: the two kept files serve two objects, the
  // third is created by its write.
  for (uint64_t id = 5; id <= 7; ++id)
    ASSERT_TRUE(s->Write(0, id, 0, Pattern(100, 0, 1), false).ok());
  s->pool()->WaitIdle();
  EXPECT_TRUE(PoolFiles(d.path()).empty());
  EXPECT_EQ(s->pool()->ready(), 0u);
  for (uint64_t id = 5; id <= 7; ++id) EXPECT_EQ(s->Getattr(0, id)->size, 100u);
}

TEST(ObjectPoolTest, FilesLeftInThePoolAreEmptiedAtStartAndUsed) {
  TempDir d;
  {
    auto s = MakeStore(d.path(), 4096, /*precreate=*/0);
    ASSERT_TRUE(s);
  }
  // As after a crash between a destroy's rename and the emptying: a file with data.
  { std::ofstream(d.path() + "/P/41") << std::string(70000, 'x'); }
  { std::ofstream(d.path() + "/P/notes.txt") << "an operator's file"; }
  const uint64_t ino = InodeOf(d.path() + "/P/41");
  auto s = MakeStore(d.path(), 4096, /*precreate=*/0, /*format=*/false);
  ASSERT_TRUE(s && s->pool());
  s->pool()->WaitIdle();
  EXPECT_EQ(s->pool()->dirty(), 0u);
  EXPECT_EQ(s->pool()->ready(), 1u);
  EXPECT_EQ(PoolFiles(d.path()).at(ino), 0);
  const auto data = Pattern(10, 0, 3);
  ASSERT_TRUE(s->Write(0, 5, 0, data, false).ok());
  EXPECT_EQ(InodeOf(ObjectPath(d.path(), 5)), ino);
  uint64_t size = 0;
  EXPECT_EQ(ReadAll(*s, 5, 100000, &size), data);
  EXPECT_EQ(size, 10u);
  // Only numbered files are the pool's.
  struct stat st;
  EXPECT_EQ(stat((d.path() + "/P/notes.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 18);
  // Pool files are not objects.
  size_t objects = 0;
  ASSERT_TRUE(s->ForEachObject([&](uint64_t, uint64_t) {
                 ++objects;
                 return Status::Ok();
               }).ok());
  EXPECT_EQ(objects, 1u);
}

TEST(ObjectPoolTest, ALinkOrADirectoryInThePoolIsNeitherFollowedNorUsed) {
  TempDir d;
  { auto s = MakeStore(d.path(), 4096, /*precreate=*/0); }
  const std::string outside = d.path() + "/precious";
  { std::ofstream(outside) << "keep me"; }
  ASSERT_EQ(symlink(outside.c_str(), (d.path() + "/P/77").c_str()), 0);
  ASSERT_EQ(mkdir((d.path() + "/P/78").c_str(), 0755), 0);
  auto s = MakeStore(d.path(), 4096, /*precreate=*/0, /*format=*/false);
  ASSERT_TRUE(s && s->pool());
  s->pool()->WaitIdle();
  EXPECT_EQ(s->pool()->ready(), 0u);
  struct stat st;
  ASSERT_EQ(stat(outside.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 7) << "the pool emptied a file through a link";
  // A new object is created as before, a plain file.
  ASSERT_TRUE(s->Write(0, 9, 0, Pattern(100, 0, 1), false).ok());
  ASSERT_EQ(lstat(ObjectPath(d.path(), 9).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(ObjectPoolTest, AWriteToAnObjectBeingDestroyedNeverLandsInTheNextObject) {
  TempDir d;
  auto s = MakeStore(d.path(), 4, /*precreate=*/0);
  ASSERT_TRUE(s && s->pool());
  // One thread keeps writing object 1 while another destroys it and writes new objects,
  // which take object 1's file back from the pool. Every new object must read back exactly
  // what was written to it.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    const auto junk = Pattern(8192, 0, 99);
    while (!stop.load()) {
      auto r = s->Write(0, 1, 0, junk, false);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  });
  for (uint64_t id = 100; id < 1100 && !HasFatalFailure(); ++id) {
    ASSERT_TRUE(s->Destroy(0, 1).ok());
    s->pool()->WaitIdle();
    const auto data = Pattern(4096, 0, static_cast<uint32_t>(id));
    ASSERT_TRUE(s->Write(0, id, 0, data, false).ok());
    uint64_t size = 0;
    ASSERT_EQ(ReadAll(*s, id, 16384, &size), data) << "object " << id;
    ASSERT_EQ(size, data.size()) << "object " << id;
    ASSERT_TRUE(s->Destroy(0, id).ok());
  }
  stop = true;
  writer.join();
}

TEST(ObjectPoolTest, OutOfInodesAWriteIsENOSPCAndADestroyedFileStillServes) {
  // A tmpfs with few inodes; needs mount privileges, skipped without them.
  TempDir d;
  const std::string mnt = d.path() + "/few";
  ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=4m,nr_inodes=48") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here";
  }
  {
    auto s = MakeStore(mnt);
    ASSERT_TRUE(s && s->pool());
    // Objects in one subdirectory, until the inodes run out: the pool's precreation fails
    // first, then the writes, with ENOSPC, not some other error and not a hang.
    std::vector<uint64_t> written;
    Status last;
    for (uint64_t id = 1; written.size() < 100; id += 32) {
      auto r = s->Write(0, id, 0, Pattern(100, 0, 1), false);
      if (!r.ok()) {
        last = r.status();
        break;
      }
      written.push_back(id);
      s->pool()->WaitIdle();
    }
    ASSERT_FALSE(last.ok()) << "48 inodes held " << written.size() << " objects";
    EXPECT_EQ(last.code(), Code::kNoSpc) << last.ToString();
    ASSERT_FALSE(written.empty());
    // A destroyed object's file serves the next object though no inode is free.
    const uint64_t ino = InodeOf(ObjectPath(mnt, written.front()));
    ASSERT_TRUE(s->Destroy(0, written.front()).ok());
    const auto data = Pattern(300, 0, 4);
    auto r = s->Write(0, 32 * 1000 + 1, 0, data, false);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(InodeOf(ObjectPath(mnt, 32 * 1000 + 1)), ino);
    uint64_t size = 0;
    EXPECT_EQ(ReadAll(*s, 32 * 1000 + 1, 4096, &size), data);
  }
  umount2(mnt.c_str(), MNT_DETACH);
}

TEST(ObjectPoolTest, PoolZeroMeansNoPool) {
  TempDir d;
  auto s = MakeStore(d.path(), /*pool=*/0);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pool(), nullptr);
  ASSERT_TRUE(s->Write(0, 3, 0, Pattern(100, 0, 1), false).ok());
  ASSERT_TRUE(s->Destroy(0, 3).ok());
  struct stat st;
  EXPECT_NE(stat((d.path() + "/P").c_str(), &st), 0);
  EXPECT_NE(stat(ObjectPath(d.path(), 3).c_str(), &st), 0);
}

}  // namespace
}  // namespace stria::oss
