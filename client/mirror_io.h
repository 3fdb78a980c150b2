// MirroredIo: file data over mirrored layouts (Lustre's FLR, proto/layout_mirrors.h), on top
// of StripedIo; a layout without mirrors goes straight through.
//
// Writes (and punches, truncates) go to every mirror that is not stale over the range, in
// parallel, each OST RPC bounded by the mirror timeout. The write is acknowledged once every
// such mirror has it, or once each mirror that failed (unreachable within the timeout, a
// disk error, ENOSPC) is marked stale over the range at the MDS (OP_MDS_MIRROR STALE,
// durable there before the reply): the application sees no error while one mirror takes
// the bytes. A mirror already stale over part of the range is not written; the rest of the
// range is marked too. When every mirror fails within the timeout the write is retried with
// the client's own deadline, so a file whose every copy is unreachable behaves as an
// unmirrored one (the same retries, then the same error).
//
// Reads go to one mirror per piece (PlanMirrorRead: spread by stripe, never a stale one);
// an unreachable mirror, a timeout or a checksum mismatch (kCorrupt from the OSS's on-disk
// check) moves the piece to the next mirror without an error. Damaged bytes are reported
// (STALE with `damaged`), so the MDS's resync rewrites them from the good copy
// (mds/mirror_resync.h). The last candidate of a piece is read with the client's own
// deadline, as an unmirrored file.
//
// fsync syncs every mirror that is not stale; one that cannot be synced is marked stale over
// the whole file (its unsynced bytes may be lost), and the fsync succeeds on the others.
//
// The newest layout this client learned from its own marks replaces an older one a caller
// passes (the caller's snapshot predates the mark), so the next write skips the stale
// mirror. An OST that failed is skipped for a while (kDownHoldMs) before it is tried again,
// so a stream of writes does not wait out the timeout on every file.
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "client/striped_io.h"
#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client {

class OpenCapas;

// What the mirror code counted, for tests and statistics.
struct MirrorStats {
  std::atomic<uint64_t> read_failovers{0};   // pieces served by another mirror than planned
  std::atomic<uint64_t> damaged_reads{0};    // pieces that failed their checksum on a mirror
  std::atomic<uint64_t> stale_marks{0};      // OP_MDS_MIRROR STALE requests that changed state
  std::atomic<uint64_t> degraded_writes{0};  // writes completed without some mirror
};

class MirroredIo {
 public:
  // mirror_timeout_ms: how long one mirror's OST RPCs may take before it is given up.
  MirroredIo(StripedIo* io, OstTransport* transport, internal::ThreadPool* pool,
             int mirror_timeout_ms);

  // As StripedIo's (capas may be null: the marks then go with this process's credentials).
  Result<size_t> Read(const proto::Layout& layout, uint64_t file_size, uint64_t offset,
                      std::span<uint8_t> buf, bool* missing_object, OpenCapas* capas);
  Status Write(const proto::Layout& layout, uint64_t offset, std::span<const uint8_t> data,
               bool sync, OpenCapas* capas);
  Status TruncateObjects(const proto::Layout& layout, uint64_t size, OpenCapas* capas);
  Status PunchObjects(const proto::Layout& layout, uint64_t offset, uint64_t end,
                      OpenCapas* capas);
  Status SyncObjects(const proto::Layout& layout, OpenCapas* capas);
  Result<uint64_t> GlimpseSize(const proto::Layout& layout, OpenCapas* capas);

  const MirrorStats& stats() const { return stats_; }

  // How long an OST that failed is skipped by mirrored I/O.
  static constexpr int kDownHoldMs = 5'000;

 private:
  using Clock = std::chrono::steady_clock;

  // The layout to use: the newest this client knows for the file.
  std::shared_ptr<const proto::Layout> Effective(const proto::Layout& given);
  void Learn(const proto::Layout& newer);
  // OP_MDS_MIRROR STALE for mirror `mirror` over [start, end).
  Status MarkStale(const proto::Layout& l, uint32_t mirror, uint64_t start, uint64_t end,
                   bool damaged, OpenCapas* capas);
  // Whether mirror `mirror` has an OST over [start, end) that failed lately.
  bool MirrorDown(const proto::Layout& l, uint32_t mirror, uint64_t start, uint64_t end);
  void NoteDown(const proto::Layout& l, uint32_t mirror, uint64_t start, uint64_t end);

  // A change (write, punch, truncate, sync) to every mirror that is not stale over
  // [start, end), by `op` on each mirror's view with a deadline; failed mirrors are marked
  // stale over [mark_start, mark_end).
  Status Fan(const proto::Layout& given, uint64_t start, uint64_t end, uint64_t mark_start,
             uint64_t mark_end, OpenCapas* capas,
             const std::function<Status(const proto::Layout& view, int deadline_ms)>& op);

  StripedIo* const io_;
  OstTransport* const transport_;
  internal::ThreadPool* const pool_;
  const int timeout_ms_;
  MirrorStats stats_;

  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<const proto::Layout>> newest_;  // GUARDED_BY(mu_), by ino
  std::map<uint32_t, Clock::time_point> down_until_;                  // GUARDED_BY(mu_)
};

}  // namespace stria::client
