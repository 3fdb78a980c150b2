#include "oss/object_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "common/layout.h"
#include "lnet/buffer.h"
#include "oss/internal/test_util.h"
#include "tests/harness/test_util.h"

namespace stria::oss {
namespace {

using stria::testing::ObjectFilePath;
using testing::Pattern;
using testing::TempDir;

std::unique_ptr<ObjectStore> MakeStore(const std::string& dir, uint32_t index = 3,
                                       size_t max_open = 512,
                                       ObjectFormat format = kNewOstObjectFormat) {
  OstMeta meta{"testfs", index, NewUuid()};
  meta.object_format = format;
  Status st = FormatOst(dir, meta);
  EXPECT_TRUE(st.ok()) << st.ToString();
  ObjectStoreOptions o;
  o.max_open_files = max_open;
  auto store = ObjectStore::Open(dir, index, "testfs", o);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

std::vector<uint8_t> ReadAll(ObjectStore& s, uint64_t id, uint64_t off, size_t len,
                             uint64_t* size = nullptr) {
  std::vector<uint8_t> buf(len, 0xEE);
  uint64_t sz = 0;
  auto n = s.Read(0, id, off, buf, &sz);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  buf.resize(n.ok() ? *n : 0);
  if (size) *size = sz;
  return buf;
}

TEST(OstMetaTest, FormatWritesMetaAndReopenChecksIt) {
  TempDir d;
  const std::string dir = d.path() + "/ost3";
  OstMeta meta{"testfs", 3, NewUuid()};
  ASSERT_TRUE(FormatOst(dir, meta).ok());
  auto back = ReadOstMeta(dir);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->fsname, "testfs");
  EXPECT_EQ(back->index, 3u);
  EXPECT_EQ(back->uuid, meta.uuid);
  // Formatting again for the same identity keeps the stored uuid.
  ASSERT_TRUE(FormatOst(dir, OstMeta{"testfs", 3, NewUuid()}).ok());
  EXPECT_EQ(ReadOstMeta(dir)->uuid, meta.uuid);
}

TEST(OstMetaTest, TheObjectFormatIsKeptAndAnOldMetaMeansSidecars) {
  TempDir d;
  const std::string dir = d.path() + "/ost3";
  ASSERT_TRUE(FormatOst(dir, OstMeta{"testfs", 3, NewUuid()}).ok());
  EXPECT_EQ(ReadOstMeta(dir)->object_format, ObjectFormat::kInline) << "a new OST";
  // A meta written before object_format existed: its objects have sidecars.
  std::ofstream(dir + "/ost.meta") << "fsname=testfs\nindex=3\nuuid=u\n";
  EXPECT_EQ(ReadOstMeta(dir)->object_format, ObjectFormat::kSidecar);
  for (const char* bad : {"3", "0", "two", ""}) {
    std::ofstream(dir + "/ost.meta") << "fsname=testfs\nindex=3\nuuid=u\nobject_format=" << bad
                                     << "\n";
    auto m = ReadOstMeta(dir);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.status().code(), Code::kCorrupt);
    EXPECT_NE(m.status().message().find("object_format"), std::string::npos);
    EXPECT_EQ(ObjectStore::Open(dir, 3, "testfs").status().code(), Code::kCorrupt);
  }
}

TEST(OstMetaTest, MismatchIsRefused) {
  TempDir d;
  ASSERT_TRUE(FormatOst(d.path(), OstMeta{"testfs", 3, NewUuid()}).ok());
  auto wrong_idx = ObjectStore::Open(d.path(), 4, "testfs");
  ASSERT_FALSE(wrong_idx.ok());
  EXPECT_EQ(wrong_idx.status().code(), Code::kInval);
  EXPECT_NE(wrong_idx.status().message().find("index 3"), std::string::npos);
  auto wrong_fs = ObjectStore::Open(d.path(), 3, "otherfs");
  ASSERT_FALSE(wrong_fs.ok());
  EXPECT_EQ(wrong_fs.status().code(), Code::kWrongFs);
  EXPECT_EQ(FormatOst(d.path(), OstMeta{"otherfs", 3, NewUuid()}).code(), Code::kWrongFs);
  EXPECT_EQ(FormatOst(d.path(), OstMeta{"testfs", 5, NewUuid()}).code(), Code::kInval);
  // Any fsname is accepted when the caller does not know it yet.
  EXPECT_TRUE(ObjectStore::Open(d.path(), 3, "").ok());
}

TEST(OstMetaTest, UnformattedAndCorruptDirectories) {
  TempDir d;
  auto st = ObjectStore::Open(d.path(), 0, "testfs");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), Code::kNoEnt);
  std::ofstream(d.path() + "/ost.meta") << "fsname=testfs\nindex=banana\nuuid=x\n";
  auto bad = ReadOstMeta(d.path());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kCorrupt);
  std::ofstream(d.path() + "/ost.meta") << "fsname=testfs\n";
  EXPECT_EQ(ReadOstMeta(d.path()).status().code(), Code::kCorrupt);
  EXPECT_FALSE(FormatOst(d.path() + "/x", OstMeta{"bad/name", 0, NewUuid()}).ok());
}

// Each destroy is counted in the OST's destroys file, started before and finished after;
// a destroy a crash cut short (started, never finished) is over when the OST opens again.
TEST(ObjectStoreTest, DestroysAreCountedInTheOstsDestroysFile) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  const DestroyCounters& c = s->destroys();
  EXPECT_EQ(c.started.load(), 0u);
  ASSERT_TRUE(s->Write(0, 1, 0, Pattern(4096, 0, 1), false).ok());
  ASSERT_TRUE(s->Destroy(0, 1).ok());
  ASSERT_TRUE(s->Destroy(0, 2).ok());  // never written: counted all the same
  EXPECT_EQ(c.started.load(), 2u);
  EXPECT_EQ(c.finished.load(), 2u);
  // What a reader on this host maps sees the same counts.
  const int fd = open((d.path() + "/" + kDestroysFile).c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* p = mmap(nullptr, kDestroysFileBytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(p, MAP_FAILED);
  const auto* seen = static_cast<const DestroyCounters*>(p);
  EXPECT_EQ(seen->started.load(), 2u);
  const_cast<DestroyCounters&>(c).started.fetch_add(1);  // a destroy cut short
  const uint32_t index = s->meta().index;
  s.reset();
  auto again = ObjectStore::Open(d.path(), index, "testfs");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->destroys().started.load(), 3u);
  EXPECT_EQ((*again)->destroys().finished.load(), 3u);
  EXPECT_EQ(seen->finished.load(), 3u) << "a mapping made before sees it too";
  munmap(p, kDestroysFileBytes);
}

