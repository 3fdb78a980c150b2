#include "client/local_reads.h"

#include <fcntl.h>
#include <liburing.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>

#include "client/osc_stats.h"
#include "client/striped_io.h"
#include "common/log.h"
#include "common/tunables.h"
#include "lnet/lnd.h"
#include "oss/object_format.h"

namespace stria::client {

namespace {

using oss::kCrcBlockBytes;
using oss::kCrcChunk;
using oss::kCrcEntryBytes;
using oss::kGroupDataBytes;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// How the buffered reads of one TryRead wait for pages not yet in the page cache
// (LocalReads' header, "Waiting for the disk"). Its reads share one poll.
struct CacheWait {
  // > 0: poll for them (RWF_NOWAIT) for up to this long in all before sleeping.
  int64_t poll_ns = 0;
  // A second range (length 0: none), asked for (POSIX_FADV_WILLNEED) at the next read's
  // first miss, so that its disk read runs alongside that one rather than after it.
  int also_fd = -1;
  off_t also_pos = 0;
  size_t also_len = 0;
  // Set once the file system has refused RWF_NOWAIT (then every read blocks); may be null.
  std::atomic<bool>* no_nowait = nullptr;
  // Out: whether some pages were missing (the first miss starts the poll, until
  // `deadline`), and whether a read then slept for them.
  bool missed = false;
  bool slept = false;
  int64_t deadline = 0;
  // Marks a miss; the first starts the poll.
  void Missed() {
    if (!missed) deadline = NowNs() + poll_ns;
    missed = true;
  }
};

// Reads exactly the iovecs' bytes at `pos`, retrying short reads; how many it got (fewer only
// at the end of the file), or -1. With `wait`, the read is first tried without blocking
// (RWF_NOWAIT: one system call when the pages are cached); at a miss the rest of it and
// wait->also_* are asked for, then polled for until the wait's deadline, then slept for.
ssize_t PreadvFull(int fd, iovec* iov, int n, off_t pos, CacheWait* wait = nullptr) {
  size_t total = 0;
  bool nowait = wait != nullptr && !wait->slept &&
                (wait->no_nowait == nullptr || !wait->no_nowait->load(std::memory_order_relaxed));
  bool asked = false;  // this read's pages (and wait->also_*) asked for
  while (n > 0) {
    const ssize_t r = preadv2(fd, iov, n, pos, nowait ? RWF_NOWAIT : 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && nowait && errno == EOPNOTSUPP) {  // the file system has no RWF_NOWAIT
      if (wait->no_nowait != nullptr) wait->no_nowait->store(true, std::memory_order_relaxed);
      nowait = false;
      continue;
    }
    if (r < 0 && nowait && errno == EAGAIN) {
      if (!asked) {
        asked = true;
        size_t left = 0;
        for (int i = 0; i < n; ++i) left += iov[i].iov_len;
        posix_fadvise(fd, pos, static_cast<off_t>(left), POSIX_FADV_WILLNEED);
        if (wait->also_len > 0) {
          posix_fadvise(wait->also_fd, wait->also_pos, static_cast<off_t>(wait->also_len),
                        POSIX_FADV_WILLNEED);
          wait->also_len = 0;
        }
        wait->Missed();
      }
      if (wait->poll_ns <= 0 || NowNs() >= wait->deadline) {
        nowait = false;
        wait->slept = true;
      } else {
        sched_yield();  // the poll takes only a CPU that nothing else wants
      }
      continue;
    }
    if (r < 0) return -1;
    if (r == 0) break;
    total += static_cast<size_t>(r);
    pos += r;
    size_t left = static_cast<size_t>(r);
    while (n > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --n;
    }
    if (n > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return static_cast<ssize_t>(total);
}

// Whether all of [pos, pos + len) of `fd` is in the page cache, asked without reading it
// (cachestat(2), Linux 6.5); nullopt where the kernel cannot tell.
std::optional<bool> AllCached(int fd, off_t pos, size_t len) {
#if defined(SYS_cachestat)
  constexpr long kCachestat = SYS_cachestat;
#elif defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__riscv)
  constexpr long kCachestat = 451;
#else
  constexpr long kCachestat = -1;
#endif
  struct {
    uint64_t off, len;
  } range = {static_cast<uint64_t>(pos), len};
  struct {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  } stat = {};
  static std::atomic<bool> unknown{kCachestat < 0};
  if (unknown.load(std::memory_order_relaxed)) return std::nullopt;
  if (syscall(kCachestat, fd, &range, &stat, 0) != 0) {
    // Not there, or refused (seccomp): never asked again.
    if (errno == ENOSYS || errno == EINVAL || errno == EPERM) {
      unknown.store(true, std::memory_order_relaxed);
    }
    return std::nullopt;
  }
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t first = static_cast<uint64_t>(pos) / page;
  const uint64_t pages = (static_cast<uint64_t>(pos) + len + page - 1) / page - first;
  return stat.nr_cache >= pages;
}

// One thread's io_uring for the reads whose bytes come by O_DIRECT while the thread polls
// (LocalReads' header, "Waiting for the disk"), made at the thread's first such read. One
// read at a time: a read started must be finished before the next starts and before its
// buffer is used or returned, whatever else fails.
class DirectPoller {
 public:
  // The calling thread's poller; null where io_uring cannot be set up (or failed here).
  static DirectPoller* ForThread() {
    thread_local DirectPoller poller;
    if (poller.ok_ && poller.pid_ != getpid()) poller.Reset();  // a forked child's copy
    return poller.ok_ ? &poller : nullptr;
  }
  // Starts reading `len` bytes at `pos` of `fd` (O_DIRECT) into `buf` (page-aligned). False:
  // not started (this thread's reads go the other way from now on).
  bool Start(int fd, void* buf, size_t len, off_t pos) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return false;
    io_uring_prep_read(sqe, fd, buf, static_cast<unsigned>(len), static_cast<uint64_t>(pos));
    io_uring_sqe_set_data64(sqe, ++seq_);
    const int rc = io_uring_submit(&ring_);
    if (rc == 1) return true;
    // The request is still in the queue, unseen by the kernel: it must never be submitted
    // with a later one, so this ring is given up (nothing of it is in flight).
    LOG_WARN("local reads: io_uring_submit: {}", std::strerror(rc < 0 ? -rc : EIO));
    io_uring_queue_exit(&ring_);
    ok_ = false;
    return false;
  }
  // The started read's result (bytes, or -errno): polled for (sched_yield between looks)
  // until `deadline` (CLOCK_MONOTONIC ns), then slept for; *slept says whether it was.
  // Returns only once the read is done.
  ssize_t Finish(int64_t deadline, bool* slept) {
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      // A completion is posted when this thread next leaves the kernel (COOP_TASKRUN):
      // sched_yield is that as well.
      int rc = io_uring_peek_cqe(&ring_, &cqe);
      while (rc != 0 && NowNs() < deadline) {
        sched_yield();
        rc = io_uring_peek_cqe(&ring_, &cqe);
      }
      if (rc != 0) {
        *slept = true;
        rc = io_uring_wait_cqe(&ring_, &cqe);
        if (rc != 0) {
          if (rc != -EINTR && rc != -EAGAIN) {
            LOG_WARN("local reads: io_uring_wait_cqe: {}", std::strerror(-rc));
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          continue;
        }
      }
      const bool mine = io_uring_cqe_get_data64(cqe) == seq_;
      const ssize_t res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (mine) return res;  // (an older one's: only if its Finish was skipped, never)
    }
  }

 private:
  DirectPoller() { Init(); }
  ~DirectPoller() {
    if (ok_) io_uring_queue_exit(&ring_);
  }
  void Init() {
    pid_ = getpid();
    int rc = -EINVAL;
    // COOP_TASKRUN: no interrupt to post a completion to a thread that polls anyway.
    for (const unsigned flags : {IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER,
                                 unsigned{IORING_SETUP_COOP_TASKRUN}, 0u}) {
      io_uring_params p = {};
      p.flags = flags;
      rc = io_uring_queue_init_params(4, &ring_, &p);
      if (rc != -EINVAL) break;  // older kernels refuse the flags they do not know
    }
    ok_ = rc == 0;
    if (!ok_) LOG_DEBUG("local reads: io_uring_queue_init: {}", std::strerror(-rc));
  }
  void Reset() {
    io_uring_queue_exit(&ring_);
    Init();
  }
  io_uring ring_;
  pid_t pid_ = 0;
  uint64_t seq_ = 0;
  bool ok_ = false;
};

bool SameFile(int a, int b) {
  struct stat x, y;
  return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

// The value of `key=` in an ost.meta, or "".
std::string MetaValue(std::string_view text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == '=') {
      return std::string(line.substr(key.size() + 1));
    }
    pos = end + 1;
  }
  return "";
}

// Maps the destroy counters in OST directory `dir_fd` read-only; null when they cannot be.
const oss::DestroyCounters* MapDestroys(int dir_fd) {
  const int fd = openat(dir_fd, oss::kDestroysFile, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st;
  void* p = fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= oss::kDestroysFileBytes
                ? mmap(nullptr, oss::kDestroysFileBytes, PROT_READ, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<const oss::DestroyCounters*>(p);
}

}  // namespace

LocalReads::~LocalReads() {
  for (auto& [idx, o] : osts_) {
    if (o.dir_fd >= 0) close(o.dir_fd);
  }
  for (int fd : retired_) close(fd);
  // Open objects that point at them are gone with objects_, which the caller no longer reads.
  for (const oss::DestroyCounters* d : mapped_) {
    munmap(const_cast<oss::DestroyCounters*>(d), oss::kDestroysFileBytes);
  }
}

Result<int> LocalReads::OpenOstDir(const std::string& dir, const std::string& uuid) {
  if (dir.empty() || dir[0] != '/') return Status(Code::kInval, "OST directory is not absolute");
  const int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open OST directory " + dir, errno);
  const int meta = openat(fd, "ost.meta", O_RDONLY | O_CLOEXEC);
  if (meta < 0) {
    Status st = ErrnoStatus("open " + dir + "/ost.meta", errno);
    close(fd);
    return st;
  }
  std::array<char, 4096> text{};
  const ssize_t n = pread(meta, text.data(), text.size(), 0);
  close(meta);
  const std::string found =
      n > 0 ? MetaValue(std::string_view(text.data(), static_cast<size_t>(n)), "uuid") : "";
  if (found.empty() || found != uuid) {
    close(fd);
    return Status(Code::kStale, dir + " holds OST " + (found.empty() ? "?" : found) +
                                    ", not the OSS's " + uuid + " (another host's directory)");
  }
  return fd;
}

Result<int> LocalReads::Resolve(uint32_t ost_idx, int deadline_ms, bool* counts_destroys) {
  *counts_destroys = false;
  proto::OstLocalAccessRequest req;
  req.set_ost_idx(ost_idx);
  std::string body, reply;
  req.SerializeToString(&body);
  Status st =
      transport_->OstCallRaw(ost_idx, proto::OP_OST_LOCAL_ACCESS, body, &reply, {}, deadline_ms);
  // Resent until the read's deadline and still unanswered: the read fails as its own RPC
  // would have.
  if (st.retryable()) return st;
  proto::OstLocalAccessReply rep;
  if (st.ok() && !rep.ParseFromString(reply)) {
    st = Status(Code::kProtocol, "OST local access reply does not parse");
  }
  if (st.ok() && rep.object_format() != static_cast<uint32_t>(oss::ObjectFormat::kInline)) {
    st = Status(Code::kInval, "its checksums are in sidecar files");
  }
  Result<int> fd = st.ok() ? OpenOstDir(rep.dir(), rep.uuid()) : Result<int>(st);
  if (!fd.ok()) {
    LOG_DEBUG("OST {}: reads go to the OSS: {}", ost_idx, fd.status().message());
    return -1;
  }
  LOG_DEBUG("OST {}: small reads from {} on this host", ost_idx, rep.dir());
  *counts_destroys = rep.counts_destroys();
  return *fd;
}

Result<LocalReads::OstView> LocalReads::OstDir(uint32_t ost_idx, int deadline_ms) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    auto it = osts_.find(ost_idx);
    if (it != osts_.end() && now - it->second.checked < kRecheckInterval) {
      if (it->second.forbidden) return OstView{};
      return OstView{it->second.dir_fd, it->second.destroys};
    }
    // This thread asks; meanwhile the others go on with what is known (at first: the OSS).
    Ost& o = osts_[ost_idx];
    o.checked = now;
  }
  bool counts_destroys = false;
  Result<int> resolved = Resolve(ost_idx, deadline_ms, &counts_destroys);
  const int fd = resolved.ok() ? *resolved : -1;
  std::lock_guard lock(mu_);
  Ost& o = osts_[ost_idx];
  // Unreachable: the reads of the next kRecheckInterval go to the OSS (and fail there, or
  // find it back) without asking again.
  o.checked = std::chrono::steady_clock::now();
  o.forbidden = false;  // tried again
  const bool same_dir = fd >= 0 && o.dir_fd >= 0 && SameFile(fd, o.dir_fd);
  if (same_dir) {
    close(fd);  // unchanged: readers keep the descriptor they have
  } else {
    // Another thread may be reading under the old descriptor: it stays open, retired (one
    // per move of an OST, or per loss and return of its OSS, over the process's life).
    if (o.dir_fd >= 0) retired_.push_back(o.dir_fd);
    o.dir_fd = fd;
  }
  // The counters are mapped once per directory (a check every kRecheckInterval of the same
  // one keeps its mapping); a mapping replaced stays until the end, like a retired
  // descriptor: open objects may hold it, and check their path again until reopened.
  if (!counts_destroys || o.dir_fd < 0) {
    o.destroys = nullptr;
  } else if (!same_dir || o.destroys == nullptr) {
    o.destroys = MapDestroys(o.dir_fd);
    if (o.destroys != nullptr) mapped_.push_back(o.destroys);
  }
  if (!resolved.ok()) return resolved.status();
  return OstView{o.dir_fd, o.destroys};
}

void LocalReads::Forbidden(uint32_t ost_idx) {
  std::lock_guard lock(mu_);
  Ost& o = osts_[ost_idx];
  if (!o.forbidden) LOG_DEBUG("OST {}: this process may not read its files", ost_idx);
  o.forbidden = true;
}

LocalReads::OpenObject::~OpenObject() {
  if (fd >= 0) close(fd);
  if (const int d = direct_fd.load(); d >= 0) close(d);
  if (const int d = random_fd.load(); d >= 0) close(d);
}

std::shared_ptr<const LocalReads::OpenObject> LocalReads::CachedObject(const ObjectKey& key) {
  std::lock_guard lock(objects_mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return nullptr;
  objects_lru_.splice(objects_lru_.end(), objects_lru_, it->second);  // most recent last
  return it->second->second;
}

void LocalReads::KeepObject(const ObjectKey& key, std::shared_ptr<const OpenObject> f) {
  std::shared_ptr<const OpenObject> evicted;  // closed outside the lock, with its last holder
  std::lock_guard lock(objects_mu_);
  if (auto it = objects_.find(key); it != objects_.end()) {
    if (it->second->second == f) return;
    evicted = std::move(it->second->second);
    objects_lru_.erase(it->second);
    objects_.erase(it);
  }
  objects_lru_.emplace_back(key, std::move(f));
  objects_[key] = std::prev(objects_lru_.end());
  if (objects_lru_.size() > kMaxOpenObjects) {
    evicted = std::move(objects_lru_.front().second);
    objects_.erase(objects_lru_.front().first);
    objects_lru_.pop_front();
  }
}

void LocalReads::DropObject(const ObjectKey& key, const OpenObject* f) {
  std::shared_ptr<const OpenObject> dropped;
  std::lock_guard lock(objects_mu_);
  auto it = objects_.find(key);
  if (it == objects_.end() || it->second->second.get() != f) return;
  dropped = std::move(it->second->second);
  objects_lru_.erase(it->second);
  objects_.erase(it);
}

Result<bool> LocalReads::TryRead(const proto::ObjectId& obj, uint64_t offset,
                                 std::span<uint8_t> buf, size_t* got, int deadline_ms) {
  const size_t len = buf.size();
  if (len == 0 || offset % kCrcChunk != 0 || !lnet::LocalReadsEnabled() ||
      (tunables_ != nullptr && tunables_->Get("local_reads") == 0)) {
    return false;
  }
  const bool small =
      len <= kMaxLocalReadBytes && offset / kGroupDataBytes == (offset + len - 1) / kGroupDataBytes;
  const bool direct = !small && len <= kMaxLocalDirectBytes && len % kCrcChunk == 0 &&
                      reinterpret_cast<uintptr_t>(buf.data()) % kCrcChunk == 0;
  if (!small && !direct) return false;
  STRIA_ASSIGN_OR_RETURN(const OstView ost, OstDir(obj.ost_idx(), deadline_ms));
  const int dir_fd = ost.dir_fd;
  if (dir_fd < 0) return false;
  const std::string rel = oss::ObjectRelPath(obj.group(), obj.object_id());
  const ObjectKey key{obj.ost_idx(), obj.group(), obj.object_id()};
  std::shared_ptr<const OpenObject> file = CachedObject(key);
  std::shared_ptr<OpenObject> fresh;  // opened now: kept once the read shows it is the object's
  if (file == nullptr) {
    // The open checks the path as still_the_object would: taken with no destroy in progress
    // before it, the count of destroys started spares the first read its path check.
    uint64_t quiet_before = OpenObject::kUnchecked;
    if (ost.destroys != nullptr) {
      const uint64_t started = ost.destroys->started.load(std::memory_order_acquire);
      if (ost.destroys->finished.load(std::memory_order_acquire) == started) {
        quiet_before = started;
      }
    }
    const int opened = openat(dir_fd, rel.c_str(), O_RDONLY | O_CLOEXEC);
    if (opened < 0) {
      // A process that may not read the OST's files (a user's, through libstria) reads over
      // the socket until the next check; a missing object is the OSS's to explain
      // (OstIoReply::missing).
      if (errno == EACCES || errno == EPERM) Forbidden(obj.ost_idx());
      fallbacks_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    fresh = std::make_shared<OpenObject>();
    fresh->fd = opened;
    fresh->destroys = ost.destroys;
    fresh->checked_at.store(quiet_before, std::memory_order_relaxed);
    file = fresh;
  }
  const int fd = file->fd;
  auto fall_back = [&]() -> Result<bool> {
    // The size known from the last read may be why (the object shrank): the next read asks.
    file->known_size.store(0, std::memory_order_relaxed);
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    return false;
  };
  // The object's size: the one known from the last read when this read lies below it (one
  // system call less per random read), else the file's.
  uint64_t size = file->known_size.load(std::memory_order_relaxed);
  if (offset + len > size) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
      DropObject(key, file.get());
      return fall_back();
    }
    if (fresh != nullptr) {
      fresh->dev = st.st_dev;
      fresh->ino = st.st_ino;
    }
    size = oss::InlineObjectSize(static_cast<uint64_t>(st.st_size));
  }
  // The file still is that object: a destroy (its file emptied and taken back into the
  // OST's pool, to become another object) moves it away from the object's path. No destroy
  // on the OST since its path last named it, with none in progress then: still is, without
  // a system call (a tenth of a 4 KiB random read's CPU in stria-fuse).
  const oss::DestroyCounters* const destroys =
      file->destroys == ost.destroys ? ost.destroys : nullptr;
  auto still_the_object = [&] {
    if (destroys != nullptr) {
      const uint64_t at = file->checked_at.load(std::memory_order_acquire);
      if (at != OpenObject::kUnchecked && destroys->started.load() == at) return true;
    }
    const uint64_t started = destroys != nullptr ? destroys->started.load() : 0;
    const bool quiet = destroys != nullptr && destroys->finished.load() == started;
    path_checks_.fetch_add(1, std::memory_order_relaxed);
    struct stat now;
    const bool same = fstatat(dir_fd, rel.c_str(), &now, 0) == 0 && now.st_ino == file->ino &&
                      now.st_dev == file->dev;
    if (same && quiet) file->checked_at.store(started, std::memory_order_release);
    return same;
  };
  if (offset >= size) {
    if (!still_the_object()) {
      DropObject(key, file.get());
      return fall_back();
    }
    *got = 0;
    reads_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  const size_t want = static_cast<size_t>(std::min<uint64_t>(len, size - offset));
  // A chunk the read covers only in part is checked by the OSS, which reads it whole.
  if (want % kCrcChunk != 0 && offset + want != size) return false;
  // A second descriptor of the object's file in `slot`, opened with `flags` when it has none
  // (and checked to be this file); -1 when the path no longer names it.
  auto second_fd = [&](std::atomic<int>& slot, int flags, int advice) {
    int have = slot.load(std::memory_order_acquire);
    if (have >= 0) return have;
    const int opened = openat(dir_fd, rel.c_str(), O_RDONLY | O_CLOEXEC | flags);
    if (opened < 0) {
      if (errno == ENOENT) DropObject(key, file.get());  // destroyed meanwhile
      return -1;
    }
    struct stat st;
    if (fstat(opened, &st) != 0 || st.st_ino != file->ino || st.st_dev != file->dev) {
      close(opened);  // the path names another file now
      DropObject(key, file.get());
      errno = ESTALE;
      return -1;
    }
    if (advice != POSIX_FADV_NORMAL) posix_fadvise(opened, 0, 0, advice);
    if (!slot.compare_exchange_strong(have, opened, std::memory_order_acq_rel)) {
      close(opened);  // another reader's came first
      return have;
    }
    return opened;
  };
  // Large reads bring the bytes by O_DIRECT, as the OSS would (no second copy of a stream in
  // the page cache); the checksums come through the page cache, where they stay. Other reads
  // that do not continue the last one are random: no readahead (header).
  const bool random = !direct && len <= kMaxRandomReadBytes &&
                      offset != file->next_pos.load(std::memory_order_relaxed);
  int data_fd = fd;
  int buffered_fd = fd;
  if (direct) {
    data_fd = second_fd(file->direct_fd, O_DIRECT, POSIX_FADV_NORMAL);
    if (data_fd < 0) return fall_back();
  } else if (random) {
    buffered_fd = data_fd = second_fd(file->random_fd, 0, POSIX_FADV_RANDOM);
    if (data_fd < 0) return fall_back();
  }
  // A random read of whole pages into page-aligned memory, not cached (where the kernel
  // cannot tell: through the page cache), has its bytes come by O_DIRECT (header).
  DirectPoller* direct_poll = nullptr;
  if (random && offset % kGroupDataBytes != 0 && len % kCrcChunk == 0 &&
      reinterpret_cast<uintptr_t>(buf.data()) % kCrcChunk == 0 &&
      !file->no_direct.load(std::memory_order_relaxed) &&
      AllCached(buffered_fd, static_cast<off_t>(oss::InlineDataPos(offset)), want) == false) {
    direct_poll = DirectPoller::ForThread();
  }
  if (direct_poll != nullptr) {
    const int direct_fd = second_fd(file->direct_fd, O_DIRECT, POSIX_FADV_NORMAL);
    if (direct_fd >= 0) {
      data_fd = direct_fd;
    } else if (errno == EINVAL) {  // no O_DIRECT on this file system: the page cache
      file->no_direct.store(true, std::memory_order_relaxed);
      direct_poll = nullptr;
    } else {
      return fall_back();
    }
  }
  thread_local std::array<uint32_t, kCrcBlockBytes / kCrcEntryBytes> crcs;
  // A read that misses the page cache polls for its pages, giving way to any other work
  // (header). O_DIRECT reads are large: they sleep.
  CacheWait wait;
  wait.no_nowait = &file->no_nowait;
  if (!direct) {
    static const int64_t default_us = FindClientTunable("osc.*.local_read_poll_us")->def;
    wait.poll_ns =
        (tunables_ != nullptr ? tunables_->Get("local_read_poll_us") : default_us) * 1000;
  }
  CacheWait* const poll = wait.poll_ns > 0 ? &wait : nullptr;  // the reads that only poll
  const uint64_t end = offset + want;
  for (uint64_t pos = offset; pos < end;) {  // one 4 MiB group of the object at a time
    const uint64_t seg_end = std::min(end, (pos / kGroupDataBytes + 1) * kGroupDataBytes);
    const size_t seg = static_cast<size_t>(seg_end - pos);
    uint8_t* dst = buf.data() + (pos - offset);
    const uint64_t first = pos / kCrcChunk;
    const size_t chunks = (seg + kCrcChunk - 1) / kCrcChunk;
    ssize_t n;
    if (!direct && pos % kGroupDataBytes == 0) {
      // From a group's start: its checksum block and its bytes are adjacent, one read.
      iovec iov[2] = {{crcs.data(), kCrcBlockBytes}, {dst, seg}};
      n = PreadvFull(buffered_fd, iov, 2, static_cast<off_t>(oss::InlineCrcPos(first)), poll);
      n = n >= static_cast<ssize_t>(kCrcBlockBytes) ? n - static_cast<ssize_t>(kCrcBlockBytes) : -1;
    } else {
      iovec c = {crcs.data(), chunks * kCrcEntryBytes};
      // O_DIRECT reads whole blocks: the last one past the object's end is in the caller's
      // buffer (len is whole chunks) and not returned.
      const size_t ask = direct ? chunks * kCrcChunk : seg;
      iovec d = {dst, ask};
      if (direct_poll != nullptr) {
        // The bytes are asked for first, then the checksums read (polling for them when not
        // cached) while the bytes come, then the bytes polled for: one disk wait.
        const size_t whole = chunks * kCrcChunk;  // within buf: len is whole chunks
        if (!direct_poll->Start(data_fd, dst, whole, static_cast<off_t>(oss::InlineDataPos(pos)))) {
          return fall_back();
        }
        const bool crcs_read =
            PreadvFull(buffered_fd, &c, 1, static_cast<off_t>(oss::InlineCrcPos(first)), poll) ==
            static_cast<ssize_t>(chunks * kCrcEntryBytes);
        wait.Missed();
        n = direct_poll->Finish(wait.deadline, &wait.slept);
        if (!crcs_read) n = -1;
      } else if (direct) {
        // The checksums' page is read (when not cached) while the bytes come: one disk wait.
        posix_fadvise(fd, static_cast<off_t>(oss::InlineCrcPos(first)),
                      static_cast<off_t>(chunks * kCrcEntryBytes), POSIX_FADV_WILLNEED);
        n = PreadvFull(data_fd, &d, 1, static_cast<off_t>(oss::InlineDataPos(pos)));
        if (PreadvFull(fd, &c, 1, static_cast<off_t>(oss::InlineCrcPos(first))) !=
            static_cast<ssize_t>(chunks * kCrcEntryBytes)) {
          n = -1;
        }
      } else {
        // The checksums first, usually cached. When they are not, the bytes are asked for
        // at the same time: one disk wait, not two in a row.
        wait.also_fd = data_fd;
        wait.also_pos = static_cast<off_t>(oss::InlineDataPos(pos));
        wait.also_len = seg;
        n = PreadvFull(buffered_fd, &c, 1, static_cast<off_t>(oss::InlineCrcPos(first)), &wait) ==
                    static_cast<ssize_t>(chunks * kCrcEntryBytes)
                ? PreadvFull(data_fd, &d, 1, static_cast<off_t>(oss::InlineDataPos(pos)), poll)
                : -1;
        wait.also_len = 0;
      }
      if (n > static_cast<ssize_t>(seg)) n = static_cast<ssize_t>(seg);
    }
    if (n != static_cast<ssize_t>(seg)) return fall_back();  // an error, or it shrank meanwhile
    for (size_t i = 0; i < chunks; ++i) {
      uint32_t stored;
      std::memcpy(&stored, &crcs[i], sizeof stored);  // little-endian, as this host
      if (stored == 0) continue;                      // no checksum: a hole, reads as zeros
      const size_t lo = i * kCrcChunk;
      const size_t bytes = std::min<size_t>(kCrcChunk, seg - lo);
      // Damage, or a write landing now: the OSS decides, under its locks.
      if (oss::ChunkCrc({dst + lo, bytes}) != stored) return fall_back();
    }
    pos = seg_end;
  }
  // A destroy since the open (or since an earlier read kept the descriptor) moved it.
  if (!still_the_object()) {
    DropObject(key, file.get());
    return fall_back();
  }
  file->known_size.store(size, std::memory_order_relaxed);
  if (!direct) file->next_pos.store(offset + want, std::memory_order_relaxed);
  KeepObject(key, std::move(file));
  *got = want;
  reads_.fetch_add(1, std::memory_order_relaxed);
  if (direct_poll != nullptr) random_direct_.fetch_add(1, std::memory_order_relaxed);
  if (wait.missed && wait.poll_ns > 0) {
    polls_.fetch_add(1, std::memory_order_relaxed);
    if (!wait.slept) polled_.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

}  // namespace stria::client
