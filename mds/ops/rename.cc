// OP_MDS_RENAME: moves old_parent/old_name to new_parent/new_name in one batch.
//   RENAME_NOREPLACE: EEXIST when the target exists. RENAME_EXCHANGE: swaps the two entries
//   (ENOENT when the target is missing). Both at once, or unknown flags: EINVAL.
//   A replaced target must be of a compatible type (dir over non-dir: ENOTDIR; non-dir over
//   dir: EISDIR) and, if a directory, empty (ENOTEMPTY); its last link goes the way of unlink
//   (objects queued for destruction in the same batch).
//   Moving a directory into itself or its own subtree: EINVAL. Renaming onto another link of
//   the same inode does nothing (POSIX).
//   Permissions: write+search on both parents, the sticky-bit rule on both entries, and write
//   permission on a directory that changes parent (its ".." changes).
#include <mutex>

#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "mds/txn.h"

namespace stria::mds {
namespace {

// True when directory `ancestor` is `dir` or one of its ancestors.
Result<bool> IsAncestor(Txn& txn, uint64_t ancestor, uint64_t dir) {
  for (int depth = 0; depth < 100000; ++depth) {
    if (dir == ancestor) return true;
    if (dir == kRootIno) return false;
    STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, txn.Inode(dir));
    if (rec->parent == 0 || rec->parent == dir) return false;
    dir = rec->parent;
  }
  return Status(Code::kCorrupt, "directory parent chain does not reach the root");
}

// Drops one link of `ino`, whose entry in `dir` was just replaced.
void DropLink(Txn& txn, InodeRecord* dir, InodeRecord* victim) {
  const uint64_t ino = victim->attr.ino();
  if (victim->is_dir()) {
    dir->attr.set_nlink(dir->attr.nlink() - 1);
    txn.RemoveInode(ino);
    return;
  }
  victim->attr.set_nlink(victim->attr.nlink() > 0 ? victim->attr.nlink() - 1 : 0);
  victim->attr.set_ctime_ns(txn.now());
  if (victim->attr.nlink() == 0) {
    txn.DropLastLink(ino);
  } else {
    txn.Dirty(ino);
  }
}

}  // namespace

Status Rename(Namespace& ns, const proto::RenameRequest& req, proto::RenameReply* rep) {
  const proto::Credentials& cred = req.cred();
  const uint32_t flags = req.flags();
  if ((flags & ~(kRenameNoReplace | kRenameExchange)) != 0 ||
      flags == (kRenameNoReplace | kRenameExchange)) {
    return Status(Code::kInval, "invalid rename flags " + std::to_string(flags));
  }
  const bool exchange = flags & kRenameExchange;
  STRIA_RETURN_IF_ERROR(ValidateName(req.old_name()));
  STRIA_RETURN_IF_ERROR(ValidateName(req.new_name()));
  const uint64_t op = req.old_parent(), np = req.new_parent();

  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * old_dir, WritableDir(txn, op, cred));
  STRIA_ASSIGN_OR_RETURN(InodeRecord * new_dir, WritableDir(txn, np, cred));
  STRIA_ASSIGN_OR_RETURN(auto src_ent, ns.GetDirent(op, req.old_name()));
  if (!src_ent) return Status(Code::kNoEnt, "no entry '" + req.old_name() + "'");
  STRIA_ASSIGN_OR_RETURN(auto dst_ent, ns.GetDirent(np, req.new_name()));
  if (exchange && !dst_ent) return Status(Code::kNoEnt, "no entry '" + req.new_name() + "'");
  if ((flags & kRenameNoReplace) && dst_ent) {
    return Status(Code::kExist, "'" + req.new_name() + "' exists");
  }
  const uint64_t src_ino = src_ent->first;
  STRIA_ASSIGN_OR_RETURN(InodeRecord * src, txn.Inode(src_ino));
  STRIA_RETURN_IF_ERROR(CheckSticky(old_dir->attr, src->attr, cred));
  if (dst_ent && dst_ent->first == src_ino) return Status::Ok();  // same inode: no-op

  InodeRecord* dst = nullptr;
  if (dst_ent) {
    STRIA_ASSIGN_OR_RETURN(dst, txn.Inode(dst_ent->first));
    STRIA_RETURN_IF_ERROR(CheckSticky(new_dir->attr, dst->attr, cred));
  }
  if (src->is_dir() && op != np) {
    STRIA_ASSIGN_OR_RETURN(bool loop, IsAncestor(txn, src_ino, np));
    if (loop) return Status(Code::kInval, "cannot move a directory into its own subtree");
    if (cred.uid() != 0) STRIA_RETURN_IF_ERROR(CheckAccess(src->attr, cred, kMayWrite));
  }
  if (exchange && dst->is_dir() && op != np) {
    STRIA_ASSIGN_OR_RETURN(bool loop, IsAncestor(txn, dst->attr.ino(), op));
    if (loop) return Status(Code::kInval, "cannot move a directory into its own subtree");
    if (cred.uid() != 0) STRIA_RETURN_IF_ERROR(CheckAccess(dst->attr, cred, kMayWrite));
  }
  if (dst && !exchange) {
    if (src->is_dir() && !dst->is_dir()) {
      return Status(Code::kNotDir, "'" + req.new_name() + "' is not a directory");
    }
    if (!src->is_dir() && dst->is_dir()) {
      return Status(Code::kIsDir, "'" + req.new_name() + "' is a directory");
    }
    if (dst->is_dir()) {
      STRIA_ASSIGN_OR_RETURN(bool empty, ns.DirIsEmpty(dst->attr.ino()));
      if (!empty) return Status(Code::kNotEmpty, "directory '" + req.new_name() + "' is not empty");
    }
  }

  if (exchange) {
    txn.PutDirent(op, req.old_name(), dst->attr.ino(), dst_ent->second);
    txn.PutDirent(np, req.new_name(), src_ino, src_ent->second);
    dst->RemoveLink(np, req.new_name());
    dst->AddLink(op, req.old_name());
    src->RemoveLink(op, req.old_name());
    src->AddLink(np, req.new_name());
    if (op != np) {
      if (src->is_dir()) {
        old_dir->attr.set_nlink(old_dir->attr.nlink() - 1);
        new_dir->attr.set_nlink(new_dir->attr.nlink() + 1);
        src->parent = np;
      }
      if (dst->is_dir()) {
        new_dir->attr.set_nlink(new_dir->attr.nlink() - 1);
        old_dir->attr.set_nlink(old_dir->attr.nlink() + 1);
        dst->parent = op;
      }
    }
    dst->attr.set_ctime_ns(txn.now());
    txn.Dirty(dst->attr.ino());
  } else {
    if (dst) {
      dst->RemoveLink(np, req.new_name());
      DropLink(txn, new_dir, dst);
    }
    txn.DeleteDirent(op, req.old_name());
    txn.PutDirent(np, req.new_name(), src_ino, src_ent->second);
    src->RemoveLink(op, req.old_name());
    src->AddLink(np, req.new_name());
    if (src->is_dir() && op != np) {
      old_dir->attr.set_nlink(old_dir->attr.nlink() - 1);
      new_dir->attr.set_nlink(new_dir->attr.nlink() + 1);
      src->parent = np;
    }
  }
  src->attr.set_ctime_ns(txn.now());
  txn.Dirty(src_ino);
  TouchDir(txn, old_dir);
  TouchDir(txn, new_dir);
  return txn.Commit();
}

}  // namespace stria::mds
