// Metadata: the typed MDS operations (see metadata.h).
#include "client/metadata.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fs.h>

#include <algorithm>

#include "client/entry_batches.h"
#include "proto/layout_components.h"

namespace stria::client {

namespace {

// A request of type Req for `cred` about inode `ino` (the shape of most MDS requests).
template <typename Req>
Req About(const proto::Credentials& cred, uint64_t ino) {
  Req req;
  *req.mutable_cred() = cred;
  req.set_ino(ino);
  return req;
}

}  // namespace

template <typename Rep, typename Req>
Result<Rep> Metadata::Call(proto::Opcode op, const Req& req) {
  Rep rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(op, req, &rep));
  return rep;
}

Status CheckName(std::string_view name) {
  if (name.empty()) return Status(Code::kNoEnt, "empty name");
  if (name.size() > kMaxNameLen) return Status(Code::kNameTooLong, "name longer than 255 bytes");
  return Status::Ok();
}

namespace {

proto::LookupRequest LookupOf(const proto::Credentials& cred, uint64_t parent,
                              std::string_view name, bool negative_ok) {
  proto::LookupRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(parent);
  req.set_name(std::string(name));
  req.set_negative_ok(negative_ok);
  return req;
}

// An open intent's reply that does not open the file it names: closed, and not used.
Status CheckLookupOpen(Metadata& md, const proto::Credentials& cred, const proto::EntryReply& rep) {
  if (!rep.has_open() ||
      (rep.open().handle() != 0 && rep.open().attr().ino() == rep.attr().ino())) {
    return Status::Ok();
  }
  md.CloseOpenOf(cred, rep);
  return Status(Code::kProtocol, "MDS lookup returned an open of another inode, or no handle");
}

// One name's reply in a batch answered OK: it, or why it cannot be used (its open closed).
Result<proto::EntryReply> CheckedLookup(Metadata& md, const proto::Credentials& cred,
                                        proto::EntryReply rep) {
  if (rep.attr().ino() == 0) {
    md.CloseOpenOf(cred, rep);
    return Status(Code::kProtocol, "MDS lookup returned inode 0");
  }
  STRIA_RETURN_IF_ERROR(CheckLookupOpen(md, cred, rep));
  return rep;
}

}  // namespace

Result<proto::EntryReply> Metadata::Lookup(const Cred& cred, uint64_t parent, std::string_view name,
                                           bool negative_ok) {
  STRIA_RETURN_IF_ERROR(CheckName(name));
  // Batched with other threads' lookups in the same directory when they come at once.
  return client_->lookup_batches().Send(LookupOf(cred, parent, name, negative_ok));
}

Result<proto::EntryReply> Metadata::LookupOpen(const Cred& cred, uint64_t parent,
                                               std::string_view name, uint32_t open_flags,
                                               bool negative_ok) {
  STRIA_RETURN_IF_ERROR(CheckName(name));
  proto::LookupRequest req = LookupOf(cred, parent, name, negative_ok);
  req.set_open(true);
  req.set_open_flags(open_flags);
  // Batched with other threads' lookups-and-opens in the same directory when they come at
  // once (8 DataLoader workers reading one directory's samples).
  Result<proto::EntryReply> got = client_->lookup_batches().Send(req);
  if (got.status().code() == Code::kInval) {
    // An MDS from before batched opens refuses a batch with open as a whole, and its
    // first name gets that answer: alone, it is what it was.
    got = Call<proto::EntryReply>(proto::OP_MDS_LOOKUP, req);
  }
  STRIA_ASSIGN_OR_RETURN(auto rep, std::move(got));
  if (rep.attr().ino() == 0 && !negative_ok) {
    return Status(Code::kProtocol, "MDS lookup returned inode 0");
  }
  STRIA_RETURN_IF_ERROR(CheckLookupOpen(*this, cred, rep));
  return rep;
}