TEST(ObjectStoreTest, RoundTripAtUnalignedOffsets) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  const uint64_t off = 4093;
  auto data = Pattern(300'001, off, 7);
  auto size = s->Write(0, 42, off, data, false);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, off + data.size());
  uint64_t sz = 0;
  EXPECT_EQ(ReadAll(*s, 42, off, data.size(), &sz), data);
  EXPECT_EQ(sz, off + data.size());
  // A sub-range starting and ending mid-block.
  auto part = ReadAll(*s, 42, off + 777, 5000);
  EXPECT_EQ(part, std::vector<uint8_t>(data.begin() + 777, data.begin() + 777 + 5000));
  // The file sits where the layout says.
  struct stat st;
  EXPECT_EQ(stat((d.path() + "/O/0/d10/42").c_str(), &st), 0);
  // Overwrite in the middle.
  auto patch = Pattern(10, 0, 9);
  ASSERT_TRUE(s->Write(0, 42, off + 100, patch, true).ok());
  auto again = ReadAll(*s, 42, off + 100, 10);
  EXPECT_EQ(again, patch);
}

TEST(ObjectStoreTest, SparseReadsReturnZerosAndStopAtEnd) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  auto data = Pattern(1000, 0, 1);
  ASSERT_TRUE(s->Write(0, 7, 1 << 20, data, false).ok());
  uint64_t sz = 0;
  // A read straddling the hole and the data: zeros, then the data, then nothing past end.
  auto r = ReadAll(*s, 7, (1 << 20) - 500, 4000, &sz);
  EXPECT_EQ(sz, (1u << 20) + 1000);
  ASSERT_EQ(r.size(), 1500u);
  for (size_t i = 0; i < 500; ++i) ASSERT_EQ(r[i], 0) << i;
  EXPECT_EQ(std::vector<uint8_t>(r.begin() + 500, r.end()), data);
  // Entirely past end.
  EXPECT_TRUE(ReadAll(*s, 7, (1 << 20) + 1000, 10).empty());
  EXPECT_TRUE(ReadAll(*s, 7, 1ull << 40, 10).empty());
  // A missing object reads as empty, size 0, and is not created by the read.
  EXPECT_TRUE(ReadAll(*s, 999, 0, 100, &sz).empty());
  EXPECT_EQ(sz, 0u);
  auto attr = s->Getattr(0, 999);
  ASSERT_TRUE(attr.ok());
  EXPECT_FALSE(attr->exists);
}

TEST(ObjectStoreTest, TruncateGrowAndShrink) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  auto data = Pattern(10000, 0, 4);
  ASSERT_TRUE(s->Write(0, 5, 0, data, false).ok());
  ASSERT_EQ(*s->Truncate(0, 5, 3000), 3000u);
  auto attr = s->Getattr(0, 5);
  EXPECT_EQ(attr->size, 3000u);
  EXPECT_EQ(ReadAll(*s, 5, 0, 10000), std::vector<uint8_t>(data.begin(), data.begin() + 3000));
  ASSERT_EQ(*s->Truncate(0, 5, 8000), 8000u);
  auto r = ReadAll(*s, 5, 2000, 10000);
  ASSERT_EQ(r.size(), 6000u);
  EXPECT_EQ(std::vector<uint8_t>(r.begin(), r.begin() + 1000),
            std::vector<uint8_t>(data.begin() + 2000, data.begin() + 3000));
  for (size_t i = 1000; i < r.size(); ++i) ASSERT_EQ(r[i], 0) << i;  // old bytes are gone
  // Truncating a missing object to 0 does not create it; to a size does.
  ASSERT_TRUE(s->Truncate(0, 6, 0).ok());
  EXPECT_FALSE(s->Getattr(0, 6)->exists);
  ASSERT_TRUE(s->Truncate(0, 6, 123).ok());
  EXPECT_TRUE(s->Getattr(0, 6)->exists);
  EXPECT_EQ(s->Getattr(0, 6)->size, 123u);
  EXPECT_EQ(s->Truncate(0, 6, kMaxFileSize + 1).status().code(), Code::kInval);
}

TEST(ObjectStoreTest, PunchFreesBlocksKeepsSize) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  auto data = Pattern(1 << 20, 0, 5);
  ASSERT_TRUE(s->Write(0, 8, 0, data, false).ok());
  ASSERT_TRUE(s->SyncObject(0, 8).ok());
  const uint64_t blocks_before = s->Getattr(0, 8)->blocks;
  auto size = s->Punch(0, 8, 65536, 512 * 1024);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, 1u << 20);
  auto attr = s->Getattr(0, 8);
  EXPECT_EQ(attr->size, 1u << 20);
  EXPECT_LT(attr->blocks, blocks_before);
  auto r = ReadAll(*s, 8, 0, 1 << 20);
  ASSERT_EQ(r.size(), 1u << 20);
  for (size_t i = 0; i < r.size(); ++i) {
    const bool punched = i >= 65536 && i < 65536 + 512 * 1024;
    ASSERT_EQ(r[i], punched ? 0 : data[i]) << i;
  }
  // Punching a missing object is fine and does not create it.
  EXPECT_TRUE(s->Punch(0, 77, 0, 100).ok());
  EXPECT_FALSE(s->Getattr(0, 77)->exists);
}

