// OP_MDS_UNLINK: unlink (is_dir false) and rmdir (is_dir true).
//   unlink of a directory: EISDIR; rmdir of a non-directory: ENOTDIR; of a non-empty one:
//   ENOTEMPTY; EACCES without write+search on the parent; EPERM under the sticky-bit rule.
// The last link of a regular file removes its inode and queues its objects for destruction
// (Q record) in the same batch.
// A batch (more_names): the files are unlinked in one transaction, each name checked alone;
// UnlinkReply.codes has one result per name.
#include <fmt/format.h>

#include <mutex>
#include <string>
#include <unordered_set>

#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/txn.h"

namespace stria::mds {
namespace {

// Unlinks `name` from the loaded, writable `parent` within `txn`. Changes nothing in the
// transaction unless it succeeds. `attr`: the unlinked inode after the change.
Status UnlinkOne(Txn& txn, InodeRecord* parent, const std::string& name, bool is_dir,
                 const proto::Credentials& cred, proto::Attr* attr) {
  Namespace& ns = txn.ns();
  const uint64_t parent_ino = parent->attr.ino();
  STRIA_RETURN_IF_ERROR(ValidateName(name));
  STRIA_ASSIGN_OR_RETURN(auto entry, ns.GetDirent(parent_ino, name));
  if (!entry) return Status(Code::kNoEnt, "no entry '" + name + "'");
  const uint64_t ino = entry->first;
  STRIA_ASSIGN_OR_RETURN(InodeRecord * child, txn.Inode(ino));
  STRIA_RETURN_IF_ERROR(CheckSticky(parent->attr, child->attr, cred));
  if (is_dir) {
    if (!child->is_dir()) return Status(Code::kNotDir, "'" + name + "' is not a directory");
    STRIA_ASSIGN_OR_RETURN(bool empty, ns.DirIsEmpty(ino));
    if (!empty) return Status(Code::kNotEmpty, "directory '" + name + "' is not empty");
  } else if (child->is_dir()) {
    return Status(Code::kIsDir, "'" + name + "' is a directory");
  }

  txn.DeleteDirent(parent_ino, name);
  child->RemoveLink(parent_ino, name);
  TouchDir(txn, parent);
  if (child->is_dir()) {
    parent->attr.set_nlink(parent->attr.nlink() - 1);
    child->attr.set_nlink(0);
  } else {
    child->attr.set_nlink(child->attr.nlink() > 0 ? child->attr.nlink() - 1 : 0);
  }
  child->attr.set_ctime_ns(txn.now());
  if (attr != nullptr) *attr = child->attr;
  if (child->attr.nlink() == 0) {
    txn.DropLastLink(ino);  // `child` is gone from here
  } else {
    txn.Dirty(ino);
  }
  return Status::Ok();
}

}  // namespace

Status Unlink(Namespace& ns, const proto::UnlinkRequest& req, proto::UnlinkReply* rep) {
  const proto::Credentials& cred = req.cred();
  const bool batch = req.more_names_size() > 0;
  if (batch && req.is_dir()) return Status(Code::kInval, "a batch of unlinks is for files only");
  if (req.more_names_size() >= kMaxUnlinkBatch) {
    return Status(Code::kInval, fmt::format("more than {} unlinks in one batch", kMaxUnlinkBatch));
  }
  if (!batch) STRIA_RETURN_IF_ERROR(ValidateName(req.name()));
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * parent, WritableDir(txn, req.parent(), cred));
  if (!batch) {
    STRIA_RETURN_IF_ERROR(
        UnlinkOne(txn, parent, req.name(), req.is_dir(), cred, rep->mutable_attr()));
  } else {
    // Each entry is read from the database, which the transaction changes only at its
    // commit: a name twice in the batch is not there the second time.
    std::unordered_set<std::string_view> done;
    auto one = [&](const std::string& name) {
      Status st = done.contains(name) ? Status(Code::kNoEnt, "no entry '" + name + "'")
                                      : UnlinkOne(txn, parent, name, false, cred, nullptr);
      if (st.ok()) done.insert(name);
      rep->add_codes(static_cast<int32_t>(st.code()));
    };
    one(req.name());
    for (const std::string& name : req.more_names()) one(name);
  }
  *rep->mutable_parent_attr() = parent->attr;
  return txn.Commit();
}

}  // namespace stria::mds