void Metadata::CloseOpenOf(const Cred& cred, const proto::EntryReply& rep) {
  if (!rep.has_open() || rep.open().handle() == 0) return;
  CloseArgs close;
  close.ino = rep.open().attr().ino();
  close.handle = rep.open().handle();
  Close(cred, close).status().IgnoreError();
}

Result<std::vector<Result<proto::EntryReply>>> Metadata::LookupMany(
    const Cred& cred, uint64_t parent, const std::vector<std::string>& names, bool open) {
  if (names.empty()) return std::vector<Result<proto::EntryReply>>();
  for (const std::string& n : names) STRIA_RETURN_IF_ERROR(CheckName(n));
  proto::LookupRequest req = LookupOf(cred, parent, names.front(), /*negative_ok=*/false);
  for (size_t i = 1; i < names.size(); ++i) req.add_more_names(names[i]);
  if (open) {
    req.set_open(true);
    req.set_open_flags(O_RDONLY);
  }
  proto::EntryReply rep;
  Status st = client_->MdsCall(proto::OP_MDS_LOOKUP, req, &rep);
  std::vector<Result<proto::EntryReply>> out;
  out.reserve(names.size());
  if (!st.ok() && !IsErrno(st.code())) return st;  // the transport's
  if (!st.ok() || rep.codes_size() == 0) {
    // Refused as a whole (the directory's check, or an MDS from before batched opens), or
    // an MDS from before batches answered the first name alone.
    if (!st.ok()) {
      out.assign(names.size(), st);
      return out;
    }
    out.push_back(CheckedLookup(*this, cred, std::move(rep)));
    out.resize(names.size(), Status(Code::kNotSup, "the MDS answered one name of a batch"));
    return out;
  }
  if (rep.codes_size() != static_cast<int>(names.size()) ||
      rep.more_size() != static_cast<int>(names.size()) - 1) {
    CloseOpenOf(cred, rep);
    for (const proto::EntryReply& r : rep.more()) CloseOpenOf(cred, r);
    return Status(Code::kProtocol,
                  fmt::format("the MDS answered a batch of {} lookups with {} results",
                              names.size(), rep.codes_size()));
  }
  auto more = std::move(*rep.mutable_more());
  const auto codes = std::move(*rep.mutable_codes());
  rep.clear_more();
  rep.clear_codes();
  for (size_t i = 0; i < names.size(); ++i) {
    const auto c = static_cast<Code>(codes[static_cast<int>(i)]);
    proto::EntryReply one = i == 0 ? std::move(rep) : std::move(more[static_cast<int>(i) - 1]);
    if (c != Code::kOk) {
      CloseOpenOf(cred, one);  // none is kept with an error
      out.push_back(Status(c, fmt::format("lookup of '{}': {}", names[i], CodeName(c))));
    } else {
      out.push_back(CheckedLookup(*this, cred, std::move(one)));
    }
  }
  return out;
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
  // Batched with other threads' creates in the same directory when they come at once; an
  // open(O_CREAT) goes alone (the MDS batches no opens).
  if (!args.open) return client_->create_batches().Send(req);
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_CREATE, req, &rep));
  if (rep.attr().ino() == 0) return Status(Code::kProtocol, "MDS create returned inode 0");
  return rep;
}

Result<proto::EntryReply> Metadata::Link(const Cred& cred, uint64_t ino, uint64_t new_parent,
                                         std::string_view name) {
  STRIA_RETURN_IF_ERROR(CheckName(name));
  auto req = About<proto::LinkRequest>(cred, ino);
  req.set_new_parent(new_parent);
  req.set_new_name(std::string(name));
  return Call<proto::EntryReply>(proto::OP_MDS_LINK, req);
}

Result<proto::UnlinkReply> Metadata::Unlink(const Cred& cred, uint64_t parent,
                                            std::string_view name, bool is_dir,
                                            bool want_writeback) {
  STRIA_RETURN_IF_ERROR(CheckName(name));
  proto::UnlinkRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(parent);
  req.set_name(std::string(name));
  req.set_is_dir(is_dir);
  req.set_want_writeback(want_writeback);
  return Call<proto::UnlinkReply>(proto::OP_MDS_UNLINK, req);
}

