#include "mds/internal/op_util.h"

#include "mds/internal/perm.h"

namespace stria::mds {

void FillReply(const InodeRecord& rec, proto::Attr* attr, proto::Layout* layout) {
  *attr = rec.attr;
  if (rec.is_reg()) {
    attr->set_blocks((rec.attr.size() + 511) / 512);
    if (layout) *layout = rec.layout;
  }
}

Result<InodeRecord> ReadSearchableDir(const Namespace& ns, uint64_t ino,
                                      const proto::Credentials& cred) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord dir, ns.GetInode(ino));
  if (!dir.is_dir()) return Status(Code::kNotDir, "inode " + std::to_string(ino) + " is not a directory");
  STRIA_RETURN_IF_ERROR(CheckAccess(dir.attr, cred, kMayExec));
  return dir;
}

Result<InodeRecord*> WritableDir(Txn& txn, uint64_t ino, const proto::Credentials& cred) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord * dir, txn.Dir(ino));
  STRIA_RETURN_IF_ERROR(CheckAccess(dir->attr, cred, kMayWrite | kMayExec));
  return dir;
}

Result<InodeRecord*> RegularFile(Txn& txn, uint64_t ino) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, txn.Inode(ino));
  if (!rec->is_reg()) {
    return Status(Code::kInval, "inode " + std::to_string(ino) + " is not a regular file");
  }
  return rec;
}

Result<InodeRecord*> WritableFile(Txn& txn, uint64_t ino, const proto::Credentials& cred) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, RegularFile(txn, ino));
  STRIA_RETURN_IF_ERROR(CheckAccess(rec->attr, cred, kMayWrite));
  return rec;
}

void TouchDir(Txn& txn, InodeRecord* dir) {
  dir->attr.set_mtime_ns(txn.now());
  dir->attr.set_ctime_ns(txn.now());
  txn.Dirty(dir->attr.ino());
}

}  // namespace stria::mds
