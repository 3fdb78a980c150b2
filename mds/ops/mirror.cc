// OP_MDS_MIRROR: mirrored files (see MirrorCommand in proto/stria.proto).
//   STALE: ENOENT, EINVAL for a non-file, a file without mirrors, an unknown mirror or an
//   empty range; EACCES without write access (read access for a damage report), unless
//   through a handle opened for writing; EIO when the mirror holds the only good copy of
//   some of the bytes. Idempotent: a range marked already changes nothing.
//   RESYNC: EACCES without write access; then as MirrorResync::ResyncFile.
//   EXTEND: EACCES; EINVAL for a bad template or more than 16 mirrors; EOPNOTSUPP for a
//   Data-on-MDT file. The new mirrors are allocated stale, apart from the others' OSSes,
//   committed, then resynced (a busy file is left to the background resync).
//   SPLIT: EACCES; EBUSY while a writer has the file open; EINVAL for an unknown mirror,
//   the last mirror, or a split into a file of a mirror that is stale; EIO when the
//   mirror holds the only good copy of some bytes; EEXIST when the new name exists.
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

#include "mds/internal/layout_alloc.h"
#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/mirror_resync.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "mds/txn.h"
#include "proto/layout_components.h"
#include "proto/layout_mirrors.h"

namespace stria::mds {

namespace {

bool HasMirror(const proto::Layout& l, uint32_t mirror) {
  const std::vector<uint32_t> ids = MirrorIds(l);
  return std::find(ids.begin(), ids.end(), mirror) != ids.end();
}

Status MarkStale(Namespace& ns, MirrorResync* resync, const proto::MirrorRequest& req,
                 proto::MirrorReply* rep) {
  if (req.end() <= req.start()) {
    return Status(Code::kInval, "stale range [" + std::to_string(req.start()) + ", " +
                                    std::to_string(req.end()) + ") is empty");
  }
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, RegularFile(txn, req.ino()));
  proto::Layout& l = rec->layout;
  if (!IsMirrored(l) || !HasMirror(l, req.mirror_id())) {
    return Status(Code::kInval, "inode " + std::to_string(req.ino()) + " has no mirror " +
                                    std::to_string(req.mirror_id()));
  }
  bool through_open_handle = false;
  if (req.handle() != 0) {
    // Lock order: the namespace mutex, then the open mutex.
    std::lock_guard open_lock(ns.open_mutex());
    through_open_handle = ns.HandleOpenLocked(req.handle(), req.ino());
  }
  // A damage report only triggers a copy from a good mirror: any reader may make one.
  if (!through_open_handle) {
    STRIA_RETURN_IF_ERROR(CheckAccess(rec->attr, req.cred(), req.damaged() ? kMayRead : kMayWrite));
  }
  if (!StaleCovers(l, req.mirror_id(), req.start(), req.end())) {
    if (!OtherMirrorHolds(l, req.mirror_id(), req.start(), req.end())) {
      return Status(Code::kIO, "mirror " + std::to_string(req.mirror_id()) +
                                   " holds the only good copy of bytes in [" +
                                   std::to_string(req.start()) + ", " +
                                   std::to_string(req.end()) + ")");
    }
    AddStaleRange(&l, req.mirror_id(), req.start(), req.end());
    l.set_generation(l.generation() + 1);
    rec->attr.set_ctime_ns(txn.now());
    txn.Dirty(req.ino());
    STRIA_RETURN_IF_ERROR(txn.Commit());  // durable before the writer completes
    if (resync) resync->CountStaleMark(req.damaged());
  }
  *rep->mutable_layout() = l;
  return Status::Ok();
}

// The file's layout as a mirrored one: a plain layout becomes mirror 1's only component, a
// PFL layout's components mirror 1's.
void AsMirror(proto::Layout* l) {
  if (!IsComposite(*l)) {
    proto::Layout plain = *l;
    plain.clear_generation();
    plain.clear_ino();
    proto::Layout out;
    out.set_generation(l->generation());
    out.set_ino(l->ino());
    proto::LayoutComponent* c = out.add_components();
    c->set_id(ComponentId(1, 1));
    c->set_start(0);
    c->set_end(kLayoutEof);
    c->set_flags(kLcmeFlInit);
    *c->mutable_layout() = std::move(plain);
    *l = std::move(out);
    return;
  }
  for (proto::LayoutComponent& c : *l->mutable_components()) {
    if (MirrorIdOf(c.id()) == 0) c.set_id(ComponentId(1, c.id()));
  }
}

Status Extend(Namespace& ns, const proto::MirrorRequest& req, proto::MirrorReply* rep) {
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, WritableFile(txn, req.ino(), req.cred()));
  if (DomEnd(rec->layout) > 0) {
    return Status(Code::kNotSup, "mirroring a Data-on-MDT file is not supported");
  }
  const uint64_t parent = rec->links.empty() ? kRootIno : rec->links.front().first;
  STRIA_ASSIGN_OR_RETURN(proto::Layout added,
                         ResolveLayout(txn, parent, req.has_layout() ? &req.layout() : nullptr));
  if (!IsComposite(added)) {
    // A plain template: one component over the whole file.
    proto::Layout one;
    proto::LayoutComponent* c = one.add_components();
    c->set_start(0);
    c->set_end(kLayoutEof);
    *c->mutable_layout() = added;
    added = std::move(one);
  }
  proto::Layout l = rec->layout;
  AsMirror(&l);
  uint32_t next_mirror = 0, next_seq = 0;
  for (const proto::LayoutComponent& c : l.components()) {
    next_mirror = std::max(next_mirror, MirrorIdOf(c.id()));
    next_seq = std::max(next_seq, c.id() & 0xffff);
  }
  const uint32_t last_existing = next_mirror;
  // Each mirror of the template (by its mirror id, 0 for a PFL template) becomes a new one.
  uint32_t prev_template_mirror = UINT32_MAX;
  for (const proto::LayoutComponent& t : added.components()) {
    if (MirrorIdOf(t.id()) != prev_template_mirror) {
      ++next_mirror;
      prev_template_mirror = MirrorIdOf(t.id());
    }
    proto::LayoutComponent c = t;
    c.set_id(ComponentId(next_mirror, ++next_seq));
    c.set_flags(t.flags() & kLcmeFlPrefRw);
    c.mutable_layout()->clear_objects();
    *l.add_components() = std::move(c);
  }
  if (next_mirror > 0xffff || next_seq > 0xffff) {
    return Status(Code::kInval, "no mirror or component id left in this layout");
  }
  STRIA_RETURN_IF_ERROR(CheckComponentExtents(l));
  // The new mirrors hold nothing yet: stale over the file until the resync copies it.
  for (uint32_t m = last_existing + 1; m <= next_mirror; ++m) {
    AddStaleRange(&l, m, 0, LayoutEnd(l));
  }
  STRIA_RETURN_IF_ERROR(
      InstantiateRange(txn, &l, 0, std::max<uint64_t>(rec->attr.size(), 1)).status());
  l.set_generation(rec->layout.generation() + 1);
  l.set_ino(req.ino());
  rec->layout = std::move(l);
  rec->attr.set_ctime_ns(txn.now());
  txn.Dirty(req.ino());
  *rep->mutable_layout() = rec->layout;
  return txn.Commit();
}

