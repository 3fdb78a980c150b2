// LocalReads against a real OSS service on a real RpcServer, over the local socket (or TCP
// where a test turns local sockets off), with its OST in a temporary directory.
#include "client/local_reads.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/osc_stats.h"
#include "client/striped_io.h"
#include "lnet/lnd.h"
#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "oss/internal/test_util.h"
#include "oss/object_format.h"
#include "oss/oss_service.h"
#include "tests/harness/test_util.h"

namespace stria::client {
namespace {

constexpr uint32_t kOst = 0;

// OST RPCs to the one OSS of the test, as the Client sends them.
class OneOss final : public OstTransport {
 public:
  explicit OneOss(lnet::RpcClient* rpc) : rpc_(rpc) {}
  Status OstCallRaw(uint32_t, uint16_t opcode, std::string_view request, std::string* reply,
                    const lnet::CallBulk& bulk, int) override {
    return rpc_->CallRaw(opcode, request, reply, bulk);
  }
  Status MdsCallBulk(uint16_t, std::string_view, std::string*, const lnet::CallBulk&,
                     int) override {
    return Status(Code::kInval, "no MDS here");
  }

 private:
  lnet::RpcClient* rpc_;
};

class LocalReadsTest : public ::testing::Test {
 protected:
  // local: whether the client reaches the OSS over the local socket (else TCP).
  void Start(bool local) {
    lnet::LndConfig c = saved_;
    c.local_sockets = local;
    lnet::ConfigureLnds(c);
    uuid_ = oss::NewUuid();
    ASSERT_TRUE(oss::FormatOst(dir_.path(), oss::OstMeta{"testfs", kOst, uuid_}).ok());
    auto store = oss::ObjectStore::Open(dir_.path(), kOst, "testfs");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE(service_.AddOst(std::move(*store)).ok());
    lnet::ServerOptions so;
    so.name = "oss-test";
    so.worker_threads = 2;
    server_ = std::make_unique<lnet::RpcServer>(so);
    service_.Register(server_.get());
    Status st = server_->Start(lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", 0});
    ASSERT_TRUE(st.ok()) << st.ToString();
    lnet::ClientOptions co;
    co.retry_deadline_ms = 2000;
    rpc_ = std::make_unique<lnet::RpcClient>(
        lnet::Nid{lnet::Lnd::kTcp, "127.0.0.1", server_->port()}, co);
    transport_ = std::make_unique<OneOss>(rpc_.get());
    local_ = std::make_unique<LocalReads>(transport_.get(), nullptr);
  }
  void TearDown() override {
    local_.reset();
    rpc_.reset();
    if (server_) server_->Stop();
    lnet::ConfigureLnds(saved_);
  }

  // LocalReads::TryRead: whether it read here (an error fails the test).
  bool Try(const proto::ObjectId& obj, uint64_t offset, std::span<uint8_t> buf, size_t* got) {
    Result<bool> r = local_->TryRead(obj, offset, buf, got);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && *r;
  }

  static proto::ObjectId Obj(uint64_t id) {
    proto::ObjectId o;
    o.set_ost_idx(kOst);
    o.set_object_id(id);
    return o;
  }

  void Write(uint64_t id, uint64_t offset, const std::vector<uint8_t>& data) {
    proto::OstIoRequest req;
    *req.mutable_object() = Obj(id);
    req.set_offset(offset);
    req.set_length(data.size());
    iovec iov{const_cast<uint8_t*>(data.data()), data.size()};
    lnet::CallBulk bulk;
    bulk.out = std::span<const iovec>(&iov, 1);
    proto::OstIoReply rep;
    ASSERT_TRUE(rpc_->Call(proto::OP_OST_WRITE, req, &rep, bulk).ok());
  }

  Result<proto::OstLocalAccessReply> Access() {
    proto::OstLocalAccessRequest req;
    req.set_ost_idx(kOst);
    proto::OstLocalAccessReply rep;
    STRIA_RETURN_IF_ERROR(rpc_->Call(proto::OP_OST_LOCAL_ACCESS, req, &rep));
    return rep;
  }

  std::string ObjectFile(uint64_t id) const {
    return dir_.path() + "/" + oss::ObjectRelPath(0, id);
  }

  const lnet::LndConfig saved_ = lnet::CurrentLndConfig();
  oss::testing::TempDir dir_;
  std::string uuid_;
  oss::OssService service_;
  std::unique_ptr<lnet::RpcServer> server_;
  std::unique_ptr<lnet::RpcClient> rpc_;
  std::unique_ptr<OneOss> transport_;
  std::unique_ptr<LocalReads> local_;
};

// Descriptors of this process open read-only on the object files under `dir`: the local
// reads' (the OSS in this process keeps its own open for writing; the RPC threads' sockets
// come and go meanwhile).
size_t OpenFdsUnder(const std::string& dir, bool direct_only = false) {
  char real[PATH_MAX];
  if (realpath(dir.c_str(), real) == nullptr) return 0;
  const std::string prefix = std::string(real) + "/O/";
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code rec;
    const std::string target = std::filesystem::read_symlink(e.path(), rec).string();
    if (rec || !target.starts_with(prefix)) continue;
    std::ifstream info("/proc/self/fdinfo/" + e.path().filename().string());
    for (std::string key; info >> key;) {
      if (key != "flags:") continue;
      std::string octal;
      info >> octal;
      const unsigned long flags = std::stoul(octal, nullptr, 8);
      if ((flags & O_ACCMODE) == O_RDONLY && (!direct_only || (flags & O_DIRECT))) ++n;
      break;
    }
  }
  return n;
}

TEST_F(LocalReadsTest, AClientOnTheOssHostReadsVerifiedBytesFromTheObjectFile) {
  Start(/*local=*/true);
  auto rep = Access();
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  char real[PATH_MAX];
  ASSERT_NE(realpath(dir_.path().c_str(), real), nullptr);
  EXPECT_EQ(rep->dir(), real);
  EXPECT_EQ(rep->uuid(), uuid_);
  EXPECT_EQ(rep->object_format(), static_cast<uint32_t>(oss::ObjectFormat::kInline));

  // An object of 4 MiB + 10,000 bytes: its second group starts with a partial chunk's end.
  const std::vector<uint8_t> data = oss::testing::Pattern(oss::kGroupDataBytes + 10'000, 0, 5);
  Write(1, 0, data);
  std::vector<uint8_t> buf(64 << 10);
  size_t got = 0;
  ASSERT_TRUE(Try(Obj(1), 0, buf, &got));  // a group's start: one read
  EXPECT_EQ(got, buf.size());
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin()));
  ASSERT_TRUE(Try(Obj(1), 4096 * 9, std::span(buf).first(4096), &got));
  EXPECT_EQ(got, 4096u);
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 4096, data.begin() + 4096 * 9));
  // The object's end: only what exists comes back.
  ASSERT_TRUE(Try(Obj(1), oss::kGroupDataBytes + 8192, buf, &got));
  EXPECT_EQ(got, 10'000u - 8192);
  EXPECT_TRUE(
      std::equal(buf.begin(), buf.begin() + got, data.begin() + oss::kGroupDataBytes + 8192));
  ASSERT_TRUE(Try(Obj(1), oss::kGroupDataBytes + 16384, buf, &got));
  EXPECT_EQ(got, 0u);
  EXPECT_EQ(local_->reads(), 4u);

  // Reads that do not qualify go to the OSS without a look: unaligned, across two groups
  // through the page cache.
  EXPECT_FALSE(Try(Obj(1), 100, std::span(buf).first(4096), &got));
  EXPECT_FALSE(Try(Obj(1), oss::kGroupDataBytes - 4096, std::span(buf).first(8192), &got));
  // Larger reads only in whole pages into page-aligned memory (by O_DIRECT).
  void* mem = nullptr;
  ASSERT_EQ(posix_memalign(&mem, 4096, 8 << 20), 0);
  std::unique_ptr<void, decltype(&free)> hold(mem, &free);
  std::span<uint8_t> aligned(static_cast<uint8_t*>(mem), 8 << 20);
  EXPECT_FALSE(Try(Obj(1), 0, aligned.subspan(512, 1 << 20), &got));
  EXPECT_FALSE(Try(Obj(1), 0, aligned.first((1 << 20) + 100), &got));
  EXPECT_EQ(local_->reads(), 4u);
  // Across the two groups, to the object's end: only what exists, verified.
  ASSERT_TRUE(Try(Obj(1), 1 << 20, aligned.first(4 << 20), &got));
  EXPECT_EQ(got, data.size() - (1 << 20));
  EXPECT_TRUE(std::equal(aligned.begin(), aligned.begin() + got, data.begin() + (1 << 20)));
  EXPECT_EQ(local_->reads(), 5u);
  // The O_DIRECT descriptor stays with the object's for the next large read.
  EXPECT_EQ(OpenFdsUnder(dir_.path(), /*direct_only=*/true), 1u);
  ASSERT_TRUE(Try(Obj(1), 0, aligned.first(1 << 20), &got));
  EXPECT_TRUE(std::equal(aligned.begin(), aligned.begin() + got, data.begin()));
  EXPECT_EQ(OpenFdsUnder(dir_.path(), /*direct_only=*/true), 1u);
  EXPECT_EQ(local_->reads(), 6u);
  // A missing object: the OSS says what that means.
  EXPECT_FALSE(Try(Obj(2), 0, std::span(buf).first(4096), &got));
  EXPECT_EQ(local_->fallbacks(), 1u);

  // A damaged chunk fails the check: the read goes to the OSS, which refuses it.
  ASSERT_EQ(stria::testing::FlipBit(ObjectFile(1), oss::InlineDataPos(4096 * 9 + 7)), 0);
  EXPECT_FALSE(Try(Obj(1), 4096 * 9, std::span(buf).first(4096), &got));
  EXPECT_EQ(local_->fallbacks(), 2u);
  EXPECT_FALSE(Try(Obj(1), 0, aligned.first(1 << 20), &got));  // by O_DIRECT too
  EXPECT_EQ(local_->fallbacks(), 3u);
  EXPECT_TRUE(Try(Obj(1), 4096 * 10, std::span(buf).first(4096), &got));

  // A destroyed object's file goes back to the OST's pool, and may become the next object
  // written: reads of the old one go to the OSS, reads of the new one get its own bytes.
  proto::OstDestroyRequest destroy;
  *destroy.add_objects() = Obj(1);
  proto::OstIoReply rep_d;
  ASSERT_TRUE(rpc_->Call(proto::OP_OST_DESTROY, destroy, &rep_d).ok());
  const uint64_t fallbacks = local_->fallbacks();
  EXPECT_FALSE(Try(Obj(1), 4096 * 10, std::span(buf).first(4096), &got));
  EXPECT_EQ(local_->fallbacks(), fallbacks + 1);
  const std::vector<uint8_t> next = oss::testing::Pattern(20'000, 0, 9);
  Write(3, 0, next);
  ASSERT_TRUE(Try(Obj(3), 0, std::span(buf).first(20'480), &got));
  EXPECT_EQ(got, next.size());
  EXPECT_TRUE(std::equal(next.begin(), next.end(), buf.begin()));
}

// Drops the file at `path` from the page cache (written back first, and tried a few times:
// pages in flight stay); the pages still resident after, or -1 on an error.
long Evict(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long resident = -1;
  struct stat st;
  if (fdatasync(fd) == 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
    const size_t bytes = static_cast<size_t>(st.st_size);
    void* map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    std::vector<unsigned char> vec((bytes + 4095) / 4096);
    for (int attempt = 0; attempt < 5 && resident != 0 && map != MAP_FAILED; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0 ||
          mincore(map, bytes, vec.data()) != 0) {
        resident = -1;
        break;
      }
      resident = 0;
      for (unsigned char v : vec) resident += v & 1;
    }
    if (map != MAP_FAILED) munmap(map, bytes);
  }
  close(fd);
  return resident;
}

// A read whose pages are not in the page cache polls for them (osc.*.local_read_poll_us)
// instead of sleeping; at 0 it does not poll; a cached read does not either. Every one of them returns the object's bytes.
TEST_F(LocalReadsTest, AReadThatMissesThePageCachePollsForItsPages) {
  Start(/*local=*/true);
  ClientTunables tunables;
  local_ = std::make_unique<LocalReads>(transport_.get(), &tunables);
  EXPECT_EQ(tunables.Get("local_read_poll_us"), 200);  // as docs/operations.md says
  EXPECT_EQ(tunables.Set("osc.*.local_read_poll_us", "10001").code(), Code::kInval);
  // The longest poll allowed: a disk slower than 10 ms under the suite's load is one of
  // the three tries below lost, not a failure.
  ASSERT_TRUE(tunables.Set("osc.*.local_read_poll_us", "10000").ok());
  const std::vector<uint8_t> data = oss::testing::Pattern(256 << 10, 0, 7);
  Write(1, 0, data);
  {
    const int fd = open(ObjectFile(1).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    uint8_t byte;
    iovec one{&byte, 1};
    const bool nowait = preadv2(fd, &one, 1, 0, RWF_NOWAIT) >= 0 || errno != EOPNOTSUPP;
    close(fd);
    if (!nowait) GTEST_SKIP() << "this file system has no RWF_NOWAIT: local reads block";
  }
  auto evicted = [&] {
    const long resident = Evict(ObjectFile(1));
    EXPECT_GE(resident, 0);
    return resident == 0;
  };
  // Memory that is not page-aligned: these reads go through the page cache (the next test
  // has the ones by O_DIRECT).
  void* mem = nullptr;
  ASSERT_EQ(posix_memalign(&mem, 4096, 128 << 10), 0);
  std::unique_ptr<void, decltype(&free)> hold(mem, &free);
  std::span<uint8_t> buf(static_cast<uint8_t*>(mem) + 512, 64 << 10);
  size_t got = 0;
  bool polled = false;
  for (int attempt = 0; attempt < 3 && !polled; ++attempt) {
    if (!evicted()) GTEST_SKIP() << "this file system keeps the object's pages (tmpfs?)";
    const uint64_t polls = local_->polls();
    const uint64_t hits = local_->polled();
    // Inside the group: the checksums and the bytes both miss, and are read together.
    ASSERT_TRUE(Try(Obj(1), 4096 * 9, std::span(buf).first(4096), &got));
    ASSERT_EQ(got, 4096u);
    EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 4096, data.begin() + 4096 * 9));
    EXPECT_EQ(local_->polls(), polls + 1);
    polled = local_->polled() == hits + 1;
  }
  EXPECT_TRUE(polled) << "three reads slept for their pages";

  // A group's start (its block and bytes in one read): the same.
  if (!evicted()) GTEST_SKIP() << "this file system keeps the object's pages (tmpfs?)";
  const uint64_t polls = local_->polls();
  ASSERT_TRUE(Try(Obj(1), 0, buf, &got));
  ASSERT_EQ(got, buf.size());
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin()));
  EXPECT_EQ(local_->polls(), polls + 1);
  // Cached now: nothing to poll for.
  ASSERT_TRUE(Try(Obj(1), 0, buf, &got));
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin()));
  EXPECT_EQ(local_->polls(), polls + 1);

  // Off: a read that misses sleeps at once, and still gets its bytes.
  ASSERT_TRUE(tunables.Set("osc.*.local_read_poll_us", "0").ok());
  if (!evicted()) GTEST_SKIP() << "this file system keeps the object's pages (tmpfs?)";
  ASSERT_TRUE(Try(Obj(1), 4096 * 9, std::span(buf).first(4096), &got));
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 4096, data.begin() + 4096 * 9));
  ASSERT_TRUE(Try(Obj(1), 0, buf, &got));
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin()));
  EXPECT_EQ(local_->polls(), polls + 1);
}

