// StriaFs: the FUSE low-level filesystem over libstria (the FUSE client is a thin layer).
//
// Each FUSE callback (a static function in fuse_*_ops.cc) fetches the StriaFs from the
// request's userdata, calls one Do* method that returns a Status, and replies exactly once:
// the reply for success, or fuse_reply_err(req, status.ToErrno()) — the one place a Status
// becomes an errno. Credentials of the calling process go into every MDS request.
//
// Semantics: close-to-open consistency. A writer reports its size to the MDS at flush,
// fsync and release (OP_MDS_CLOSE); getattr on a file this client has open for writing shows
// max(MDS size, highest end written here); reads clamp to the size this client knows. No
// writeback cache; entry/attr timeouts 1 s, no negative caching. Permissions are enforced
// by the MDS; the kernel checks the mode bits as well (default_permissions), so a path walk
// through cached dentries still needs search permission.
//
// Thread-safety: callbacks run concurrently on libfuse's worker threads. The inode table is
// sharded; reads and writes touch only their file handle and its Inode (atomics), so the
// data path takes no global lock.
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "client/client.h"
#include "client/fuse/close_batcher.h"
#include "client/fuse/dir_attr_cache.h"
#include "client/fuse/file_handle.h"
#include "client/fuse/groups_cache.h"
#include "client/fuse/inode_table.h"
#include "client/fuse/jobid_cache.h"
#include "client/fuse/lease_cache.h"
#include "client/fuse/llite_params.h"
#include "client/fuse/local_opens.h"
#include "client/fuse/lock_waiters.h"
#include "client/fuse/mount_options.h"
#include "client/fuse/pre_opens.h"
#include "client/fuse/statahead.h"
#include "client/fuse/unlink_writeback.h"
#include "client/metadata.h"
#include "client/session.h"
#include "common/status.h"
#include "lnet/buffer.h"

namespace stria::client::fuse {

struct FsOptions {
  double entry_timeout_s = 1.0;       // dentry cache validity
  double attr_timeout_s = 1.0;        // attribute cache validity
  // How long a caller's supplementary groups are reused (client/fuse/groups_cache.h); 0
  // reads them for every request (mounts without default_permissions).
  int groups_ttl_ms = 1000;
  uint32_t max_write = 1u << 20;      // bytes per FUSE write
  uint32_t max_readahead = 8u << 20;  // asked of the kernel (it may grant less)
  uint32_t max_background = 64;       // async requests (readahead) the kernel keeps in flight
  // Mount options (client/fuse/mount_options.h): who serves fcntl/flock locks (the MDS, the
  // kernel alone, or nobody: ENOSYS), whether user.* xattrs are allowed, and whether statfs
  // waits for every OST (nolazystatfs) or takes the MDS's sums of those that answer.
  LockMode locks = LockMode::kCluster;
  bool user_xattr = true;
  bool lazy_statfs = true;
  // Closes that report nothing wait this long to go together (close_batcher.h); 0 sends
  // each at once.
  int close_gather_ms = 10;
  // A read-only open of a file under the mount's attribute lease is made without the MDS,
  // and registered there this long after unless closed before (local_opens.h); 0: every
  // open asks the MDS. Only on a mount whose closes are gathered, and never where the
  // cluster has a key (capabilities): an open then brings the OSS capabilities.
  int open_register_ms = 0;
  // A lookup in a directory whose files are then opened read-only opens the file at the MDS
  // too (LookupRequest.open), and the kernel's OPEN takes that open within this long; one
  // not taken by then is closed (pre_opens.h). 0: every open is its own MDS request.
  int open_intent_ms = 1000;
  // Names asked ahead of a directory's lookups that follow a numbered pattern, in one MDS
  // request per half of this (statahead.h); 0: none (llite.*.statahead_max).
  int statahead_max = 32;
  bool capabilities = false;  // the cluster has a key (the mount's key ring is not empty)
  // The kernel hands over the data of a WRITE through a pipe (splice, FUSE_CAP_SPLICE_READ)
  // and stria-fuse reads it once into the buffer the write-behind sends from, instead of
  // libfuse reading the request into its own buffer and the write-behind copying it again.
  bool splice_writes = true;
};

class StriaFs {
 public:
  StriaFs(Client* client, FsOptions options);
  ~StriaFs();  // the client's MDS call gate goes (StopUnlinkWriteback)

