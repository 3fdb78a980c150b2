// Namespace: the MDS's store — one RocksDB instance holding inodes, directory entries,
// xattrs, the OST table, params and the destroy queue (schema in mds/schema.h) — plus the
// small in-memory state that mutations update (counters, the OST table, the round-robin
// allocation cursor).
//
// Concurrency model of the MDS (see also docs/): RPC worker threads run the operation
// handlers (mds/ops/*.cc) concurrently. Every mutation takes the namespace mutex (mutex())
// for its whole read-check-write sequence and commits exactly one WriteBatch (mds/txn.h),
// so mutations are serialized and each is atomic. A batch is in the WAL (it survives a
// kill -9) before the reply; it is durable on disk (WAL synced) before the reply when the
// caller asks (DeferredSync::Wait, fsync), else within the commit interval (the committer
// thread, StartCommitter). Reads (lookup, getattr, readdir, getxattr, ...) do not take the
// mutex: they read RocksDB directly and see each mutation either entirely or not at all
// (a multi-key read may straddle two mutations; it then reports ENOENT, as a race would).
// The in-memory state below is GUARDED_BY(mutex_); accessors that copy it take the mutex
// briefly.
//
// Lock order: Namespace::mutex_ is the only lock held while calling RocksDB; it is never held
// while calling the OstGateway (network).
#pragma once

#include <rocksdb/db.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/status.h"
#include "mds/inode_cache.h"
#include "mds/leases.h"
#include "mds/ost_gateway.h"
#include "mds/params.h"
#include "proto/stria.pb.h"

namespace stria::mds {

// One inode as stored under I<ino>.
struct InodeRecord {
  proto::Attr attr;
  proto::Layout layout;               // regular files
  bool has_default_layout = false;    // directories
  proto::Layout default_layout;
  std::string symlink_target;
  uint64_t parent = 0;                // directories: the parent directory's inode
  // The entries that name this inode (parent, name), as Lustre's linkEA: kept by create,
  // link, unlink and rename, at most kMaxLinkRecords (a file with more hard links lists
  // the first ones). The root has none. Read by fid2path.
  std::vector<std::pair<uint64_t, std::string>> links;
  // Whether the inode may have extended attributes (rec::Inode.xattrs): kNone lets its
  // removal skip the scan for X keys.
  enum class Xattrs : uint8_t { kUnknown = 0, kNone = 1, kSome = 2 };
  Xattrs xattrs = Xattrs::kUnknown;

  bool is_dir() const;
  bool is_reg() const;
  bool is_lnk() const;
  std::string Encode() const;
  static Result<InodeRecord> Decode(std::string_view bytes);

  void AddLink(uint64_t dir, std::string_view name);
  void RemoveLink(uint64_t dir, std::string_view name);
};

inline constexpr size_t kMaxLinkRecords = 64;

// Inode numbers and object ids are handed out from ranges reserved on disk: the stored
// counter is the end of the current range, written (and synced) once per kIdReserve ids,
// and after a restart allocation resumes at the stored end. So an id that a reply made
// known is never handed out again, even when the change that used it was not yet durable
// when the MDS lost power (a client may have written objects under it).
inline constexpr uint64_t kIdReserve = 4096;

// One OST as the MGS knows it, with the MDS's object id counter for it.
struct OstState {
  proto::OstInfo info;
  uint64_t next_object_id = 1;   // the next id to hand out
  uint64_t object_id_limit = 1;  // the end of the reserved range (the stored counter)
};

// The counters kept in the superblock (S keys).
struct SuperState {
  uint64_t next_ino = 2;         // the next inode number to hand out
  uint64_t ino_limit = 2;        // the end of the reserved range (the stored next_ino)
  uint64_t inodes = 1;
  uint64_t destroy_seq = 1;
  uint64_t config_gen = 1;
};

struct NamespaceOptions {
  std::string data_dir;     // the RocksDB directory; formatted when empty or missing
  std::string fsname;       // must match the stored name of an existing filesystem
  bool format_if_empty = true;
  // Remove files unlinked while open at Open(). The MDS defers this (ReapOrphans) until
  // its recovery window has let clients reopen what they still hold (mds/client_sessions.h).
  bool reap_orphans_at_open = true;
  // The RocksDB Env (file system) to use; null: the default. Tests pass a fault-injecting one
  // (mds/internal/power_loss_env.h).
  rocksdb::Env* env = nullptr;
};

class Namespace {
 public:
  // Opens (or formats) the store. kWrongFs when data_dir holds another filesystem; kDbError
  // for RocksDB failures. `gateway` may be null (statfs then counts no OST space; the destroy
  // queue cannot run); it must outlive the Namespace.
  static Result<std::unique_ptr<Namespace>> Open(const NamespaceOptions& options,
                                                 OstGateway* gateway);
  ~Namespace();  // closes RocksDB cleanly
  Namespace(const Namespace&) = delete;
  Namespace& operator=(const Namespace&) = delete;