Status Split(Namespace& ns, const proto::MirrorRequest& req, proto::MirrorReply* rep) {
  if (!req.destroy()) STRIA_RETURN_IF_ERROR(ValidateName(req.new_name()));
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, WritableFile(txn, req.ino(), req.cred()));
  {
    std::lock_guard open_lock(ns.open_mutex());
    if (ns.HasWritersLocked(req.ino())) return Status(Code::kBusy, "the file is open for writing");
  }
  const proto::Layout& l = rec->layout;
  const uint32_t m = req.mirror_id();
  if (!IsMirrored(l) || !HasMirror(l, m)) {
    return Status(Code::kInval, "inode " + std::to_string(req.ino()) + " has no mirror " +
                                    std::to_string(m) + " to split (and its last cannot be)");
  }
  if (!OtherMirrorHolds(l, m, 0, std::max<uint64_t>(rec->attr.size(), 1))) {
    return Status(Code::kIO, "mirror " + std::to_string(m) +
                                 " holds the only good copy of some bytes: resync first");
  }
  proto::Layout split = MirrorView(l, m);
  proto::Layout rest;
  rest.set_ino(req.ino());
  rest.set_generation(l.generation() + 1);
  for (const proto::LayoutComponent& c : l.components()) {
    if (MirrorIdOf(c.id()) != m) *rest.add_components() = c;
  }
  if (req.destroy()) {
    txn.QueueDestroy(split);
  } else {
    if (HasStale(split)) {
      return Status(Code::kInval, "mirror " + std::to_string(m) +
                                      " is stale: resync it before splitting it into a file");
    }
    STRIA_ASSIGN_OR_RETURN(InodeRecord * dir, WritableDir(txn, req.new_parent(), req.cred()));
    STRIA_ASSIGN_OR_RETURN(auto existing, ns.GetDirent(req.new_parent(), req.new_name()));
    if (existing) return Status(Code::kExist, "'" + req.new_name() + "' exists");
    InodeRecord* nrec = txn.NewInode();
    const uint64_t nino = nrec->attr.ino();
    proto::Attr a = rec->attr;
    a.set_ino(nino);
    a.set_nlink(1);
    a.set_generation(1);
    a.set_ctime_ns(txn.now());
    a.set_uid(req.cred().uid());
    nrec->attr = std::move(a);
    split.set_ino(nino);
    split.set_generation(0);
    nrec->layout = std::move(split);
    nrec->AddLink(req.new_parent(), req.new_name());
    txn.PutDirent(req.new_parent(), req.new_name(), nino, proto::FT_REG);
    TouchDir(txn, dir);
    rep->set_new_ino(nino);
  }
  rec->layout = std::move(rest);
  rec->attr.set_ctime_ns(txn.now());
  txn.Dirty(req.ino());
  if (!HasStale(rec->layout)) txn.batch().Delete(MirrorStaleKey(req.ino()));
  *rep->mutable_layout() = rec->layout;
  return txn.Commit();
}

}  // namespace

