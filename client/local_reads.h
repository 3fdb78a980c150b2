// LocalReads: reads of objects on an OST that is served from this host, straight from the
// OST's object files, without a round trip to the OSS (HDFS's short-circuit local reads).
//
// Why: on a host that runs both a client and an OSS (a compute node whose NVMe is an OST), a
// 4 KiB random read or a small file's read costs the OSS a wake-up, a receive, an io_uring
// submission and a send, and the client a second wake-up, on top of the disk read itself.
// Reading the file in the client's own thread costs the disk read and the checksum check. A
// streamed read saves the OSS's share of the CPU (a third of a cold read's, measured).
//
// How:
//  - On its first read from an OST, the client asks the OSS where the OST lives
//    (OP_OST_LOCAL_ACCESS, answered only over the local socket, so only to a peer on the
//    OSS's host). It opens that directory and reads its ost.meta: only when the uuid there is
//    the one the OSS named, and the OST keeps its checksums inside the object files
//    (ObjectFormat::kInline), are reads from it served here. Otherwise, or when the OSS
//    refuses, every read of that OST goes over the socket. The answer is asked again after
//    kRecheckInterval, so an OST that moves is followed.
//  - A read qualifies when it starts on a 4 KiB chunk, ends on a chunk boundary or at the
//    object's end, and either stays in one 4 MiB group of the object (object_format.h) and is
//    at most kMaxLocalReadBytes (read through the page cache, like the OSS's small reads), or
//    is whole pages into page-aligned memory and at most kMaxLocalDirectBytes (read by
//    O_DIRECT, like the OSS's large ones; a mount's READ buffers are such memory). The client
//    opens the object file with its own credentials (a process that may not read the OST's
//    files reads over the socket), reads the chunks' checksums (through the page cache) and
//    the bytes, and verifies every chunk as the OSS would (oss/internal/chunk_crc.h).
//  - Anything unusual goes to the OSS instead, which stays the authority: an object file
//    that does not exist (the OSS says whether the object is missing), a short read, a chunk
//    whose checksum does not match (a damaged chunk, or a write landing now; the OSS locks
//    against writes and answers kCorrupt for real damage), any error.
//
// What a local read sees is what the OSS would return at that instant: acknowledged writes
// are in the object file (the page cache is the host's), and a write in progress fails the
// checksum check, which sends the read to the OSS. (Except into a chunk never written, which
// has no checksum: a read racing that write may see part of it, as on a local file system.)
// The descriptors of the last kMaxOpenObjects objects read stay open (a 4 KiB random read
// then costs no open and close of its file), never more: a process may not hold one per
// object. Each has a second, O_DIRECT, once a large read used it, and a third for random
// reads (below): 3 x kMaxOpenObjects descriptors, beside those of objects that readers still
// hold after they left the cache, and one io_uring per thread that made a random read.
// After every read the object's path must still name the file read: an object destroyed
// meanwhile, its file taken back into the OST's pool to become another object, sends the
// read to the OSS and drops the descriptor. The OSS counts its destroys in a file
// of the OST that the client maps (oss/object_format.h, DestroyCounters): while no destroy
// has started on the OST since the path was last checked, the check is skipped.
//
// Waiting for the disk: a read through the page cache is first tried without blocking
// (RWF_NOWAIT: one system call when its pages are cached). At a miss its pages are asked
// for (POSIX_FADV_WILLNEED), and when it was the checksums that missed, the bytes too, so
// the two disk reads overlap rather than follow each other. The read then polls for them,
// calling sched_yield between tries so that any other runnable thread on its CPU goes
// first, for up to osc.*.local_read_poll_us (200 us by default) before it sleeps.
// Why: a mount's FUSE ring threads are pinned to the CPU of the queue they serve
// (client/fuse/fuse_ring.h), and the disk's completion interrupt often lands on another.
// On a VM, waking a halted vCPU from there cost a 4 KiB random read 30-40 us on top of the
// disk's 65 (docs/performance.md, "A cold read polls for its pages"). The poll uses only CPU
// time that nothing else wanted. O_DIRECT reads (the large ones) never poll.
// Random reads: a read of at most kMaxRandomReadBytes that does not start where the
// object's last read through the page cache ended.
//  - In whole pages into page-aligned memory (a FUSE request's buffer), inside a group, and
//    not all in the page cache (cachestat(2)), its bytes come by O_DIRECT, started on the
//    thread's own io_uring before the checksums are read; it then polls that ring as above.
//    Buffered 4 KiB random reads of an object file had the worse tail: fio's p99 171-330 us
//    against 126-206 by O_DIRECT on the same file. The object file's pages are of little use
//    to a mount, whose own page cache keeps what it read (docs/performance.md, "Random reads
//    by O_DIRECT").
//  - Otherwise it goes through the page cache by a descriptor marked POSIX_FADV_RANDOM, so
//    that its miss reads its own pages and no more. Through the first descriptor, the
//    kernel's readahead took two cached pages before a random read for a stream's trace and
//    read ahead of it: over a 2 GiB file, 1.2 disk requests of 7 KiB per 4 KiB read.
// Reads that continue the last one (one reader's stream) keep the first descriptor and its
// readahead; readers that interleave in one object may look random to each other.
//
// Switches: `lctl set_param osc.*.local_reads=0` on a client (its ClientTunables), or
// STRIA_LOCAL_READS=0 (lnet::LndConfig::local_reads) in a client's or an OSS's environment.
// Thread-safety: thread-safe; per-OST state behind one mutex, taken briefly per read.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "oss/object_format.h"
#include "proto/stria.pb.h"

