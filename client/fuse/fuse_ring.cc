// FUSE over io_uring beneath libfuse 3.14 (see fuse_ring.h).
#include "client/fuse/fuse_ring.h"

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client/fuse/llite_params.h"
#include "common/log.h"
#include "common/stats.h"
#include "lnet/shared_bulk.h"

namespace stria::client::fuse {

namespace {

// The FUSE io_uring ABI (include/uapi/linux/fuse.h, protocol 7.42), which Debian 12's
// kernel headers predate.
constexpr uint64_t kOverIoUring = 1ULL << 41;  // FUSE_OVER_IO_URING, in flags2 as bit 9
constexpr uint32_t kOverIoUringFlags2 = static_cast<uint32_t>(kOverIoUring >> 32);
constexpr size_t kHeaderSz = 128;  // FUSE_URING_IN_OUT_HEADER_SZ
constexpr size_t kOpInSz = 128;    // FUSE_URING_OP_IN_OUT_SZ
enum : uint32_t { kCmdRegister = 1, kCmdCommitAndFetch = 2 };

struct RingEntInOut {
  uint64_t flags;
  uint64_t commit_id;
  uint32_t payload_sz;
  uint32_t padding;
  uint64_t reserved;
};

struct RingReqHeader {
  char in_out[kHeaderSz];  // fuse_in_header, then fuse_out_header for the reply
  char op_in[kOpInSz];     // the request's first argument (its per-opcode header)
  RingEntInOut ent;
};

struct RingCmdReq {  // in the SQE's command area (a 128-byte SQE)
  uint64_t flags;
  uint64_t commit_id;
  uint16_t qid;
  uint8_t padding[6];
};
static_assert(sizeof(RingCmdReq) <= 80, "the command area of a 128-byte SQE is 80 bytes");

// Room in front of each payload for the request's headers, so that the whole request is
// contiguous as libfuse expects it.
constexpr size_t kHeadroom = 4096;
// The ring entries' memory that may be in huge pages, per process (Worker::AddEntry).
constexpr size_t kHugeEntryBytes = size_t{64} << 20;
constexpr size_t kPage = 4096;
// Entries one thread may own: its own, plus one armed for each request of its that is
// answered later, elsewhere (a lock wait), while that request holds its entry.
constexpr unsigned kMaxEntriesPerWorker = 64;
constexpr uint64_t kWakeTag = 1;  // user_data of the stop eventfd's poll

class Worker;

struct Entry {
  Worker* worker = nullptr;
  RingReqHeader* hdr = nullptr;
  lnet::BulkBlock region;  // kHeadroom + payload_cap bytes
  uint8_t* payload = nullptr;
  size_t payload_cap = 0;
  uint64_t commit_id = 0;
  uint32_t opcode = 0;
  iovec iov[2]{};
  std::atomic<bool> replied{false};  // the request in it has its answer
  bool deferred = false;  // its handler returned unanswered (worker thread only)

  ~Entry() {
    if (hdr != nullptr) munmap(hdr, kPage);
  }
};

class Ring;

// One thread, pinned to its queue's CPU, with its own io_uring and its entries.
class Worker {
 public:
  Worker(Ring* ring, unsigned qid) : ring_(ring), qid_(qid) {}
  ~Worker();
  bool Start();  // creates the io_uring and registers the first entry
  void Run();
  void Wake();
  // Commits a reply into `e` (any thread). Only this worker's thread submits: io_uring
  // cancels a command when the thread that submitted it exits, and a thread that replies
  // (a lock wait's, a pool's) may exit while the entry waits for its next request.
  void Commit(Entry* e);
  unsigned qid() const { return qid_; }

 private:
  bool AddEntry();
  void Submit(Entry* e, uint32_t cmd);
  void Handle(Entry* e);
  void ArmWake();
  void CommitHandedOver();

  Ring* ring_;
  unsigned qid_;
  io_uring uring_{};
  bool uring_ok_ = false;
  int wake_fd_ = -1;
  std::mutex sq_mu_;  // the submission queue: the worker and any thread that replies
  std::vector<std::unique_ptr<Entry>> entries_;
  unsigned live_ = 0;    // entries registered and not failed
  unsigned pinned_ = 0;  // entries whose request is answered later, elsewhere
  std::thread::id tid_;
  std::mutex handed_mu_;
  std::vector<Entry*> handed_;  // replies made on other threads, for this one to commit
};

thread_local Entry* tls_entry = nullptr;  // the entry a ring thread is serving, if any

class Ring {
 public:
  fuse_session* se = nullptr;
  int fd = -1;
  FuseRingOptions options;
  size_t payload_cap = 0;
  unsigned nr_queues = 0;
  std::atomic<bool> stopping{false};