TEST(ObjectStoreTest, DestroyRemovesAndMissingIsFine) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  auto data = Pattern(5000, 0, 6);
  ASSERT_TRUE(s->Write(0, 9, 0, data, false).ok());
  EXPECT_TRUE(s->Getattr(0, 9)->exists);
  ASSERT_TRUE(s->Destroy(0, 9).ok());
  EXPECT_FALSE(s->Getattr(0, 9)->exists);
  uint64_t sz = 1;
  EXPECT_TRUE(ReadAll(*s, 9, 0, 100, &sz).empty());
  EXPECT_EQ(sz, 0u);
  EXPECT_TRUE(s->Destroy(0, 9).ok());
  // A write after destroy starts a new, empty object (the cached descriptor was dropped).
  ASSERT_TRUE(s->Write(0, 9, 10, Pattern(5, 0, 1), false).ok());
  EXPECT_EQ(s->Getattr(0, 9)->size, 15u);
  auto r = ReadAll(*s, 9, 0, 100);
  ASSERT_EQ(r.size(), 15u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r[i], 0);
}

TEST(ObjectStoreTest, StatfsAndSync) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  auto st = s->Statfs();
  ASSERT_TRUE(st.ok());
  EXPECT_GT(st->bsize, 0u);
  EXPECT_GT(st->blocks, 0u);
  EXPECT_LE(st->bfree, st->blocks);
  EXPECT_LE(st->bavail, st->bfree);
  EXPECT_GT(st->files, 0u);
  EXPECT_LE(st->ffree, st->files);
  EXPECT_TRUE(s->SyncAll().ok());
  EXPECT_TRUE(s->SyncObject(0, 12345).ok());  // missing: fine
  ASSERT_TRUE(s->Write(0, 1, 0, Pattern(10, 0, 1), false).ok());
  EXPECT_TRUE(s->SyncObject(0, 1).ok());
}

TEST(ObjectStoreTest, ImpossibleRangesAreRejected) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  auto data = Pattern(10, 0, 1);
  EXPECT_EQ(s->Write(0, 1, kMaxFileSize - 5, data, false).status().code(), Code::kInval);
  EXPECT_EQ(s->Write(0, 1, ~0ull - 3, data, false).status().code(), Code::kInval);
  std::vector<uint8_t> buf(10);
  uint64_t sz;
  EXPECT_EQ(s->Read(0, 1, ~0ull, buf, &sz).status().code(), Code::kInval);
  EXPECT_EQ(s->Punch(0, 1, 5, ~0ull).status().code(), Code::kInval);
  EXPECT_FALSE(s->Getattr(0, 1)->exists);  // nothing was created
  // Within kMaxFileSize but beyond what the local filesystem allows: EFBIG from the disk.
  auto big = s->Write(0, 2, kMaxFileSize - 10, data, false);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kFBig) << big.status().ToString();
}

TEST(ObjectStoreTest, ManyObjectsWithBoundedDescriptors) {
  // 30,000 objects through a 64-entry cache, under a descriptor limit far below 30,000:
  // leaking one descriptor per object would fail with EMFILE.
  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  struct rlimit lim = old;
  lim.rlim_cur = std::min<rlim_t>(old.rlim_cur, 1024);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
  TempDir d;
  auto s = MakeStore(d.path(), 0, 64);
  ASSERT_TRUE(s);
  constexpr uint64_t kObjects = 30'000;
  for (uint64_t id = 1; id <= kObjects; ++id) {
    auto data = Pattern(16, id, static_cast<uint32_t>(id));
    auto st = s->Write(0, id, id % 1000, data, false);
    ASSERT_TRUE(st.ok()) << id << ": " << st.status().ToString();
    ASSERT_LE(s->cached_files(), 64u);
  }
  for (uint64_t id = 1; id <= kObjects; id += 97) {
    EXPECT_EQ(ReadAll(*s, id, id % 1000, 16), Pattern(16, id, static_cast<uint32_t>(id)));
  }
  for (uint64_t id = 1; id <= kObjects; id += 2) ASSERT_TRUE(s->Destroy(0, id).ok());
  EXPECT_FALSE(s->Getattr(0, 1)->exists);
  EXPECT_TRUE(s->Getattr(0, 2)->exists);
  setrlimit(RLIMIT_NOFILE, &old);
}

// Pages of [off, off + len) of `path` resident in the page cache.
size_t ResidentPages(const std::string& path, uint64_t off, size_t len) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return 0;
  void* m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(off));
  close(fd);
  if (m == MAP_FAILED) return 0;
  std::vector<unsigned char> vec((len + 4095) / 4096);
  size_t n = 0;
  if (mincore(m, len, vec.data()) == 0) {
    for (unsigned char v : vec) n += v & 1;
  }
  munmap(m, len);
  return n;
}

// A freshly formatted OST (index 3 of "testfs") in d/NAME.
std::string FormattedOstDir(const TempDir& d, const std::string& name) {
  const std::string dir = d.path() + "/" + name;
  OstMeta meta{"testfs", 3, NewUuid()};
  EXPECT_TRUE(FormatOst(dir, meta).ok());
  return dir;
}