  // The callback table (fuse_lowlevel_ops) whose userdata is a StriaFs.
  static const fuse_lowlevel_ops& Ops();

  // The session, for notifications to the kernel (set once, before the loop starts).
  void set_session(fuse_session* se) { session_ = se; }
  // The client's MDS session (leases, locks, replay); without one, locks fail with ENOSYS.
  void set_mds_session(ClientSession* s) { mds_session_ = s; }
  // Metadata leases (lease_cache.h); without them every kernel timeout is FsOptions'.
  void set_leases(LeaseCache* leases) { leases_ = leases; }
  // Sends every gathered close now and waits (close_batcher.h), after the size reports and
  // closes that close(2)s left to their files' writes (DoFlush) have joined them: an MDS
  // asks before it refuses an operation for a writer or answers about a file another
  // client writes, a setattr before a truncate, and the unmount before the client goes.
  void FlushCloses();
  // The same for one file: waits for its held size reports and closes (Hold), then sends
  // every gathered close: before a setattr of the file, which none may overtake.
  void FlushClosesOf(Inode& inode);
  CloseBatcher::Counters close_counters() const { return closes_.counters(); }
  // A revocation of these inodes' attribute leases: the MDS hears of their opens made
  // without it before the revocation is answered (local_opens.h), and the opens their
  // lookups brought are closed (pre_opens.h: they may no longer show the file as it is).
  void AttrLeasesRevoked(const std::vector<uint64_t>& inos);
  // The mount lost its leases: no open a lookup brought is taken any more.
  void DropPreOpens() { pre_opens_.DiscardAll(); }
  LocalOpens::Counters local_open_counters() const { return local_opens_.counters(); }
  // At unmount, before the MDS session goes: no registration runs after.
  void StopLocalOpens() { local_opens_.Stop(); }
  PreOpens::Counters pre_open_counters() const { return pre_opens_.counters(); }
  // At unmount, before the last gathered closes go: the pre-opens still held join them
  // (those of the lookups asked ahead first).
  void StopPreOpens() {
    ahead_.Stop();
    pre_opens_.Stop();
  }
  // A revocation: no reply kept for a lookup asked ahead may be used (statahead.h).
  void DropAhead() { ahead_.Clear(); }
  Statahead::Counters statahead_counters() const { return ahead_.counters(); }

  // Unlinks answered here under the MDS's write-back grants and sent behind
  // (unlink_writeback.h): on a mount with leases and default_permissions and without local
  // opens. Every MDS request of the mount waits for those answered before it.
  void StartUnlinkWriteback();
  // A revocation of these directories' entry leases (all: the leases were lost): the grants
  // there end, and the unlinks answered under them reach the MDS before it is answered.
  void RecallUnlinks(const std::vector<uint64_t>& dirs, bool all) {
    if (UnlinkWriteback* wb = unlink_wb_live_.load(std::memory_order_acquire)) {
      wb->Recall(dirs, all);
    }
  }
  // At unmount, while the MDS session still runs: sends what is queued; no more write-back.
  void StopUnlinkWriteback();

  Client* client() { return client_; }
  InodeTable& inodes() { return inodes_; }
  const FsOptions& options() const { return options_; }

  // ---- namespace (fuse_ops.cc) ----
  void Init(fuse_conn_info* conn);
  // open_intent: the kernel's LOOKUP, which an OPEN of what it finds may follow (PreOpens).
  Status DoLookup(fuse_req_t req, uint64_t parent, const char* name, fuse_entry_param* e,
                  bool open_intent = false);
  // *timeout: how long the kernel may keep the attributes.
  Status DoGetattr(fuse_req_t req, uint64_t ino, struct stat* st, double* timeout);
  Status DoSetattr(fuse_req_t req, uint64_t ino, const struct stat& attr, int to_set,
                   FileHandle* fh, struct stat* out);
  // With open_reply, a regular file is created and opened in one MDS round trip: the reply
  // (attributes, layout, open handle) lands there.
  Status DoCreateNode(fuse_req_t req, uint64_t parent, const char* name, uint32_t mode,
                      uint32_t rdev, const char* symlink_target, fuse_entry_param* e,
                      proto::EntryReply* open_reply = nullptr);
  Status DoLink(fuse_req_t req, uint64_t ino, uint64_t new_parent, const char* name,
                fuse_entry_param* e);
  Status DoUnlink(fuse_req_t req, uint64_t parent, const char* name, bool is_dir);
  Status DoRename(fuse_req_t req, uint64_t parent, const char* name, uint64_t new_parent,
                  const char* new_name, unsigned int flags);
  Status DoReadlink(fuse_req_t req, uint64_t ino, std::string* target);
  Status DoStatfs(fuse_req_t req, struct statvfs* out);
  Status DoSetxattr(fuse_req_t req, uint64_t ino, const char* name, const char* value,
                    size_t size, int flags);
  // Fills *value (size > 0) or *full_size (size == 0, a size query).
  Status DoGetxattr(fuse_req_t req, uint64_t ino, const char* name, size_t size,
                    std::string* value, size_t* full_size);
  Status DoListxattr(fuse_req_t req, uint64_t ino, size_t size, std::string* names,
                     size_t* full_size);
  Status DoRemovexattr(fuse_req_t req, uint64_t ino, const char* name);
  Status DoAccess(fuse_req_t req, uint64_t ino, int mask);

