// OP_MDS_GETXATTR / SETXATTR / LISTXATTR / REMOVEXATTR: extended attributes under X keys.
//   Namespaces: user.* (read/write permission on the inode; set/remove only on regular files
//   and directories, EPERM otherwise), trusted.* (root only: EPERM to change, ENODATA and
//   hidden from lists otherwise), security.* (owner or root to change), system.* and others:
//   EOPNOTSUPP (no POSIX ACLs).
//   Names: empty or longer than 255 bytes -> ERANGE; values over 64 KiB -> E2BIG.
//   XATTR_CREATE on an existing name -> EEXIST; XATTR_REPLACE or remove of a missing one ->
//   ENODATA. get/list with size 0 return only the size; a size too small -> ERANGE.
#include <rocksdb/db.h>
#include <sys/stat.h>

#include <memory>
#include <mutex>

#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "mds/txn.h"

namespace stria::mds {
namespace {

enum class XattrNs { kUser, kTrusted, kSecurity, kOther };

XattrNs NamespaceOf(const std::string& name) {
  if (name.starts_with("user.")) return XattrNs::kUser;
  if (name.starts_with("trusted.")) return XattrNs::kTrusted;
  if (name.starts_with("security.")) return XattrNs::kSecurity;
  return XattrNs::kOther;
}

Status CheckName(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLen) {
    return Status(Code::kRange, "xattr name must be 1 to 255 bytes");
  }
  if (NamespaceOf(name) == XattrNs::kOther) {
    return Status(Code::kNotSup, "xattr namespace of '" + name + "' is not supported");
  }
  return Status::Ok();
}

// Permission to change xattr `name` of `rec`.
Status CheckWrite(const InodeRecord& rec, const std::string& name, const proto::Credentials& cred) {
  switch (NamespaceOf(name)) {
    case XattrNs::kUser:
      if (!rec.is_reg() && !rec.is_dir()) {
        return Status(Code::kPerm, "user xattrs only on regular files and directories");
      }
      return CheckAccess(rec.attr, cred, kMayWrite);
    case XattrNs::kTrusted:
      if (cred.uid() != 0) return Status(Code::kPerm, "trusted xattrs are root's");
      return Status::Ok();
    case XattrNs::kSecurity:
      if (!IsOwnerOrRoot(rec.attr, cred)) return Status(Code::kPerm, "security xattrs: owner or root");
      return Status::Ok();
    default:
      return Status(Code::kNotSup, "unsupported xattr namespace");
  }
}

// Fills value/size for a get or list answer of `data`, honouring the caller's buffer size.
Status Answer(const std::string& data, uint32_t size, proto::XattrReply* rep) {
  rep->set_size(static_cast<uint32_t>(data.size()));
  if (size == 0) return Status::Ok();
  if (size < data.size()) {
    return Status(Code::kRange, "buffer of " + std::to_string(size) + " bytes is too small for " +
                                    std::to_string(data.size()));
  }
  rep->set_value(data);
  return Status::Ok();
}

}  // namespace

Status Getxattr(Namespace& ns, const proto::XattrRequest& req, proto::XattrReply* rep) {
  STRIA_RETURN_IF_ERROR(CheckName(req.name()));
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  const XattrNs xns = NamespaceOf(req.name());
  if (xns == XattrNs::kTrusted && req.cred().uid() != 0) {
    return Status(Code::kNoData, "no xattr '" + req.name() + "'");
  }
  if (xns == XattrNs::kUser) STRIA_RETURN_IF_ERROR(CheckAccess(rec.attr, req.cred(), kMayRead));
  STRIA_ASSIGN_OR_RETURN(auto value, ns.Get(XattrKey(req.ino(), req.name())));
  if (!value) return Status(Code::kNoData, "no xattr '" + req.name() + "'");
  return Answer(*value, req.size(), rep);
}

Status Listxattr(Namespace& ns, const proto::XattrRequest& req, proto::XattrReply* rep) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  const std::string prefix = XattrKey(req.ino());
  std::unique_ptr<rocksdb::Iterator> it(ns.db()->NewIterator(rocksdb::ReadOptions()));
  std::string names;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string name(it->key().data() + prefix.size(), it->key().size() - prefix.size());
    if (NamespaceOf(name) == XattrNs::kTrusted && req.cred().uid() != 0) continue;
    names += name;
    names.push_back('\0');
  }
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "listxattr"));
  return Answer(names, req.size(), rep);
}

Status Setxattr(Namespace& ns, const proto::XattrRequest& req, proto::XattrReply* rep) {
  STRIA_RETURN_IF_ERROR(CheckName(req.name()));
  if (req.value().size() > kMaxXattrValue) return Status(Code::kTooBig, "xattr value over 64 KiB");
  if ((req.flags() & ~(kXattrCreate | kXattrReplace)) != 0 ||
      req.flags() == (kXattrCreate | kXattrReplace)) {
    return Status(Code::kInval, "invalid xattr flags");
  }
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, txn.Inode(req.ino()));
  STRIA_RETURN_IF_ERROR(CheckWrite(*rec, req.name(), req.cred()));
  const std::string key = XattrKey(req.ino(), req.name());
  STRIA_ASSIGN_OR_RETURN(auto old, ns.Get(key));
  if (old && (req.flags() & kXattrCreate)) return Status(Code::kExist, "xattr '" + req.name() + "' exists");
  if (!old && (req.flags() & kXattrReplace)) return Status(Code::kNoData, "no xattr '" + req.name() + "'");
  txn.batch().Put(key, req.value());
  rec->xattrs = InodeRecord::Xattrs::kSome;
  rec->attr.set_ctime_ns(txn.now());
  txn.Dirty(req.ino());
  return txn.Commit();
}

Status Removexattr(Namespace& ns, const proto::XattrRequest& req, proto::XattrReply* rep) {
  STRIA_RETURN_IF_ERROR(CheckName(req.name()));
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, txn.Inode(req.ino()));
  STRIA_RETURN_IF_ERROR(CheckWrite(*rec, req.name(), req.cred()));
  const std::string key = XattrKey(req.ino(), req.name());
  STRIA_ASSIGN_OR_RETURN(auto old, ns.Get(key));
  if (!old) return Status(Code::kNoData, "no xattr '" + req.name() + "'");
  txn.batch().Delete(key);
  rec->attr.set_ctime_ns(txn.now());
  txn.Dirty(req.ino());
  return txn.Commit();
}

}  // namespace stria::mds