namespace stria::client {

class OstTransport;
class ClientTunables;

// The largest read through the page cache, and (page-aligned, in whole pages) by O_DIRECT.
inline constexpr size_t kMaxLocalReadBytes = 256 * 1024;
inline constexpr size_t kMaxLocalDirectBytes = 8 << 20;
// The largest read that can be a random one (Waiting for the disk, below): a FUSE
// readahead's requests, larger, arrive out of order and are not random.
inline constexpr size_t kMaxRandomReadBytes = 64 * 1024;
// Object files kept open for reads, per Client.
inline constexpr size_t kMaxOpenObjects = 64;

class LocalReads {
 public:
  static constexpr std::chrono::seconds kRecheckInterval{10};

  // `tunables` (osc.*.local_reads) may be null: always on.
  LocalReads(OstTransport* transport, const ClientTunables* tunables)
      : transport_(transport), tunables_(tunables) {}
  ~LocalReads();
  LocalReads(const LocalReads&) = delete;
  LocalReads& operator=(const LocalReads&) = delete;

  // Reads object bytes [offset, offset + buf.size()) of `obj` from its file when the OST is
  // local and the read qualifies (above). True: done, *got bytes lie below the object's end
  // (the rest of buf is untouched), as OP_OST_READ would answer. False: not done here (send
  // it to the OSS). An error: the OSS could not be asked where the OST is within deadline_ms
  // (a retryable status of OstTransport::OstCallRaw still failing at the deadline), so the
  // read fails as its RPC would have, rather than paying that wait twice.
  Result<bool> TryRead(const proto::ObjectId& obj, uint64_t offset, std::span<uint8_t> buf,
                       size_t* got, int deadline_ms = -1);

  // Reads served here, and qualifying reads handed back to the OSS after a look at the file
  // (a missing object, a checksum that did not match, an error).
  uint64_t reads() const { return reads_.load(std::memory_order_relaxed); }
  uint64_t fallbacks() const { return fallbacks_.load(std::memory_order_relaxed); }
  // Reads served here that polled for pages missing from the page cache, and of those the
  // ones whose pages came while they polled (Waiting for the disk, above).
  uint64_t polls() const { return polls_.load(std::memory_order_relaxed); }
  uint64_t polled() const { return polled_.load(std::memory_order_relaxed); }
  // Random reads served here whose bytes came by O_DIRECT (Waiting for the disk, above).
  uint64_t random_direct() const { return random_direct_.load(std::memory_order_relaxed); }
  // Checks that a kept object's path still names its file (a system call each): after every
  // read where its OSS does not count destroys, else only after a destroy on its OST.
  uint64_t path_checks() const { return path_checks_.load(std::memory_order_relaxed); }

  // Checks that `dir` is the OST named by `uuid` (its ost.meta says so) and opens it
  // (O_PATH): the descriptor, or an error saying why not. For tests and OstFor.
  static Result<int> OpenOstDir(const std::string& dir, const std::string& uuid);

