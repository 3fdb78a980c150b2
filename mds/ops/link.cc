// OP_MDS_LINK: a hard link new_parent/new_name to inode `ino`.
//   EPERM for directories; ENOENT for a file unlinked while open (as Linux refuses linkat of
//   one: its last close must remove it); EEXIST when the name exists; EMLINK past kMaxLinks;
//   EACCES without write+search on new_parent.
#include <mutex>

#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/txn.h"

namespace stria::mds {

Status Link(Namespace& ns, const proto::LinkRequest& req, proto::EntryReply* rep) {
  STRIA_RETURN_IF_ERROR(ValidateName(req.new_name()));
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, txn.Inode(req.ino()));
  if (rec->is_dir()) return Status(Code::kPerm, "hard links to directories are not allowed");
  if (rec->attr.nlink() == 0) return Status(Code::kNoEnt, "the file was unlinked");
  STRIA_ASSIGN_OR_RETURN(InodeRecord * dir, WritableDir(txn, req.new_parent(), req.cred()));
  STRIA_ASSIGN_OR_RETURN(auto existing, ns.GetDirent(req.new_parent(), req.new_name()));
  if (existing) return Status(Code::kExist, "'" + req.new_name() + "' exists");
  if (rec->attr.nlink() >= kMaxLinks) return Status(Code::kMLink, "too many links");

  txn.PutDirent(req.new_parent(), req.new_name(), req.ino(), FileTypeOfMode(rec->attr.mode()));
  rec->attr.set_nlink(rec->attr.nlink() + 1);
  rec->attr.set_ctime_ns(txn.now());
  rec->AddLink(req.new_parent(), req.new_name());
  txn.Dirty(req.ino());
  TouchDir(txn, dir);
  // The reply is filled before the commit: a persisted reply (mds/reply_journal.h) is
  // written in the same batch.
  FillReply(*rec, rep->mutable_attr(), rep->mutable_layout());
  *rep->mutable_parent_attr() = dir->attr;
  return txn.Commit();
}

}  // namespace stria::mds
