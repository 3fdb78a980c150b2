// OP_MDS_CREATE: a regular file (with its layout allocated), a directory, a symlink, or a
// device/FIFO/socket node, in one batch with the parent's entry, mtime/ctime and nlink, the
// superblock counters and the OST object counters.
//   EEXIST if the name exists; EINVAL for "", ".", ".." or names with '/'; ENAMETOOLONG past
//   255 bytes; EACCES without write+search on the parent; ENOSPC "no OSTs registered" for a
//   regular file when no OST is active.
// With `open` (a regular file only), the new file is also opened, as OP_MDS_OPEN would: the
// reply carries the handle (one round trip for open(O_CREAT)).
// A batch (CreateRequest.more, client/entry_batches.h): several creates in one directory
// by one client, in one transaction, each checked and answered alone (EntryReply.codes and
// .more); one mutex hold, one WAL write and one reply for all.
// A replay after an MDS restart (replay_ino set, kFlagReplay) recreates the inode under the
// number and layout its first reply gave, so the client's handles and objects stay valid.
// Ownership: the caller's uid; the parent's gid when the parent is setgid (and a new
// directory inherits the setgid bit), else the caller's gid.
#include <fmt/format.h>
#include <sys/stat.h>

#include <mutex>
#include <string_view>
#include <unordered_set>

#include "common/log.h"
#include "mds/internal/layout_alloc.h"
#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "mds/txn.h"
#include "proto/layout_components.h"