  // The INIT request, as the kernel sent it over /dev/fuse.
  std::atomic<uint64_t> init_unique{0};
  std::atomic<bool> kernel_offers{false};  // io_uring, and options.io_uring
  std::atomic<bool> kernel_offers_parallel_dirops{false};

  void Remember(uint64_t unique, Entry* e) {
    std::lock_guard lock(mu_);
    inflight_[unique] = e;
  }
  Entry* Take(uint64_t unique) {
    std::lock_guard lock(mu_);
    auto it = inflight_.find(unique);
    if (it == inflight_.end()) return nullptr;
    Entry* e = it->second;
    inflight_.erase(it);
    return e;
  }

  void StartThreads() {
    std::lock_guard lock(threads_mu_);
    queues_ = std::vector<QueueLoad>(nr_queues);
    for (unsigned q = 0; q < nr_queues; ++q) {
      for (unsigned t = 0; t < options.threads_per_queue; ++t) SpawnLocked(q);
    }
    if (options.on_active) options.on_active();
    LOG_INFO("FUSE requests go over io_uring: {} queues x {} threads, {} KiB payloads",
             nr_queues, options.threads_per_queue, payload_cap >> 10);
  }

  // A worker of queue `q` takes a request: when no other worker of that queue is idle, one
  // more starts (up to max_threads_per_queue), so that handlers that wait (an unreachable
  // OST, a slow MDS) cannot hold up the CPU's other requests; a queue's workers stay once
  // started, as libfuse's do.
  void Busy(unsigned q) {
    if (queues_[q].idle.fetch_sub(1) > 1) return;
    std::lock_guard lock(threads_mu_);
    if (stopping || queues_[q].workers >= options.max_threads_per_queue) return;
    SpawnLocked(q);
  }
  void Idle(unsigned q) { queues_[q].idle.fetch_add(1); }

  void StopThreads() {
    stopping = true;
    // Joined outside the lock: a worker that takes a request meanwhile may call Busy, which
    // takes the lock and, seeing `stopping`, starts no one.
    std::vector<std::unique_ptr<Worker>> workers;
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(threads_mu_);
      workers.swap(workers_);
      threads.swap(threads_);
    }
    for (auto& w : workers) w->Wake();
    for (auto& t : threads) t.join();
  }

 private:
  struct QueueLoad {
    std::atomic<int> idle{0};  // workers waiting for a request (registered or not yet)
    unsigned workers = 0;      // under threads_mu_
  };

  void SpawnLocked(unsigned q) {
    ++queues_[q].workers;
    queues_[q].idle.fetch_add(1);
    auto w = std::make_unique<Worker>(this, q);
    Worker* wp = w.get();
    workers_.push_back(std::move(w));
    threads_.emplace_back([wp] { wp->Run(); });
  }

  std::vector<QueueLoad> queues_;
  std::mutex mu_;
  std::unordered_map<uint64_t, Entry*> inflight_;
  std::mutex threads_mu_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
};

Ring* g_ring = nullptr;

Worker::~Worker() {
  if (uring_ok_) io_uring_queue_exit(&uring_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool Worker::Start() {
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) return false;
  io_uring_params p{};
  p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE;
  p.cq_entries = 2 * (kMaxEntriesPerWorker + 1);
  if (int rc = io_uring_queue_init_params(kMaxEntriesPerWorker + 1, &uring_, &p); rc < 0) {
    LOG_WARN("FUSE ring queue {}: io_uring_queue_init: {}", qid_, std::strerror(-rc));
    return false;
  }
  uring_ok_ = true;
  ArmWake();
  return AddEntry();
}

void Worker::ArmWake() {
  std::lock_guard lock(sq_mu_);
  io_uring_sqe* sqe = io_uring_get_sqe(&uring_);
  io_uring_prep_poll_add(sqe, wake_fd_, POLLIN);
  io_uring_sqe_set_data64(sqe, kWakeTag);
  io_uring_submit(&uring_);
}

void Worker::CommitHandedOver() {
  uint64_t n;
  if (read(wake_fd_, &n, sizeof(n)) != sizeof(n)) {
  }
  std::vector<Entry*> handed;
  {
    std::lock_guard lock(handed_mu_);
    handed.swap(handed_);
  }
  for (Entry* e : handed) {
    if (e->deferred) {
      e->deferred = false;
      --pinned_;
    }
    Submit(e, kCmdCommitAndFetch);
  }
}

void Worker::Wake() {
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
    }
  }
}