// Aligned writes of at least direct_min_bytes (what a client streams: whole chunks from a
// page-aligned buffer) go to disk with O_DIRECT and never through the page cache; unaligned ones, buffered, mix
// with them byte-exactly, and the checksums verify after a reopen.
TEST(ObjectStoreTest, AlignedWritesBypassThePageCache) {
  TempDir d;
  for (bool direct : {true, false}) {
    const std::string dir = FormattedOstDir(d, direct ? "direct" : "buffered");
    ObjectStoreOptions o;
    o.direct_writes = direct;
    std::vector<uint8_t> want;
    {
      auto s = ObjectStore::Open(dir, 3, "testfs", o);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      constexpr size_t kMiB = 1 << 20;
      lnet::Buffer buf(2 * kMiB);  // page-aligned, as a request's bulk
      auto p = Pattern(2 * kMiB, 0, 11);
      std::memcpy(buf.data(), p.data(), p.size());
      ASSERT_TRUE((*s)->Write(0, 7, 0, buf.span(), false).ok());
      // The data's pages: the block of checksums before them is written through the cache.
      const size_t resident = ResidentPages(ObjectFilePath(dir, 7), InlineDataPos(0), 2 * kMiB);
      if (direct) {
        EXPECT_EQ(resident, 0u) << "an aligned write left pages in the page cache";
      } else {
        EXPECT_GT(resident, 0u) << "buffered writes go through the page cache";
      }
      // A small file's write (below direct_min_bytes) stays buffered even when aligned.
      lnet::Buffer small(100 << 10);
      auto sp = Pattern(small.size(), 0, 14);
      std::memcpy(small.data(), sp.data(), sp.size());
      ASSERT_TRUE((*s)->Write(0, 8, 0, small.span(), false).ok());
      EXPECT_GT(ResidentPages(ObjectFilePath(dir, 8), InlineDataPos(0), small.size()), 0u)
          << "a 100 KiB write went around the page cache";
      EXPECT_EQ(ReadAll(**s, 8, 0, small.size()), sp);
      // An unaligned overwrite across the 1 MiB boundary, buffered, then aligned again over
      // part of it: the latest bytes win everywhere.
      auto patch = Pattern(10'000, 5, 12);
      ASSERT_TRUE((*s)->Write(0, 7, kMiB - 5'000, patch, false).ok());
      lnet::Buffer chunk(8192);
      auto c = Pattern(8192, 0, 13);
      std::memcpy(chunk.data(), c.data(), c.size());
      ASSERT_TRUE((*s)->Write(0, 7, kMiB, chunk.span(), false).ok());
      want = p;
      std::copy(patch.begin(), patch.end(), want.begin() + (kMiB - 5'000));
      std::copy(c.begin(), c.end(), want.begin() + kMiB);
      EXPECT_EQ(ReadAll(**s, 7, 0, want.size()), want);
    }
    auto s = ObjectStore::Open(dir, 3, "testfs", o);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(ReadAll(**s, 7, 0, want.size()), want) << "checksums verify after a reopen";
  }
}

// Aligned reads of at least direct_min_bytes into a page-aligned buffer (a client streaming
// whole chunks) come from disk with O_DIRECT and leave nothing in the page cache; with
// direct_reads off they go through it. Either way the bytes are the object's and a damaged
// chunk is refused, not returned.
TEST(ObjectStoreTest, AlignedReadsBypassThePageCache) {
  TempDir d;
  for (bool direct : {true, false}) {
    const std::string dir = FormattedOstDir(d, direct ? "direct" : "buffered");
    ObjectStoreOptions o;
    o.direct_reads = direct;
    auto s = ObjectStore::Open(dir, 3, "testfs", o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    constexpr size_t kMiB = 1 << 20;
    // 6 MiB: the second read crosses a 4 MiB group and its block of checksums.
    const auto p = Pattern(6 * kMiB, 0, 21);
    ASSERT_TRUE((*s)->Write(0, 9, 0, p, false).ok());
    const std::string path = ObjectFilePath(dir, 9);
    {
      const int fd = open(path.c_str(), O_RDONLY);
      ASSERT_GE(fd, 0);
      fdatasync(fd);
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // cold, as after a restart
      close(fd);
    }
    ASSERT_EQ(ResidentPages(path, InlineDataPos(0), 2 * kMiB), 0u);
    lnet::Buffer buf(2 * kMiB);  // page-aligned, as a reply's bulk
    for (uint64_t off : {uint64_t{0}, 3 * kMiB}) {
      uint64_t size = 0;
      uint32_t crc = 0;
      auto n = (*s)->Read(0, 9, off, buf.span(), &size, nullptr, &crc);
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      ASSERT_EQ(*n, 2 * kMiB);
      EXPECT_EQ(size, 6 * kMiB);
      EXPECT_TRUE(std::equal(buf.data(), buf.data() + *n, p.begin() + off)) << off;
      EXPECT_EQ(crc, Crc32c(buf.data(), *n));
    }
    // The checksum blocks are still read through the page cache, and the kernel's readahead
    // of the first takes a few data pages after it along: a handful, not the 512 read.
    const size_t resident = ResidentPages(path, InlineDataPos(0), 2 * kMiB);
    if (direct) {
      EXPECT_LT(resident, 8u) << "an aligned read left its pages in the page cache";
    } else {
      EXPECT_EQ(resident, 2 * kMiB / 4096) << "buffered reads go through the page cache";
    }
    // One byte of the first chunk damaged on disk: the read says so.
    {
      const int fd = open(path.c_str(), O_WRONLY);
      ASSERT_GE(fd, 0);
      const uint8_t bad = static_cast<uint8_t>(p[100] ^ 0xff);
      ASSERT_EQ(pwrite(fd, &bad, 1, static_cast<off_t>(InlineDataPos(100))), 1);
      close(fd);
    }
    uint64_t size = 0;
    auto n = (*s)->Read(0, 9, 0, buf.span(), &size);
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.status().code(), Code::kCorrupt) << n.status().ToString();
  }
}

TEST(ObjectStoreTest, NoSpaceOnDiskIsENOSPC) {
  // A tiny tmpfs fills up quickly; needs mount privileges, skipped without them.
  TempDir d;
  const std::string mnt = d.path() + "/small";
  ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here";
  }
  {
    auto s = MakeStore(mnt);
    ASSERT_TRUE(s);
    auto data = Pattern(4 << 20, 0, 1);
    auto st = s->Write(0, 1, 0, data, false);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.status().code(), Code::kNoSpc) << st.status().ToString();
    // The store keeps working for what fits.
    ASSERT_TRUE(s->Destroy(0, 1).ok());
    EXPECT_TRUE(s->Write(0, 2, 0, Pattern(4096, 0, 2), false).ok());
  }
  umount2(mnt.c_str(), MNT_DETACH);
}


// ---- checksums on disk (internal/chunk_crc.h) ----

constexpr uint64_t kChunk = 4096;

std::string ObjectPath(const std::string& dir, uint64_t id) {
  return stria::testing::ObjectFilePath(dir, id);
}

// Flips one bit of a stored file behind the store's back, as a failing disk would.
void FlipBit(const std::string& path, uint64_t offset) {
  ASSERT_EQ(stria::testing::FlipBit(path, offset), 0) << path;
}

Status ReadStatus(ObjectStore& s, uint64_t id, uint64_t off, size_t len) {
  std::vector<uint8_t> buf(len);
  uint64_t size = 0;
  return s.Read(0, id, off, buf, &size).status();
}

// Every byte of the object as the model says, and a clean scrub of it.
void ExpectVerifiedContent(ObjectStore& s, uint64_t id, const std::vector<uint8_t>& model) {
  uint64_t size = 0;
  EXPECT_EQ(ReadAll(s, id, 0, model.size() + kChunk, &size), model);
  EXPECT_EQ(size, model.size());
  auto scrub = s.ScrubObject(0, id);
  ASSERT_TRUE(scrub.ok()) << scrub.status().ToString();
  EXPECT_EQ(scrub->bad_chunks, 0u);
  EXPECT_EQ(scrub->bytes, model.size());
}

void ApplyWrite(std::vector<uint8_t>* model, uint64_t off, const std::vector<uint8_t>& data) {
  if (model->size() < off + data.size()) model->resize(off + data.size(), 0);
  std::copy(data.begin(), data.end(), model->begin() + static_cast<ptrdiff_t>(off));
}

// Every checksum test runs on both object formats (object_format.h): checksums in blocks
// inside the object file, and in a sidecar beside it (OSTs formatted before 2026-11-26).
class ObjectChecksumTest : public ::testing::TestWithParam<ObjectFormat> {
 protected:
  bool Inline() const { return GetParam() == ObjectFormat::kInline; }
  std::unique_ptr<ObjectStore> Store(const std::string& dir) {
    return MakeStore(dir, 3, 512, GetParam());
  }
  // The offset of object byte x in the object file.
  uint64_t DataPos(uint64_t x) const { return Inline() ? InlineDataPos(x) : x; }
  // The file holding chunk i's checksum, and the offset of its first byte there.
  std::pair<std::string, uint64_t> CrcAt(const std::string& dir, uint64_t id,
                                         uint64_t chunk) const {
    if (Inline()) return {ObjectPath(dir, id), InlineCrcPos(chunk)};
    return {ObjectPath(dir, id) + ".crc", chunk * 4};
  }
  // The stored checksum of chunk i, read behind the store's back (0: none).
  uint32_t StoredCrc(const std::string& dir, uint64_t id, uint64_t chunk) const {
    auto [path, pos] = CrcAt(dir, id, chunk);
    uint32_t v = 0;
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return 0;
    const ssize_t n = pread(fd, &v, sizeof v, static_cast<off_t>(pos));
    close(fd);
    return n == sizeof v ? v : 0;
  }
};

INSTANTIATE_TEST_SUITE_P(Formats, ObjectChecksumTest,
                         ::testing::Values(ObjectFormat::kSidecar, ObjectFormat::kInline),
                         [](const ::testing::TestParamInfo<ObjectFormat>& info) {
                           return info.param == ObjectFormat::kInline ? "Inline" : "Sidecar";
                         });

TEST_P(ObjectChecksumTest, AReadsCrcIsTheSumOfTheBytesItReturns) {
  // Folded from the chunk sums (whole chunks, a short last chunk at the object's end, edges
  // summed directly, a hole with no sums): always the crc32c of exactly the bytes returned.
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  const uint64_t size = 20 * kChunk + 123;
  ASSERT_TRUE(s->Write(0, 9, 0, Pattern(8 * kChunk, 0, 5), false).ok());
  ASSERT_TRUE(s->Write(0, 9, 12 * kChunk, Pattern(size - 12 * kChunk, 12 * kChunk, 6), false)
                  .ok());  // [8, 12) chunks: a hole
  struct Case {
    uint64_t off;
    size_t len;
  };
  for (const Case c : {Case{0, 4 * kChunk}, Case{0, 64 * kChunk}, Case{100, 3 * kChunk},
                       Case{kChunk - 1, 2}, Case{7 * kChunk + 5, 6 * kChunk},
                       Case{19 * kChunk + 7, 5000}, Case{size - 1, 10}, Case{size, 10}}) {
    std::vector<uint8_t> buf(c.len);
    uint64_t object_size = 0;
    uint32_t crc = 0xdeadbeef;
    auto n = s->Read(0, 9, c.off, buf, &object_size, nullptr, &crc);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(crc, Crc32c(buf.data(), *n)) << "read of " << c.len << " at " << c.off;
  }
}

TEST_P(ObjectChecksumTest, AWriteCheckedAgainstItsWireCrcWritesNothingWhenItDiffers) {
  // The bulk checksum lnet leaves to the write (expected_crc), folded from the chunk sums:
  // aligned, unaligned at both ends, inside one chunk, and a short tail at the new end.
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  std::vector<uint8_t> model = Pattern(6 * kChunk, 0, 7);
  ASSERT_TRUE(s->Write(0, 4, 0, model, false).ok());
  struct Case {
    uint64_t off;
    size_t len;
  };
  uint8_t seed = 20;
  for (const Case c : {Case{kChunk, 2 * kChunk}, Case{100, 3 * kChunk}, Case{kChunk + 5, 40},
                       Case{5 * kChunk + 9, 3 * kChunk + 77}}) {
    auto data = Pattern(c.len, c.off, ++seed);
    const uint32_t good = Crc32c(data.data(), data.size());
    const uint32_t bad = good ^ 0x400;
    auto refused = s->Write(0, 4, c.off, data, false, &bad);
    EXPECT_EQ(refused.status().code(), Code::kChecksum) << "at " << c.off;
    ExpectVerifiedContent(*s, 4, model);  // nothing of it written
    auto written = s->Write(0, 4, c.off, data, false, &good);
    ASSERT_TRUE(written.ok()) << written.status().ToString();
    ApplyWrite(&model, c.off, data);
    ExpectVerifiedContent(*s, 4, model);
  }
}

TEST_P(ObjectChecksumTest, FlippedBitReadsAsCorruptNotAsData) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  auto data = Pattern(16 * kChunk, 0, 1);
  ASSERT_TRUE(s->Write(0, 5, 0, data, false).ok());
  FlipBit(ObjectPath(d.path(), 5), DataPos(5 * kChunk + 17));

  Status st = ReadStatus(*s, 5, 0, data.size());
  EXPECT_EQ(st.code(), Code::kCorrupt) << st.ToString();
  EXPECT_EQ(st.ToErrno(), EIO);
  EXPECT_NE(st.message().find("OST 3 object 0:5"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("offset 20480"), std::string::npos) << st.message();
  // An unaligned read that only touches the bad chunk at its edge fails too...
  EXPECT_EQ(ReadStatus(*s, 5, 6 * kChunk - 1, 2).code(), Code::kCorrupt);
  // ...while the chunks around it read fine.
  EXPECT_EQ(ReadAll(*s, 5, 0, 5 * kChunk), std::vector<uint8_t>(data.begin(),
                                                                  data.begin() + 5 * kChunk));
  EXPECT_TRUE(ReadStatus(*s, 5, 6 * kChunk, 10 * kChunk).ok());
}

TEST_P(ObjectChecksumTest, FlippedBitInAChecksumIsCaughtToo) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Write(0, 6, 0, Pattern(4 * kChunk, 0, 2), false).ok());
  auto [path, pos] = CrcAt(d.path(), 6, 2);  // the entry of chunk 2
  FlipBit(path, pos + 1);
  EXPECT_EQ(ReadStatus(*s, 6, 0, 4 * kChunk).code(), Code::kCorrupt);
  EXPECT_EQ(ReadStatus(*s, 6, 0, 2 * kChunk).code(), Code::kOk) << "chunks 0 and 1 are sound";
}

TEST_P(ObjectChecksumTest, PartialChunkWritesKeepChecksumsRight) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  std::vector<uint8_t> model;
  // Unaligned writes inside one chunk, across chunk edges, past the end and over each other.
  const std::pair<uint64_t, size_t> writes[] = {
      {100, 50}, {4000, 200}, {10, 3 * kChunk + 7}, {5 * kChunk + 1, 1}, {kChunk - 1, 2},
      {2 * kChunk, kChunk}, {20 * kChunk + 123, 9000}, {0, 1}};
  uint32_t seed = 10;
  for (auto [off, len] : writes) {
    auto data = Pattern(len, off, seed++);
    ASSERT_TRUE(s->Write(0, 7, off, data, false).ok()) << off;
    ApplyWrite(&model, off, data);
    ExpectVerifiedContent(*s, 7, model);
  }
}