  // ---- files (fuse_file_ops.cc) ----
  Status DoOpen(fuse_req_t req, uint64_t ino, fuse_file_info* fi);
  Status DoCreate(fuse_req_t req, uint64_t parent, const char* name, uint32_t mode,
                  fuse_file_info* fi, fuse_entry_param* e);
  Result<size_t> DoRead(FileHandle* fh, uint64_t offset, std::span<uint8_t> buf);
  Result<size_t> ReadData(FileHandle* fh, uint64_t offset, std::span<uint8_t> buf);
  // `owned`, when given, holds `data` (a spliced write read into a buffer of its own): the
  // write-behind sends it as it is instead of copying it.
  Status DoWrite(FileHandle* fh, uint64_t offset, std::span<const uint8_t> data,
                 std::shared_ptr<const lnet::Buffer> owned = nullptr);
  Status DoFlush(fuse_req_t req, FileHandle* fh);
  Status DoRelease(fuse_req_t req, FileHandle* fh);
  Status DoFsync(fuse_req_t req, FileHandle* fh, bool datasync);
  // fallocate(2) modes 0, KEEP_SIZE and PUNCH_HOLE|KEEP_SIZE (fuse_fallocate.cc).
  Status DoFallocate(fuse_req_t req, FileHandle* fh, int mode, uint64_t offset,
                     uint64_t length);

  // ---- advisory locks (fuse_lock_ops.cc) ----
  Status DoGetlk(fuse_req_t req, uint64_t ino, const fuse_file_info* fi, struct flock* lock);
  // With wait, a conflict is answered later, by lock_waiters_ (nullopt here).
  std::optional<Status> DoSetlk(fuse_req_t req, uint64_t ino, const fuse_file_info* fi,
                                const struct flock& lock, bool wait);
  std::optional<Status> DoFlock(fuse_req_t req, uint64_t ino, const fuse_file_info* fi,
                                int op);
  // Answers every waiting lock request EINTR: at unmount, before the session goes.
  void StopLockWaits() { lock_waiters_.Stop(); }
  // Drops `owner`'s locks of `kind` on `ino` if this client holds any (close, release).
  void ReleaseLocks(uint64_t ino, uint64_t owner, LockKind kind);

  // ---- directories (fuse_dir_ops.cc) ----
  Status DoOpendir(fuse_req_t req, uint64_t ino, fuse_file_info* fi);
  // Fills out (at most `size` bytes) with entries from index `offset` on.
  Status DoReaddir(fuse_req_t req, DirHandle* dh, size_t size, off_t offset, bool plus,
                   std::string* out);
  // fsync(2) of a directory: the MDS makes every change it answered durable (OP_MDS_SYNC).
  Status DoFsyncdir(fuse_req_t req, uint64_t ino);

  // ---- local parameters and statistics (llite_params.cc, client/fuse/llite_params.h) ----
  StatsSet& llite_stats() { return llite_; }
  // NAME\0VALUE\0 for each local parameter matching the glob (values empty with names_only).
  std::string GetLocalParams(std::string_view pattern, bool names_only);
  // Sets a tunable on this mount, or clears statistics (value "clear"). Root only.
  Status SetLocalParam(fuse_req_t req, std::string_view name, std::string_view value);

