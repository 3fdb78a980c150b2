// UringIo: the OSS's disk I/O, submitted through io_uring and waited for.
//
// Each calling thread owns one ring (thread_local, created on first use and torn down when
// the thread exits), so RPC worker threads never contend on a ring or a lock. A large read or
// write is split into chunks of kChunkBytes that are submitted together (up to kQueueDepth in
// flight), so one big request keeps several io-wq workers busy; a short completion is
// resubmitted for its remainder. Reads stop at end of file: ReadAt returns the contiguous
// bytes read from `offset`. A write that makes no progress is EIO. Every errno from the
// kernel (ENOSPC, EIO, ...) comes back as the matching Status (ErrnoStatus), never a crash.
//
// Buffered writes are the exception (WriteCached): they are pwrite(2) from the calling thread.
//
// Where a ring cannot be created (io_uring disabled by sysctl or seccomp), the same calls
// fall back to pread/pwrite/fsync/fallocate, with one warning in the log.
//
// Thread-safety: all functions are thread-safe; each thread uses its own ring.
#pragma once

#include <cstddef>
#include <sys/uio.h>

#include <cstdint>
#include <span>

#include "common/status.h"

namespace stria::oss {

class UringIo {
 public:
  static constexpr size_t kChunkBytes = 1u << 20;  // split unit for big requests
  static constexpr unsigned kQueueDepth = 32;      // ring size, chunks in flight

  // Reads up to buf.size() bytes at `offset`; returns how many were read before end of file.
  static Result<size_t> ReadAt(int fd, std::span<uint8_t> buf, uint64_t offset);

  // Several reads (of one file or several) submitted together, so that their disk I/O runs
  // at once: an object's bytes and its checksums cost one wait, not two in a row. Each
  // range's `got` is set as ReadAt would return it; the first error fails the call.
  struct ReadRange {
    int fd = -1;
    std::span<uint8_t> buf;
    uint64_t offset = 0;
    size_t got = 0;  // out
  };
  static Status ReadAll(std::span<ReadRange> ranges);

  // Reads into the buffers of `iov` in turn from `offset` on, as one request (readv): bytes
  // that are adjacent in the file and cold cost one disk read this way, where two reads of
  // them submitted together cost two or three (each starts its own readahead). Returns the
  // bytes read before end of file. Meant for small reads (it is not split into chunks), of
  // at most kMaxReadVBuffers buffers (more is kInval).
  static constexpr size_t kMaxReadVBuffers = 4;
  static Result<size_t> ReadV(int fd, std::span<const iovec> iov, uint64_t offset);

  // Writes all of data at `offset` through the ring: for O_DIRECT descriptors, whose writes
  // the ring completes without a helper thread.
  static Status WriteAt(int fd, std::span<const uint8_t> data, uint64_t offset);

  // Writes all of data at `offset` of a buffered descriptor, with pwrite(2) from the calling
  // thread. io_uring cannot copy into the page cache of ext4 without possibly blocking (ext4
  // has no non-blocking buffered write), so it hands every such write to an io-wq worker
  // and the caller waits for it: two thread switches per write for a memory copy. Reads,
  // O_DIRECT writes and syncs stay on the ring.
  static Status WriteCached(int fd, std::span<const uint8_t> data, uint64_t offset);

  // fsync(2), or fdatasync(2) when datasync.
  static Status Sync(int fd, bool datasync);

  // fallocate(2) with `mode` (e.g. FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE).
  static Status Fallocate(int fd, int mode, uint64_t offset, uint64_t length);

  // True when this thread's I/O goes through io_uring (false: the synchronous fallback).
  static bool UsingRing();
};

}  // namespace stria::oss
