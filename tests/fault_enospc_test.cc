// Full OSTs through a real mount. OST 1 lives on a 32 MiB tmpfs; OSSes heartbeat every
// 500 ms so the MGS learns its free space quickly. Faults injected: one OST filled to
// ENOSPC. Checks:
//   - a file striped onto the full OST gets ENOSPC (not EIO, not a hang) from write(2),
//     fsync(2) or close(2), and its size afterwards claims no byte that is not stored: it
//     ends with data that was written, every byte below it is written data or a hole
//     (zeros) left by a failed write, and nothing fsync'ed before is lost;
//   - writes that fail after close(2) returned are reported by the file's next fsync;
//   - the other OSTs keep serving reads and writes;
//   - new files avoid the full OST (the MDS allocator skips OSTs below their reserve), a
//     stripe_count -1 file gets every other OST;
//   - once the file is unlinked and the space comes back, new files use the OST again.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "mds/internal/layout_alloc.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

constexpr int kFullOst = 1;
constexpr uint64_t kTmpfsBytes = 32ull << 20;
using Clock = std::chrono::steady_clock;

class EnospcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
    if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs for the OST needs root";
    ClusterOptions o;
    o.tag = "enospc";
    o.fsname = "nospcfs";
    o.tmpfs_ost_bytes = {{kFullOst, kTmpfsBytes}};
    o.oss_args = {"--heartbeat-ms", "500"};
    Status st = StartWithClient(o, &cluster_, &client_);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  std::string P(const std::string& rel) const { return cluster_->mount_point() + "/" + rel; }

  // The OST indexes of a file's stripes.
  std::vector<uint32_t> OstsOf(const std::string& rel) {
    auto e = Resolve(*client_, "/" + rel);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    std::vector<uint32_t> out;
    if (e.ok()) {
      for (const auto& o : e->layout().objects()) out.push_back(o.ost_idx());
    }
    return out;
  }

  // Waits until the MGS reports OST `idx` as nearly full (or not), as the allocator sees it.
  bool WaitForFull(uint32_t idx, bool full, int timeout_ms) {
    auto t0 = Clock::now();
    while (Clock::now() - t0 < std::chrono::milliseconds(timeout_ms)) {
      proto::GetConfigRequest req;
      proto::FsConfig cfg;
      if (client_->MdsCall(proto::OP_MGS_GET_CONFIG, req, &cfg).ok()) {
        for (const auto& o : cfg.osts()) {
          if (o.index() == idx && o.bytes_total() != 0 && mds::OstNearlyFull(o) == full) {
            return true;
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(EnospcTest, FullOstGivesEnospcAndNewFilesAvoidIt) {
  // Before: the MGS knows OST 1's space and it is not full.
  ASSERT_TRUE(WaitForFull(kFullOst, false, 10'000)) << "no free space reported for OST 1";
  ASSERT_EQ(mkdir(P("pinned").c_str(), 0755), 0);
  ASSERT_TRUE(SetDirLayout(*client_, "/pinned", Raid0(1, 1 << 20, kFullOst)).ok());

  // Fill it through the mount: write 1 MiB chunks, fsync every 4, until something fails.
  const uint64_t kMax = 2 * kTmpfsBytes;
  const auto data = Pattern(kMax, 42);
  const auto t0 = Clock::now();
  int fd = open(P("pinned/big").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  uint64_t written = 0, synced = 0;
  int err = 0;
  std::string where;
  while (written < kMax && err == 0) {
    err = PWriteAll(fd, data.data() + written, 1 << 20, written);
    if (err != 0) {
      where = "write";
      break;
    }
    written += 1 << 20;
    if ((written >> 20) % 4 == 0) {
      if (fsync(fd) != 0) {
        err = errno;
        where = "fsync";
        break;
      }
      synced = written;
    }
  }
  if (err == 0 && fsync(fd) != 0) {
    err = errno;
    where = "final fsync";
  }
  int close_err = close(fd) == 0 ? 0 : errno;
  if (err == 0) {
    err = close_err;
    where = "close";
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(err, ENOSPC) << "filling a 32 MiB OST: " << where << " gave " << strerror(err)
                         << " after " << written << " bytes";
  EXPECT_TRUE(close_err == 0 || close_err == ENOSPC) << "close: " << strerror(close_err);
  EXPECT_LT(secs, 60) << "ENOSPC took too long to surface";
  EXPECT_LE(synced, kTmpfsBytes);
  fprintf(stderr, "enospc: %s gave ENOSPC after %llu bytes written, %llu fsync'ed, %.1f s\n",
          where.c_str(), static_cast<unsigned long long>(written),
          static_cast<unsigned long long>(synced), secs);

  // The size claims only stored bytes: it ends at the end of a write the OST acknowledged
  // (the last block below it holds written data, not a hole), what was fsync'ed is exact,
  // and every byte below the size is either what was written or zero (a hole left by a
  // write that failed while a later one, split by the kernel, succeeded).
  struct stat st {};
  ASSERT_EQ(stat(P("pinned/big").c_str(), &st), 0);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  EXPECT_GE(size, synced);
  EXPECT_LE(size, kTmpfsBytes);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("pinned/big"), &got), 0);
  ASSERT_EQ(got.size(), size);
  EXPECT_EQ(FirstDiff(std::vector<uint8_t>(got.begin(), got.begin() + synced),
                      std::vector<uint8_t>(data.begin(), data.begin() + synced)),
            -1)
      << "fsync'ed bytes were lost";
  uint64_t holes = 0, wrong = 0;
  for (uint64_t i = synced; i < size; ++i) {
    if (got[i] == data[i]) continue;
    if (got[i] == 0) {
      ++holes;
    } else {
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0u) << "bytes below the size that were never written";
  const uint64_t tail = std::min<uint64_t>(size, 4096);
  EXPECT_EQ(FirstDiff(std::vector<uint8_t>(got.end() - tail, got.end()),
                      std::vector<uint8_t>(data.begin() + size - tail, data.begin() + size)),
            -1)
      << "the file's size (" << size << ") claims bytes that were not stored: its last "
      << tail << " bytes are not the data written there";
  fprintf(stderr, "enospc: size %llu, %llu bytes of holes left by failed writes\n",
          static_cast<unsigned long long>(size), static_cast<unsigned long long>(holes));

  // A write to the full OST, then close(2): it may return before the write fails (it does
  // not wait for it), and then the file's next fsync, on another descriptor, reports it.
  {
    const int wfd = open(P("pinned/big").c_str(), O_WRONLY);
    ASSERT_GE(wfd, 0) << strerror(errno);
    const int werr = PWriteAll(wfd, data.data(), 1 << 20, 40ull << 20);
    const int cerr = close(wfd) == 0 ? 0 : errno;
    const int sfd = open(P("pinned/big").c_str(), O_WRONLY);
    ASSERT_GE(sfd, 0) << strerror(errno);
    const int serr = fsync(sfd) == 0 ? 0 : errno;
    close(sfd);
    EXPECT_TRUE(werr == ENOSPC || cerr == ENOSPC || serr == ENOSPC)
        << "writes past a full OST: write " << strerror(werr) << ", close " << strerror(cerr)
        << ", the next fsync " << strerror(serr);
    ASSERT_EQ(stat(P("pinned/big").c_str(), &st), 0);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), size) << "the size claims the failed writes";
  }

  // The other OSTs keep serving.
  for (int ost : {0, 2, 3}) {
    const std::string d = "on" + std::to_string(ost);
    ASSERT_EQ(mkdir(P(d).c_str(), 0755), 0);
    ASSERT_TRUE(SetDirLayout(*client_, "/" + d, Raid0(1, 1 << 20, ost)).ok());
    const auto v = Pattern((3 << 20) + 7, ost);
    ASSERT_EQ(WriteFile(P(d + "/f"), v, 1 << 20, true), 0) << "OST " << ost;
    std::vector<uint8_t> back;
    ASSERT_EQ(ReadFile(P(d + "/f"), &back), 0);
    EXPECT_EQ(FirstDiff(back, v), -1) << "OST " << ost;
  }

  // New files avoid it once the MGS has heard it is full.
  ASSERT_TRUE(WaitForFull(kFullOst, true, 10'000)) << "the MGS never learnt OST 1 is full";
  std::set<uint32_t> used;
  for (int i = 0; i < 12; ++i) {
    const std::string rel = "new" + std::to_string(i);
    ASSERT_EQ(WriteFile(P(rel), Pattern(100'000, i), 1 << 20, true), 0) << rel;
    for (uint32_t o : OstsOf(rel)) used.insert(o);
  }
  EXPECT_EQ(used.count(kFullOst), 0u) << "a new file was placed on the full OST";
  EXPECT_EQ(used.size(), 3u);
  ASSERT_EQ(mkdir(P("wide").c_str(), 0755), 0);
  ASSERT_TRUE(SetDirLayout(*client_, "/wide", Raid0(-1, 64 << 10)).ok());
  const auto wide = Pattern((1 << 20) + 3, 7);
  ASSERT_EQ(WriteFile(P("wide/f"), wide, 1 << 20, true), 0) << "a wide file on the other OSTs";
  auto wide_osts = OstsOf("wide/f");
  EXPECT_EQ(wide_osts.size(), 3u);
  for (uint32_t o : wide_osts) EXPECT_NE(o, static_cast<uint32_t>(kFullOst));

  // Space comes back (the unlinked file's object is destroyed asynchronously): the OST is
  // used again.
  ASSERT_EQ(unlink(P("pinned/big").c_str()), 0);
  ASSERT_TRUE(WaitForFull(kFullOst, false, 20'000)) << "OST 1 never reported its space back";
  // Its 32 MiB against the other OSTs' disk is an imbalance that free-space weighting (QoS)
  // would rightly keep it out of; this test is about the full/not-full rule, so round robin.
  proto::SetParamRequest rr;
  rr.set_name("lod.*.qos_threshold_rr");
  rr.set_value("100");
  proto::SetParamReply rr_rep;
  ASSERT_TRUE(client_->MdsCall(proto::OP_MGS_SET_PARAM, rr, &rr_rep).ok());
  bool back_on_it = false;
  for (int i = 0; i < 8 && !back_on_it; ++i) {
    const std::string rel = "again" + std::to_string(i);
    ASSERT_EQ(WriteFile(P(rel), Pattern(1000, i), 1 << 20, true), 0);
    for (uint32_t o : OstsOf(rel)) back_on_it |= o == static_cast<uint32_t>(kFullOst);
  }
  EXPECT_TRUE(back_on_it) << "OST 1 got no new objects after its space came back";
}

}  // namespace
}  // namespace stria::testing
