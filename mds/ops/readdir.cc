// OP_MDS_READDIR: one page of a directory's entries, in name (byte) order, resuming after
// the cookie (the last name of the previous page). Because the cookie is a name, a page
// sequence is complete and without duplicates whatever happens between pages (entries
// created or removed meanwhile may or may not appear). "." and ".." are not listed: the
// client adds them. Needs read permission on the directory.
#include <rocksdb/db.h>

#include <memory>

#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/mds_record.pb.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"

namespace stria::mds {

Status Readdir(Namespace& ns, const proto::ReaddirRequest& req, proto::ReaddirReply* rep) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord dir, ns.GetInode(req.ino()));
  if (!dir.is_dir()) return Status(Code::kNotDir, "inode " + std::to_string(req.ino()) + " is not a directory");
  STRIA_RETURN_IF_ERROR(CheckAccess(dir.attr, req.cred(), kMayRead));
  if (req.cookie().size() > kMaxNameLen) return Status(Code::kInval, "bad readdir cookie");
  uint32_t max = req.max_entries() == 0 ? kDefaultReaddirEntries : req.max_entries();
  if (max > kMaxReaddirEntries) max = kMaxReaddirEntries;

  const std::string prefix = DirentKey(req.ino());
  rocksdb::ReadOptions ro;
  std::unique_ptr<rocksdb::Iterator> it(ns.db()->NewIterator(ro));
  it->Seek(DirentKey(req.ino(), req.cookie()));
  if (!req.cookie().empty() && it->Valid() && it->key() == rocksdb::Slice(DirentKey(req.ino(), req.cookie()))) {
    it->Next();
  }
  std::string last;
  uint32_t n = 0;
  for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (n == max) break;
    rec::Dirent d;
    if (!d.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return Status(Code::kCorrupt, "directory entry does not decode");
    }
    proto::DirEntry* e = rep->add_entries();
    e->set_name(it->key().data() + prefix.size(), it->key().size() - prefix.size());
    e->set_ino(d.ino());
    e->set_type(static_cast<proto::FileType>(d.type()));
    if (req.want_attrs()) {
      auto child = ns.GetInode(d.ino());
      if (child.ok()) {
        FillReply(*child, e->mutable_attr(),
                  req.want_layouts() ? e->mutable_layout() : nullptr);
      } else if (child.status().code() != Code::kNoEnt) {
        return child.status();
      }  // else removed meanwhile: the entry stays, without attributes
    }
    last = e->name();
    ++n;
  }
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "readdir"));
  rep->set_eof(!(it->Valid() && it->key().starts_with(prefix)));
  rep->set_next_cookie(n > 0 ? last : req.cookie());
  return Status::Ok();
}

}  // namespace stria::mds
