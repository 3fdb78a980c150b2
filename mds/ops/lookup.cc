// OP_MDS_LOOKUP: a name in a directory -> the child's attributes (and layout).
#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"

namespace stria::mds {

Status Lookup(Namespace& ns, const proto::LookupRequest& req, proto::EntryReply* rep) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord dir, ReadSearchableDir(ns, req.parent(), req.cred()));
  const std::string& name = req.name();
  if (name.empty()) return Status(Code::kInval, "empty name");
  if (name.size() > kMaxNameLen) return Status(Code::kNameTooLong, "name longer than 255 bytes");
  if (name == ".") {
    FillReply(dir, rep->mutable_attr(), rep->mutable_layout());
    return Status::Ok();
  }
  if (name == "..") {
    STRIA_ASSIGN_OR_RETURN(InodeRecord up, ns.GetInode(dir.parent ? dir.parent : req.parent()));
    FillReply(up, rep->mutable_attr(), rep->mutable_layout());
    return Status::Ok();
  }
  STRIA_ASSIGN_OR_RETURN(auto entry, ns.GetDirent(req.parent(), name));
  if (!entry) {
    // The client caches the absence under an entry lease: an empty reply, not an error.
    if (req.negative_ok()) return Status::Ok();
    return Status(Code::kNoEnt, "no entry '" + name + "'");
  }
  STRIA_ASSIGN_OR_RETURN(InodeRecord child, ns.GetInode(entry->first));
  FillReply(child, rep->mutable_attr(), rep->mutable_layout());
  return Status::Ok();
}

}  // namespace stria::mds