 private:
  struct Ost {
    int dir_fd = -1;         // -1: reads go to the OSS
    bool forbidden = false;  // this process may not open the files: reads go to the OSS
    // Its OSS's destroy counters (oss/object_format.h), mapped read-only; null when its OSS
    // does not count them (every read checks the object's path then).
    const oss::DestroyCounters* destroys = nullptr;
    std::chrono::steady_clock::time_point checked;
  };
  // The OST's directory descriptor and destroy counters (valid for the Client's life),
  // asking the OSS when not known or due; dir_fd -1 when the OST is not readable here.
  struct OstView {
    int dir_fd = -1;
    const oss::DestroyCounters* destroys = nullptr;
  };
  Result<OstView> OstDir(uint32_t ost_idx, int deadline_ms);
  // Turns reads from OST `ost_idx` off until its next check: this process may not open the
  // files there.
  void Forbidden(uint32_t ost_idx);
  // Asks the OSS and checks its answer: the directory descriptor, or -1 (why: at debug level);
  // an error when the OSS did not answer. *counts_destroys: whether the OSS counts them.
  Result<int> Resolve(uint32_t ost_idx, int deadline_ms, bool* counts_destroys);

  // An object file open for reads (buffered), closed with the last holder: a read keeps it
  // while the cache may drop it.
  struct OpenObject {
    int fd = -1;
    dev_t dev = 0;
    ino_t ino = 0;
    // The object's size at its last read here (0: not known). A read that lies below it needs
    // no fstat for the size: the object cannot have shrunk under it unnoticed, since the
    // file shrinks with the object (a short read, sent to the OSS) and a chunk truncated and
    // grown again reads as a hole or fails its checksum, as with a fresh size.
    mutable std::atomic<uint64_t> known_size{0};
    // The same file opened O_DIRECT, for the reads that bypass the page cache; -1 until the
    // first such read opens it (and checks it is this file).
    mutable std::atomic<int> direct_fd{-1};
    // The same file opened for reads through the page cache that do not continue the last
    // one (random reads), marked POSIX_FADV_RANDOM so that a miss reads only its own pages;
    // -1 until the first such read opens it.
    mutable std::atomic<int> random_fd{-1};
    // Where the last read through the page cache ended: a read from there continues it and
    // goes through `fd`, whose readahead serves a stream.
    mutable std::atomic<uint64_t> next_pos{0};
    // Set once opening it O_DIRECT failed with EINVAL (its file system has none): its
    // random reads go through the page cache from then on.
    mutable std::atomic<bool> no_direct{false};
    // Set once its file system refused a read with RWF_NOWAIT: its reads block from then on.
    mutable std::atomic<bool> no_nowait{false};
    // The OST's destroy counters when it was opened, and the count of destroys started when
    // its path last named it with none in progress (kUnchecked: not so checked). While the
    // count stays there, no check of the path is needed (oss/object_format.h).
    static constexpr uint64_t kUnchecked = ~uint64_t{0};
    const oss::DestroyCounters* destroys = nullptr;
    mutable std::atomic<uint64_t> checked_at{kUnchecked};
    ~OpenObject();
  };
  struct ObjectKey {
    uint32_t ost = 0;
    uint64_t group = 0, id = 0;
    auto operator<=>(const ObjectKey&) const = default;
  };
  std::shared_ptr<const OpenObject> CachedObject(const ObjectKey& key);
  void KeepObject(const ObjectKey& key, std::shared_ptr<const OpenObject> f);
  // Drops `key` if it still holds `f` (a newer descriptor stays).
  void DropObject(const ObjectKey& key, const OpenObject* f);

  OstTransport* const transport_;
  const ClientTunables* const tunables_;
  std::mutex objects_mu_;
  // Most recently used last; at most kMaxOpenObjects.
  std::list<std::pair<ObjectKey, std::shared_ptr<const OpenObject>>>
      objects_lru_;                                                // GUARDED_BY(objects_mu_)
  std::map<ObjectKey, decltype(objects_lru_)::iterator> objects_;  // GUARDED_BY(objects_mu_)
  std::mutex mu_;
  std::map<uint32_t, Ost> osts_;  // GUARDED_BY(mu_)
  std::vector<int> retired_;      // GUARDED_BY(mu_): replaced descriptors, closed at the end
  // GUARDED_BY(mu_): every destroy counter mapping made, unmapped at the end (an open object
  // may hold one after its OST moved).
  std::vector<const oss::DestroyCounters*> mapped_;
  std::atomic<uint64_t> reads_{0}, fallbacks_{0}, path_checks_{0};
  std::atomic<uint64_t> polls_{0}, polled_{0}, random_direct_{0};
};

}  // namespace stria::client
