// InodeTable: the FUSE client's view of the inodes the kernel holds references to.
//
// Each Inode is keyed by its MDS inode number (= the FUSE node id; the root is 1) and carries
// the kernel's lookup count, the file's cached layout and what this client knows of its size
// beyond the MDS (the highest end written here while open for writing). An entry is created
// by the first reply that hands the inode to the kernel (lookup, create, mkdir, readdirplus,
// ...) with Ref(), and erased when forget drops its lookup count to zero. Open file handles
// hold shared_ptrs, so an Inode outlives its table entry while a file is open.
//
// The table is split in shards, each with its own mutex, so no lock is global; the data path
// (read/write) reaches its Inode through the file handle and takes no table lock at all.
// Lock order: a shard mutex, then Inode::mu; never two shard mutexes.
// Thread-safety: all methods are thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "client/fuse/write_behind.h"
#include "proto/stria.pb.h"

namespace stria::client::fuse {

inline constexpr uint64_t kRootIno = 1;

struct PreOpen;  // pre_opens.h

struct Inode {
  explicit Inode(uint64_t ino_) : ino(ino_) {}

  const uint64_t ino;

  // Size this client knows: the MDS size, raised by writes made here while the file is open
  // for writing (reads clamp to it; getattr reports max(MDS size, it) while HoldsSize()).
  std::atomic<uint64_t> known_size{0};
  // Highest end written through this client since the last truncate.
  std::atomic<uint64_t> written_end{0};
  // Highest end of a write the OSTs acknowledged since the last truncate: the size reported
  // at flush/fsync/close, so a write that failed (ENOSPC, EIO) never makes the size claim
  // bytes that were not stored.
  std::atomic<uint64_t> acked_end{0};
  // The size in the latest MDS reply seen (ObserveMdsSize).
  std::atomic<uint64_t> mds_size{0};
  // A background write failed since the last DrainWrites: known_size may count its bytes.
  std::atomic<bool> write_failed{false};
  // Open handles of this client that may write.
  std::atomic<int> writers{0};
  // Size reports of flushes waiting in the close batcher (close_batcher.h): until the MDS
  // has them its size may be older than what this client wrote.
  std::atomic<int> unreported_sizes{0};
  // Holds of size reports and closes not yet gathered: those close(2)s left to the file's
  // writes in flight (StriaFs::DeferUntilWritten) and releases under way (StriaFs::Hold).
  // A setattr waits for them and sends them first.
  std::atomic<int> deferred_reports{0};
  // Open here, or with a close still to send: kept in the table when the kernel forgets it.
  bool Busy() const { return writers.load() > 0 || deferred_reports.load() > 0; }
  // Whether this client knows the size better than the MDS: it writes the file, or
  // reported writes the MDS has not had yet.
  bool HoldsSize() const { return writers.load() > 0 || unreported_sizes.load() > 0; }
  // Time of the latest write made here (reported to the MDS at flush/close): getattr shows
  // mtime and ctime at least this while HoldsSize(), as a local file would right after write.
  std::atomic<int64_t> write_time_ns{0};
  // A read's atime (relatime) that a closed handle will report with its release, which the
  // application does not wait for: GETATTR shows it meanwhile (0: none pending).
  std::atomic<int64_t> unreported_atime_ns{0};
  // Raises unreported_atime_ns to a read made at `ns` (never lowers it).
  void NoteUnreportedAtime(int64_t ns) {
    int64_t cur = unreported_atime_ns.load();
    while (cur < ns && !unreported_atime_ns.compare_exchange_weak(cur, ns)) {
    }
  }
  // (size, mtime) the MDS gave at this client's latest open: if the next open sees the
  // same, the kernel's page cache of the file is still valid (keep_cache).
  std::atomic<uint64_t> open_size{0};
  std::atomic<int64_t> open_mtime_ns{-1};
  // (size, mtime) of the attributes last handed to the kernel (lookup, getattr): an open
  // that finds the same at the MDS need not invalidate the kernel's copy.
  std::atomic<uint64_t> kernel_size{UINT64_MAX};
  std::atomic<int64_t> kernel_mtime_ns{-1};
  // Writes of this file still on their way to the OSTs (client/fuse/write_behind.h).
  WriteBehind write_behind;

