#include "oss/uring_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>

#include "oss/internal/test_util.h"

namespace stria::oss {
namespace {

using testing::Pattern;
using testing::TempDir;

class UringIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    fd_ = open((dir_.path() + "/f").c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override { close(fd_); }
  TempDir dir_;
  int fd_ = -1;
};

TEST_F(UringIoTest, UsesRealRing) { EXPECT_TRUE(UringIo::UsingRing()); }

TEST_F(UringIoTest, LargeWriteReadSplitsIntoChunks) {
  // 9.5 MiB at an unaligned offset: ten chunks, the last one partial.
  const size_t len = 9 * UringIo::kChunkBytes + UringIo::kChunkBytes / 2 + 3;
  const uint64_t off = 12345;
  auto data = Pattern(len, off, 1);
  ASSERT_TRUE(UringIo::WriteAt(fd_, data, off).ok());
  std::vector<uint8_t> back(len + 100, 0xAA);
  auto n = UringIo::ReadAt(fd_, back, off);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, len);  // stops at end of file
  back.resize(len);
  EXPECT_EQ(back, data);
}

TEST_F(UringIoTest, ReadPastEndIsEmpty) {
  auto data = Pattern(100, 0, 2);
  ASSERT_TRUE(UringIo::WriteAt(fd_, data, 0).ok());
  std::vector<uint8_t> back(4 * UringIo::kChunkBytes);
  auto n = UringIo::ReadAt(fd_, back, 1000);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
}

TEST_F(UringIoTest, ReadAllReadsSeveralFilesInOneGoEachToItsEnd) {
  // Two files: one of 2.5 MiB read in full from an offset (three chunks), one of 100 bytes
  // read past its end, and an empty range; each gets its own count.
  const int fd2 = open((dir_.path() + "/g").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd2, 0);
  const size_t big = 2 * UringIo::kChunkBytes + UringIo::kChunkBytes / 2;
  auto a = Pattern(big, 0, 3);
  auto b = Pattern(100, 0, 4);
  ASSERT_TRUE(UringIo::WriteAt(fd_, a, 0).ok());
  ASSERT_TRUE(UringIo::WriteAt(fd2, b, 0).ok());
  std::vector<uint8_t> ra(big - 7, 0xAA), rb(4096, 0xAA);
  UringIo::ReadRange ranges[3] = {{fd_, ra, 7}, {fd2, rb, 10}, {fd2, {}, 0, 99}};
  Status st = UringIo::ReadAll(ranges);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ranges[0].got, big - 7);
  EXPECT_TRUE(std::equal(ra.begin(), ra.end(), a.begin() + 7));
  EXPECT_EQ(ranges[1].got, 90u);
  EXPECT_TRUE(std::equal(rb.begin(), rb.begin() + 90, b.begin() + 10));
  EXPECT_EQ(rb[90], 0xAA) << "nothing written past the end of file";
  EXPECT_EQ(ranges[2].got, 0u);
  // One bad descriptor fails the whole call.
  UringIo::ReadRange bad[2] = {{fd_, ra, 0}, {-1, rb, 0}};
  EXPECT_EQ(UringIo::ReadAll(bad).code(), Code::kBadF);
  close(fd2);
}

TEST_F(UringIoTest, ReadVFillsItsBuffersInTurnAndStopsAtTheEnd) {
  auto data = Pattern(10'000, 0, 3);
  ASSERT_TRUE(UringIo::WriteAt(fd_, data, 0).ok());
  std::vector<uint8_t> a(4096, 0xAA), gap, b(5000, 0xAA);
  {
    const iovec iov[3] = {{a.data(), a.size()}, {gap.data(), 0}, {b.data(), b.size()}};
    auto n = UringIo::ReadV(fd_, iov, 100);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, a.size() + b.size());
    EXPECT_TRUE(std::equal(a.begin(), a.end(), data.begin() + 100));
    EXPECT_TRUE(std::equal(b.begin(), b.end(), data.begin() + 100 + 4096));
  }
  // The end of the file inside the second buffer, then inside the first.
  std::fill(b.begin(), b.end(), 0xAA);
  {
    const iovec iov[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
    auto n = UringIo::ReadV(fd_, iov, 5000);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 5000u);
    EXPECT_TRUE(std::equal(b.begin(), b.begin() + 904, data.begin() + 5000 + 4096));
    EXPECT_EQ(b[904], 0xAA) << "bytes past the end of the file were written";
    n = UringIo::ReadV(fd_, iov, 9000);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 1000u);
    n = UringIo::ReadV(fd_, iov, 20'000);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 0u);
  }
  // Errors come back as statuses: a bad descriptor, too many buffers.
  const iovec one[1] = {{a.data(), a.size()}};
  EXPECT_EQ(UringIo::ReadV(-1, one, 0).status().ToErrno(), EBADF);
  std::vector<iovec> many(UringIo::kMaxReadVBuffers + 1, iovec{a.data(), 1});
  EXPECT_EQ(UringIo::ReadV(fd_, many, 0).status().code(), Code::kInval);
}

TEST_F(UringIoTest, ReadFromWriteOnlyDescriptorIsAnError) {
  const int wfd = open((dir_.path() + "/w").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(wfd, 0);
  std::vector<uint8_t> back(10);
  auto n = UringIo::ReadAt(wfd, back, 0);
  EXPECT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kBadF);
  close(wfd);
}

TEST_F(UringIoTest, SyncAndFallocate) {
  EXPECT_TRUE(UringIo::Sync(fd_, true).ok());
  EXPECT_TRUE(UringIo::Sync(fd_, false).ok());
  EXPECT_TRUE(UringIo::Fallocate(fd_, 0, 0, 1 << 20).ok());
  EXPECT_EQ(lseek(fd_, 0, SEEK_END), 1 << 20);
  EXPECT_FALSE(UringIo::Sync(-1, false).ok());
}

TEST_F(UringIoTest, NoSpaceComesBackAsENOSPC) {
  // /dev/full fails every write with ENOSPC.
  const int full = open("/dev/full", O_WRONLY);
  if (full < 0) GTEST_SKIP() << "no /dev/full";
  auto data = Pattern(4096, 0, 3);
  Status st = UringIo::WriteAt(full, data, 0);
  EXPECT_EQ(st.code(), Code::kNoSpc) << st.ToString();
  st = UringIo::WriteCached(full, data, 0);
  EXPECT_EQ(st.code(), Code::kNoSpc) << st.ToString();
  close(full);
}

TEST_F(UringIoTest, WriteCachedWritesAllOfItAtItsOffset) {
  // Over what WriteAt wrote: the bytes of both land where they were aimed, nothing else moves.
  auto first = Pattern(300'000, 0, 4);
  ASSERT_TRUE(UringIo::WriteAt(fd_, first, 0).ok());
  auto second = Pattern(100'000, 54'321, 5);
  ASSERT_TRUE(UringIo::WriteCached(fd_, second, 54'321).ok());
  std::copy(second.begin(), second.end(), first.begin() + 54'321);
  std::vector<uint8_t> back(first.size() + 10);
  auto n = UringIo::ReadAt(fd_, back, 0);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, first.size());
  back.resize(*n);
  EXPECT_EQ(back, first);
  EXPECT_FALSE(UringIo::WriteCached(-1, second, 0).ok());
}

}  // namespace
}  // namespace stria::oss
