// Client tunables change what a real mount does, not only what lctl shows (docs/operations.md,
// "Tunables"). Each test sets a tunable on this test's mount only (the setxattr lctl's
// set_param without -P sends, user.stria.lctl.set.NAME on the mount's root: lctl itself
// would set it on every Stria mount of the host, other tests' included) and observes:
//
// - osc.*.checksums=0: the OSS receives the write bulks without a crc32c (kFlagBulkNoCrc),
//   counted by stria_rpc_bulk_requests_total{checksum="none"} on its /metrics; with 1 they
//   arrive with one. The data reads back intact either way.
// - osc.*.max_dirty_mb=0: write(2) returns only once the OST has the bytes. With the OSS
//   stopped (SIGSTOP), a write at a non-zero offset returns at once by default (write-behind)
//   and stays blocked until SIGCONT with 0.
// - llite.*.max_read_ahead_mb: the mount's bdi read_ahead_kb follows it (set locally and with
//   set_param -P through the MGS), and a sequential read in 4 KiB pieces reaches the FUSE
//   client as one request per page with 0, as far fewer, larger ones with 4.
//
// The same /metrics show what a mount on an OSS's own host does without any tunable: its
// cold reads land straight in its buffers (lnet/shared_bulk.h), counted by
// stria_rpc_bulk_replies_shared_total, and read back intact; its writes leave their bytes
// in its shared arena for the OSS to read (stria_rpc_bulk_requests_shared_total). Mount 0
// is started with STRIA_LNET_SHARED_WRITES=0, so that its writes cross the socket and the
// checksums tunable has a wire to apply to; mount 1, with the default, checks the writes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

using std::chrono::milliseconds;

std::string PortFile() { return "/tmp/stria-tunables-test-" + std::to_string(getpid()) + ".oss"; }

class TunablesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveFuse()) return;
    ClusterOptions o;
    o.tag = "tunables";
    o.fsname = "tunfs";
    o.num_oss = 1;
    o.osts_per_oss = 1;
    // A short lease: the mount keepalives (and so notices -P params) every 500 ms.
    o.mds_args = {"--client-lease-ms", "2000"};
    o.oss_args = {"--metrics-addr", "127.0.0.1:0", "--metrics-port-file", PortFile()};
    o.num_mounts = 2;  // mount 1: ColdWritesFromThisHostStayInTheMountsArena
    o.mount = false;
    cluster_ = new Cluster(o);
    Status st = cluster_->Start();
    // Mount 0 sends its write bulk over the socket, where osc.*.checksums applies: to an
    // OSS on its host it would leave the bytes in its shared arena (lnet/shared_bulk.h),
    // where no wire and no wire crc is.
    setenv("STRIA_LNET_SHARED_WRITES", "0", 1);
    if (st.ok()) st = cluster_->Mount(0);
    unsetenv("STRIA_LNET_SHARED_WRITES");
    if (!st.ok()) start_error_ = st.ToString();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
    unlink(PortFile().c_str());
  }
  void SetUp() override {
    if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse";
    ASSERT_TRUE(start_error_.empty()) << start_error_;
  }

  static std::string Mnt() { return cluster_->mount_point(); }

  // lctl set_param NAME=VALUE (without -P) on this test's mount only.
  static int SetLocal(const std::string& name, const std::string& value) {
    const std::string attr = "user.stria.lctl.set." + name;
    return setxattr(Mnt().c_str(), attr.c_str(), value.data(), value.size(), 0) == 0 ? 0 : errno;
  }

  static CommandResult Lctl(std::vector<std::string> args) {
    args.insert(args.begin(), {BinPath("lctl"), "--mgs", cluster_->mgs_nid()});
    return RunCommand(args);
  }

  // The value of a sample of the OSS's /metrics, parsed by python3-prometheus-client.
  static uint64_t OssMetric(const std::string& sample) {
    std::ifstream in(PortFile());
    int port = 0;
    in >> port;
    CommandResult r = RunCommand({"/usr/bin/python3",
                                  std::string(STRIA_SOURCE_DIR) + "/tests/metrics_scrape.py",
                                  "http://127.0.0.1:" + std::to_string(port) + "/metrics"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find(sample + " ");
    if (at == std::string::npos) {
      ADD_FAILURE() << "no " << sample << " in\n" << r.out;
      return 0;
    }
    return std::stoull(r.out.substr(at + sample.size() + 1));
  }

  struct LocalCounts {
    uint64_t reads = 0, fallbacks = 0;
  };
  // This mount's llite.*.local_reads.
  static LocalCounts LocalReadCounts() {
    CommandResult r = Lctl({"get_param", "-n", "llite.tunfs-*.local_reads"});
    std::smatch m;
    LocalCounts c;
    EXPECT_TRUE(std::regex_search(r.out, m, std::regex("reads: ([0-9]+)\nfallbacks: ([0-9]+)")))
        << r.out << r.err;
    if (m.size() == 3) {
      c.reads = std::stoull(m[1]);
      c.fallbacks = std::stoull(m[2]);
    }
    return c;
  }

  // The read RPCs the OST has served (obdfilter.*.stats `read_bytes` samples).
  static uint64_t OssReadSamples() {
    CommandResult r = Lctl({"get_param", "-n", "obdfilter.tunfs-OST0000.stats"});
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex("(^|\n)read_bytes +([0-9]+) samples"))) return 0;
    return std::stoull(m[2]);
  }

  static CommandResult Lfs(std::vector<std::string> args) {
    args.insert(args.begin(), BinPath("lfs"));
    return RunCommand(args);
  }

  // The `read` samples of this mount's llite stats.
  static uint64_t LliteReads() {
    CommandResult r = Lctl({"get_param", "-n", "llite.tunfs-*.stats"});
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex("(^|\n)read +([0-9]+) samples"))) return 0;
    return std::stoull(m[2]);
  }

  // /sys/class/bdi/MAJ:MIN/read_ahead_kb of the mount.
  static std::string BdiReadAheadPath() {
    struct stat st;
    if (stat(Mnt().c_str(), &st) != 0) return "";
    return "/sys/class/bdi/" + std::to_string(major(st.st_dev)) + ":" +
           std::to_string(minor(st.st_dev)) + "/read_ahead_kb";
  }
  static int ReadAheadKb() {
    std::ifstream in(BdiReadAheadPath());
    int kb = -1;
    in >> kb;
    return kb;
  }
  static bool WaitReadAheadKb(int kb, int timeout_ms) {
    for (int waited = 0; waited < timeout_ms; waited += 50) {
      if (ReadAheadKb() == kb) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return ReadAheadKb() == kb;
  }

  static Cluster* cluster_;
  static std::string start_error_;
};
Cluster* TunablesTest::cluster_ = nullptr;
std::string TunablesTest::start_error_;

// SIGCONTs the OSS however the test leaves its scope.
struct Resume {
  pid_t pid;
  ~Resume() { kill(pid, SIGCONT); }
};

TEST_F(TunablesTest, ChecksumsOffSendsWriteBulksWithoutCrc) {
  const std::string none = "stria_rpc_bulk_requests_total{checksum=\"none\",service=\"ost\"}";
  const std::string crc = "stria_rpc_bulk_requests_total{checksum=\"crc32c\",service=\"ost\"}";
  const std::vector<uint8_t> data = Pattern(1 << 20, 7);

  // Default (1): every write bulk carries a crc32c.
  uint64_t none0 = OssMetric(none), crc0 = OssMetric(crc);
  ASSERT_EQ(WriteFile(Mnt() + "/with-crc", data), 0);
  uint64_t none1 = OssMetric(none), crc1 = OssMetric(crc);
  EXPECT_EQ(none1, none0);
  EXPECT_GT(crc1, crc0);

  ASSERT_EQ(SetLocal("osc.*.checksums", "0"), 0);
  CommandResult r = Lctl({"get_param", "osc.tunfs-*.checksums"});
  EXPECT_NE(r.out.find(".checksums=0\n"), std::string::npos) << r.out << r.err;
  ASSERT_EQ(WriteFile(Mnt() + "/without-crc", data), 0);
  uint64_t none2 = OssMetric(none), crc2 = OssMetric(crc);
  EXPECT_GT(none2, none1);
  EXPECT_EQ(crc2, crc1);
  std::vector<uint8_t> back;
  ASSERT_EQ(ReadFile(Mnt() + "/without-crc", &back), 0);
  EXPECT_EQ(FirstDiff(back, data), -1);

  ASSERT_EQ(SetLocal("osc.*.checksums", "1"), 0);
  ASSERT_EQ(WriteFile(Mnt() + "/with-crc-again", data), 0);
  EXPECT_EQ(OssMetric(none), none2);
  EXPECT_GT(OssMetric(crc), crc2);
  // Out of range: refused by the mount, the value stays.
  EXPECT_EQ(SetLocal("osc.*.checksums", "2"), EINVAL);
}