namespace stria::mds {

namespace {

// A replayed create's layout names objects the MDS handed out before its restart: each on a
// known OST, below the ids given out there.
Status CheckReplayedLayout(Txn& txn, const proto::Layout& layout) {
  for (const proto::StripeObject* o : AllObjects(layout)) {
    auto it = txn.osts().find(o->ost_idx());
    if (it == txn.osts().end() || o->object_id() >= it->second.next_object_id) {
      return Status(Code::kInval, "replayed layout names object " +
                                      std::to_string(o->object_id()) + " on OST " +
                                      std::to_string(o->ost_idx()) + ", never handed out");
    }
  }
  return Status::Ok();
}

// The S_IFMT bits the request asks for: a regular file when it names none.
uint32_t TypeOf(const proto::CreateRequest& req) {
  return (req.mode() & S_IFMT) != 0 ? req.mode() & S_IFMT : S_IFREG;
}

// The checks of `req` that need no lock: its name, type and symlink target.
Status CheckRequest(const proto::CreateRequest& req) {
  STRIA_RETURN_IF_ERROR(ValidateName(req.name()));
  const proto::FileType ft = FileTypeOfMode(TypeOf(req));
  if (ft == proto::FT_UNKNOWN) return Status(Code::kInval, "unknown file type in mode");
  if (req.open() && ft != proto::FT_REG) {
    return Status(Code::kInval, "create with open is for regular files");
  }
  if (ft == proto::FT_LNK) {
    if (req.symlink_target().empty()) return Status(Code::kNoEnt, "empty symlink target");
    if (req.symlink_target().size() > kMaxSymlinkLen) {
      return Status(Code::kNameTooLong, "symlink target longer than 4095 bytes");
    }
  }
  return Status::Ok();
}

// Creates `req.name` (checked by CheckRequest) in the loaded, writable `parent` within
// `txn`, for `cred`, and fills `rep` (not its parent_attr). Changes nothing in the
// transaction unless it succeeds, but for object ids its layout took (unused ids are lost,
// as after any failed create).
Status CreateOne(Txn& txn, InodeRecord* parent, const proto::CreateRequest& req,
                 const proto::Credentials& cred, proto::EntryReply* rep) {
  Namespace& ns = txn.ns();
  const uint64_t parent_ino = parent->attr.ino();
  const uint32_t type = TypeOf(req);
  const proto::FileType ft = FileTypeOfMode(type);
  STRIA_ASSIGN_OR_RETURN(auto existing, ns.GetDirent(parent_ino, req.name()));
  if (existing) return Status(Code::kExist, "'" + req.name() + "' exists");
  if (ft == proto::FT_DIR && parent->attr.nlink() >= kMaxLinks) {
    return Status(Code::kMLink, "too many subdirectories");
  }

  // The layout first: it can fail (no OSTs, bad request) before anything else changes.
  proto::Layout layout;
  if (ft == proto::FT_REG && req.replay_ino() != 0) {
    // A replay keeps the objects its client may have written already.
    STRIA_RETURN_IF_ERROR(CheckReplayedLayout(txn, req.replay_layout()));
    layout = req.replay_layout();
  } else if (ft == proto::FT_REG) {
    STRIA_ASSIGN_OR_RETURN(
        layout, AllocateLayout(txn, parent_ino, req.has_layout() ? &req.layout() : nullptr));
  }
  const uint32_t parent_gid = parent->attr.gid();
  const bool parent_setgid = parent->attr.mode() & S_ISGID;
  // As in Lustre, a new subdirectory starts with a copy of its parent's default layout (the
  // root's is the filesystem default, which every directory inherits anyway).
  const bool inherit_layout = parent->has_default_layout && parent_ino != kRootIno;

  InodeRecord* rec = nullptr;
  if (req.replay_ino() != 0) {
    STRIA_ASSIGN_OR_RETURN(rec, txn.ReplayedInode(req.replay_ino()));
  } else {
    rec = txn.NewInode();
  }
  proto::Attr& a = rec->attr;
  uint32_t perm = req.mode() & 07777 & ~(req.umask() & 0777);
  if (ft == proto::FT_LNK) perm = 0777;
  a.set_uid(cred.uid());
  a.set_gid(parent_setgid ? parent_gid : cred.gid());
  if (ft == proto::FT_DIR && parent_setgid) perm |= S_ISGID;
  if (ft != proto::FT_DIR && (perm & S_ISGID) && cred.uid() != 0 && !InGroup(cred, a.gid())) {
    perm &= ~static_cast<uint32_t>(S_ISGID);
  }
  a.set_mode(type | perm);
  switch (ft) {
    case proto::FT_REG:
      rec->layout = std::move(layout);
      rec->layout.set_ino(a.ino());  // Data-on-MDT I/O names the file by it
      break;
    case proto::FT_DIR:
      a.set_nlink(2);
      a.set_size(4096);
      a.set_blocks(8);
      rec->parent = parent_ino;
      if (inherit_layout) {
        rec->has_default_layout = true;
        rec->default_layout = parent->default_layout;
      }
      break;
    case proto::FT_LNK:
      rec->symlink_target = req.symlink_target();
      a.set_size(req.symlink_target().size());
      break;
    case proto::FT_CHR:
    case proto::FT_BLK:
      a.set_rdev(req.rdev());
      break;
    default:
      break;
  }
  a.set_generation(1);
  rec->AddLink(parent_ino, req.name());
  txn.PutDirent(parent_ino, req.name(), a.ino(), ft);
  // NewInode inserts into a std::map: `parent` is still valid.
  if (ft == proto::FT_DIR) parent->attr.set_nlink(parent->attr.nlink() + 1);
  TouchDir(txn, parent);
  // The reply is filled before the commit: a persisted reply (mds/reply_journal.h) is
  // written in the same batch.
  FillReply(*rec, rep->mutable_attr(), rep->mutable_layout());
  return Status::Ok();
}

// A batch (req.more): each create alone, all in one transaction. The request's own fields
// are the first create.
Status CreateBatch(Namespace& ns, const proto::CreateRequest& req, proto::EntryReply* rep) {
  if (req.more_size() >= kMaxCreateBatch) {
    return Status(Code::kInval, fmt::format("more than {} creates in one batch", kMaxCreateBatch));
  }
  if (req.open()) return Status(Code::kInval, "a batch of creates cannot open");
  for (const proto::CreateRequest& item : req.more()) {
    if (item.open()) return Status(Code::kInval, "a batch of creates cannot open");
    if (item.more_size() > 0) return Status(Code::kInval, "a batch inside a batch");
  }
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * parent, WritableDir(txn, req.parent(), req.cred()));
  // Entries are read from the database, which the transaction changes only at its commit:
  // a name twice in the batch is not there the second time.
  std::unordered_set<std::string_view> created;
  bool any = false;
  auto one = [&](const proto::CreateRequest& item, proto::EntryReply* item_rep) {
    Status st = CheckRequest(item);
    if (st.ok() && created.contains(item.name())) {
      st = Status(Code::kExist, "'" + item.name() + "' exists");
    }
    if (st.ok()) st = CreateOne(txn, parent, item, req.cred(), item_rep);
    if (st.ok()) {
      created.insert(item.name());
      any = true;
    } else {
      item_rep->Clear();
      // The batch itself succeeds: the client logs no refusal for this one.
      if (item.replay_ino() != 0) {
        LOG_ERROR("replayed create of '{}' (inode {}) in a batch refused: {}", item.name(),
                  item.replay_ino(), st.ToString());
      }
    }
    rep->add_codes(static_cast<int32_t>(st.code()));
  };
  one(req, rep);
  for (const proto::CreateRequest& item : req.more()) one(item, rep->add_more());
  *rep->mutable_parent_attr() = parent->attr;
  // Nothing created, nothing written: no transaction number, nothing for the client to
  // keep and replay.
  if (!any) return Status::Ok();
  return txn.Commit();
}

}  // namespace

Status Create(Namespace& ns, const proto::CreateRequest& req, proto::EntryReply* rep) {
  if (req.more_size() > 0) return CreateBatch(ns, req, rep);
  STRIA_RETURN_IF_ERROR(CheckRequest(req));
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * parent, WritableDir(txn, req.parent(), req.cred()));
  STRIA_RETURN_IF_ERROR(CreateOne(txn, parent, req, req.cred(), rep));
  *rep->mutable_parent_attr() = parent->attr;
  if (!req.open()) return txn.Commit();
  // Lock order: the namespace mutex, then the open mutex (as Txn::DropLastLink).
  const uint64_t ino = rep->attr().ino();
  std::lock_guard open_lock(ns.open_mutex());
  rep->set_handle(ns.RegisterOpenLocked(ino, /*track=*/true, /*writer=*/true));
  Status st = txn.Commit();
  if (!st.ok()) ns.ReleaseHandleLocked(rep->handle(), ino);
  return st;
}

}  // namespace stria::mds
