// OP_MDS_OPEN: checks access for the open flags (read for O_RDONLY/O_RDWR, write for
// O_WRONLY/O_RDWR/O_TRUNC; EISDIR for writing a directory; ELOOP for a symlink) and returns
// the attributes, the layout and a handle number. O_TRUNC does not truncate here: the
// client truncates the objects and sends SETATTR_SIZE.
// A regular file unlinked while open stays (nlink 0, an orphan) until its last close.
// OP_MDS_REOPEN: a client replays a handle it was granted before an MDS restart, so a file
// unlinked while open survives the restart (the MDS reaps orphans only after its recovery
// window). ENOENT when the file is gone; EBUSY when the handle number is taken.
// OP_MDS_CLOSE: written to the WAL but synced only when the request says sync (fsync,
// O_SYNC): a size reported at close is as durable as the data it describes, which reaches
// the OSTs' disks only at fsync. When the handle was read, atime = the read time if relatime asks for it
// (atime not after mtime or ctime, or a day old). When the client wrote, size = max(size, reported size), mtime = the
// reported write time (now when absent), ctime = that time (never moving back), and a non-root writer clears
// S_ISUID/S_ISGID as write(2) does.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "common/layout.h"
#include "common/log.h"
#include "common/relatime.h"
#include "mds/dom.h"
#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/txn.h"
#include "proto/layout_components.h"

namespace stria::mds {

Status Open(Namespace& ns, const proto::OpenRequest& req, proto::OpenReply* rep) {
  // Held while the inode is read and the handle registered: an unlink of the last link
  // either sees this handle (and keeps the file as an orphan) or committed before the read.
  std::lock_guard open_lock(ns.open_mutex());
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  const uint32_t acc = req.flags() & O_ACCMODE;
  int mask = 0;
  if (acc == O_RDONLY || acc == O_RDWR) mask |= kMayRead;
  if (acc == O_WRONLY || acc == O_RDWR || (req.flags() & O_TRUNC)) mask |= kMayWrite;
  if (acc == 3) return Status(Code::kInval, "invalid open access mode");
  if (rec.is_lnk()) return Status(Code::kLoop, "cannot open a symlink");
  if (rec.is_dir() && (mask & kMayWrite)) return Status(Code::kIsDir, "cannot open a directory for writing");
  STRIA_RETURN_IF_ERROR(CheckAccess(rec.attr, req.cred(), mask));
  FillReply(rec, rep->mutable_attr(), rep->mutable_layout());
  // Read-on-open: a small file all on the MDT comes with its bytes.
  const uint64_t size = rec.attr.size();
  const uint64_t dom_end = rec.is_reg() ? DomEnd(rec.layout) : 0;
  if (dom_end > 0 && size <= dom_end && size <= kReadOnOpenMax && (mask & kMayRead) &&
      !(req.flags() & O_TRUNC)) {
    std::string* data = rep->mutable_data();
    data->resize(size);
    STRIA_ASSIGN_OR_RETURN(size_t n, DomReadBlocks(ns.db(), req.ino(), 0,
                                                   std::span<uint8_t>(
                                                       reinterpret_cast<uint8_t*>(data->data()),
                                                       data->size())));
    (void)n;  // bytes past the last stored one are holes: already zeros
    rep->set_has_data(true);
  }
  rep->set_handle(ns.RegisterOpenLocked(req.ino(), rec.is_reg(), (mask & kMayWrite) != 0));
  if (rec.is_reg() && rec.attr.nlink() == 0) ns.NoteMayBeUnlinkedLocked(req.ino());
  return Status::Ok();
}

Status Reopen(Namespace& ns, const proto::ReopenRequest& req, proto::ReopenReply*) {
  std::lock_guard open_lock(ns.open_mutex());
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  if (!rec.is_reg()) return Status::Ok();  // only regular files' handles are tracked
  if (!ns.RestoreHandleLocked(req.handle(), req.ino())) {
    return Status(Code::kBusy, "handle already in use for another file");
  }
  if (rec.attr.nlink() == 0) ns.NoteMayBeUnlinkedLocked(req.ino());  // unlinked before
  return Status::Ok();
}

namespace {

// Whether a read at read_ns (0: none) moves atime forward (common/relatime.h).
bool NeedsAtime(const proto::Attr& a, int64_t read_ns) {
  if (read_ns <= 0 || read_ns <= a.atime_ns()) return false;
  return RelatimeDue(a.atime_ns(), a.mtime_ns(), a.ctime_ns(), read_ns);
}

}  // namespace

namespace {

// Releases the close's handle. True when it was the file's last one; then *may_be_unlinked
// (when given) says whether the file may have lost its last link while open.
bool ReleaseHandle(Namespace& ns, const proto::CloseRequest& req,
                   bool* may_be_unlinked = nullptr) {
  std::lock_guard open_lock(ns.open_mutex());
  return ns.ReleaseHandleLocked(req.handle(), req.ino(), may_be_unlinked);
}

// A close that changes nothing (no write, no atime due, not the last close of an orphan)
// needs no transaction: then the inode as it is, else nullopt.
Result<std::optional<InodeRecord>> Unchanged(Namespace& ns, const proto::CloseRequest& req,
                                             bool last) {
  if (req.wrote()) return std::optional<InodeRecord>();
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  if (!(last && rec.attr.nlink() == 0) && !NeedsAtime(rec.attr, req.atime_ns())) {
    return std::optional<InodeRecord>(std::move(rec));
  }
  return std::optional<InodeRecord>();
}

// What a close changes, into `txn` (REQUIRES ns.mutex()): the read's atime; the size and
// times of the writes it reports; the last close of a file unlinked while open removes it
// (a later close of it in the same Txn then finds it gone). Nothing changes when it fails.
Status ApplyClose(Txn& txn, const proto::CloseRequest& req, bool last, proto::AttrReply* rep) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, txn.Inode(req.ino()));
  if (req.wrote() && !rec->is_reg()) {
    return Status(Code::kInval, "close with writes on a non-regular file");
  }
  if (NeedsAtime(rec->attr, req.atime_ns())) {
    rec->attr.set_atime_ns(req.atime_ns());
    txn.Dirty(req.ino());
  }
  if (req.wrote()) {
    proto::Attr& a = rec->attr;
    if (req.size() > a.size()) a.set_size(req.size());
    a.set_mtime_ns(req.mtime_ns() > 0 ? req.mtime_ns() : txn.now());
    // The write changed the status at the time it was made, not at the report (flush/close
    // may come later): ctime = the write time, never earlier than the current ctime.
    a.set_ctime_ns(req.mtime_ns() > 0 ? std::max(req.mtime_ns(), a.ctime_ns()) : txn.now());
    if (req.cred().uid() != 0 && (a.mode() & (S_ISUID | S_ISGID))) {
      uint32_t mode = a.mode() & ~static_cast<uint32_t>(S_ISUID);
      if (mode & S_IXGRP) mode &= ~static_cast<uint32_t>(S_ISGID);
      a.set_mode(mode);
    }
    txn.Dirty(req.ino());
  }
  // The reply is filled before the commit: a persisted reply (mds/reply_journal.h) is
  // written in the same batch.
  FillReply(*rec, rep->mutable_attr(), rep->mutable_layout());
  // The last close of a file unlinked while open: it goes now (unless reopened meanwhile).
  if (last && rec->attr.nlink() == 0) txn.DropLastLink(req.ino());
  return Status::Ok();
}

}  // namespace

