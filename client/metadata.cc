// Metadata: the typed MDS operations (see metadata.h).
#include "client/metadata.h"

#include <linux/fs.h>

#include <algorithm>

#include "proto/layout_components.h"

namespace stria::client {

Status CheckName(std::string_view name) {
  if (name.empty()) return Status(Code::kNoEnt, "empty name");
  if (name.size() > kMaxNameLen) return Status(Code::kNameTooLong, "name longer than 255 bytes");
  return Status::Ok();
}

Result<proto::EntryReply> Metadata::Lookup(const Cred& cred, uint64_t parent,
                                           std::string_view name) {
  STRIA_RETURN_IF_ERROR(CheckName(name));
  proto::LookupRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(parent);
  req.set_name(std::string(name));
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_LOOKUP, req, &rep));
  if (rep.attr().ino() == 0) return Status(Code::kProtocol, "MDS lookup returned inode 0");
  return rep;
}

Result<proto::EntryReply> Metadata::Create(const Cred& cred, const CreateArgs& args) {
  STRIA_RETURN_IF_ERROR(CheckName(args.name));
  proto::CreateRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(args.parent);
  req.set_name(std::string(args.name));
  req.set_mode(args.mode);
  req.set_rdev(args.rdev);
  req.set_exclusive(true);
  if (!args.symlink_target.empty()) req.set_symlink_target(std::string(args.symlink_target));
  if (args.layout != nullptr) *req.mutable_layout() = *args.layout;
  req.set_open(args.open);
  req.set_umask(args.umask);
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_CREATE, req, &rep));
  if (rep.attr().ino() == 0) return Status(Code::kProtocol, "MDS create returned inode 0");
  return rep;
}

Result<proto::EntryReply> Metadata::Link(const Cred& cred, uint64_t ino, uint64_t new_parent,
                                         std::string_view name) {
  STRIA_RETURN_IF_ERROR(CheckName(name));
  proto::LinkRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_new_parent(new_parent);
  req.set_new_name(std::string(name));
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_LINK, req, &rep));
  return rep;
}

Result<proto::UnlinkReply> Metadata::Unlink(const Cred& cred, uint64_t parent,
                                            std::string_view name, bool is_dir) {
  STRIA_RETURN_IF_ERROR(CheckName(name));
  proto::UnlinkRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(parent);
  req.set_name(std::string(name));
  req.set_is_dir(is_dir);
  proto::UnlinkReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_UNLINK, req, &rep));
  return rep;
}

Status Metadata::Rename(const Cred& cred, uint64_t parent, std::string_view name,
                        uint64_t new_parent, std::string_view new_name, uint32_t flags) {
  STRIA_RETURN_IF_ERROR(CheckName(name));
  STRIA_RETURN_IF_ERROR(CheckName(new_name));
  if (flags & ~static_cast<uint32_t>(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
    return Status(Code::kInval, "unsupported rename flags");
  }
  proto::RenameRequest req;
  *req.mutable_cred() = cred;
  req.set_old_parent(parent);
  req.set_old_name(std::string(name));
  req.set_new_parent(new_parent);
  req.set_new_name(std::string(new_name));
  req.set_flags(flags);
  proto::RenameReply rep;
  return client_->MdsCall(proto::OP_MDS_RENAME, req, &rep);
}

Result<std::string> Metadata::Readlink(const Cred& cred, uint64_t ino) {
  proto::ReadlinkRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  proto::ReadlinkReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_READLINK, req, &rep));
  return std::move(*rep.mutable_target());
}

Result<proto::ReaddirReply> Metadata::Readdir(const Cred& cred, const ReaddirArgs& args) {
  proto::ReaddirRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(args.ino);
  req.set_cookie(args.cookie);
  req.set_max_entries(args.max_entries);
  req.set_want_attrs(args.want_attrs || args.want_layouts);
  req.set_want_layouts(args.want_layouts);
  proto::ReaddirReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_READDIR, req, &rep));
  return rep;
}

Result<proto::AttrReply> Metadata::Getattr(const Cred& cred, uint64_t ino) {
  proto::GetattrRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  proto::AttrReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_GETATTR, req, &rep));
  return rep;
}

Result<proto::AttrReply> Metadata::Setattr(const Cred& cred, proto::SetattrRequest req) {
  *req.mutable_cred() = cred;
  req.mutable_attr()->set_ino(req.ino());
  proto::AttrReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_SETATTR, req, &rep));
  return rep;
}

Result<proto::StatfsReply> Metadata::Statfs(const Cred& cred) {
  proto::StatfsRequest req;
  *req.mutable_cred() = cred;
  proto::StatfsReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_STATFS, req, &rep));
  return rep;
}

Result<proto::XattrReply> Metadata::Getxattr(const Cred& cred, uint64_t ino,
                                             std::string_view name, uint32_t size) {
  proto::XattrRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_name(std::string(name));
  req.set_size(size);
  proto::XattrReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_GETXATTR, req, &rep));
  return rep;
}