Status Mirror(Namespace& ns, MirrorResync* resync, const proto::MirrorRequest& req,
              proto::MirrorReply* rep) {
  switch (req.command()) {
    case proto::MIRROR_STALE:
      return MarkStale(ns, resync, req, rep);
    case proto::MIRROR_RESYNC: {
      STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
      STRIA_RETURN_IF_ERROR(CheckAccess(rec.attr, req.cred(), kMayWrite));
      if (resync == nullptr) return Status(Code::kNotSup, "this MDS does not resync mirrors");
      STRIA_ASSIGN_OR_RETURN(uint64_t copied, resync->ResyncFile(req.ino()));
      rep->set_resynced_bytes(copied);
      STRIA_ASSIGN_OR_RETURN(rec, ns.GetInode(req.ino()));
      *rep->mutable_layout() = rec.layout;
      return Status::Ok();
    }
    case proto::MIRROR_EXTEND: {
      STRIA_RETURN_IF_ERROR(Extend(ns, req, rep));
      if (resync == nullptr) return Status::Ok();  // left stale: no one to copy
      Result<uint64_t> copied = resync->ResyncFile(req.ino());
      // A writer holds the file: the background resync copies after its close.
      if (!copied.ok() && copied.status().code() != Code::kBusy) return copied.status();
      if (copied.ok()) rep->set_resynced_bytes(*copied);
      STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
      *rep->mutable_layout() = rec.layout;
      return Status::Ok();
    }
    case proto::MIRROR_SPLIT:
      return Split(ns, req, rep);
    default:
      return Status(Code::kInval, "unknown mirror command " + std::to_string(req.command()));
  }
}

}  // namespace stria::mds
