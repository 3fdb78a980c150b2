// OP_MDS_GETATTR: an inode's attributes (and a regular file's layout). No permission check:
// reaching the inode required search permission on the path already.
#include "mds/internal/op_util.h"
#include "mds/ops/ops.h"

namespace stria::mds {

Status Getattr(Namespace& ns, const proto::GetattrRequest& req, proto::AttrReply* rep) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  FillReply(rec, rep->mutable_attr(), rep->mutable_layout());
  return Status::Ok();
}

}  // namespace stria::mds