  // Folds an MDS size into known_size. `held_before`: this client held the size
  // (HoldsSize()) when it sent the request the size came with. The MDS may then have
  // answered before this client's size report reached it, and the report may have been
  // answered since: such a size only raises known_size, never lowers it.
  void ObserveMdsSize(uint64_t mds_size, bool held_before = false);
  // Raises known_size and written_end to `end` after a write.
  void NoteWrite(uint64_t end);
  // Raises acked_end to `end` once a write up to it succeeded on the OSTs.
  void NoteAcked(uint64_t end);
  // Waits for the writes in flight (write_behind.Drain) and returns their first error; if
  // one failed, known_size drops back to what is stored (max of the MDS size and acked_end),
  // so neither getattr nor reads claim the bytes of a failed write.
  Status DrainWrites();
  // What DrainWrites does once the writes are done, for `drained`, their first error (taken
  // by a WriteBehind::AfterWrites callback; StriaFs::SettleWrites).
  Status WritesDrained(Status drained);
  // After a truncate to `size` made by this client.
  void NoteTruncate(uint64_t size);
  // The size getattr should report for an MDS size.
  uint64_t ReportedSize(uint64_t mds_size) const;

  // The file's layout, once an MDS reply carried one with objects (null before). Callers
  // keep the snapshot they got: an instantiated component (PFL) replaces the layout, never
  // changes it in place.
  std::shared_ptr<const proto::Layout> layout() const;
  // Takes `layout` (if it has objects) unless the one held has a higher generation, so an
  // older reply never undoes an instantiation; returns the layout held afterwards.
  std::shared_ptr<const proto::Layout> set_layout(const proto::Layout& layout);

  // The attributes of the last MDS reply that named this inode (a lookup, create,
  // getattr or setattr): what an open under the mount's attribute lease goes by
  // (local_opens.h). Null before one.
  std::shared_ptr<const proto::Attr> attr() const;
  void set_attr(const proto::Attr& attr);
  // set_attr unless the attributes held are later (a higher ctime, which never moves back
  // at the MDS): false when `attr` is older and was not taken.
  bool set_attr_unless_older(const proto::Attr& attr);

  // Read-on-open: the whole file as the last open's reply carried it (a small Data-on-MDT
  // file), served to reads until this client changes the file (DropOpenData on every write,
  // truncate and punch) or another open brings newer bytes. Null when none.
  std::shared_ptr<const std::string> open_data() const;
  void set_open_data(std::shared_ptr<const std::string> data);
  void DropOpenData() { set_open_data(nullptr); }

  // An open the MDS made with the lookup that found this file (pre_opens.h), for the
  // kernel's OPEN to take; TakePreOpen leaves none. A later one replaces it (PreOpens closes
  // the one replaced, unclaimed, when its time is up).
  std::shared_ptr<PreOpen> TakePreOpen();
  void set_pre_open(std::shared_ptr<PreOpen> p);
  // The directory of the latest lookup without open intent that found this file (0: none
  // since the last open): an open that follows raises the directory's score (PreOpens).
  std::atomic<uint64_t> looked_up_in{0};

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const proto::Layout> layout_;  // guarded by mu_
  std::shared_ptr<const std::string> open_data_;  // guarded by mu_
  std::shared_ptr<const proto::Attr> attr_;       // guarded by mu_
  std::shared_ptr<PreOpen> pre_open_;             // guarded by mu_
};

class InodeTable {
 public:
  InodeTable();

  // The inode if the kernel holds it (or an open handle made it known), else null.
  std::shared_ptr<Inode> Get(uint64_t ino) const;

  // Hands one more reference of `attr.ino` to the kernel: creates the entry if needed,
  // increments its lookup count, records the size and, for a file, the layout (may be null).
  // Attributes older than those held (a READDIRPLUS page read before the file changed, served
  // after an open saw the change) count the reference and change nothing else: a smaller
  // size from before would cut the open's reads short.
  std::shared_ptr<Inode> Ref(const proto::Attr& attr, const proto::Layout* layout);

  // The kernel dropped `nlookup` references. The root is never erased, nor an inode that
  // is Busy() (a close(2) left its size report to writes still in flight): a lookup then
  // finds the same Inode, whose reads and truncates wait for them. DropIfForgotten erases
  // it once it is idle.
  void Forget(uint64_t ino, uint64_t nlookup);
  void DropIfForgotten(uint64_t ino);

  size_t size() const;

 private:
  static constexpr size_t kShards = 64;
  struct Entry {
    std::shared_ptr<Inode> inode;
    uint64_t nlookup = 0;
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<uint64_t, Entry> map;  // guarded by mu
  };
  Shard& ShardOf(uint64_t ino) const { return shards_[ino % kShards]; }
  // Erases the entry the kernel no longer references, unless it is the root or Busy().
  // REQUIRES s.mu held.
  static void EraseIfDoneLocked(Shard& s, std::unordered_map<uint64_t, Entry>::iterator it);

  mutable std::array<Shard, kShards> shards_;
};

}  // namespace stria::client::fuse