Result<proto::UnlinkReply> Metadata::UnlinkBatch(const Cred& cred, uint64_t parent,
                                                 const std::vector<std::string>& names,
                                                 bool want_writeback) {
  if (names.empty()) return Status(Code::kInval, "an unlink batch needs a name");
  proto::UnlinkRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(parent);
  req.set_name(names.front());
  for (size_t i = 1; i < names.size(); ++i) req.add_more_names(names[i]);
  req.set_want_writeback(want_writeback);
  auto rep = Call<proto::UnlinkReply>(proto::OP_MDS_UNLINK, req);
  if (names.size() == 1) {
    if (rep.ok()) rep->add_codes(0);  // sent as a single unlink
    return rep;
  }
  if (rep.ok() && rep->codes_size() == static_cast<int>(names.size())) return rep;
  if (rep.ok() && rep->codes_size() != 0) {
    return Status(Code::kProtocol, "the MDS answered an unlink batch of " +
                                       std::to_string(names.size()) + " with " +
                                       std::to_string(rep->codes_size()) + " results");
  }
  // No codes: an MDS from before batches read `name` alone and unlinked it, or answered why
  // not with a file system error. (This MDS answers a batch with an error only when the
  // parent's check failed; then each name alone fails the same way, and nothing was done.)
  // The rest go one by one. A transport error leaves nothing known.
  if (!rep.ok() && !IsErrno(rep.status().code())) return rep.status();
  const auto code = static_cast<int32_t>(rep.status().code());
  proto::UnlinkReply out = rep.ok() ? std::move(*rep) : proto::UnlinkReply();
  out.add_codes(code);
  for (size_t i = 1; i < names.size(); ++i) {
    auto one = Unlink(cred, parent, names[i], /*is_dir=*/false, want_writeback);
    out.add_codes(static_cast<int32_t>(one.status().code()));
    if (one.ok()) {
      out.set_writeback_ms(one->writeback_ms());
      *out.mutable_parent_attr() = one->parent_attr();
    }
  }
  return out;
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
  return Call<proto::RenameReply>(proto::OP_MDS_RENAME, req).status();
}

Result<std::string> Metadata::Readlink(const Cred& cred, uint64_t ino) {
  auto req = About<proto::ReadlinkRequest>(cred, ino);
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
  return Call<proto::ReaddirReply>(proto::OP_MDS_READDIR, req);
}

Result<proto::AttrReply> Metadata::Getattr(const Cred& cred, uint64_t ino) {
  auto req = About<proto::GetattrRequest>(cred, ino);
  return Call<proto::AttrReply>(proto::OP_MDS_GETATTR, req);
}

Result<proto::AttrReply> Metadata::Setattr(const Cred& cred, proto::SetattrRequest req) {
  *req.mutable_cred() = cred;
  req.mutable_attr()->set_ino(req.ino());
  return Call<proto::AttrReply>(proto::OP_MDS_SETATTR, req);
}

Result<proto::StatfsReply> Metadata::Statfs(const Cred& cred) {
  proto::StatfsRequest req;
  *req.mutable_cred() = cred;
  return Call<proto::StatfsReply>(proto::OP_MDS_STATFS, req);
}

Result<proto::XattrReply> Metadata::Getxattr(const Cred& cred, uint64_t ino,
                                             std::string_view name, uint32_t size) {
  auto req = About<proto::XattrRequest>(cred, ino);
  req.set_name(std::string(name));
  req.set_size(size);
  return Call<proto::XattrReply>(proto::OP_MDS_GETXATTR, req);
}

Result<proto::XattrReply> Metadata::Listxattr(const Cred& cred, uint64_t ino, uint32_t size) {
  auto req = About<proto::XattrRequest>(cred, ino);
  req.set_size(size);
  return Call<proto::XattrReply>(proto::OP_MDS_LISTXATTR, req);
}