TEST_P(ObjectChecksumTest, TruncateShrinkAndGrowKeepChecksumsRight) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  std::vector<uint8_t> model = Pattern(5 * kChunk + 300, 0, 3);
  ASSERT_TRUE(s->Write(0, 8, 0, model, false).ok());
  for (uint64_t size : {3 * kChunk + 1000, 2 * kChunk, 7 * kChunk + 5, kChunk - 1, uint64_t{0},
                        9 * kChunk + 2}) {
    ASSERT_TRUE(s->Truncate(0, 8, size).ok()) << size;
    model.resize(size, 0);
    ExpectVerifiedContent(*s, 8, model);
    // No checksum describes a chunk past the end.
    const uint64_t chunks = (size + kChunk - 1) / kChunk;
    struct stat st;
    if (Inline()) {
      ASSERT_EQ(stat(ObjectPath(d.path(), 8).c_str(), &st), 0);
      EXPECT_EQ(static_cast<uint64_t>(st.st_size), InlineFileSize(size)) << size;
      for (uint64_t c = chunks; c < chunks + 8; ++c) {
        EXPECT_EQ(StoredCrc(d.path(), 8, c), 0u) << "chunk " << c << " at size " << size;
      }
    } else {
      ASSERT_EQ(stat((ObjectPath(d.path(), 8) + ".crc").c_str(), &st), 0);
      EXPECT_EQ(static_cast<uint64_t>(st.st_size), chunks * 4) << size;
    }
  }
  // Writing again after the grow: the chunk that held the old end is merged right.
  auto data = Pattern(kChunk, 77, 4);
  ASSERT_TRUE(s->Write(0, 8, kChunk / 2, data, false).ok());
  ApplyWrite(&model, kChunk / 2, data);
  ExpectVerifiedContent(*s, 8, model);
}

