// On-disk checksums through a real mount: files written through stria-fuse and fsync'ed,
// then one bit of one stored object file flipped on the OST's disk (as a failing disk
// would). After a remount (no client cache), read(2) of the damaged file fails with EIO
// while every other file reads back byte for byte; `lctl scrub` lists exactly that object
// and exits nonzero; rewriting the damaged range makes reads and the scrub clean again.
//
// The tests run in order on one cluster: the suite set-up writes the files and flips the
// bit, the first tests observe the damage, the last one repairs it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

constexpr uint64_t kStripe = 64 << 10;
constexpr uint64_t kVictimSize = 1 << 20;
constexpr uint64_t kFlipOffset = 200'000;                    // inside the victim's object
constexpr uint64_t kChunkStart = kFlipOffset / 4096 * 4096;  // its 4 KiB checksum chunk

std::string OstName(uint32_t idx) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "OST%04x", idx);
  return buf;
}


class ChecksumFaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveFuse()) return;
    ClusterOptions o;
    o.tag = "cksum";
    o.fsname = "cksumfs";
    o.num_oss = 2;
    o.osts_per_oss = 1;
    cluster_ = new Cluster(o);
    Status st = Prepare();
    if (!st.ok()) start_error_ = st.ToString();
  }
  static void TearDownTestSuite() {
    client_.reset();
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
    ASSERT_TRUE(start_error_.empty()) << "set-up failed: " << start_error_;
  }

  static std::string P(const std::string& rel) { return cluster_->mount_point() + "/" + rel; }

  // Starts the cluster, writes the files (fsync'ed), flips one bit of the victim's object on
  // its OST's disk, and remounts so that nothing is served from the client's cache.
  static Status Prepare() {
    STRIA_RETURN_IF_ERROR(cluster_->Start());
    STRIA_ASSIGN_OR_RETURN(client_, ConnectClient(*cluster_));
    for (const auto& [dir, count] : {std::pair<std::string, int>{"one", 1}, {"wide", 2}}) {
      if (mkdir(P(dir).c_str(), 0755) != 0) return ErrnoStatus("mkdir " + dir, errno);
      STRIA_RETURN_IF_ERROR(SetDirLayout(*client_, "/" + dir, Raid0(count, kStripe)));
    }
    // The victim has one stripe, so an offset in its object is the same offset in the file.
    files_["one/victim"] = Pattern(kVictimSize, 1);
    files_["one/other"] = Pattern(300'000, 2);
    files_["wide/a"] = Pattern(3 * kStripe + 77, 3);
    files_["wide/b"] = Pattern(5000, 4);
    for (const auto& [rel, data] : files_) {
      if (int e = WriteFile(P(rel), data, 1 << 20, /*fsync_it=*/true); e != 0) {
        return ErrnoStatus("write " + rel, e);
      }
    }
    STRIA_ASSIGN_OR_RETURN(proto::EntryReply e, Resolve(*client_, "/one/victim"));
    if (e.layout().objects_size() != 1) {
      return Status(Code::kInternal, "victim layout: " + e.layout().ShortDebugString());
    }
    victim_ = e.layout().objects(0);
    const uint64_t id = victim_.object_id();
    const std::string path = cluster_->ost_dir(victim_.ost_idx()) + "/O/" +
                             std::to_string(victim_.group()) + "/d" + std::to_string(id % 32) +
                             "/" + std::to_string(id);
    if (int err = FlipBit(path, ObjectFileOffset(kFlipOffset)); err != 0) {
      return Status(Code::kIO, "flipping a bit of " + path + ": " + strerror(err));
    }
    return cluster_->Remount();
  }

  static CommandResult Scrub(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {BinPath("lctl"), "--mgs", cluster_->mgs_nid(), "scrub"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv);
  }

  // The "corrupt: ..." lines of a scrub report.
  static std::vector<std::string> CorruptLines(const std::string& out) {
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("corrupt:", 0) == 0) lines.push_back(line);
    }
    return lines;
  }

  static Cluster* cluster_;
  static std::unique_ptr<client::Client> client_;
  static std::string start_error_;
  static std::map<std::string, std::vector<uint8_t>> files_;
  static proto::StripeObject victim_;
};

Cluster* ChecksumFaultTest::cluster_ = nullptr;
std::unique_ptr<client::Client> ChecksumFaultTest::client_;
std::string ChecksumFaultTest::start_error_;
std::map<std::string, std::vector<uint8_t>> ChecksumFaultTest::files_;
proto::StripeObject ChecksumFaultTest::victim_;

TEST_F(ChecksumFaultTest, ReadOfTheDamagedRangeIsEIO) {
  const int fd = open(P("one/victim").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  std::vector<uint8_t> buf(4096);
  errno = 0;
  EXPECT_EQ(pread(fd, buf.data(), buf.size(), static_cast<off_t>(kChunkStart)), -1);
  EXPECT_EQ(errno, EIO) << strerror(errno);
  close(fd);
  std::vector<uint8_t> whole;
  EXPECT_EQ(ReadFile(P("one/victim"), &whole), EIO) << "a whole-file read must fail too";
}

TEST_F(ChecksumFaultTest, OtherFilesReadBackIntact) {
  for (const auto& [rel, data] : files_) {
    if (rel == "one/victim") continue;
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(P(rel), &got), 0) << rel;
    EXPECT_EQ(FirstDiff(got, data), -1) << rel;
  }
}

TEST_F(ChecksumFaultTest, ScrubListsExactlyTheDamagedObjectAndExitsNonzero) {
  CommandResult r = Scrub();
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  const std::vector<std::string> lines = CorruptLines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out << r.err;
  const std::string want =
      "corrupt: " + OstName(victim_.ost_idx()) + " object " + std::to_string(victim_.object_id()) +
      " group " + std::to_string(victim_.group()) + " offset " + std::to_string(kChunkStart) + " ";
  EXPECT_EQ(lines[0].rfind(want, 0), 0u) << lines[0] << "\nwanted: " << want;
  // Every OST was scrubbed; the undamaged one reports clean.
  for (int ost = 0; ost < cluster_->num_osts(); ++ost) {
    EXPECT_NE(r.out.find(OstName(ost) + ": "), std::string::npos) << r.out;
  }
  const uint32_t clean_ost = victim_.ost_idx() == 0 ? 1 : 0;
  CommandResult one = Scrub({"--ost", std::to_string(clean_ost)});
  EXPECT_EQ(one.exit_code, 0) << one.out << one.err;
  EXPECT_NE(one.out.find("clean"), std::string::npos) << one.out;
}

// Last: repairs the damage the tests above observe.
TEST_F(ChecksumFaultTest, RewritingTheDamagedRangeMakesReadsAndScrubClean) {
  std::vector<uint8_t>& victim = files_["one/victim"];
  const std::vector<uint8_t> fresh = Pattern(4096, 99);
  std::copy(fresh.begin(), fresh.end(), victim.begin() + static_cast<ptrdiff_t>(kChunkStart));
  const int fd = open(P("one/victim").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(PWriteAll(fd, fresh.data(), fresh.size(), static_cast<off_t>(kChunkStart)), 0);
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  ASSERT_EQ(close(fd), 0);
  ASSERT_TRUE(cluster_->Remount().ok());

  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("one/victim"), &got), 0);
  EXPECT_EQ(FirstDiff(got, victim), -1);
  CommandResult r = Scrub();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(CorruptLines(r.out).empty()) << r.out;
}

}  // namespace
}  // namespace stria::testing