bool Worker::AddEntry() {
  if (entries_.size() >= kMaxEntriesPerWorker) return false;
  auto e = std::make_unique<Entry>();
  e->worker = this;
  void* h = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (h == MAP_FAILED) return false;
  e->hdr = static_cast<RingReqHeader*>(h);
  e->payload_cap = ring_->payload_cap;
  // READ replies are built in the payload: from the shared bulk arena where there is one, a
  // local OSS reads straight into it (lnet/shared_bulk.h).
  e->region = lnet::BulkBlock(kHeadroom + e->payload_cap);
  // Local reads (client/local_reads.h) read by O_DIRECT into the payload: in a huge page it
  // is one disk request, not two (lnet::PreferHugePages). A huge page holds the whole 2 MiB
  // block, where 4 KiB pages hold only what is used, so only the first kHugeEntryBytes of
  // entries get one (the threads that start first serve most requests).
  // The bytes tried count against the cap, and a first failure (a kernel that cannot) ends
  // the tries: a block tried is faulted in whole.
  static std::atomic<size_t> huge_tried{0};
  static std::atomic<bool> huge_failed{false};
  if (!huge_failed.load(std::memory_order_relaxed) &&
      huge_tried.fetch_add(kHeadroom + e->payload_cap, std::memory_order_relaxed) <
          kHugeEntryBytes) {
    if (e->region.PreferHugePages() == 0 && !huge_failed.exchange(true)) {
      LOG_INFO("FUSE ring entries stay in 4 KiB pages (no MADV_COLLAPSE here)");
    }
  }
  e->payload = e->region.data() + kHeadroom;
  e->iov[0] = {e->hdr, sizeof(RingReqHeader)};
  e->iov[1] = {e->payload, e->payload_cap};
  Entry* ep = e.get();
  entries_.push_back(std::move(e));
  ++live_;
  Submit(ep, kCmdRegister);
  return true;
}

void Worker::Submit(Entry* e, uint32_t cmd) {
  std::lock_guard lock(sq_mu_);
  io_uring_sqe* sqe = io_uring_get_sqe(&uring_);
  if (sqe == nullptr) {  // one SQE per entry, and entries are capped: cannot happen
    LOG_ERROR("FUSE ring queue {}: no free SQE", qid_);
    return;
  }
  std::memset(sqe, 0, 128);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = ring_->fd;
  sqe->cmd_op = cmd;
  if (cmd == kCmdRegister) {
    sqe->addr = reinterpret_cast<uint64_t>(e->iov);
    sqe->len = 2;
  }
  RingCmdReq req{};
  req.qid = static_cast<uint16_t>(qid_);
  req.commit_id = cmd == kCmdRegister ? 0 : e->commit_id;
  std::memcpy(sqe->cmd, &req, sizeof(req));
  io_uring_sqe_set_data(sqe, e);
  io_uring_submit(&uring_);
}

void Worker::Commit(Entry* e) {
  if (std::this_thread::get_id() == tid_) return Submit(e, kCmdCommitAndFetch);
  {
    std::lock_guard lock(handed_mu_);
    handed_.push_back(e);
  }
  Wake();
}

void Worker::Run() {
  tid_ = std::this_thread::get_id();
  {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(qid_, &cpus);
    // Where this CPU is not ours to use (a cpuset), the queue is served from anywhere.
    (void)sched_setaffinity(0, sizeof(cpus), &cpus);
  }
  if (!Start()) {
    LOG_WARN("FUSE ring queue {}: a thread could not start; its share of requests waits "
             "for the others", qid_);
    return;
  }
  while (!ring_->stopping.load(std::memory_order_relaxed) && live_ > 0) {
    io_uring_cqe* cqe = nullptr;
    const int rc = io_uring_wait_cqe(&uring_, &cqe);
    if (rc == -EINTR) continue;
    if (rc < 0) {
      LOG_WARN("FUSE ring queue {}: waiting: {}", qid_, std::strerror(-rc));
      break;
    }
    const uint64_t tag = io_uring_cqe_get_data64(cqe);
    const int res = cqe->res;
    io_uring_cqe_seen(&uring_, cqe);
    if (tag == kWakeTag) {
      if (ring_->stopping.load()) break;
      CommitHandedOver();
      ArmWake();
      continue;
    }
    Entry* e = reinterpret_cast<Entry*>(tag);
    if (res == 0) {
      ring_->Busy(qid_);
      Handle(e);
      ring_->Idle(qid_);
    } else if (res == -EINTR || res == -EAGAIN) {
      Submit(e, e->commit_id == 0 ? kCmdRegister : kCmdCommitAndFetch);
    } else {
      // -ENOTCONN: the connection is going away (umount, abort).
      if (res != -ENOTCONN && res != -ENODEV) {
        LOG_WARN("FUSE ring queue {}: an entry failed: {}", qid_, std::strerror(-res));
      }
      --live_;
    }
  }
}

