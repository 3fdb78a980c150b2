// OP_MDS_SETATTR: chmod, chown/chgrp, truncate (size set exactly; the client has already
// truncated the OST objects) and utimens, with POSIX's permission rules:
//   mode: owner or root (EPERM); a non-member of the file's group loses S_ISGID. A caller
//   with write permission may only clear S_ISUID/S_ISGID (the kernel's kill-priv on write).
//   uid: root only (EPERM). gid: root, or the owner to a group it belongs to (EPERM).
//   chown of a non-directory clears S_ISUID and S_ISGID.
//   size: write permission (EACCES), unless it goes through a handle of the file opened for
//   writing (ftruncate: checked at open); EISDIR on directories; EFBIG past kMaxFileSize.
//   times to "now": owner, root or write permission (EACCES); explicit times: owner or root.
// ctime becomes now on every change unless SETATTR_CTIME gives it.
#include <sys/stat.h>

#include <mutex>

#include "common/layout.h"
#include "mds/dom.h"
#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/txn.h"
#include "proto/layout_components.h"
#include "proto/layout_mirrors.h"

namespace stria::mds {

Status Setattr(Namespace& ns, const proto::SetattrRequest& req, proto::AttrReply* rep) {
  const uint32_t valid = req.valid();
  const proto::Attr& in = req.attr();
  const proto::Credentials& cred = req.cred();
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, txn.Inode(req.ino()));
  proto::Attr& a = rec->attr;
  const bool owner = IsOwnerOrRoot(a, cred);

  if (valid & proto::SETATTR_MODE) {
    uint32_t mode = (a.mode() & S_IFMT) | (in.mode() & 07777);
    const uint32_t kPriv = S_ISUID | S_ISGID;
    const bool only_clears_priv = (mode & ~kPriv) == (a.mode() & ~kPriv) && (mode & ~a.mode()) == 0;
    if (!owner && !only_clears_priv) {
      return Status(Code::kPerm, "only the owner or root may change the mode");
    }
    // The kernel drops S_ISUID/S_ISGID itself when a non-owner writes or truncates (FUSE
    // without handle_killpriv): allowed to anyone who may write the file.
    if (!owner) STRIA_RETURN_IF_ERROR(CheckAccess(a, cred, kMayWrite));
    const uint32_t gid = (valid & proto::SETATTR_GID) ? in.gid() : a.gid();
    if (cred.uid() != 0 && !InGroup(cred, gid)) mode &= ~static_cast<uint32_t>(S_ISGID);
    a.set_mode(mode);
  }
  if ((valid & proto::SETATTR_UID) && in.uid() != a.uid() && cred.uid() != 0) {
    return Status(Code::kPerm, "only root may change the owner");
  }
  if ((valid & proto::SETATTR_GID) && in.gid() != a.gid() && cred.uid() != 0 &&
      (cred.uid() != a.uid() || !InGroup(cred, in.gid()))) {
    return Status(Code::kPerm, "only root, or the owner to one of its groups, may change the group");
  }
  if (valid & (proto::SETATTR_UID | proto::SETATTR_GID)) {
    if (valid & proto::SETATTR_UID) a.set_uid(in.uid());
    if (valid & proto::SETATTR_GID) a.set_gid(in.gid());
    if (!S_ISDIR(a.mode())) {
      uint32_t mode = a.mode() & ~static_cast<uint32_t>(S_ISUID);
      if (mode & S_IXGRP) mode &= ~static_cast<uint32_t>(S_ISGID);
      a.set_mode(mode);
    }
  }
  if (valid & proto::SETATTR_SIZE) {
    if (rec->is_dir()) return Status(Code::kIsDir, "cannot set the size of a directory");
    if (!rec->is_reg()) return Status(Code::kInval, "size applies to regular files only");
    if (in.size() > kMaxFileSize) return Status(Code::kFBig, "size beyond the maximum file size");
    bool through_open_handle = false;
    if (req.handle() != 0) {
      // Lock order: the namespace mutex, then the open mutex.
      std::lock_guard open_lock(ns.open_mutex());
      through_open_handle = ns.HandleOpenLocked(req.handle(), req.ino());
    }
    if (!through_open_handle) STRIA_RETURN_IF_ERROR(CheckAccess(a, cred, kMayWrite));
    // The Data-on-MDT bytes are the MDS's to cut (the client truncated the OST objects).
    if (DomEnd(rec->layout) > 0) {
      STRIA_RETURN_IF_ERROR(DomTruncateBlocks(ns.db(), &txn.batch(), req.ino(), in.size()));
    }
    // A stale mirror was not truncated (the client skips it): whatever it holds past the new
    // size is not the file's, so the resync copies from there on too.
    for (uint32_t m : MirrorIds(rec->layout)) {
      if (MirrorView(rec->layout, m).components_size() > 0 &&
          HasStale(MirrorView(rec->layout, m)) &&
          AddStaleRange(&rec->layout, m, in.size(), LayoutEnd(rec->layout))) {
        rec->layout.set_generation(rec->layout.generation() + 1);
      }
    }
    a.set_size(in.size());
    a.set_mtime_ns(txn.now());
  }
  const bool to_now = valid & (proto::SETATTR_ATIME_NOW | proto::SETATTR_MTIME_NOW);
  const bool explicit_atime = (valid & proto::SETATTR_ATIME) && !(valid & proto::SETATTR_ATIME_NOW);
  const bool explicit_mtime = (valid & proto::SETATTR_MTIME) && !(valid & proto::SETATTR_MTIME_NOW);
  if ((explicit_atime || explicit_mtime) && !owner) {
    return Status(Code::kPerm, "only the owner or root may set explicit times");
  }
  if (to_now && !owner) STRIA_RETURN_IF_ERROR(CheckAccess(a, cred, kMayWrite));
  if (valid & proto::SETATTR_ATIME_NOW) {
    a.set_atime_ns(txn.now());
  } else if (valid & proto::SETATTR_ATIME) {
    a.set_atime_ns(in.atime_ns());
  }
  if (valid & proto::SETATTR_MTIME_NOW) {
    a.set_mtime_ns(txn.now());
  } else if (valid & proto::SETATTR_MTIME) {
    a.set_mtime_ns(in.mtime_ns());
  }
  if (valid != 0) {
    a.set_ctime_ns((valid & proto::SETATTR_CTIME) ? in.ctime_ns() : txn.now());
    txn.Dirty(req.ino());
  }
  // The reply is filled before the commit: a persisted reply (mds/reply_journal.h) is
  // written in the same batch.
  FillReply(*rec, rep->mutable_attr(), rep->mutable_layout());
  return txn.Commit();
}

}  // namespace stria::mds