TEST_P(ObjectChecksumTest, PunchKeepsChecksumsRight) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  std::vector<uint8_t> model = Pattern(12 * kChunk + 500, 0, 5);
  ASSERT_TRUE(s->Write(0, 9, 0, model, false).ok());
  // Inside one chunk, across edges, whole chunks, and through the end of the object.
  const std::pair<uint64_t, uint64_t> punches[] = {
      {100, 10}, {kChunk - 5, 2 * kChunk + 10}, {5 * kChunk, 2 * kChunk},
      {11 * kChunk + 7, 1 << 20}};
  for (auto [off, len] : punches) {
    ASSERT_TRUE(s->Punch(0, 9, off, len).ok()) << off;
    const uint64_t end = std::min<uint64_t>(off + len, model.size());
    std::fill(model.begin() + static_cast<ptrdiff_t>(off),
              model.begin() + static_cast<ptrdiff_t>(end), 0);
    ExpectVerifiedContent(*s, 9, model);
  }
}

TEST_P(ObjectChecksumTest, HolesAndUnchecksummedObjectsReadAsZerosWithoutAlarm) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  // A sparse write leaves chunks that were never written: they read as zeros.
  auto data = Pattern(1000, 0, 6);
  ASSERT_TRUE(s->Write(0, 10, (1 << 20) + 10, data, false).ok());
  std::vector<uint8_t> model((1 << 20) + 10, 0);
  model.insert(model.end(), data.begin(), data.end());
  ExpectVerifiedContent(*s, 10, model);
  if (Inline()) return;  // objects from before checksums are on sidecar OSTs only
  // An object written before checksums existed (no sidecar) reads as it is.
  ASSERT_TRUE(s->Write(0, 11, 0, data, false).ok());
  ASSERT_EQ(unlink((ObjectPath(d.path(), 11) + ".crc").c_str()), 0);
  auto fresh = Store(d.path());  // a restarted OSS: no cached descriptors
  ASSERT_TRUE(fresh);
  ExpectVerifiedContent(*fresh, 11, data);
}