// Whether the page of the object file at `pos` is in the page cache (-1: cannot tell).
int Resident(const std::string& path, uint64_t pos) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  void* map = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(pos / 4096 * 4096));
  close(fd);
  if (map == MAP_FAILED) return -1;
  unsigned char v = 0;
  const int rc = mincore(map, 4096, &v);
  munmap(map, 4096);
  return rc == 0 ? (v & 1) : -1;
}

// A random read of whole pages into page-aligned memory (as a FUSE request's buffer is) that
// misses the page cache brings its bytes by O_DIRECT while it polls, and leaves them out of
// the page cache; when they are cached, it is served from there. A random read through the
// page cache reads its own pages and no readahead window, even after two cached pages that
// the kernel's readahead would take for a stream's trace.
TEST_F(LocalReadsTest, ARandomReadThatMissesThePageCacheBringsItsBytesByODirect) {
  Start(/*local=*/true);
  ClientTunables tunables;
  local_ = std::make_unique<LocalReads>(transport_.get(), &tunables);
  ASSERT_TRUE(tunables.Set("osc.*.local_read_poll_us", "10000").ok());
  const std::vector<uint8_t> data = oss::testing::Pattern(1 << 20, 0, 11);
  Write(1, 0, data);
  const std::string file = ObjectFile(1);
  {
    const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    uint64_t range[2] = {0, 4096}, stat[5];
    const bool cachestat = syscall(451, fd, range, stat, 0) == 0;
    close(fd);
    if (!cachestat) GTEST_SKIP() << "no cachestat(2) here: random reads go through the page cache";
    io_uring ring;
    if (io_uring_queue_init(4, &ring, 0) != 0) {
      GTEST_SKIP() << "no io_uring here: random reads go through the page cache";
    }
    io_uring_queue_exit(&ring);
  }
  if (Evict(file) != 0) GTEST_SKIP() << "this file system keeps the object's pages (tmpfs?)";
  void* mem = nullptr;
  ASSERT_EQ(posix_memalign(&mem, 4096, 64 << 10), 0);
  std::unique_ptr<void, decltype(&free)> hold(mem, &free);
  std::span<uint8_t> aligned(static_cast<uint8_t*>(mem), 64 << 10);
  std::span<uint8_t> unaligned = aligned.subspan(512, 8192);
  auto bytes_at = [&](std::span<uint8_t> got_bytes, uint64_t at) {
    return std::equal(got_bytes.begin(), got_bytes.end(), data.begin() + static_cast<long>(at));
  };
  size_t got = 0;

  const uint64_t direct = local_->random_direct();
  ASSERT_TRUE(Try(Obj(1), 4096 * 9, aligned.first(4096), &got));
  ASSERT_EQ(got, 4096u);
  EXPECT_TRUE(bytes_at(aligned.first(4096), 4096 * 9));
  EXPECT_EQ(local_->random_direct(), direct + 1);
  EXPECT_EQ(Resident(file, oss::InlineDataPos(4096 * 9)), 0) << "O_DIRECT keeps it out";

  // Read through the page cache, it is cached; then the aligned read takes it from there.
  ASSERT_TRUE(Try(Obj(1), 4096 * 9, unaligned.first(4096), &got));
  EXPECT_TRUE(bytes_at(unaligned.first(4096), 4096 * 9));
  EXPECT_EQ(Resident(file, oss::InlineDataPos(4096 * 9)), 1);
  ASSERT_TRUE(Try(Obj(1), 4096 * 9, aligned.first(4096), &got));
  EXPECT_TRUE(bytes_at(aligned.first(4096), 4096 * 9));
  EXPECT_EQ(local_->random_direct(), direct + 1);

  // Pages 31 and 30 cached, then page 32 read at random: only page 32 comes in.
  for (const uint64_t page : {31, 30, 32}) {
    ASSERT_TRUE(Try(Obj(1), 4096 * page, unaligned.first(4096), &got));
    EXPECT_TRUE(bytes_at(unaligned.first(4096), 4096 * page));
  }
  EXPECT_EQ(Resident(file, oss::InlineDataPos(4096 * 32)), 1);
  EXPECT_EQ(Resident(file, oss::InlineDataPos(4096 * 33)), 0) << "read ahead of a random read";
  EXPECT_EQ(Resident(file, oss::InlineDataPos(4096 * 34)), 0);
  EXPECT_EQ(local_->random_direct(), direct + 1);

  // A damaged chunk read by O_DIRECT goes to the OSS, as it does through the page cache.
  ASSERT_EQ(stria::testing::FlipBit(file, oss::InlineDataPos(4096 * 40 + 7)), 0);
  ASSERT_EQ(Evict(file), 0);
  const uint64_t fallbacks = local_->fallbacks();
  EXPECT_FALSE(Try(Obj(1), 4096 * 40, aligned.first(4096), &got));
  EXPECT_EQ(local_->fallbacks(), fallbacks + 1);
  EXPECT_EQ(Resident(file, oss::InlineDataPos(4096 * 40)), 0) << "not read by O_DIRECT";
  EXPECT_EQ(local_->random_direct(), direct + 1);

  // A forked child makes its own ring (the parent's is not its to submit to), and the
  // parent's still serves the parent.
  ASSERT_EQ(Evict(file), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<bool> r = local_->TryRead(Obj(1), 4096 * 50, aligned.first(4096), &got);
    const bool ok = r.ok() && *r && got == 4096 && bytes_at(aligned.first(4096), 4096 * 50) &&
                    local_->random_direct() == direct + 2;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's read failed";
  ASSERT_TRUE(Try(Obj(1), 4096 * 60, aligned.first(4096), &got));
  EXPECT_TRUE(bytes_at(aligned.first(4096), 4096 * 60));
  EXPECT_EQ(local_->random_direct(), direct + 2);
}

// The descriptors of the objects read last stay open, kMaxOpenObjects at most; a read of one
// of them opens nothing, and one whose file was replaced at its path goes to the OSS.
TEST_F(LocalReadsTest, ObjectFilesStayOpenForTheNextReadsBoundedInNumber) {
  Start(/*local=*/true);
  const std::vector<uint8_t> data = oss::testing::Pattern(8192, 0, 3);
  const size_t objects = kMaxOpenObjects + 20;
  for (uint64_t id = 1; id <= objects; ++id) Write(id, 0, data);
  std::vector<uint8_t> buf(4096);
  size_t got = 0;
  ASSERT_TRUE(Try(Obj(1), 0, buf, &got));  // the OST's directory is open from now on
  const size_t fds0 = OpenFdsUnder(dir_.path());
  EXPECT_EQ(fds0, 1u);
  const uint64_t checks0 = local_->path_checks();
  for (uint64_t id = 2; id <= objects; ++id) {
    ASSERT_TRUE(Try(Obj(id), 0, buf, &got)) << id;
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin()));
  }
  // Opened by its path with no destroy on the OST since: the first read checks nothing more.
  EXPECT_EQ(local_->path_checks(), checks0);
  EXPECT_EQ(OpenFdsUnder(dir_.path()), kMaxOpenObjects) << "one kept per object, up to the bound";
  // The most recent ones read again: no descriptor more.
  for (uint64_t id = objects; id > objects - 10; --id) ASSERT_TRUE(Try(Obj(id), 4096, buf, &got));
  EXPECT_EQ(OpenFdsUnder(dir_.path()), kMaxOpenObjects);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin() + 4096));
  // With no destroy on the OST since a kept object's path was checked, reading it checks
  // nothing: the OSS's destroy count says no file has moved.
  const uint64_t checks = local_->path_checks();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Try(Obj(objects), 0, buf, &got));
  EXPECT_EQ(local_->path_checks(), checks);

  // A destroy: the object's file goes back to the OST's pool and becomes another object
  // written next (the pool hands out the file it got last), bytes and checksums. The kept
  // descriptor would read that object's bytes as this one's: the destroy count sends the
  // read to a check of the path, and so to the OSS.
  const uint64_t victim = objects;
  struct stat st;
  ASSERT_EQ(stat(ObjectFile(victim).c_str(), &st), 0);
  proto::OstDestroyRequest destroy;
  *destroy.add_objects() = Obj(victim);
  proto::OstIoReply rep_d;
  ASSERT_TRUE(rpc_->Call(proto::OP_OST_DESTROY, destroy, &rep_d).ok());
  const std::vector<uint8_t> other = oss::testing::Pattern(8192, 0, 7);
  uint64_t reused = 0;
  for (uint64_t id = objects + 1; id < objects + 600 && reused == 0; ++id) {
    Write(id, 0, other);
    struct stat now;
    ASSERT_EQ(stat(ObjectFile(id).c_str(), &now), 0);
    if (now.st_ino == st.st_ino && now.st_dev == st.st_dev) reused = id;
  }
  ASSERT_NE(reused, 0u) << "the destroyed object's file was not handed out again";
  const uint64_t fallbacks = local_->fallbacks();
  EXPECT_FALSE(Try(Obj(victim), 0, buf, &got));
  EXPECT_EQ(local_->fallbacks(), fallbacks + 1);
  EXPECT_GT(local_->path_checks(), checks);
  ASSERT_TRUE(Try(Obj(reused), 0, buf, &got)) << "the new object is opened and read";
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), other.begin()));
}