  // The caller's credentials, with its JOBID (client/fuse/jobid_cache.h).
  proto::Credentials Cred(fuse_req_t req);

  // Fills a fuse_entry_param for an MDS entry and takes one lookup reference (Ref), with
  // FsOptions' timeouts.
  void FillEntry(const proto::Attr& attr, const proto::Layout* layout, fuse_entry_param* e);
  // The same for the reply to a LOOKUP or CREATE of `name` in `parent` begun at `stamp`, with
  // the timeouts its leases allow.
  void FillEntry(const proto::EntryReply& rep, uint64_t parent, std::string_view name,
                 const LeaseCache::Stamp& stamp, fuse_entry_param* e);
  LeaseCache::Stamp LeaseBegin() const {
    return leases_ != nullptr ? leases_->Begin() : LeaseCache::Stamp{};
  }
  // The kernel's attribute timeout for `ino` from a reply granting attr_lease_ms.
  double AttrTimeout(uint64_t ino, uint32_t attr_lease_ms, const LeaseCache::Stamp& stamp);

 private:
  // Opens an MDS handle on `ino` (or takes the one `created` granted with the create, or
  // the open `opened` that the MDS made with the lookup), builds the FileHandle and applies
  // O_TRUNC.
  Status OpenHandle(fuse_req_t req, uint64_t ino, int flags, const proto::EntryReply* created,
                    fuse_file_info* fi, const proto::OpenReply* opened = nullptr);
  // The lookup's open of a file (EntryReply.open), held for the kernel's OPEN (pre_opens.h)
  // if the lookup's reply (begun at `stamp`) brought an attribute lease that still holds,
  // and this mount did not change the file since local_changes_ was `changes_before` (when
  // the lookup was sent); closed otherwise.
  void KeepPreOpen(uint64_t parent, const proto::Credentials& cred, proto::OpenReply opened,
                   const LeaseCache::Stamp& stamp, uint64_t changes_before);
  // KeepPreOpen in two steps, for a lookup asked ahead (statahead.h): the open made, held
  // in PreOpens (closed unless taken); then, when the kernel's LOOKUP takes the reply, set
  // on the inode under the same conditions, or closed.
  std::shared_ptr<PreOpen> MakePreOpen(uint64_t parent, const proto::Credentials& cred,
                                       proto::OpenReply opened);
  void SetPreOpen(const std::shared_ptr<PreOpen>& p, const LeaseCache::Stamp& stamp,
                  uint64_t changes_before);
  // Statahead's request: the names of `job` looked up (and opened) at the MDS.
  std::vector<Result<AheadEntry>> FetchAhead(const Statahead::Job& job);
  // The kernel's LOOKUP of `name` in `parent` by `cred` answered with a reply asked ahead,
  // when it may be (see statahead.h): true when e is filled; else its open is closed.
  bool UseAhead(AheadEntry& a, uint64_t parent, std::string_view name,
                const proto::Credentials& cred, fuse_entry_param* e);
  // This mount changes `ino` where the MDS does not revoke its own lease (a writer starts or
  // ends, a size report is answered, a setattr is sent or answered): no open that a lookup
  // brought before stays.
  void ChangingLocally(uint64_t ino);
  // Closes the pre-opens held on these inodes.
  void DropPreOpensOf(const std::vector<uint64_t>& inos);
  // The pre-open the kernel's OPEN of `ino` with `flags` can take, else null (none, closed
  // unused already, or not for this open: then closed now).
  std::shared_ptr<PreOpen> TakePreOpen(fuse_req_t req, uint64_t ino, int flags);
  // PreOpens' close of one not taken: with the gathered closes.
  void ClosePreOpen(const PreOpen& p);
  // Sends this client's size for fh's file to the MDS (OP_MDS_CLOSE); close=true also
  // closes the MDS open handle; sync=true (fsync, O_SYNC) makes the MDS sync it before the
  // reply, else it is durable with the MDS's next sync (as the data with the OSTs').
  Status ReportSize(fuse_req_t req, FileHandle* fh, bool close, bool sync);
  // The same once the file's writes have finished with `drained` (their first error).
  Status ReportDrained(fuse_req_t req, FileHandle* fh, bool close, bool sync, Status drained);
  // The rest of a release once the file's writes have finished (`written`: their first
  // error, settled by SettleWrites): the close and the handle freed.
  Status FinishRelease(fuse_req_t req, FileHandle* fh, Status written);
  // A read-only open under the attribute lease, without the MDS (local_opens.h): true when
  // made (fi filled), false when the open must ask the MDS.
  bool OpenLocally(fuse_req_t req, uint64_t ino, int flags, fuse_file_info* fi);
  // LocalOpens' registration: OP_MDS_OPEN for fh, whose handle it takes.
  void RegisterLocalOpen(FileHandle* fh);
  // A deferred close's hold on its inode (Inode::deferred_reports): a setattr meanwhile
  // sends the gathered closes first, and the inode table keeps the inode when the kernel
  // forgets it (InodeTable::Forget) until the last hold goes.
  void Hold(Inode& inode);
  void Unhold(const std::shared_ptr<Inode>& inode);
  // The writes of `inode` finished with `drained`: on failure the inode's size drops back
  // to what is stored, the error is kept for the file's next write, fsync or close (no
  // application saw it yet) and the kernel's cached size goes. Returns `drained`.
  Status SettleWrites(Inode* inode, Status drained);
  // After a write failed: the kernel set the file's size to the end of the write when
  // write(2) returned, and keeps it up to attr_timeout; it asks again (DoGetattr answers
  // with what the OSTs stored).
  void ForgetKernelSize(uint64_t ino);
  // Whether size reports and closes of handles open for writing go with the gathered
  // closes: the MDS can then ask this mount for them (leases work).
  bool Gathering() const;
  // Runs `then` once the writes of fh's file in flight now have finished, without waiting
  // for them (WriteBehind::AfterWrites), counted until it returns so that FlushCloses waits
  // for it. For a flush (not `release`): false, and `then` is not run, when nothing is in
  // flight and no earlier such callback waits, when closes are not gathered or kMaxDeferred
  // wait already: the caller then waits itself. A release is not bounded (see DoRelease) and
  // always true: with nothing in flight, `then` runs here, still counted.
  // `then` gets the writes' first error and the ticket it was counted under.
  bool DeferUntilWritten(FileHandle* fh, std::function<void(Status, uint64_t)> then, bool release);
  // Sends gathered closes (the CloseBatcher's thread); once the MDS did them all, the atimes
  // they carried are no longer shown from the inodes' unreported_atime_ns.
  Result<proto::CloseBatchReply> SendCloses(const proto::CloseBatchRequest& batch);
  // The layout to write [offset, end) of fh's file with: the one held, or, when the range
  // reaches components without objects (PFL), the one the MDS returns after instantiating
  // them (OP_MDS_LAYOUT_INTENT through fh's MDS handle).
  Result<std::shared_ptr<const proto::Layout>> WriteLayout(FileHandle* fh, uint64_t offset,
                                                           uint64_t end);
  // The layout to read [offset, end) with: when the range reaches components without
  // objects, another client may have instantiated them since, so the MDS is asked again.
  Result<std::shared_ptr<const proto::Layout>> ReadLayout(FileHandle* fh, uint64_t offset,
                                                          uint64_t end);
  // Truncates the objects of `layout` and sets the MDS size (plus any other SETATTR bits).
  // capas: the OSS capabilities of the open the truncate goes through (may be keyless).
  Status Truncate(fuse_req_t req, uint64_t ino, const proto::Layout& layout, uint64_t size,
                  proto::SetattrRequest* sr, proto::AttrReply* rep, OpenCapas* capas);
  Status FetchDirPage(fuse_req_t req, DirHandle* dh, bool plus);
  // The layout as the lustre.lov xattr (client/lov_xattr.h): get, and set (directories).
  Result<std::string> GetLov(fuse_req_t req, uint64_t ino);
  // EOPNOTSUPP for a user.* name on a nouser_xattr mount.
  Status CheckUserXattr(std::string_view name) const;
  Status SetLov(fuse_req_t req, uint64_t ino, std::string_view value);
  // One lock request; with wait, a conflict queues it in lock_waiters_ and the answer
  // comes later (nullopt here); otherwise the answer.
  std::optional<Status> LockOrWait(fuse_req_t req, const proto::LockRequest& lr, bool wait);