// A file of whole pages and one of 100,000 bytes, read cold: the OSS (on this host) puts
// each read's bytes in the mount's shared arena, and they are the bytes written.
TEST_F(TunablesTest, ColdReadsFromAnOssOnThisHostLandInTheMountsBuffers) {
  const std::string shared = "stria_rpc_bulk_replies_shared_total{service=\"ost\"}";
  // Reads from the OSS, not from its files (the next test).
  ASSERT_EQ(SetLocal("osc.*.local_reads", "0"), 0);
  struct Restore {
    ~Restore() { SetLocal("osc.*.local_reads", "1"); }
  } restore;
  for (size_t size : {size_t{3} << 20, size_t{100'000}}) {
    const std::string path = Mnt() + "/shared-" + std::to_string(size);
    const std::vector<uint8_t> data = Pattern(size, size);
    ASSERT_EQ(WriteFile(path, data, 1 << 20, /*fsync_it=*/true), 0);
    const int fd = open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);  // cold: from the OSS
    close(fd);
    const uint64_t before = OssMetric(shared);
    std::vector<uint8_t> back;
    ASSERT_EQ(ReadFile(path, &back), 0);
    EXPECT_EQ(FirstDiff(back, data), -1) << size;
    EXPECT_GT(OssMetric(shared), before) << size;
  }
}

// A mount on the OSS's host leaves its writes' bytes in its shared arena, where the OSS
// reads them (lnet/shared_bulk.h): the OSS counts them as shared, none come in the stream,
// and they read back intact, cold, from a file of whole pages and one of 100,000 bytes.
TEST_F(TunablesTest, WritesFromThisHostStayInTheMountsArena) {
  ASSERT_TRUE(cluster_->Mount(1).ok());
  // The mount's first write connects it to the OSS, which then offers to take its writes
  // in place: that one's copy was made before, in private memory.
  ASSERT_EQ(WriteFile(cluster_->mount_point(1) + "/arena-write-first", Pattern(4096, 1), 4096,
                      /*fsync_it=*/true),
            0);
  const std::string shared = "stria_rpc_bulk_requests_shared_total{service=\"ost\"}";
  const std::string crc = "stria_rpc_bulk_requests_total{checksum=\"crc32c\",service=\"ost\"}";
  for (size_t size : {size_t{3} << 20, size_t{100'000}}) {
    const std::string path = cluster_->mount_point(1) + "/arena-write-" + std::to_string(size);
    const std::vector<uint8_t> data = Pattern(size, size + 3);
    const uint64_t shared0 = OssMetric(shared), crc0 = OssMetric(crc);
    ASSERT_EQ(WriteFile(path, data, 1 << 20, /*fsync_it=*/true), 0);
    EXPECT_GE(OssMetric(shared) - shared0, size > (1 << 20) ? 3u : 1u) << size;
    EXPECT_EQ(OssMetric(crc), crc0) << size;
    const int fd = open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(fd);
    std::vector<uint8_t> back;
    ASSERT_EQ(ReadFile(Mnt() + "/arena-write-" + std::to_string(size), &back), 0);  // mount 0
    EXPECT_EQ(FirstDiff(back, data), -1) << size;
  }
  EXPECT_TRUE(cluster_->Unmount(1).ok());
}

// Small reads of an OST this host serves read its object file (client/local_reads.h): the
// OSS serves none of them, the bytes are the ones written, and a chunk damaged on disk is
// still refused, by the OSS that the client hands the read to.
TEST_F(TunablesTest, SmallReadsOfAnOstOnThisHostReadItsFilesAndTheOssJudgesDamage) {
  const std::string path = Mnt() + "/local-small";
  const std::vector<uint8_t> data = Pattern(300'000, 21);
  ASSERT_EQ(WriteFile(path, data, 1 << 20, /*fsync_it=*/true), 0);
  auto drop_pages = [&] {
    const int fd = open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(fd);
  };
  // 4 KiB reads that bypass the page cache, as a random reader's: (pread result, bytes).
  auto read_4k = [&](off_t offset) {
    const int fd = open(path.c_str(), O_RDONLY | O_DIRECT);
    EXPECT_GE(fd, 0);
    void* p = nullptr;
    EXPECT_EQ(posix_memalign(&p, 4096, 4096), 0);
    const ssize_t n = pread(fd, p, 4096, offset);
    const int err = errno;
    std::vector<uint8_t> got(static_cast<uint8_t*>(p),
                             static_cast<uint8_t*>(p) + std::max<ssize_t>(n, 0));
    free(p);
    close(fd);
    return std::make_pair(n < 0 ? -err : n, got);
  };
  auto expect_data = [&](off_t offset) {
    auto [n, got] = read_4k(offset);
    const size_t want = std::min<size_t>(4096, data.size() - static_cast<size_t>(offset));
    ASSERT_EQ(n, static_cast<ssize_t>(want)) << offset;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + offset)) << offset;
  };

  drop_pages();
  const LocalCounts c0 = LocalReadCounts();
  const uint64_t oss0 = OssReadSamples();
  std::vector<uint8_t> back;
  ASSERT_EQ(ReadFile(path, &back), 0);  // the whole file, cold
  EXPECT_EQ(FirstDiff(back, data), -1);
  for (off_t at : {0L, 4096L * 17, 4096L * 73}) expect_data(at);  // 73: the last, partial chunk
  const LocalCounts c1 = LocalReadCounts();
  EXPECT_GE(c1.reads - c0.reads, 4u);
  EXPECT_EQ(c1.fallbacks, c0.fallbacks);
  EXPECT_EQ(OssReadSamples(), oss0) << "the OSS served reads this host could do itself";

  // Damage chunk 17 on disk: the local check fails, the client asks the OSS, the OSS refuses.
  CommandResult r = Lfs({"getstripe", "-y", path});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("l_fid: *0x[0-9a-f]+:0x([0-9a-f]+):0x0")))
      << r.out;
  const uint64_t id = std::stoull(m[1], nullptr, 16);
  ASSERT_EQ(FlipBit(ObjectFilePath(cluster_->ost_dir(0), id), ObjectFileOffset(4096 * 17 + 5)), 0);
  drop_pages();
  EXPECT_EQ(read_4k(4096 * 17).first, -EIO);
  const LocalCounts c2 = LocalReadCounts();
  EXPECT_GT(c2.fallbacks, c1.fallbacks);  // the EIO is the OSS's: a local read never fails
  expect_data(4096 * 18);                 // the chunks around it still read, here
  EXPECT_GT(LocalReadCounts().reads, c2.reads);

  // Switched off, every read goes to the OSS.
  ASSERT_EQ(SetLocal("osc.*.local_reads", "0"), 0);
  const LocalCounts c3 = LocalReadCounts();
  const uint64_t oss3 = OssReadSamples();
  expect_data(4096 * 30);
  EXPECT_EQ(LocalReadCounts().reads, c3.reads);
  EXPECT_GT(OssReadSamples(), oss3);
  ASSERT_EQ(SetLocal("osc.*.local_reads", "1"), 0);
}