TEST_P(ObjectChecksumTest, AWriteTornByACrashIsRepairedByItsResend) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  std::vector<uint8_t> model = Pattern(4 * kChunk, 0, 7);
  ASSERT_TRUE(s->Write(0, 12, 0, model, false).ok());
  // An OSS killed between a write's data and its checksums: new bytes, old checksum.
  auto small = Pattern(10, 0, 8);
  {
    const int fd = open(ObjectPath(d.path(), 12).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, small.data(), small.size(), DataPos(kChunk + 100)), 10);
    close(fd);
  }
  auto restarted = Store(d.path());
  ASSERT_TRUE(restarted);
  EXPECT_EQ(ReadStatus(*restarted, 12, kChunk, kChunk).code(), Code::kCorrupt)
      << "the torn chunk must not be returned as data";
  // The client resends the unacknowledged write: the chunk is re-summed, not refused.
  ASSERT_TRUE(restarted->Write(0, 12, kChunk + 100, small, false).ok());
  ApplyWrite(&model, kChunk + 100, small);
  ExpectVerifiedContent(*restarted, 12, model);
  // A flipped bit in a chunk nobody rewrites stays an error on read.
  FlipBit(ObjectPath(d.path(), 12), DataPos(3 * kChunk + 9));
  EXPECT_EQ(ReadStatus(*restarted, 12, 3 * kChunk, 10).code(), Code::kCorrupt);
}

TEST_P(ObjectChecksumTest, DestroyLeavesNoFileBehind) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Write(0, 13, 0, Pattern(100, 0, 1), false).ok());
  const std::string crc = ObjectPath(d.path(), 13) + ".crc";
  // A sidecar beside the object, or none at all: the checksums are inside the object file.
  ASSERT_EQ(access(crc.c_str(), F_OK) == 0, !Inline());
  ASSERT_TRUE(s->Destroy(0, 13).ok());
  EXPECT_NE(access(crc.c_str(), F_OK), 0);
  EXPECT_NE(access(ObjectPath(d.path(), 13).c_str(), F_OK), 0);
}

TEST_P(ObjectChecksumTest, ForEachObjectListsObjectsNotSidecarsOrStrayFiles) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  for (uint64_t id : {1, 33, 40}) ASSERT_TRUE(s->Write(0, id, 0, Pattern(10, 0, 1), false).ok());
  std::ofstream(d.path() + "/O/0/d1/junk") << "x";
  std::ofstream(d.path() + "/O/0/d1/0033") << "x";  // not a canonical object name
  std::ofstream(d.path() + "/O/0/d8/2") << "x";     // in the wrong subdirectory
  std::set<uint64_t> seen;
  size_t calls = 0;
  ASSERT_TRUE(s->ForEachObject([&](uint64_t group, uint64_t id) {
                 EXPECT_EQ(group, 0u);
                 seen.insert(id);
                 ++calls;
                 return Status::Ok();
               }).ok());
  EXPECT_EQ(seen, (std::set<uint64_t>{1, 33, 40}));
  EXPECT_EQ(calls, 3u);
}

TEST_P(ObjectChecksumTest, ScrubObjectFindsTheFlippedBitAndCountsBadChunks) {
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  const uint64_t size = (3 << 20) + 123;  // several scrub steps and a partial last chunk
  ASSERT_TRUE(s->Write(0, 14, 0, Pattern(size, 0, 11), false).ok());
  FlipBit(ObjectPath(d.path(), 14), DataPos((2 << 20) + 5000));
  FlipBit(ObjectPath(d.path(), 14), DataPos(size - 1));
  auto r = s->ScrubObject(0, 14);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->bytes, size);
  EXPECT_EQ(r->bad_chunks, 2u);
  EXPECT_EQ(r->first_bad_offset, (2 << 20) + kChunk);
}

TEST_P(ObjectChecksumTest, ReadsRacingOverwritesNeverSeeAMismatch) {
  // A reader must see one write's data with that write's checksums: without the region locks
  // it would read new bytes against old crcs (or the reverse) and report false corruption.
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  constexpr size_t kLen = 3 * kChunk + 100;  // unaligned end: partial chunks too
  const std::vector<uint8_t> a = Pattern(kLen, 0, 50), b = Pattern(kLen, 0, 51);
  ASSERT_TRUE(s->Write(0, 15, 0, a, false).ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) ASSERT_TRUE(s->Write(0, 15, 0, i % 2 ? a : b, false).ok());
  });
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> got = ReadAll(*s, 15, 0, kLen);
    ASSERT_TRUE(got == a || got == b) << "read " << i << " saw a mix or failed";
  }
  stop = true;
  writer.join();
}

