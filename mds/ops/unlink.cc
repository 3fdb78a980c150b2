// OP_MDS_UNLINK: unlink (is_dir false) and rmdir (is_dir true).
//   unlink of a directory: EISDIR; rmdir of a non-directory: ENOTDIR; of a non-empty one:
//   ENOTEMPTY; EACCES without write+search on the parent; EPERM under the sticky-bit rule.
// The last link of a regular file removes its inode and queues its objects for destruction
// (Q record) in the same batch.
#include <mutex>

#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/txn.h"

namespace stria::mds {

Status Unlink(Namespace& ns, const proto::UnlinkRequest& req, proto::UnlinkReply* rep) {
  const proto::Credentials& cred = req.cred();
  STRIA_RETURN_IF_ERROR(ValidateName(req.name()));
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * parent, WritableDir(txn, req.parent(), cred));
  STRIA_ASSIGN_OR_RETURN(auto entry, ns.GetDirent(req.parent(), req.name()));
  if (!entry) return Status(Code::kNoEnt, "no entry '" + req.name() + "'");
  const uint64_t ino = entry->first;
  STRIA_ASSIGN_OR_RETURN(InodeRecord * child, txn.Inode(ino));
  STRIA_RETURN_IF_ERROR(CheckSticky(parent->attr, child->attr, cred));
  if (req.is_dir()) {
    if (!child->is_dir()) return Status(Code::kNotDir, "'" + req.name() + "' is not a directory");
    STRIA_ASSIGN_OR_RETURN(bool empty, ns.DirIsEmpty(ino));
    if (!empty) return Status(Code::kNotEmpty, "directory '" + req.name() + "' is not empty");
  } else if (child->is_dir()) {
    return Status(Code::kIsDir, "'" + req.name() + "' is a directory");
  }

  txn.DeleteDirent(req.parent(), req.name());
  child->RemoveLink(req.parent(), req.name());
  TouchDir(txn, parent);
  if (child->is_dir()) {
    parent->attr.set_nlink(parent->attr.nlink() - 1);
    child->attr.set_nlink(0);
  } else {
    child->attr.set_nlink(child->attr.nlink() > 0 ? child->attr.nlink() - 1 : 0);
  }
  child->attr.set_ctime_ns(txn.now());
  *rep->mutable_attr() = child->attr;
  *rep->mutable_parent_attr() = parent->attr;
  if (child->attr.nlink() == 0) {
    txn.DropLastLink(ino);
  } else {
    txn.Dirty(ino);
  }
  return txn.Commit();
}

}  // namespace stria::mds