TEST_F(LocalReadsTest, OnlyAPeerOnTheOssHostLearnsWhereTheOstIs) {
  Start(/*local=*/false);
  auto rep = Access();
  EXPECT_EQ(rep.status().code(), Code::kInval) << rep.status().ToString();
  Write(1, 0, oss::testing::Pattern(8192, 0, 1));
  std::vector<uint8_t> buf(4096);
  size_t got = 0;
  EXPECT_FALSE(Try(Obj(1), 0, buf, &got));
  EXPECT_EQ(local_->reads(), 0u);
}

TEST_F(LocalReadsTest, AnOssThatDoesNotAnswerFailsTheReadOnceAndIsNotAskedAgainAtOnce) {
  Start(/*local=*/true);
  server_->Stop();
  std::vector<uint8_t> buf(4096);
  size_t got = 0;
  const auto t0 = std::chrono::steady_clock::now();
  Result<bool> r = local_->TryRead(Obj(1), 0, buf, &got, /*deadline_ms=*/500);
  ASSERT_FALSE(r.ok());  // as the read's own RPC would, within the read's deadline
  EXPECT_TRUE(r.status().code() == Code::kDisconnected || r.status().code() == Code::kTimeout)
      << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  r = local_->TryRead(Obj(1), 0, buf, &got, 500);  // within kRecheckInterval: to the OSS
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r);
}