Result<proto::XattrReply> Metadata::Listxattr(const Cred& cred, uint64_t ino, uint32_t size) {
  proto::XattrRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_size(size);
  proto::XattrReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_LISTXATTR, req, &rep));
  return rep;
}

Status Metadata::Setxattr(const Cred& cred, uint64_t ino, std::string_view name,
                          std::string_view value, uint32_t flags) {
  proto::XattrRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_name(std::string(name));
  req.set_value(std::string(value));
  req.set_flags(flags);
  proto::XattrReply rep;
  return client_->MdsCall(proto::OP_MDS_SETXATTR, req, &rep);
}

Status Metadata::Removexattr(const Cred& cred, uint64_t ino, std::string_view name) {
  proto::XattrRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_name(std::string(name));
  proto::XattrReply rep;
  return client_->MdsCall(proto::OP_MDS_REMOVEXATTR, req, &rep);
}

Result<proto::OpenReply> Metadata::Open(const Cred& cred, uint64_t ino, uint32_t flags) {
  proto::OpenRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_flags(flags);
  proto::OpenReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_OPEN, req, &rep));
  return rep;
}

Result<proto::AttrReply> Metadata::Close(const Cred& cred, const CloseArgs& args) {
  proto::CloseRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(args.ino);
  req.set_handle(args.handle);
  req.set_wrote(args.wrote);
  req.set_sync(args.sync);
  if (args.atime_ns > 0) req.set_atime_ns(args.atime_ns);
  if (args.wrote) {
    req.set_size(args.size);
    req.set_mtime_ns(args.mtime_ns);
  }
  proto::AttrReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_CLOSE, req, &rep));
  return rep;
}

Status Metadata::Sync(const Cred& cred, uint64_t ino) {
  proto::SyncRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  proto::SyncReply rep;
  return client_->MdsCall(proto::OP_MDS_SYNC, req, &rep);
}

Result<proto::Layout> Metadata::LayoutIntent(const Cred& cred, uint64_t ino, uint64_t handle,
                                             uint64_t start, uint64_t end) {
  proto::LayoutIntentRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_start(start);
  req.set_end(end);
  req.set_handle(handle);
  proto::LayoutIntentReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_LAYOUT_INTENT, req, &rep));
  if (!RangeInstantiated(rep.layout(), start, end)) {
    return Status(Code::kIO, "the MDS did not instantiate the layout for the write");
  }
  return std::move(*rep.mutable_layout());
}

Result<std::optional<proto::Layout>> Metadata::LayoutForWrite(const Cred& cred, uint64_t ino,
                                                              uint64_t handle,
                                                              const proto::Layout& held,
                                                              uint64_t offset, uint64_t end) {
  if (RangeInstantiated(held, offset, end)) return std::optional<proto::Layout>();
  if (end > LayoutEnd(held)) {
    return Status(Code::kFBig, "write past the end of the file's layout (" +
                                   std::to_string(LayoutEnd(held)) + ")");
  }
  STRIA_ASSIGN_OR_RETURN(proto::Layout now, LayoutIntent(cred, ino, handle, offset, end));
  return std::optional<proto::Layout>(std::move(now));
}

Result<std::optional<proto::Layout>> Metadata::GetDefaultLayout(const Cred& cred, uint64_t ino) {
  proto::GetDefaultLayoutRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  proto::GetDefaultLayoutReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_GET_DEFAULT_LAYOUT, req, &rep));
  if (!rep.is_set()) return std::optional<proto::Layout>();
  return std::optional<proto::Layout>(std::move(*rep.mutable_layout()));
}

Status Metadata::SetDefaultLayout(const Cred& cred, uint64_t ino, const proto::Layout& layout) {
  proto::SetDefaultLayoutRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  *req.mutable_layout() = layout;
  proto::SetDefaultLayoutReply rep;
  return client_->MdsCall(proto::OP_MDS_SET_DEFAULT_LAYOUT, req, &rep);
}

Status Metadata::RemoveDefaultLayout(const Cred& cred, uint64_t ino) {
  proto::SetDefaultLayoutRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  req.set_remove(true);
  proto::SetDefaultLayoutReply rep;
  return client_->MdsCall(proto::OP_MDS_SET_DEFAULT_LAYOUT, req, &rep);
}

Result<proto::MigrateReply> Metadata::Migrate(const Cred& cred, proto::MigrateRequest req) {
  *req.mutable_cred() = cred;
  proto::MigrateReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_MIGRATE, req, &rep));
  return rep;
}

Result<proto::Fid2PathReply> Metadata::Fid2Path(const Cred& cred, uint64_t ino) {
  proto::Fid2PathRequest req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  proto::Fid2PathReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_FID2PATH, req, &rep));
  return rep;
}

bool ReadNeedsNewerLayout(const proto::Layout* held, uint64_t offset, uint64_t end) {
  if (held == nullptr) return true;
  return !RangeInstantiated(*held, offset, std::min(end, LayoutEnd(*held)));
}

}  // namespace stria::client