TEST_P(ObjectChecksumTest, WritesPunchesAndTruncatesAcrossFourMiBGroups) {
  // kInline cuts an object into 4 MiB groups, each after its block of checksums: a request
  // that crosses a group's edge is two pieces of the file, and neither may touch a block.
  TempDir d;
  auto s = Store(d.path());
  ASSERT_TRUE(s);
  constexpr uint64_t kG = kGroupDataBytes;
  std::vector<uint8_t> model;
  uint32_t seed = 60;
  const std::pair<uint64_t, size_t> writes[] = {
      {kG - 100, 300}, {2 * kG - kChunk, 2 * kChunk}, {10, kG + 5000}, {2 * kG + 7, 1 << 20}};
  for (auto [off, len] : writes) {
    auto data = Pattern(len, off, seed++);
    ASSERT_TRUE(s->Write(0, 16, off, data, false).ok()) << off;
    ApplyWrite(&model, off, data);
  }
  // Aligned and at least 256 KiB: O_DIRECT, in two pieces around the block at 4 MiB.
  lnet::Buffer aligned(2 << 20);
  auto p = Pattern(aligned.size(), 0, seed++);
  std::memcpy(aligned.data(), p.data(), p.size());
  ASSERT_TRUE(s->Write(0, 16, kG - (1 << 20), aligned.span(), false).ok());
  ApplyWrite(&model, kG - (1 << 20), p);
  ExpectVerifiedContent(*s, 16, model);
  // A read across both edges, from a cold cache (a restarted OSS).
  auto restarted = Store(d.path());
  ASSERT_TRUE(restarted);
  EXPECT_EQ(ReadAll(*restarted, 16, kG - 3, kG + 6),
            std::vector<uint8_t>(model.begin() + (kG - 3), model.begin() + (2 * kG + 3)));
  // A punch across an edge, then a shrink into the second group and a grow again.
  ASSERT_TRUE(restarted->Punch(0, 16, kG - 5000, 10'000).ok());
  std::fill(model.begin() + (kG - 5000), model.begin() + (kG + 5000), 0);
  ExpectVerifiedContent(*restarted, 16, model);
  for (uint64_t size : {kG + 3 * kChunk + 9, kG, 3 * kG + 1}) {
    ASSERT_TRUE(restarted->Truncate(0, 16, size).ok()) << size;
    model.resize(size, 0);
    ExpectVerifiedContent(*restarted, 16, model);
  }
  auto data = Pattern(3 * kChunk, 1, seed++);  // over the edge of the grown part
  ASSERT_TRUE(restarted->Write(0, 16, 2 * kG - kChunk - 1, data, false).ok());
  ApplyWrite(&model, 2 * kG - kChunk - 1, data);
  ExpectVerifiedContent(*restarted, 16, model);
  // A bad bit in the third group is found where it is.
  FlipBit(ObjectPath(d.path(), 16), DataPos(2 * kG + 100));
  auto scrub = restarted->ScrubObject(0, 16);
  ASSERT_TRUE(scrub.ok());
  EXPECT_EQ(scrub->bad_chunks, 1u);
  EXPECT_EQ(scrub->first_bad_offset, 2 * kG);
}

TEST(ObjectStoreTest, AnObjectFileCutShortOnDiskReadsAsTheObjectItStillHolds) {
  // A damaged file system may leave an object file cut anywhere, inside a block of
  // checksums too: the store reads what is left, refuses a chunk that lost bytes (kCorrupt,
  // never the bytes), and keeps serving.
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  auto data = Pattern(3 * kGroupDataBytes / 2, 0, 71);  // two groups: 4 MiB and 2 MiB
  ASSERT_TRUE(s->Write(0, 18, 0, data, false).ok());
  const std::string path = ObjectFilePath(d.path(), 18);
  struct Cut {
    uint64_t file_size, object_size;
    bool chunk_lost_bytes;  // the cut is inside a chunk: that chunk no longer verifies
  };
  const Cut cuts[] = {{kGroupFileBytes + 100, kGroupDataBytes, false},  // in the 2nd block
                      {kCrcBlockBytes + 10'000, 10'000, true},          // in the 1st bytes
                      {2000, 0, false}};                                // in the 1st block
  for (const Cut& c : cuts) {
    ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(c.file_size)), 0);
    auto restarted = MakeStore(d.path());  // no cached descriptor
    ASSERT_TRUE(restarted);
    EXPECT_EQ(restarted->Getattr(0, 18)->size, c.object_size) << c.file_size;
    const uint64_t sound = c.object_size / kChunk * kChunk;  // the chunks still whole
    uint64_t size = 0;
    EXPECT_EQ(ReadAll(*restarted, 18, 0, sound, &size),
              std::vector<uint8_t>(data.begin(), data.begin() + sound))
        << c.file_size;
    EXPECT_EQ(size, c.object_size);
    auto scrub = restarted->ScrubObject(0, 18);
    ASSERT_TRUE(scrub.ok()) << scrub.status().ToString();
    EXPECT_EQ(scrub->bytes, c.object_size);
    EXPECT_EQ(scrub->bad_chunks, c.chunk_lost_bytes ? 1u : 0u) << c.file_size;
    if (c.chunk_lost_bytes) {
      EXPECT_EQ(scrub->first_bad_offset, sound);
      EXPECT_EQ(ReadStatus(*restarted, 18, 0, c.object_size).code(), Code::kCorrupt);
    }
  }
}

TEST(ObjectStoreTest, ASmallObjectIsOneFileItsChecksumsThenItsBytes) {
  TempDir d;
  auto s = MakeStore(d.path());
  ASSERT_TRUE(s);
  auto data = Pattern(100'000, 0, 70);
  ASSERT_TRUE(s->Write(0, 17, 0, data, false).ok());
  const std::string path = ObjectFilePath(d.path(), 17);
  EXPECT_NE(access((path + ".crc").c_str(), F_OK), 0) << "no sidecar on a new OST";
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kCrcBlockBytes + data.size());
  EXPECT_EQ(s->Getattr(0, 17)->size, data.size());
  // Raw: 25 checksums, zeros to the end of the block, then the bytes.
  std::vector<uint8_t> raw(st.st_size);
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pread(fd, raw.data(), raw.size(), 0), static_cast<ssize_t>(raw.size()));
  close(fd);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), raw.begin() + kCrcBlockBytes));
  for (uint64_t c = 0; c < kGroupChunks; ++c) {
    uint32_t entry;
    std::memcpy(&entry, raw.data() + 4 * c, 4);
    const uint64_t lo = c * kChunk;
    const uint32_t want =
        lo < data.size() ? internal::ChunkCrc(std::span(data).subspan(
                               lo, std::min<uint64_t>(kChunk, data.size() - lo)))
                         : 0;
    ASSERT_EQ(entry, want) << "chunk " << c;
  }
}

}  // namespace
}  // namespace stria::oss
