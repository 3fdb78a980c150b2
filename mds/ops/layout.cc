// OP_MDS_SET_DEFAULT_LAYOUT / GET_DEFAULT_LAYOUT: a directory's default layout (lfs
// setstripe on a directory; `remove` is lfs setstripe -d). The root's default is the
// filesystem default. Set: ENOTDIR on non-directories, EPERM unless owner or root, EINVAL for
// a malformed layout or a stripe_offset naming no known OST. Get: is_set says whether the
// directory has its own; layout is always the effective default new files would inherit.
#include <mutex>

#include "mds/internal/layout_alloc.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "mds/txn.h"

namespace stria::mds {

Status SetDefaultLayout(Namespace& ns, const proto::SetDefaultLayoutRequest& req,
                        proto::SetDefaultLayoutReply* rep) {
  if (!req.remove()) STRIA_RETURN_IF_ERROR(CheckLayoutRequest(req.layout()));
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * dir, txn.Dir(req.ino()));
  if (!IsOwnerOrRoot(dir->attr, req.cred())) {
    return Status(Code::kPerm, "only the owner or root may set a directory's layout");
  }
  if (req.remove()) {
    dir->has_default_layout = false;
    dir->default_layout.Clear();
  } else {
    const int32_t off = req.layout().stripe_offset();
    if (off >= 0 && txn.osts().count(static_cast<uint32_t>(off)) == 0) {
      return Status(Code::kInval, "stripe offset: OST index " + std::to_string(off) + " is unknown");
    }
    proto::Layout l = req.layout();
    l.set_pattern(proto::PATTERN_RAID0);
    l.set_generation(0);
    dir->has_default_layout = true;
    dir->default_layout = std::move(l);
  }
  dir->attr.set_ctime_ns(txn.now());
  txn.Dirty(req.ino());
  return txn.Commit();
}

Status GetDefaultLayout(Namespace& ns, const proto::GetDefaultLayoutRequest& req,
                        proto::GetDefaultLayoutReply* rep) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord dir, ns.GetInode(req.ino()));
  if (!dir.is_dir()) return Status(Code::kNotDir, "inode " + std::to_string(req.ino()) + " is not a directory");
  rep->set_is_set(dir.has_default_layout);
  if (req.ino() == kRootIno) {
    *rep->mutable_layout() = MergeDefaults(dir, nullptr);
    return Status::Ok();
  }
  STRIA_ASSIGN_OR_RETURN(InodeRecord root, ns.GetInode(kRootIno));
  *rep->mutable_layout() = MergeDefaults(root, &dir);
  return Status::Ok();
}

}  // namespace stria::mds