Status Close(Namespace& ns, const proto::CloseRequest& req, proto::AttrReply* rep) {
  if (req.size() > kMaxFileSize) return Status(Code::kFBig, "reported size beyond the maximum");
  const bool last = ReleaseHandle(ns, req);
  STRIA_ASSIGN_OR_RETURN(std::optional<InodeRecord> unchanged, Unchanged(ns, req, last));
  if (unchanged) {
    FillReply(*unchanged, rep->mutable_attr(), rep->mutable_layout());
    return Status::Ok();
  }
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_RETURN_IF_ERROR(ApplyClose(txn, req, last, rep));
  return txn.Commit(req.sync());
}

// The closes of a batch that change something go in one transaction: one RocksDB write
// for the batch rather than one per close (a gathered close carries a small file's size,
// or a read's atime). One that fails (its file gone) is counted and changes nothing.
Status CloseBatch(Namespace& ns, const proto::CloseBatchRequest& req,
                  proto::CloseBatchReply* rep) {
  if (req.closes_size() > kMaxCloseBatch) {
    return Status(Code::kInval, fmt::format("more than {} closes in one batch", kMaxCloseBatch));
  }
  for (const proto::CloseRequest& c : req.closes()) {
    // handle 0 with only a read's atime: a mount's open that never reached the MDS (an open
    // under an attribute lease, client/fuse/local_opens.h).
    if (c.sync() || (c.handle() == 0 && !c.wrote() && c.atime_ns() <= 0)) {
      return Status(Code::kInval,
                    "a batched close is not synced, and names a handle, reports a write or "
                    "a read's atime");
    }
  }
  auto failed = [&](const proto::CloseRequest& c, const Status& st) {
    // The handle is gone with an MDS restart, or the file with an unlink: nothing to undo.
    LOG_DEBUG("batched close of inode {} (handle {}): {}", c.ino(), c.handle(), st.ToString());
    rep->set_failed(rep->failed() + 1);
  };
  std::vector<std::pair<const proto::CloseRequest*, bool>> changing;  // with `last`
  for (const proto::CloseRequest& c : req.closes()) {
    if (c.size() > kMaxFileSize) {
      failed(c, Status(Code::kFBig, "reported size beyond the maximum"));
      continue;
    }
    bool may_be_unlinked = false;
    const bool last = ReleaseHandle(ns, c, &may_be_unlinked);
    // Nothing reported and no orphan to remove: the inode need not be read (a batch's reply
    // carries no attributes): the close of a file created or opened and left as it was. It
    // counts as done even where the file is gone (`failed` counts reports that were lost).
    if (!c.wrote() && c.atime_ns() <= 0 && !(last && may_be_unlinked)) {
      rep->set_closed(rep->closed() + 1);
      continue;
    }
    Result<std::optional<InodeRecord>> unchanged = Unchanged(ns, c, last);
    if (!unchanged.ok()) {
      failed(c, unchanged.status());
    } else if (unchanged->has_value()) {
      rep->set_closed(rep->closed() + 1);
    } else {
      changing.emplace_back(&c, last);
    }
  }
  if (changing.empty()) return Status::Ok();
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  uint32_t applied = 0;
  for (const auto& [c, last] : changing) {
    proto::AttrReply ignored;
    if (Status st = ApplyClose(txn, *c, last, &ignored); !st.ok()) {
      failed(*c, st);
    } else {
      ++applied;
    }
  }
  STRIA_RETURN_IF_ERROR(txn.Commit(/*sync=*/false));
  rep->set_closed(rep->closed() + applied);
  return Status::Ok();
}

}  // namespace stria::mds
