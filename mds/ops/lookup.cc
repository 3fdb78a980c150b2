// OP_MDS_LOOKUP: a name in a directory -> the child's attributes (and layout).
#include <fcntl.h>

#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"

namespace stria::mds {

namespace {

// One name in `dir` (already checked searchable), answered into `rep`.
Status LookupOne(Namespace& ns, const InodeRecord& dir, uint64_t parent, const std::string& name,
                 bool negative_ok, proto::EntryReply* rep) {
  if (name.empty()) return Status(Code::kInval, "empty name");
  if (name.size() > kMaxNameLen) return Status(Code::kNameTooLong, "name longer than 255 bytes");
  if (name == ".") {
    FillReply(dir, rep->mutable_attr(), rep->mutable_layout());
    return Status::Ok();
  }
  if (name == "..") {
    STRIA_ASSIGN_OR_RETURN(InodeRecord up, ns.GetInode(dir.parent ? dir.parent : parent));
    FillReply(up, rep->mutable_attr(), rep->mutable_layout());
    return Status::Ok();
  }
  STRIA_ASSIGN_OR_RETURN(auto entry, ns.GetDirent(parent, name));
  if (!entry) {
    // The client caches the absence under an entry lease: an empty reply, not an error.
    if (negative_ok) return Status::Ok();
    return Status(Code::kNoEnt, "no entry '" + name + "'");
  }
  STRIA_ASSIGN_OR_RETURN(InodeRecord child, ns.GetInode(entry->first));
  FillReply(child, rep->mutable_attr(), rep->mutable_layout());
  return Status::Ok();
}

}  // namespace

Status Lookup(Namespace& ns, const proto::LookupRequest& req, proto::EntryReply* rep) {
  if (req.more_names_size() >= kMaxLookupBatch) {
    return Status(Code::kInval, "a lookup batch of more than 128 names");
  }
  if (req.open()) {  // the opens themselves are the service's (mds_service.cc, OpenWithLookup)
    if ((req.open_flags() & O_ACCMODE) != O_RDONLY || (req.open_flags() & O_TRUNC)) {
      return Status(Code::kInval, "an open with a lookup is read-only");
    }
  }
  Result<InodeRecord> searchable = ReadSearchableDir(ns, req.parent(), req.cred());
  if (req.more_names_size() == 0) {
    STRIA_RETURN_IF_ERROR(searchable.status());
    return LookupOne(ns, *searchable, req.parent(), req.name(), req.negative_ok(), rep);
  }
  if (!searchable.ok()) {
    // Each name's answer, as it would be alone: a batch refused as a whole is one that an
    // MDS from before batches read as its first name (client/entry_batches.h).
    const auto code = static_cast<int32_t>(searchable.status().code());
    rep->add_codes(code);
    for (int i = 0; i < req.more_names_size(); ++i) {
      rep->add_more();
      rep->add_codes(code);
    }
    return Status::Ok();
  }
  const InodeRecord& dir = *searchable;
  // A batch (client/entry_batches.h): the directory's check above is the batch's; each
  // name is then answered alone, its result in codes, its reply here (the first) or in
  // more.
  auto one = [&](const std::string& name, proto::EntryReply* r) {
    Status st = LookupOne(ns, dir, req.parent(), name, req.negative_ok(), r);
    if (!st.ok()) r->Clear();
    return static_cast<int32_t>(st.code());
  };
  const int32_t first = one(req.name(), rep);
  rep->add_codes(first);
  for (const std::string& name : req.more_names()) {
    proto::EntryReply* r = rep->add_more();
    rep->add_codes(one(name, r));
  }
  return Status::Ok();
}

}  // namespace stria::mds