  const std::string& fsname() const { return fsname_; }
  OstGateway* gateway() const { return gateway_; }
  rocksdb::DB* db() const { return db_.get(); }

  // The namespace mutex: held by every mutation for its whole duration.
  std::mutex& mutex() { return mutex_; }

  // Called by Txn::Commit, with mutex() held, with what a commit outside a
  // ScopedChangeCapture changed (mds/leases.h: background work revokes leases this way).
  // Set before serving; it must not block.
  void set_change_listener(std::function<void(MdChanges)> fn) { change_listener_ = std::move(fn); }
  const std::function<void(MdChanges)>& change_listener() const { return change_listener_; }

  // ---- reads (no mutex) ----
  // kNoEnt when the inode does not exist, kCorrupt when its record does not decode. Through
  // the inode cache (mds/inode_cache.h).
  Result<InodeRecord> GetInode(uint64_t ino) const;
  // The child inode and type of parent/name, or nullopt.
  Result<std::optional<std::pair<uint64_t, proto::FileType>>> GetDirent(
      uint64_t parent, std::string_view name) const;
  // A raw value, or nullopt when absent.
  Result<std::optional<std::string>> Get(const std::string& key) const;
  // True when directory `ino` has no entries.
  Result<bool> DirIsEmpty(uint64_t ino) const;

  // ---- in-memory state ----
  // REQUIRES: mutex() held.
  SuperState& super_locked() { return super_; }
  std::map<uint32_t, OstState>& osts_locked() { return osts_; }
  uint64_t& rr_cursor_locked() { return rr_cursor_; }
  AllocTunables& alloc_tunables_locked() { return alloc_tunables_; }

  // The directory cache: directories' records as the last commit left them. Every create or
  // unlink reads its parent, and a regular file's create the root too (for the default
  // layout); decoding them from RocksDB each time was a seventh of the MDS's CPU per
  // create. Only Txn writes inode records, under mutex(), so Txn reads through this cache
  // and Txn::Commit updates it once its batch is written. Bounded (kDirCacheEntries; a full
  // cache starts over). REQUIRES: mutex() held.
  const InodeRecord* CachedDirLocked(uint64_t ino) const;
  void CacheDirLocked(uint64_t ino, InodeRecord rec);
  void ForgetDirLocked(uint64_t ino) { dir_cache_.erase(ino); }

  InodeCache::Counters InodeCacheCounters() const { return inode_cache_.counters(); }
  // The inode cache's bound: entries, and the largest record kept (encoded bytes; a
  // file of a few dozen stripes fits). At most about 64K x 4 KiB.
  static constexpr size_t kInodeCacheEntries = 65536;
  static constexpr size_t kInodeCacheMaxRecordBytes = 4096;
  static constexpr size_t kDirCacheEntries = 16384;

  // Copies, taking the mutex briefly.
  std::vector<proto::OstInfo> OstTable();
  uint64_t ConfigGeneration();
  uint64_t InodeCount();

  // ---- open handles (regular files), for unlink-while-open ----
  // open_mutex() guards the handle table. Lock order: mutex() before open_mutex(). Open
  // holds it while it reads the inode and registers the handle; a mutation that drops the
  // last link of a file holds it from the check to the commit, so no open slips between.
  std::mutex& open_mutex() { return open_mu_; }
  // REQUIRES: open_mutex() held. A new handle on `ino`; tracked (counted) for regular files.
  // writer: opened for writing (lfs migrate refuses files with writers).
  uint64_t RegisterOpenLocked(uint64_t ino, bool track, bool writer = false);
  // REQUIRES: open_mutex() held. Whether a handle opened for writing (or restored after a
  // restart, whose mode is not known) is open on `ino`.
  bool HasWritersLocked(uint64_t ino) const { return writer_counts_.count(ino) != 0; }
  // REQUIRES: open_mutex() held. Forgets `handle` (of `ino`); true when it was the last
  // handle on ino. Unknown handles (e.g. from before a restart) are ignored (false). On the
  // last, *may_be_unlinked (when given) says whether ino may have lost its last link while
  // open (NoteMayBeUnlinkedLocked): only then must that close look at the inode.
  bool ReleaseHandleLocked(uint64_t handle, uint64_t ino, bool* may_be_unlinked = nullptr);
  // REQUIRES: open_mutex() held, ino open. Notes that ino may have no link left: an unlink or
  // a rename dropped its last one while open (from the check to the commit: a failed commit
  // leaves a note that costs its last close one read), or an open or a handle restored after
  // a restart found it unlinked. Forgotten at its last close.
  void NoteMayBeUnlinkedLocked(uint64_t ino) { may_be_unlinked_.insert(ino); }
  // REQUIRES: open_mutex() held.
  bool IsOpenLocked(uint64_t ino) const { return open_counts_.count(ino) != 0; }
  // REQUIRES: open_mutex() held. Whether `handle` is an open handle of regular file `ino`.
  bool HandleOpenLocked(uint64_t handle, uint64_t ino) const {
    auto it = handles_.find(handle);
    return it != handles_.end() && it->second == ino;
  }
  // REQUIRES: open_mutex() held. Registers `handle` on `ino` as granted before a restart
  // (a client's reopen); false when that handle number is already in use for another inode.
  bool RestoreHandleLocked(uint64_t handle, uint64_t ino);