// A process that may not open the OST's files (a user's, through libstria) reads over the
// socket, and does not try each read again. This thread alone gives up root's file access
// (setfsuid is per thread); the OSS's threads keep theirs.
TEST_F(LocalReadsTest, AProcessThatMayNotOpenTheFilesLeavesThemToTheOss) {
  Start(/*local=*/true);
  Write(1, 0, oss::testing::Pattern(8192, 0, 3));
  Write(2, 0, oss::testing::Pattern(8192, 0, 4));
  std::vector<uint8_t> buf(4096);
  size_t got = 0;
  ASSERT_TRUE(Try(Obj(1), 0, buf, &got));  // as root: the OST is known, its files readable
  setfsuid(65534);
  const bool nobody = setfsuid(-1) == 65534;
  // Object 2: one this process has no descriptor of yet (those it opened stay usable, as
  // any descriptor does after a change of credentials).
  EXPECT_FALSE(Try(Obj(2), 0, buf, &got));  // EACCES under the 0700 test directory
  const uint64_t fallbacks = local_->fallbacks();
  EXPECT_EQ(fallbacks, 1u);
  EXPECT_FALSE(Try(Obj(2), 4096, buf, &got));  // not tried again: no second fallback
  EXPECT_EQ(local_->fallbacks(), fallbacks);
  setfsuid(0);
  ASSERT_TRUE(nobody);
  EXPECT_EQ(local_->reads(), 1u);
}

