// OP_MDS_READLINK: a symlink's target.
#include "mds/ops/ops.h"

namespace stria::mds {

Status Readlink(Namespace& ns, const proto::ReadlinkRequest& req, proto::ReadlinkReply* rep) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  if (!rec.is_lnk()) {
    return Status(Code::kInval, "inode " + std::to_string(req.ino()) + " is not a symlink");
  }
  rep->set_target(rec.symlink_target);
  return Status::Ok();
}

}  // namespace stria::mds