  // Removes the files unlinked while open that no handle holds now (their objects go to the
  // destroy queue's owner: the inode records are removed with their layouts).
  Status ReapOrphans();

  // Writes one batch durably (sync = true). Any failure is kDbError. The inode records it
  // writes or deletes leave the inode cache before and after the write: before, so that no
  // reader caches what the batch replaces once it is written; after, so that none caches
  // what it read before (mds/inode_cache.h). So a read that begins after Write returns sees
  // the batch. Inside a DeferredSync
  // scope on this thread, a sync write is made without the WAL sync and the scope makes it
  // durable later (group commit).
  // sync=false only for changes that may wait for durability (the destroy queue's
  // bookkeeping: destroying an object twice is harmless; a size reported at close): the
  // committer, or the next synced write, persists them.
  Status Write(rocksdb::WriteBatch* batch, bool sync = true);

  // Makes every write up to WAL sequence `seq` durable: one thread syncs the WAL for all
  // that wait (group commit); the others wait for it. Never call with mutex() held.
  Status WaitDurable(uint64_t seq);
  // Everything written so far, durable (WaitDurable of the latest sequence).
  Status SyncAll() { return WaitDurable(db_->GetLatestSequenceNumber()); }

  // The committer: a thread that makes writes acknowledged without a sync (CommitLater)
  // durable, at most interval_ms after the first of them; one WAL sync covers all that
  // came meanwhile. Stop joins it after a last sync. interval_ms >= 1.
  void StartCommitter(int interval_ms);
  void StopCommitter();
  // Asks the committer to make WAL sequence `seq` durable soon (without it, the next
  // WaitDurable of anyone, or a clean close, does).
  void CommitLater(uint64_t seq);
  // Waits until WAL sequence `seq` is durable, leaving the sync to the committer when one
  // runs (so a background thread adds no fsync of its own), else syncing now. Never call
  // with mutex() held.
  Status WaitCommitted(uint64_t seq);
  // Transaction numbers (Lustre's transno) are WAL sequence numbers: the highest durable one
  // (what replies report as last_committed), and the highest recovered at open, below which
  // a client's replay after a restart was committed before it (docs/durability.md).
  uint64_t LastCommitted() const { return committed_.load(std::memory_order_acquire); }
  uint64_t RecoveredTransno() const { return recovered_; }
  // Counts this start of the MDS on disk (synced) and returns the count: 1 for the first.
  // A serving MDS calls it once before it serves (ConnectReply.generation). Every start is
  // counted, one that failed before serving too: the database cannot tell it from one that
  // answered clients and then lost all it wrote to the power, and a count shared by two
  // instances would let a client that saw the first take the next count for its successor.
  // (The cost: after a failed start, clients replay without numbers, by the reply journal.)
  Result<uint64_t> CountStart();
  // Whether Open formatted an empty directory (no earlier instance: nothing to recover).
  bool FormattedAtOpen() const { return formatted_at_open_; }
  // How many WAL syncs group commit has made (for tests and stats).
  uint64_t wal_syncs() {
    std::lock_guard lock(sync_mu_);
    return wal_syncs_;
  }

  // Wall-clock nanoseconds since the epoch.
  static int64_t NowNs();

 private:
  Namespace() = default;
  Status Format(const std::string& fsname);
  Status Load();

  std::unique_ptr<rocksdb::DB> db_;
  std::string fsname_;
  OstGateway* gateway_ = nullptr;