TEST_F(LocalReadsTest, AnOssWithLocalReadsOffSaysSo) {
  Start(/*local=*/true);
  lnet::LndConfig c = lnet::CurrentLndConfig();
  c.local_reads = false;
  lnet::ConfigureLnds(c);
  auto rep = Access();
  EXPECT_EQ(rep.status().code(), Code::kInval);
  EXPECT_NE(rep.status().message().find("STRIA_LOCAL_READS"), std::string::npos);
}

TEST_F(LocalReadsTest, ADirectoryOfAnotherOstIsNotReadFrom) {
  oss::testing::TempDir other;
  ASSERT_TRUE(oss::FormatOst(other.path(), oss::OstMeta{"testfs", 1, oss::NewUuid()}).ok());
  Result<int> fd = LocalReads::OpenOstDir(other.path(), "not-its-uuid");
  EXPECT_EQ(fd.status().code(), Code::kStale) << fd.status().ToString();
  EXPECT_EQ(LocalReads::OpenOstDir("relative/dir", "x").status().code(), Code::kInval);
  EXPECT_FALSE(LocalReads::OpenOstDir(other.path() + "/missing", "x").ok());
  Result<oss::OstMeta> meta = oss::ReadOstMeta(other.path());
  ASSERT_TRUE(meta.ok());
  fd = LocalReads::OpenOstDir(other.path(), meta->uuid);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  close(*fd);
}