void Worker::Handle(Entry* e) {
  const auto* in = reinterpret_cast<const fuse_in_header*>(e->hdr->in_out);
  const uint32_t payload = e->hdr->ent.payload_sz;
  e->commit_id = e->hdr->ent.commit_id;
  e->opcode = in->opcode;
  const size_t fixed = sizeof(fuse_in_header) + payload;
  if (in->len < fixed || in->len - fixed > kOpInSz || payload > e->payload_cap) {
    LOG_ERROR("FUSE ring queue {}: malformed request (opcode {}, len {}, payload {})", qid_,
              in->opcode, in->len, payload);
    auto* out = reinterpret_cast<fuse_out_header*>(e->hdr->in_out);
    const uint64_t unique = in->unique;
    out->unique = unique;
    out->error = -EIO;
    out->len = sizeof(fuse_out_header);
    e->hdr->ent.payload_sz = 0;
    Commit(e);
    return;
  }
  // The request as /dev/fuse delivers it: header, per-opcode header, payload.
  const size_t op_len = in->len - fixed;
  uint8_t* start = e->payload - sizeof(fuse_in_header) - op_len;
  std::memcpy(start, in, sizeof(fuse_in_header));
  std::memcpy(start + sizeof(fuse_in_header), e->hdr->op_in, op_len);
  fuse_buf buf{};
  buf.size = in->len;
  buf.mem = start;
  e->replied.store(false, std::memory_order_relaxed);
  ring_->Remember(in->unique, e);
  if (ring_->options.stats != nullptr) ring_->options.stats->Add(kLlRingRequests, 1);
  tls_entry = e;
  fuse_session_process_buf(ring_->se, &buf);
  tls_entry = nullptr;
  if (e->replied.load(std::memory_order_acquire)) return;
  // Answered later, by another thread (a lock wait): the request holds this entry until
  // then, so this thread arms another, unless one of its own is still free. Entries are
  // never given back, so a worker has as many as it ever had such requests at once, + 1.
  e->deferred = true;
  ++pinned_;
  if (live_ > pinned_) return;
  if (!AddEntry()) {
    LOG_WARN("FUSE ring queue {}: {} requests of one thread wait to be answered; it serves "
             "no more until one is", qid_, pinned_);
  }
}

// libfuse's custom I/O.

ssize_t DeviceRead(int fd, void* buf, size_t len, void* /*userdata*/) {
  const ssize_t n = read(fd, buf, len);
  if (n >= static_cast<ssize_t>(sizeof(fuse_in_header)) && g_ring != nullptr) {
    const auto* in = static_cast<const fuse_in_header*>(buf);
    if (in->opcode == FUSE_INIT &&
        n >= static_cast<ssize_t>(sizeof(fuse_in_header) + sizeof(fuse_init_in))) {
      const auto* init = reinterpret_cast<const fuse_init_in*>(in + 1);
      const bool ext = init->minor >= 36 && (init->flags & FUSE_INIT_EXT) != 0;
      g_ring->kernel_offers =
          g_ring->options.io_uring && ext && (init->flags2 & kOverIoUringFlags2) != 0;
      g_ring->kernel_offers_parallel_dirops = (init->flags & FUSE_PARALLEL_DIROPS) != 0;
      g_ring->init_unique = in->unique;
    }
  }
  return n;
}

ssize_t SpliceReceive(int fdin, off_t* offin, int fdout, off_t* offout, size_t len,
                      unsigned int flags, void* /*userdata*/) {
  return splice(fdin, offin, fdout, offout, len, flags);
}

ssize_t SpliceSend(int fdin, off_t* offin, int fdout, off_t* offout, size_t len,
                   unsigned int flags, void* /*userdata*/) {
  return splice(fdin, offin, fdout, offout, len, flags);
}