Status Metadata::Setxattr(const Cred& cred, uint64_t ino, std::string_view name,
                          std::string_view value, uint32_t flags) {
  auto req = About<proto::XattrRequest>(cred, ino);
  req.set_name(std::string(name));
  req.set_value(std::string(value));
  req.set_flags(flags);
  return Call<proto::XattrReply>(proto::OP_MDS_SETXATTR, req).status();
}

Status Metadata::Removexattr(const Cred& cred, uint64_t ino, std::string_view name) {
  auto req = About<proto::XattrRequest>(cred, ino);
  req.set_name(std::string(name));
  return Call<proto::XattrReply>(proto::OP_MDS_REMOVEXATTR, req).status();
}

Result<proto::OpenReply> Metadata::Open(const Cred& cred, uint64_t ino, uint32_t flags) {
  auto req = About<proto::OpenRequest>(cred, ino);
  req.set_flags(flags);
  return Call<proto::OpenReply>(proto::OP_MDS_OPEN, req);
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
  return Call<proto::AttrReply>(proto::OP_MDS_CLOSE, req);
}

Result<proto::CloseBatchReply> Metadata::CloseBatch(const proto::CloseBatchRequest& req) {
  return Call<proto::CloseBatchReply>(proto::OP_MDS_CLOSE_BATCH, req);
}

Status Metadata::Sync(const Cred& cred, uint64_t ino) {
  auto req = About<proto::SyncRequest>(cred, ino);
  return Call<proto::SyncReply>(proto::OP_MDS_SYNC, req).status();
}

Result<proto::Layout> Metadata::LayoutIntent(const Cred& cred, uint64_t ino, uint64_t handle,
                                             uint64_t start, uint64_t end) {
  auto req = About<proto::LayoutIntentRequest>(cred, ino);
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
  auto req = About<proto::GetDefaultLayoutRequest>(cred, ino);
  proto::GetDefaultLayoutReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_GET_DEFAULT_LAYOUT, req, &rep));
  if (!rep.is_set()) return std::optional<proto::Layout>();
  return std::optional<proto::Layout>(std::move(*rep.mutable_layout()));
}

Status Metadata::SetDefaultLayout(const Cred& cred, uint64_t ino, const proto::Layout& layout) {
  auto req = About<proto::SetDefaultLayoutRequest>(cred, ino);
  *req.mutable_layout() = layout;
  return Call<proto::SetDefaultLayoutReply>(proto::OP_MDS_SET_DEFAULT_LAYOUT, req).status();
}

Status Metadata::RemoveDefaultLayout(const Cred& cred, uint64_t ino) {
  auto req = About<proto::SetDefaultLayoutRequest>(cred, ino);
  req.set_remove(true);
  return Call<proto::SetDefaultLayoutReply>(proto::OP_MDS_SET_DEFAULT_LAYOUT, req).status();
}

Result<proto::MigrateReply> Metadata::Migrate(const Cred& cred, proto::MigrateRequest req) {
  *req.mutable_cred() = cred;
  return Call<proto::MigrateReply>(proto::OP_MDS_MIGRATE, req);
}

Result<proto::MirrorReply> Metadata::Mirror(const Cred& cred, proto::MirrorRequest req) {
  *req.mutable_cred() = cred;
  return Call<proto::MirrorReply>(proto::OP_MDS_MIRROR, req);
}

Result<proto::Fid2PathReply> Metadata::Fid2Path(const Cred& cred, uint64_t ino) {
  auto req = About<proto::Fid2PathRequest>(cred, ino);
  return Call<proto::Fid2PathReply>(proto::OP_MDS_FID2PATH, req);
}

bool ReadNeedsNewerLayout(const proto::Layout* held, uint64_t offset, uint64_t end) {
  if (held == nullptr) return true;
  return !RangeInstantiated(*held, offset, std::min(end, LayoutEnd(*held)));
}

}  // namespace stria::client