TEST_F(TunablesTest, MaxDirtyMbZeroMakesWritesSynchronous) {
  const std::vector<uint8_t> piece = Pattern(256 << 10, 3);
  // Whether a write at `offset` of an open file returns while the OSS is stopped (within
  // 1.5 s); the OSS is continued afterwards and the write must then complete.
  auto returns_while_oss_stopped = [&](int fd, off_t offset) {
    std::atomic<bool> done{false};
    std::atomic<ssize_t> n{-1};
    ::kill(cluster_->oss_pid(0), SIGSTOP);
    Resume resume{cluster_->oss_pid(0)};
    std::thread writer([&] {
      n = pwrite(fd, piece.data(), piece.size(), offset);
      done = true;
    });
    for (int i = 0; i < 30 && !done; ++i) std::this_thread::sleep_for(milliseconds(50));
    const bool returned = done.load();
    ::kill(cluster_->oss_pid(0), SIGCONT);
    writer.join();
    EXPECT_EQ(n.load(), static_cast<ssize_t>(piece.size()));
    return returned;
  };

  // Writes `name`'s first piece with the OSS running, then its second with the OSS stopped:
  // whether that write(2) returned while stopped. No process is started from here while the
  // file is open (tests/harness/cluster.h, Forks).
  auto second_write_returns_early = [&](const std::string& name) {
    int fd = open((Mnt() + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(pwrite(fd, piece.data(), piece.size(), 0), static_cast<ssize_t>(piece.size()));
    const bool early = returns_while_oss_stopped(fd, piece.size());
    EXPECT_EQ(close(fd), 0);
    return early;
  };

  EXPECT_TRUE(second_write_returns_early("behind"))
      << "by default a write is copied and sent in the background";
  ASSERT_EQ(SetLocal("osc.*.max_dirty_mb", "0"), 0);
  EXPECT_FALSE(second_write_returns_early("through"))
      << "with max_dirty_mb=0 write(2) returns once the OST has the bytes";
  ASSERT_EQ(SetLocal("osc.*.max_dirty_mb", "8"), 0);

  std::vector<uint8_t> back;
  ASSERT_EQ(ReadFile(Mnt() + "/through", &back), 0);
  ASSERT_EQ(back.size(), 2 * piece.size());
  EXPECT_TRUE(std::equal(piece.begin(), piece.end(), back.begin() + piece.size()));
}

TEST_F(TunablesTest, MaxReadAheadMbSetsTheMountsReadahead) {
  const std::string path = BdiReadAheadPath();
  ASSERT_EQ(access(path.c_str(), R_OK), 0) << path;
  // At mount: the default 8 MiB.
  EXPECT_EQ(ReadAheadKb(), 8 << 10) << path;

  // Reads the file `name` (4 MiB) in 4 KiB pieces from a cold cache; the FUSE reads it took.
  const std::vector<uint8_t> data = Pattern(4 << 20, 11);
  auto fuse_reads = [&](const std::string& name) -> uint64_t {
    const std::string file = Mnt() + "/" + name;
    EXPECT_EQ(WriteFile(file, data), 0);
    EXPECT_EQ(SetLocal("llite.*.stats", "clear"), 0);
    int fd = open(file.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // the write left its pages cached
    std::vector<uint8_t> buf(4096);
    uint64_t total = 0;
    for (ssize_t n; (n = read(fd, buf.data(), buf.size())) > 0;) total += n;
    close(fd);
    EXPECT_EQ(total, data.size());
    return LliteReads();
  };

  ASSERT_EQ(SetLocal("llite.*.max_read_ahead_mb", "0"), 0);
  EXPECT_TRUE(WaitReadAheadKb(0, 2000)) << ReadAheadKb();
  const uint64_t without = fuse_reads("ra0");
  ASSERT_EQ(SetLocal("llite.*.max_read_ahead_mb", "4"), 0);
  EXPECT_TRUE(WaitReadAheadKb(4 << 10, 2000)) << ReadAheadKb();
  const uint64_t with = fuse_reads("ra4");
  // Without readahead every 4 KiB read(2) is a FUSE read (1024 of them); with it the kernel
  // asks for growing windows.
  EXPECT_GE(without, 512u);
  EXPECT_LT(with * 4, without) << "with readahead " << with << ", without " << without;

  // Through the MGS: the mount applies a -P param at its next keepalive.
  CommandResult r = Lctl({"set_param", "-P", "llite.*.max_read_ahead_mb=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitReadAheadKb(2 << 10, 10'000)) << ReadAheadKb();
  r = Lctl({"set_param", "-P", "llite.*.max_read_ahead_mb=4096"});
  EXPECT_NE(r.exit_code, 0) << "out of range (0-1024) must be refused";
  ASSERT_EQ(Lctl({"set_param", "-P", "llite.*.max_read_ahead_mb="}).exit_code, 0);
  EXPECT_TRUE(WaitReadAheadKb(8 << 10, 10'000)) << ReadAheadKb();
}

}  // namespace
}  // namespace stria::testing