// The INIT reply: what libfuse 3.14 leaves out of it. Returns whether it asked for io_uring.
bool CompleteInitReply(const Ring& ring, iovec* iov, int count) {
  if (count < 2 || iov[1].iov_len < offsetof(fuse_init_out, flags2) + sizeof(uint32_t)) {
    return false;
  }
  auto* init = static_cast<fuse_init_out*>(iov[1].iov_base);
  if (ring.kernel_offers_parallel_dirops.load()) {
    init->flags |= FUSE_PARALLEL_DIROPS;
  }
  if (!ring.kernel_offers.load()) return false;
  init->flags |= FUSE_INIT_EXT;
  init->flags2 |= kOverIoUringFlags2;
  // The kernel refuses entries whose payload buffer is smaller than its largest request.
  g_ring->payload_cap = std::max<size_t>({8192, init->max_write,
                                           static_cast<size_t>(init->max_pages) * kPage});
  return true;
}

ssize_t DeviceWritev(int fd, iovec* iov, int count, void* /*userdata*/) {
  auto* out = static_cast<fuse_out_header*>(iov[0].iov_base);
  Ring* ring = g_ring;
  if (ring != nullptr && out->unique != 0) {
    if (Entry* e = ring->options.io_uring ? ring->Take(out->unique) : nullptr; e != nullptr) {
      e->replied.store(true, std::memory_order_release);
      size_t len = 0;
      ssize_t total = static_cast<ssize_t>(iov[0].iov_len);
      for (int i = 1; i < count; ++i) {
        total += static_cast<ssize_t>(iov[i].iov_len);
        if (len + iov[i].iov_len > e->payload_cap) {
          LOG_ERROR("FUSE reply of {} bytes overflows the ring entry", len + iov[i].iov_len);
          out->error = -EIO;
          len = 0;
          break;
        }
        if (iov[i].iov_base != e->payload + len) {
          std::memmove(e->payload + len, iov[i].iov_base, iov[i].iov_len);
        }
        len += iov[i].iov_len;
      }
      auto* ring_out = reinterpret_cast<fuse_out_header*>(e->hdr->in_out);
      ring_out->unique = out->unique;
      ring_out->error = out->error;
      ring_out->len = static_cast<uint32_t>(sizeof(fuse_out_header) + len);
      e->hdr->ent.payload_sz = static_cast<uint32_t>(len);
      e->worker->Commit(e);
      return total;
    }
    if (out->unique == ring->init_unique.load() && out->error == 0) {
      const bool asked = CompleteInitReply(*ring, iov, count);
      const ssize_t n = writev(fd, iov, count);
      // The kernel has taken the reply (INIT is answered in the write): it now accepts
      // ring entries.
      if (n >= 0 && asked) ring->StartThreads();
      return n;
    }
  }
  return writev(fd, iov, count);
}

}  // namespace

bool FuseRing::EnableInKernel(std::string* why) {
  const char* param = "/sys/module/fuse/parameters/enable_uring";
  std::ifstream in(param);
  std::string v;
  if (!(in >> v)) {
    *why = "this kernel has no FUSE over io_uring (Linux 6.14 or later, CONFIG_FUSE_IO_URING)";
    return false;
  }
  if (v == "Y" || v == "1") return true;
  std::ofstream out(param);
  out << "Y\n";
  out.flush();
  if (!out) {
    *why = std::string("cannot turn on ") + param + " (root only): " + std::strerror(errno);
    return false;
  }
  LOG_INFO("fuse.enable_uring turned on, so that FUSE requests can go over io_uring");
  return true;
}

bool FuseRing::Attach(fuse_session* se, const FuseRingOptions& options) {
  static Ring ring;
  ring.se = se;
  ring.fd = fuse_session_fd(se);
  ring.options = options;
  if (ring.options.threads_per_queue == 0) ring.options.threads_per_queue = 1;
  ring.nr_queues = static_cast<unsigned>(get_nprocs_conf());
  fuse_custom_io io{};
  io.read = DeviceRead;
  io.writev = DeviceWritev;
  io.splice_receive = SpliceReceive;
  io.splice_send = SpliceSend;
  g_ring = &ring;
  if (fuse_session_custom_io(se, &io, ring.fd) != 0) {
    g_ring = nullptr;
    return false;
  }
  return true;
}

bool FuseRing::KernelOffers() { return g_ring != nullptr && g_ring->kernel_offers.load(); }

void FuseRing::Stop() {
  if (g_ring != nullptr) g_ring->StopThreads();
}

std::span<uint8_t> FuseRing::ReplySpace(size_t size) {
  Entry* e = tls_entry;
  if (e == nullptr || e->opcode != FUSE_READ || size > e->payload_cap) return {};
  return {e->payload, size};
}

}  // namespace stria::client::fuse
