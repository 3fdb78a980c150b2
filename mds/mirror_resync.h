// MirrorResync: the MDS copies good bytes into stale mirror components and clears their marks
// (Lustre's `lfs mirror resync`, run by the MDS itself: docs/layouts.md#mirrors).
//
// A resync of one file takes a snapshot of its layout and version (size, mtime, layout
// generation) under the namespace mutex, then, without the mutex, copies each stale range
// (clipped to the file size) of each stale component from a mirror that is good there,
// through the OstGateway (OST reads and writes under the MDS's own capability), truncates
// the component's objects to the file size and syncs them. Last, under the mutex again, it
// clears the marks of the components it copied and bumps the generation in one WriteBatch,
// but only when the file is unchanged and no writer has it open: a client that holds the
// layout with the mark writes only the good mirrors, so clearing it under that client would
// lose its writes in the resynced mirror. Otherwise the copy is wasted and the file tried
// again later (kBusy).
//
// The background thread scans the resync list (F keys, mds/schema.h) every scan interval and
// resyncs a file once every OST of one of its stale components has heartbeated since the
// file last changed (an OSS that came back, or a damage report against a live one), backing
// off per file after a failure. Copies are throttled to lod.*.mirror_resync_mb MB/s.
//
// Thread-safety: thread-safe; one resync runs at a time (resync_mu_), the background
// thread's or an lfs request's. Lock order: resync_mu_, then the namespace mutex, then mu_.
// Never holds the namespace mutex across an OST call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "mds/namespace.h"
#include "mds/ost_gateway.h"

namespace stria::mds {

struct MirrorResyncOptions {
  int scan_interval_ms = 1000;   // how often the thread looks at the resync list
  int max_backoff_ms = 30'000;   // the longest wait before a file that failed is tried again
};

class MirrorResync {
 public:
  MirrorResync(Namespace* ns, OstGateway* gateway, MirrorResyncOptions options = {});
  ~MirrorResync();
  MirrorResync(const MirrorResync&) = delete;
  MirrorResync& operator=(const MirrorResync&) = delete;

  void Start();
  void Stop();  // joins the thread; a copy in progress stops at its next chunk (kShutdown)

  // Resyncs regular file `ino` now: the bytes copied. kBusy while a writer has it open or
  // when it changed during the copy; the first copy error when a component could not be
  // copied (the others' marks are cleared all the same).
  Result<uint64_t> ResyncFile(uint64_t ino);

  // Counted for the statistics: a stale mark made (damaged: a reader's checksum report).
  void CountStaleMark(bool damaged);

  // lctl get_param mdt.FS-MDT0000.mirror_resync: the files with a stale mirror and the
  // resync's progress and totals.
  std::string Format();

 private:
  void Run();
  // Whether the background thread should resync the file now (see the class comment).
  bool Due(const InodeRecord& rec, int64_t changed_ns);

  Namespace* const ns_;
  OstGateway* const gateway_;
  const MirrorResyncOptions options_;

  std::mutex resync_mu_;  // one resync at a time

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                        // GUARDED_BY(mu_)
  std::map<uint64_t, int64_t> retry_at_ns_;  // GUARDED_BY(mu_): backoff per file
  std::map<uint64_t, int> failures_;         // GUARDED_BY(mu_): consecutive, per file
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // Statistics.
  std::atomic<uint64_t> active_ino_{0};  // the file being copied (0: none)
  std::atomic<uint64_t> active_copied_{0};
  std::atomic<uint64_t> active_total_{0};
  std::atomic<uint64_t> runs_{0};
  std::atomic<uint64_t> files_resynced_{0};
  std::atomic<uint64_t> bytes_resynced_{0};
  std::atomic<uint64_t> failures_total_{0};
  std::atomic<uint64_t> busy_{0};
  std::atomic<uint64_t> stale_marks_{0};
  std::atomic<uint64_t> damage_reports_{0};
};

}  // namespace stria::mds