// A read below the size seen at the last read of a kept descriptor asks the file no size: an
// object truncated since, or truncated and grown again, must still read as the OSS would
// answer (nothing past the new end; zeros where it was cut), never its old bytes.
TEST_F(LocalReadsTest, AKeptObjectTruncatedSinceItsLastReadShowsNoOldBytes) {
  Start(/*local=*/true);
  const std::vector<uint8_t> data = oss::testing::Pattern(64 << 10, 0, 6);
  Write(1, 0, data);
  std::vector<uint8_t> buf(4096);
  size_t got = 0;
  ASSERT_TRUE(Try(Obj(1), 0, buf, &got));  // kept, its size (64 KiB) known
  auto truncate = [&](uint64_t size) {
    proto::OstTruncateRequest req;
    *req.mutable_object() = Obj(1);
    req.set_size(size);
    proto::OstIoReply rep;
    ASSERT_TRUE(rpc_->Call(proto::OP_OST_TRUNCATE, req, &rep).ok());
  };
  truncate(16 << 10);
  // Past the new end, below the old one: not served from the old bytes.
  buf.assign(buf.size(), 0xEE);
  if (Try(Obj(1), 32 << 10, buf, &got)) {
    EXPECT_EQ(got, 0u);
  }
  EXPECT_EQ(buf[0], 0xEE);
  // That sent the read to the OSS, and the next ones ask the file its size again: at and
  // past the new end they are served here, as before the truncate was seen.
  ASSERT_TRUE(Try(Obj(1), 16 << 10, buf, &got));
  EXPECT_EQ(got, 0u);
  ASSERT_TRUE(Try(Obj(1), 12 << 10, std::span(buf).first(4096), &got));
  EXPECT_EQ(got, 4096u);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin() + (12 << 10)));
  // Grown again past the cut: the cut reads as zeros, the new bytes as written.
  const std::vector<uint8_t> tail = oss::testing::Pattern(4096, 60 << 10, 7);
  Write(1, 60 << 10, tail);
  bool local = Try(Obj(1), 32 << 10, buf, &got);
  if (local) {
    EXPECT_EQ(got, buf.size());
    EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](uint8_t b) { return b == 0; }));
  }
  ASSERT_TRUE(Try(Obj(1), 60 << 10, buf, &got));
  EXPECT_EQ(got, buf.size());
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), tail.begin()));
  // A cut inside a chunk: the chunk's kept part, and nothing after it.
  truncate((8 << 10) + 100);
  buf.assign(buf.size(), 0xEE);
  local = Try(Obj(1), 8 << 10, buf, &got);
  if (local) {
    EXPECT_EQ(got, 100u);
    EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 100, data.begin() + (8 << 10)));
  }
  if (Try(Obj(1), 12 << 10, buf, &got)) {
    EXPECT_EQ(got, 0u);
  }
}

}  // namespace
}  // namespace stria::client
