#include "oss/uring_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

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
  close(full);
}

}  // namespace
}  // namespace stria::oss
