// OP_MDS_LAYOUT_INTENT: instantiates the components a write is about to reach (see the
// message in proto/stria.proto). ENOENT for no such inode, EINVAL for a non-file or an empty
// range, EACCES without write access (unless through a handle opened for writing), EFBIG past
// the last component. Idempotent: a range already instantiated changes nothing.
//
// OP_MDS_SET_DEFAULT_LAYOUT / GET_DEFAULT_LAYOUT: a directory's default layout (lfs
// setstripe on a directory; `remove` is lfs setstripe -d). The root's default is the
// filesystem default. Set: ENOTDIR on non-directories, EPERM unless owner or root, EINVAL for
// a malformed layout or a stripe_offset naming no known OST. Get: is_set says whether the
// directory has its own; layout is always the effective default new files would inherit.
#include <mutex>
#include <vector>

#include "mds/internal/layout_alloc.h"
#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/pools.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "mds/txn.h"
#include "proto/layout_components.h"

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
    proto::Layout l = req.layout();
    l.set_generation(0);
    std::vector<proto::Layout*> plains;
    if (IsComposite(l)) {
      for (proto::LayoutComponent& c : *l.mutable_components()) {
        // A template's components get their ids in each file; only the mirror stays.
        c.set_id(ComponentId(MirrorIdOf(c.id()), 0));
        plains.push_back(c.mutable_layout());
      }
    } else {
      plains.push_back(&l);
    }
    for (proto::Layout* p : plains) {
      if (!p->pool().empty()) {
        STRIA_ASSIGN_OR_RETURN(std::optional<proto::PoolInfo> pool, ReadPool(ns.db(), p->pool()));
        if (!pool) {
          return Status(Code::kInval, "pool " + ns.fsname() + "." + p->pool() + " does not exist");
        }
      }
      const int32_t off = p->stripe_offset();
      if (off >= 0 && txn.osts().count(static_cast<uint32_t>(off)) == 0) {
        return Status(Code::kInval, "stripe offset: OST index " + std::to_string(off) + " is unknown");
      }
      if (p->pattern() != proto::PATTERN_MDT) p->set_pattern(proto::PATTERN_RAID0);
    }
    dir->has_default_layout = true;
    dir->default_layout = std::move(l);
  }
  dir->attr.set_ctime_ns(txn.now());
  txn.Dirty(req.ino());
  return txn.Commit();
}

Status LayoutIntent(Namespace& ns, const proto::LayoutIntentRequest& req,
                    proto::LayoutIntentReply* rep) {
  if (req.end() <= req.start()) {
    return Status(Code::kInval, "layout intent for an empty range [" + std::to_string(req.start()) +
                                    ", " + std::to_string(req.end()) + ")");
  }
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, RegularFile(txn, req.ino()));
  if (!RangeInstantiated(rec->layout, req.start(), req.end())) {
    bool through_open_handle = false;
    if (req.handle() != 0) {
      // Lock order: the namespace mutex, then the open mutex.
      std::lock_guard open_lock(ns.open_mutex());
      through_open_handle = ns.HandleOpenLocked(req.handle(), req.ino());
    }
    if (!through_open_handle) STRIA_RETURN_IF_ERROR(CheckAccess(rec->attr, req.cred(), kMayWrite));
    STRIA_ASSIGN_OR_RETURN(bool changed,
                           InstantiateRange(txn, &rec->layout, req.start(), req.end()));
    if (changed) {
      txn.Dirty(req.ino());
      STRIA_RETURN_IF_ERROR(txn.Commit());
    }
  }
  *rep->mutable_layout() = rec->layout;
  return Status::Ok();
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