  // Every local parameter's getter by name; `clears` (when given) gets the statistics'.
  std::map<std::string, std::function<std::string()>> LocalParamGetters(
      std::map<std::string, std::function<void()>>* clears);

  Client* const client_;
  Metadata md_{client_};  // every MDS request goes through it
  const FsOptions options_;
  const std::string fsname_;
  StatsSet llite_{kLliteCounters};
  JobIdCache jobids_;
  fuse_session* session_ = nullptr;
  ClientSession* mds_session_ = nullptr;
  LeaseCache* leases_ = nullptr;
  InodeTable inodes_;
  GroupsCache groups_{std::chrono::milliseconds(options_.groups_ttl_ms)};
  // Directories' attributes from this client's own create/link/unlink replies: the
  // kernel's GETATTR of a parent it just invalidated is answered here (dir_attr_cache.h).
  DirAttrCache dir_attrs_{std::chrono::milliseconds(static_cast<int64_t>(options_.attr_timeout_s * 1000))};
  // Blocking lock requests, waiting for a conflicting lock to go (lock_waiters.h).
  LockWaiters lock_waiters_;
  // Read-only opens the MDS has not heard of yet (local_opens.h).
  LocalOpens local_opens_{std::chrono::milliseconds(options_.open_register_ms),
                          [this](FileHandle* fh) { RegisterLocalOpen(fh); }};
  // Unlinks answered before the MDS has them (unlink_writeback.h); null: none.
  std::unique_ptr<UnlinkWriteback> unlink_wb_;
  std::atomic<UnlinkWriteback*> unlink_wb_live_{nullptr};  // for the lease callback threads
  // Closes that report nothing, sent together (close_batcher.h).
  CloseBatcher closes_{std::chrono::milliseconds(options_.close_gather_ms),
                      [this](const proto::CloseBatchRequest& r) { return SendCloses(r); }};
  // What ChangingLocally changed: a lookup with open intent in flight across a change of its
  // file keeps no open.
  LocalChanges local_changes_;
  // Opens made with lookups, for the kernel's OPENs (pre_opens.h). After closes_: those it
  // closes as it goes join the gathered closes.
  PreOpens pre_opens_{
      std::chrono::milliseconds(options_.open_register_ms > 0 ? 0 : options_.open_intent_ms),
      [this](const PreOpen& p) { ClosePreOpen(p); }};
  // Lookups asked ahead of a directory's readers (statahead.h). After pre_opens_, which
  // holds their opens.
  Statahead ahead_{
      options_.statahead_max,
      std::chrono::milliseconds(options_.open_intent_ms > 0 ? options_.open_intent_ms : 1000),
      [this](const Statahead::Job& job) { return FetchAhead(job); },
      [this](AheadEntry& a, Statahead::Why why) {
        if (!a.pre_open) return;
        // Only an open nobody asked for in time says the directory's reads stopped
        // following their lookups (pre_opens.h); one dropped for a change says nothing.
        if (why == Statahead::Why::kUnused) {
          pre_opens_.Drop(*a.pre_open);
        } else {
          pre_opens_.Withdraw(*a.pre_open);
        }
      },
      [this](uint64_t dir) { return pre_opens_.Wants(dir); }};
  // Work that close(2)s left to their files' writes (DeferUntilWritten): the tickets of
  // those not yet done. Bounded, as the bytes they wait for are kept in memory and
  // FlushCloses waits for them.
  static constexpr size_t kMaxDeferred = 32;
  // Nor is a close(2) with more than this in flight: what FlushCloses waits for stays well
  // within the time an MDS gives its lease callback.
  static constexpr uint64_t kMaxDeferredBytes = 1 << 20;
  std::mutex deferred_mu_;
  std::condition_variable deferred_cv_;  // a ticket was done
  std::multiset<uint64_t> deferred_;     // GUARDED_BY(deferred_mu_)
  uint64_t deferred_tickets_ = 0;        // GUARDED_BY(deferred_mu_): tickets ever issued
  // Runs write-behind (client/fuse/write_behind.h); declared last so it is joined first.
  // Each thread carries one bulk RPC at a time, so this is how many background writes the
  // mount keeps in flight over all OSTs (osc.*.max_rpcs_in_flight still bounds each OST at
  // 8). 4 held 4 writers or an 8-shard checkpoint to 4 RPCs in all: 12 wrote 4 jobs 1.04-1.18x
  // and the checkpoint 1.1x as fast at the same CPU per GiB (docs/performance.md).
  internal::ThreadPool write_pool_{12};
};

}  // namespace stria::client::fuse
