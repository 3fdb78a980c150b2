// OP_MDS_FID2PATH: the names of an inode, each as a path from the root, built from the
// link records (InodeRecord::links) of the inode and of each directory above it. Reads take
// no lock: a rename racing with the walk may give the old or the new path of a directory.
#include <string>

#include "mds/ops/ops.h"
#include "mds/schema.h"

namespace stria::mds {

namespace {

// Guards against a damaged parent chain that loops.
constexpr int kMaxDepth = 4096;

Result<std::string> PathOf(Namespace& ns, uint64_t dir, std::string path) {
  for (int depth = 0; dir != kRootIno; ++depth) {
    if (depth >= kMaxDepth) {
      return Status(Code::kCorrupt, "the parent chain of '" + path + "' does not reach the root");
    }
    STRIA_ASSIGN_OR_RETURN(InodeRecord d, ns.GetInode(dir));
    if (!d.is_dir() || d.links.empty()) {
      return Status(Code::kCorrupt, "directory " + std::to_string(dir) + " has no name record");
    }
    path = d.links.front().second + "/" + path;
    dir = d.links.front().first;
  }
  return path;
}

}  // namespace

Status Fid2Path(Namespace& ns, const proto::Fid2PathRequest& req, proto::Fid2PathReply* rep) {
  if (req.cred().uid() != 0) return Status(Code::kPerm, "fid2path is allowed to root only");
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  if (req.ino() == kRootIno) {
    auto* n = rep->add_names();
    n->set_parent(kRootIno);
    return Status::Ok();
  }
  if (rec.links.empty()) {
    if (rec.attr.nlink() == 0) return Status(Code::kNoEnt, "the file has no name left");
    return Status(Code::kNoData, "no name recorded for inode " + std::to_string(req.ino()));
  }
  for (const auto& [parent, name] : rec.links) {
    STRIA_ASSIGN_OR_RETURN(std::string path, PathOf(ns, parent, name));
    auto* n = rep->add_names();
    n->set_parent(parent);
    n->set_name(name);
    n->set_path(std::move(path));
  }
  return Status::Ok();
}

}  // namespace stria::mds