  std::mutex mutex_;
  std::function<void(MdChanges)> change_listener_;
  SuperState super_;                  // GUARDED_BY(mutex_)
  std::map<uint32_t, OstState> osts_; // GUARDED_BY(mutex_)
  uint64_t rr_cursor_ = 0;            // GUARDED_BY(mutex_): round-robin start, not persisted
  AllocTunables alloc_tunables_;      // GUARDED_BY(mutex_): cache of params, by config_gen
  Status WriteBatchNow(rocksdb::WriteBatch* batch, bool sync);  // Write, less the cache

  std::unordered_map<uint64_t, InodeRecord> dir_cache_;  // GUARDED_BY(mutex_)
  mutable InodeCache inode_cache_{kInodeCacheEntries};
  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  uint64_t synced_seq_ = 0;      // GUARDED_BY(sync_mu_): WAL durable up to here
  std::atomic<uint64_t> committed_{0};  // synced_seq_, readable without the mutex
  uint64_t recovered_ = 0;              // the latest sequence at open (set once, in Load)
  bool formatted_at_open_ = false;  // set once, in Open
  bool syncing_ = false;         // GUARDED_BY(sync_mu_): a thread is in SyncWAL
  uint64_t wal_syncs_ = 0;       // GUARDED_BY(sync_mu_)
  uint64_t pending_seq_ = 0;     // GUARDED_BY(sync_mu_): CommitLater's highest sequence
  bool committer_stop_ = false;  // GUARDED_BY(sync_mu_)
  bool committer_running_ = false;  // GUARDED_BY(sync_mu_)
  std::condition_variable committer_cv_;
  std::thread committer_;
  std::mutex open_mu_;
  uint64_t next_handle_ = 0;                          // GUARDED_BY(open_mu_)
  std::map<uint64_t, uint64_t> handles_;              // GUARDED_BY(open_mu_): handle -> ino
  std::map<uint64_t, uint32_t> open_counts_;          // GUARDED_BY(open_mu_): ino -> handles
  std::set<uint64_t> writer_handles_;                 // GUARDED_BY(open_mu_)
  std::map<uint64_t, uint32_t> writer_counts_;        // GUARDED_BY(open_mu_): ino -> writers
  std::unordered_set<uint64_t> may_be_unlinked_;     // GUARDED_BY(open_mu_): open inodes
};

// Group commit. Within a DeferredSync scope, mutations on this thread write their batch
// without syncing the WAL (still under the namespace mutex, so the order is unchanged), and
// Wait() — called after the mutex is released, before the reply — makes them durable. One
// WAL sync then covers every mutation that committed meanwhile on any thread, so
// concurrent creates share fsyncs instead of queueing behind each other's. A kill -9 loses
// nothing (the WAL write reached the kernel). Later() instead hands the sync to the
// committer and returns at once: the reply then precedes durability by at most the commit
// interval, unless required() (the change reserved a new id range: that must be durable
// before any id from it is answered).
// Usage: { DeferredSync durable(&ns); st = op(...); if (st.ok()) st = durable.Wait(); }
class DeferredSync {
 public:
  explicit DeferredSync(Namespace* ns);
  ~DeferredSync();  // a scope left without Wait() still syncs (errors logged)
  DeferredSync(const DeferredSync&) = delete;
  DeferredSync& operator=(const DeferredSync&) = delete;

  Status Wait();
  // Hands what this scope wrote to the committer (Namespace::CommitLater) and returns.
  // REQUIRES: !required().
  void Later();
  // How an operation ends: Wait() when `wait` or required(), else Later().
  Status Done(bool wait) {
    if (wait || required_) return Wait();
    Later();
    return Status::Ok();
  }

  // The scope active on this thread for `ns`, or null.
  static DeferredSync* Active(const Namespace* ns);
  void Note(uint64_t seq) { seq_ = std::max(seq_, seq); }
  // The highest WAL sequence any write in this scope got, synced or not: the transno of the
  // operation (0: it wrote nothing).
  uint64_t written() const { return written_; }
  void NoteWritten(uint64_t seq) { written_ = std::max(written_, seq); }
  // A change in this scope must be durable before the reply (Wait, not Later).
  void Require() { required_ = true; }
  bool required() const { return required_; }

 private:
  Namespace* const ns_;
  DeferredSync* const outer_;
  uint64_t seq_ = 0;  // highest WAL sequence written in this scope; 0 = none
  uint64_t written_ = 0;  // the same, counting unsynced writes too; never reset
  bool required_ = false;
};

// Maps a RocksDB status to kDbError (kOk stays kOk).
Status FromRocks(const rocksdb::Status& s, std::string_view what);

}  // namespace stria::mds
