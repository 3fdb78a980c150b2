#include "oss/uring_io.h"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "common/log.h"

namespace stria::oss {
namespace {

// One ring per thread. ok_ is false when the kernel refused a ring (or it broke), in which
// case this thread uses the synchronous fallback.
class Ring {
 public:
  Ring() {
    // Only this thread submits, and it always waits for its completions: tell the kernel,
    // which saves it work (kernels before 6.0 reject the flags; then plain setup).
    int rc = io_uring_queue_init(UringIo::kQueueDepth, &ring_,
                                 IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN);
    if (rc == -EINVAL) rc = io_uring_queue_init(UringIo::kQueueDepth, &ring_, 0);
    ok_ = rc == 0;
    if (!ok_) {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        LOG_WARN("io_uring unavailable ({}); using synchronous pread/pwrite", strerror(-rc));
      }
    }
  }
  ~Ring() {
    if (ok_) io_uring_queue_exit(&ring_);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  bool ok() const { return ok_; }
  io_uring* get() { return &ring_; }

  // Called after a hard submit failure, once nothing is in flight: prepared but unsubmitted
  // entries may point at buffers about to be freed, so the ring is dropped for good.
  void Break() {
    if (!ok_) return;
    io_uring_queue_exit(&ring_);
    ok_ = false;
    LOG_ERROR("io_uring submit failed; this thread now uses synchronous I/O");
  }

 private:
  io_uring ring_{};
  bool ok_ = false;
};

Ring& ThisRing() {
  thread_local Ring ring;
  return ring;
}

bool Transient(int err) { return err == EINTR || err == EAGAIN || err == EBUSY; }

// Waits for one completion; returns its (user_data, res).
Status WaitOne(io_uring* ring, uint64_t* user_data, int* res) {
  io_uring_cqe* cqe = nullptr;
  int rc;
  do {
    rc = io_uring_wait_cqe(ring, &cqe);
  } while (rc == -EINTR);
  if (rc < 0) return ErrnoStatus("io_uring_wait_cqe", -rc);
  *user_data = cqe->user_data;
  *res = cqe->res;
  io_uring_cqe_seen(ring, cqe);
  return Status::Ok();
}

// ---- synchronous fallback ----

Result<size_t> SyncRead(int fd, std::span<uint8_t> buf, uint64_t offset) {
  size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = pread(fd, buf.data() + done, buf.size() - done,
                            static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("pread", errno);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Status SyncWrite(int fd, std::span<const uint8_t> data, uint64_t offset) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = pwrite(fd, data.data() + done, data.size() - done,
                             static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("pwrite", errno);
    }
    if (n == 0) return Status(Code::kIO, "pwrite made no progress");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// ---- io_uring ----

// One contiguous range of one request: [base, base+len) at `offset` of `fd`. For reads,
// *contiguous gets the bytes read from its start before the first end of file.
struct Extent {
  int fd = -1;
  uint8_t* base = nullptr;
  size_t len = 0;
  uint64_t offset = 0;
  size_t* contiguous = nullptr;
};

// One chunk of a split extent.
struct Piece {
  size_t extent = 0;   // which extent
  size_t buf_off = 0;  // offset of the chunk inside the extent's buffer
  size_t len = 0;
  size_t done = 0;
};

// Runs reads or writes of `extents` as chunks through the ring, all submitted together (up to
// the queue depth), so that their disk I/O runs at once.
Status RingRw(Ring& r, bool write, std::span<const Extent> extents) {
  io_uring* ring = r.get();
  std::vector<Piece> pieces;
  std::vector<size_t> first_piece(extents.size() + 1);  // extent e: [first_piece[e], [e+1])
  for (size_t e = 0; e < extents.size(); ++e) {
    first_piece[e] = pieces.size();
    for (size_t off = 0; off < extents[e].len; off += UringIo::kChunkBytes) {
      pieces.push_back(Piece{e, off, std::min(UringIo::kChunkBytes, extents[e].len - off), 0});
    }
  }
  first_piece[extents.size()] = pieces.size();
  const size_t n = pieces.size();
  std::vector<size_t> pending;  // pieces to (re)submit, in submission order (stack)
  pending.reserve(n);
  for (size_t i = n; i-- > 0;) pending.push_back(i);

  // Per extent, the first piece that hit end of file (reads): later ones read nothing.
  std::vector<size_t> eof_at(extents.size());
  for (size_t e = 0; e < extents.size(); ++e) eof_at[e] = first_piece[e + 1];
  unsigned inflight = 0;
  Status first_error;
  bool broken = false;

  while (inflight > 0 || (!pending.empty() && first_error.ok() && !broken)) {
    // Fill the ring.
    unsigned prepared = 0;
    while (first_error.ok() && !broken && !pending.empty() &&
           inflight + prepared < UringIo::kQueueDepth) {
      const size_t i = pending.back();
      pending.pop_back();
      Piece& p = pieces[i];
      if (i >= eof_at[p.extent]) continue;  // beyond end of file: nothing to read
      io_uring_sqe* sqe = io_uring_get_sqe(ring);
      if (sqe == nullptr) {
        pending.push_back(i);
        break;
      }
      const Extent& x = extents[p.extent];
      uint8_t* addr = x.base + p.buf_off + p.done;
      const unsigned nbytes = static_cast<unsigned>(p.len - p.done);
      const uint64_t at = x.offset + p.buf_off + p.done;
      if (write) {
        io_uring_prep_write(sqe, x.fd, addr, nbytes, at);
      } else {
        io_uring_prep_read(sqe, x.fd, addr, nbytes, at);
      }
      io_uring_sqe_set_data64(sqe, i);
      ++prepared;
    }
    if (prepared > 0) {
      int rc;
      do {
        rc = io_uring_submit(ring);
      } while (rc == -EINTR);
      if (rc < 0) {
        if (first_error.ok()) first_error = ErrnoStatus("io_uring_submit", -rc);
        broken = true;
      } else {
        inflight += static_cast<unsigned>(rc);
        if (static_cast<unsigned>(rc) < prepared) broken = true;  // entries left behind
      }
    }
    if (inflight == 0) {
      if (first_error.ok() && !broken && !pending.empty() &&
          pending.back() < eof_at[pieces[pending.back()].extent]) {
        first_error = Status(Code::kInternal, "io_uring has no free submission entry");
      }
      break;
    }

    uint64_t idx = 0;
    int res = 0;
    Status st = WaitOne(ring, &idx, &res);
    if (!st.ok()) {
      // Cannot reap: the kernel may still own the buffer. Nothing safe remains but to stop.
      LOG_ERROR("io_uring wait failed with {} in flight: {}", inflight, st.ToString());
      std::abort();
    }
    --inflight;
    if (idx >= n) continue;  // not ours (cannot happen: one request per ring at a time)
    Piece& p = pieces[idx];
    if (res < 0) {
      if (Transient(-res) && first_error.ok()) {
        pending.push_back(idx);
      } else if (first_error.ok()) {
        first_error = ErrnoStatus(write ? "write" : "read", -res);
      }
    } else if (res == 0) {
      if (write) {
        if (first_error.ok()) first_error = Status(Code::kIO, "write made no progress");
      } else {
        eof_at[p.extent] = std::min(eof_at[p.extent], static_cast<size_t>(idx));
      }
    } else {
      p.done += static_cast<size_t>(res);
      if (p.done < p.len) pending.push_back(idx);
    }
  }
  if (broken) r.Break();
  if (!first_error.ok()) return first_error;
  if (broken) return Status(Code::kIO, "io_uring submit left requests behind");
  for (size_t e = 0; e < extents.size(); ++e) {
    if (extents[e].contiguous == nullptr) continue;
    size_t total = 0;
    for (size_t i = first_piece[e]; i < first_piece[e + 1]; ++i) {
      total += pieces[i].done;
      if (pieces[i].done < pieces[i].len) break;
    }
    *extents[e].contiguous = total;
  }
  return Status::Ok();
}

// Submits one prepared operation and waits for it; returns its res.
template <typename Prep>
Result<int> RingOne(Ring& r, Prep prep) {
  io_uring* ring = r.get();
  for (;;) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    if (sqe == nullptr) return Status(Code::kInternal, "io_uring has no free entry");
    prep(sqe);
    io_uring_sqe_set_data64(sqe, 0);
    int rc;
    do {
      rc = io_uring_submit(ring);
    } while (rc == -EINTR);
    if (rc != 1) {
      r.Break();
      return rc < 0 ? ErrnoStatus("io_uring_submit", -rc)
                    : Status(Code::kIO, "io_uring submit left a request behind");
    }
    uint64_t idx = 0;
    int res = 0;
    Status st = WaitOne(ring, &idx, &res);
    if (!st.ok()) {
      LOG_ERROR("io_uring wait failed: {}", st.ToString());
      std::abort();
    }
    if (res < 0 && Transient(-res)) continue;
    return res;
  }
}

}  // namespace

Result<size_t> UringIo::ReadAt(int fd, std::span<uint8_t> buf, uint64_t offset) {
  ReadRange range{fd, buf, offset};
  STRIA_RETURN_IF_ERROR(ReadAll(std::span(&range, 1)));
  return range.got;
}

Status UringIo::ReadAll(std::span<ReadRange> ranges) {
  Ring& r = ThisRing();
  std::vector<Extent> extents;
  extents.reserve(ranges.size());
  for (ReadRange& x : ranges) {
    x.got = 0;
    if (x.buf.empty()) continue;
    if (!r.ok()) {
      STRIA_ASSIGN_OR_RETURN(x.got, SyncRead(x.fd, x.buf, x.offset));
      continue;
    }
    extents.push_back(Extent{x.fd, x.buf.data(), x.buf.size(), x.offset, &x.got});
  }
  if (extents.empty()) return Status::Ok();
  return RingRw(r, false, extents);
}

Result<size_t> UringIo::ReadV(int fd, std::span<const iovec> iov, uint64_t offset) {
  // A copy to advance after a short read, on the stack: this serves every cold small read.
  std::array<iovec, kMaxReadVBuffers> left;
  if (iov.size() > left.size()) {
    return Status(Code::kInval, fmt::format("ReadV takes at most {} buffers, not {}",
                                            left.size(), iov.size()));
  }
  std::copy(iov.begin(), iov.end(), left.begin());
  const size_t nbufs = iov.size();
  size_t first = 0;  // the first buffer not yet full
  size_t done = 0;
  Ring& r = ThisRing();
  while (first < nbufs) {
    if (left[first].iov_len == 0) {
      ++first;
      continue;
    }
    const iovec* v = left.data() + first;
    const unsigned count = static_cast<unsigned>(nbufs - first);
    const uint64_t at = offset + done;
    ssize_t res;
    if (r.ok()) {
      STRIA_ASSIGN_OR_RETURN(int rc, RingOne(r, [&](io_uring_sqe* sqe) {
                               io_uring_prep_readv(sqe, fd, v, count, at);
                             }));
      res = rc;
      if (rc < 0) return ErrnoStatus("readv", -rc);
    } else {
      res = preadv(fd, v, static_cast<int>(count), static_cast<off_t>(at));
      if (res < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("preadv", errno);
      }
    }
    if (res == 0) break;  // end of file
    size_t n = static_cast<size_t>(res);
    done += n;
    while (n > 0) {  // a short read: go on after the bytes it brought
      const size_t take = std::min(n, left[first].iov_len);
      left[first].iov_base = static_cast<uint8_t*>(left[first].iov_base) + take;
      left[first].iov_len -= take;
      n -= take;
      if (left[first].iov_len == 0) ++first;
    }
  }
  return done;
}

Status UringIo::WriteAt(int fd, std::span<const uint8_t> data, uint64_t offset) {
  if (data.empty()) return Status::Ok();
  Ring& r = ThisRing();
  if (!r.ok()) return SyncWrite(fd, data, offset);
  // The ring API takes a non-const pointer for both directions; a write never modifies it.
  const Extent x{fd, const_cast<uint8_t*>(data.data()), data.size(), offset, nullptr};
  return RingRw(r, true, std::span(&x, 1));
}

Status UringIo::WriteCached(int fd, std::span<const uint8_t> data, uint64_t offset) {
  return SyncWrite(fd, data, offset);
}

Status UringIo::Sync(int fd, bool datasync) {
  Ring& r = ThisRing();
  if (!r.ok()) {
    const int rc = datasync ? fdatasync(fd) : fsync(fd);
    return rc == 0 ? Status::Ok() : ErrnoStatus(datasync ? "fdatasync" : "fsync", errno);
  }
  STRIA_ASSIGN_OR_RETURN(int res, RingOne(r, [&](io_uring_sqe* sqe) {
                           io_uring_prep_fsync(sqe, fd, datasync ? IORING_FSYNC_DATASYNC : 0);
                         }));
  return res < 0 ? ErrnoStatus(datasync ? "fdatasync" : "fsync", -res) : Status::Ok();
}

Status UringIo::Fallocate(int fd, int mode, uint64_t offset, uint64_t length) {
  Ring& r = ThisRing();
  if (!r.ok()) {
    int rc;
    do {
      rc = fallocate(fd, mode, static_cast<off_t>(offset), static_cast<off_t>(length));
    } while (rc != 0 && errno == EINTR);
    return rc == 0 ? Status::Ok() : ErrnoStatus("fallocate", errno);
  }
  STRIA_ASSIGN_OR_RETURN(int res, RingOne(r, [&](io_uring_sqe* sqe) {
                           io_uring_prep_fallocate(sqe, fd, mode, offset, length);
                         }));
  return res < 0 ? ErrnoStatus("fallocate", -res) : Status::Ok();
}

bool UringIo::UsingRing() { return ThisRing().ok(); }

}  // namespace stria::oss
