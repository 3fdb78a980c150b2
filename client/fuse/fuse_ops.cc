// StriaFs: initialisation and the namespace operations (see fuse_ops.h).
#include "client/fuse/fuse_ops.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/limits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#include <cstring>
#include <optional>

#include "client/fuse/fuse_ring.h"
#include "client/fuse/fuse_util.h"
#include "client/lov_xattr.h"
#include "common/layout.h"
#include "common/log.h"
#include "proto/layout_components.h"

namespace stria::client::fuse {

namespace {

// A reply kept ahead (statahead.h) for a file with other names, which this mount's own
// link, unlink or rename may have changed (nlink, ctime) under that name.
bool HasOtherNames(const proto::EntryReply& rep) {
  return !S_ISDIR(rep.attr().mode()) && rep.attr().nlink() > 1;
}

// Never stored: answered locally so the getxattr the kernel sends before every write
// (file_remove_privs) costs no MDS round trip.
constexpr std::string_view kCapabilityXattr = "security.capability";

}  // namespace

StriaFs::StriaFs(Client* client, FsOptions options)
    : client_(client),
      options_(options),
      fsname_([client] {
        auto cfg = client->GetConfig(false);
        return cfg.ok() ? cfg->fsname() : std::string();
      }()) {}

proto::Credentials StriaFs::Cred(fuse_req_t req) {
  proto::Credentials cred = CredentialsOf(req, groups_);
  cred.set_jobid(jobids_.Get(static_cast<pid_t>(cred.pid()), cred.uid(),
                             client_->tunables().jobid_var()));
  return cred;
}

void StriaFs::Init(fuse_conn_info* conn) {
  conn->max_write = options_.max_write;
  // The kernel takes min(its bdi readahead, this); main.cc raised the bdi's beforehand.
  conn->max_readahead = options_.max_readahead;
  conn->max_background = options_.max_background;
  conn->congestion_threshold = options_.max_background * 3 / 4;
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_ATOMIC_O_TRUNC);
  want(FUSE_CAP_PARALLEL_DIROPS);
  want(FUSE_CAP_READDIRPLUS);
  want(FUSE_CAP_READDIRPLUS_AUTO);
  want(FUSE_CAP_AUTO_INVAL_DATA);
  // fcntl and flock locks go to the MDS (fuse_lock_ops.cc), so mounts exclude each other;
  // noflock answers them ENOSYS there. localflock: without these the kernel keeps the locks
  // itself, for this mount only (libfuse asks for them by default: clear them).
  if (options_.locks == LockMode::kLocal) {
    conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
  } else {
    want(FUSE_CAP_POSIX_LOCKS);
    want(FUSE_CAP_FLOCK_LOCKS);
  }
  // Off: writeback caching (close-to-open is ours), splicing replies (a read's reply is
  // copied into the page cache either way). Writes come spliced unless the mount says not
  // to (FsOptions::splice_writes): their data is then read from the pipe once, into the
  // buffer it is sent from. Not when the kernel offers io_uring: writes then come in the
  // ring's buffers, and splicing the requests left on /dev/fuse (a FORGET after every
  // unlink) costs a pipe round trip each (unlinks 5-11% faster without, 3 pairs).
  conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
                  FUSE_CAP_SPLICE_MOVE);
  if (options_.splice_writes && !FuseRing::KernelOffers()) want(FUSE_CAP_SPLICE_READ);
  LOG_INFO("FUSE init: max_write {} KiB, max_readahead {} KiB, want 0x{:x}, splice writes {}",
           conn->max_write >> 10, conn->max_readahead >> 10, conn->want,
           (conn->want & FUSE_CAP_SPLICE_READ) != 0 ? "on" : "off");
}

void StriaFs::FillEntry(const proto::Attr& attr, const proto::Layout* layout,
                        fuse_entry_param* e) {
  std::shared_ptr<Inode> inode = inodes_.Ref(attr, layout);
  std::memset(e, 0, sizeof(*e));
  e->ino = attr.ino();
  e->generation = attr.generation();
  e->attr = AttrToStat(attr, inode->ReportedSize(attr.size()));
  inode->kernel_size.store(static_cast<uint64_t>(e->attr.st_size));
  inode->kernel_mtime_ns.store(attr.mtime_ns());
  e->attr_timeout = options_.attr_timeout_s;
  e->entry_timeout = options_.entry_timeout_s;
}

void StriaFs::FillEntry(const proto::EntryReply& rep, uint64_t parent, std::string_view name,
                        const LeaseCache::Stamp& stamp, fuse_entry_param* e) {
  FillEntry(rep.attr(), &rep.layout(), e);
  if (leases_ == nullptr) return;
  e->entry_timeout = leases_->EntryTimeout(parent, name, rep.entry_lease_ms(), stamp);
  e->attr_timeout = AttrTimeout(rep.attr().ino(), rep.attr_lease_ms(), stamp);
}

double StriaFs::AttrTimeout(uint64_t ino, uint32_t attr_lease_ms,
                            const LeaseCache::Stamp& stamp) {
  if (leases_ == nullptr || attr_lease_ms == 0) return options_.attr_timeout_s;
  // What this mount writes and has not reported yet changes the attributes the kernel is
  // shown (DoGetattr): keep asking while it has writers.
  if (auto inode = inodes_.Get(ino); inode && inode->HoldsSize()) {
    return options_.attr_timeout_s;
  }
  return leases_->AttrTimeout(ino, attr_lease_ms, stamp);
}

Status StriaFs::DoLookup(fuse_req_t req, uint64_t parent, const char* name, fuse_entry_param* e,
                         bool open_intent) {
  const LeaseCache::Stamp stamp = LeaseBegin();
  const bool leased = leases_ != nullptr && leases_->enabled();
  if (double t = 0; leased && leases_->KnownAbsent(parent, name, &t)) {
    // A directory this mount made and alone changed: its names are all known here.
    std::memset(e, 0, sizeof(*e));
    e->entry_timeout = t;
    return Status::Ok();
  }
  const proto::Credentials cred = Cred(req);
  // A name asked ahead, with the names before it in a numbered run (statahead.h).
  if (leased && open_intent) {
    if (std::optional<AheadEntry> a = ahead_.Lookup(parent, name, cred)) {
      if (UseAhead(*a, parent, name, cred, e)) return Status::Ok();
    }
  }
  // In a directory whose files are opened once found, the MDS opens it with the lookup.
  // (Kept only under an attribute lease: KeepPreOpen.)
  const bool intent = open_intent && leased && pre_opens_.Want(parent);
  const uint64_t changes_before = local_changes_.Now();
  Result<proto::EntryReply> got =
      intent ? md_.LookupOpen(cred, parent, name, O_RDONLY, /*negative_ok=*/leased)
             : md_.Lookup(cred, parent, name, /*negative_ok=*/leased);
  if (intent && !(got.ok() && got->has_open())) pre_opens_.NotHeld(parent);
  STRIA_ASSIGN_OR_RETURN(proto::EntryReply rep, std::move(got));
  if (rep.attr().ino() == 0) {
    // No such name: under an entry lease the kernel keeps the absence (a negative entry).
    const double t = leases_->EntryTimeout(parent, name, rep.entry_lease_ms(), stamp);
    if (rep.entry_lease_ms() == 0 || t <= options_.entry_timeout_s) {
      return Status(Code::kNoEnt, "no entry");
    }
    std::memset(e, 0, sizeof(*e));
    e->entry_timeout = t;
    return Status::Ok();
  }
  FillEntry(rep, parent, name, stamp, e);
  if (rep.has_open()) {
    KeepPreOpen(parent, cred, std::move(*rep.mutable_open()), stamp, changes_before);
  } else if (open_intent && S_ISREG(rep.attr().mode())) {
    if (auto inode = inodes_.Get(rep.attr().ino())) inode->looked_up_in.store(parent);
  }
  return Status::Ok();
}

Status StriaFs::DoGetattr(fuse_req_t req, uint64_t ino, struct stat* st, double* timeout) {
  LliteOp counted(&llite_, kLlGetattr);
  *timeout = options_.attr_timeout_s;
  if (std::optional<proto::Attr> dir = dir_attrs_.Get(ino)) {
    *st = AttrToStat(*dir, dir->size());
    return Status::Ok();
  }
  const LeaseCache::Stamp stamp = LeaseBegin();
  // A read's atime that the release has not reported yet, taken before asking the MDS: a
  // release that reports it and clears it meanwhile may do so after the MDS answered.
  std::shared_ptr<Inode> known = inodes_.Get(ino);
  const int64_t unreported_before = known ? known->unreported_atime_ns.load() : 0;
  const bool held_before = known != nullptr && known->HoldsSize();
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply rep, md_.Getattr(Cred(req), ino));
  *timeout = AttrTimeout(ino, rep.attr_lease_ms(), stamp);
  uint64_t size = rep.attr().size();
  if (auto inode = inodes_.Get(ino)) {
    inode->ObserveMdsSize(size, held_before);
    inode->set_attr(rep.attr());
    inode->set_layout(rep.layout());
    // Held when asked: the report may have been answered (HoldsSize() false now) after the
    // MDS answered this request with the size from before it.
    size = held_before ? std::max(size, inode->known_size.load()) : inode->ReportedSize(size);
    inode->kernel_size.store(size);
    inode->kernel_mtime_ns.store(rep.attr().mtime_ns());
  }
  *st = AttrToStat(rep.attr(), size);
  if (auto inode = inodes_.Get(ino)) {
    // A read whose atime the release will report (relatime) shows now, as on a local fs.
    const int64_t r = std::max(unreported_before, inode->unreported_atime_ns.load());
    if (r > TimespecToNs(st->st_atim)) {
      st->st_atim = timespec{static_cast<time_t>(r / 1'000'000'000), static_cast<long>(r % 1'000'000'000)};
    }
  }
  if (auto inode = inodes_.Get(ino); inode && (held_before || inode->HoldsSize())) {
    // Writes not yet reported to the MDS still change mtime and ctime (POSIX write(2)), and
    // so do those reported after the MDS answered.
    const int64_t w = inode->write_time_ns.load();
    const timespec ts{static_cast<time_t>(w / 1'000'000'000), static_cast<long>(w % 1'000'000'000)};
    if (w > TimespecToNs(st->st_mtim)) st->st_mtim = ts;
    if (w > TimespecToNs(st->st_ctim)) st->st_ctim = ts;
  }
  return Status::Ok();
}

Status StriaFs::Truncate(fuse_req_t req, uint64_t ino, const proto::Layout& layout,
                         uint64_t size, proto::SetattrRequest* sr, proto::AttrReply* rep,
                         OpenCapas* capas) {
  if (auto inode = inodes_.Get(ino); inode != nullptr && (inode->unreported_sizes.load() > 0 ||
                                                          inode->deferred_reports.load() > 0)) {
    FlushClosesOf(*inode);  // as DoSetattr: no size report may land after the truncate
  }
  if (HasObjects(layout)) {
    if (auto inode = inodes_.Get(ino)) STRIA_RETURN_IF_ERROR(inode->DrainWrites());
    STRIA_RETURN_IF_ERROR(client_->TruncateObjects(layout, size, capas));
  }
  if (auto inode = inodes_.Get(ino)) inode->NoteTruncate(size);
  sr->set_valid(sr->valid() | proto::SETATTR_SIZE);
  sr->mutable_attr()->set_size(size);
  const proto::Credentials cred = sr->cred();
  STRIA_ASSIGN_OR_RETURN(*rep, md_.Setattr(cred, *sr));
  return Status::Ok();
}

Result<proto::CloseBatchReply> StriaFs::SendCloses(const proto::CloseBatchRequest& batch) {
  Result<proto::CloseBatchReply> rep = md_.CloseBatch(batch);
  // Sent (or given up on after the retry deadline, logged by the batcher): the MDS's size
  // is the one to show again.
  for (const proto::CloseRequest& c : batch.closes()) {
    if (!c.wrote()) continue;
    if (std::shared_ptr<Inode> inode = inodes_.Get(c.ino())) {
      // Never below 0: the kernel may have forgotten the inode meanwhile (a new entry).
      int n = inode->unreported_sizes.load();
      while (n > 0 && !inode->unreported_sizes.compare_exchange_weak(n, n - 1)) {
      }
    }
    ChangingLocally(c.ino());  // a lookup in flight may have read the size from before
  }
  if (!rep.ok() || rep->failed() > 0) return rep;  // unreported atimes stay shown (a max)
  for (const proto::CloseRequest& c : batch.closes()) {
    if (c.atime_ns() <= 0) continue;
    if (std::shared_ptr<Inode> inode = inodes_.Get(c.ino())) {
      int64_t cur = c.atime_ns();
      inode->unreported_atime_ns.compare_exchange_strong(cur, 0);
    }
  }
  return rep;
}

Status StriaFs::DoSetattr(fuse_req_t req, uint64_t ino, const struct stat& attr, int to_set,
                          FileHandle* fh, struct stat* out) {
  LliteOp counted(&llite_, kLlSetattr);
  dir_attrs_.Drop(ino);
  // An open a lookup brought shows the file from before this change (the MDS revokes the
  // other mounts' leases, not this one's): none stays, nor comes from a lookup answered
  // before the change and arriving after (ChangingLocally again once it is answered).
  ChangingLocally(ino);
  struct Changed {
    StriaFs* fs;
    uint64_t ino;
    ~Changed() { fs->ChangingLocally(ino); }
  } changed{this, ino};
  // A read's atime or a write's size waiting in a gathered close, or for the write itself,
  // goes first: it must not land after this (a size report after a truncate would grow the file
  // back).
  if (std::shared_ptr<Inode> inode = inodes_.Get(ino);
      inode != nullptr &&
      (inode->unreported_atime_ns.load() != 0 || inode->unreported_sizes.load() > 0 ||
       inode->deferred_reports.load() > 0)) {
    FlushClosesOf(*inode);  // with those that close(2)s left to the writes (DoFlush)
  }
  proto::SetattrRequest sr;
  *sr.mutable_cred() = Cred(req);
  sr.set_ino(ino);
  uint32_t valid = 0;
  proto::Attr* a = sr.mutable_attr();
  a->set_ino(ino);
  if (to_set & FUSE_SET_ATTR_MODE) {
    valid |= proto::SETATTR_MODE;
    a->set_mode(attr.st_mode);
  }
  if (to_set & FUSE_SET_ATTR_UID) {
    valid |= proto::SETATTR_UID;
    a->set_uid(attr.st_uid);
  }
  if (to_set & FUSE_SET_ATTR_GID) {
    valid |= proto::SETATTR_GID;
    a->set_gid(attr.st_gid);
  }
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
    valid |= proto::SETATTR_ATIME_NOW;
  } else if (to_set & FUSE_SET_ATTR_ATIME) {
    valid |= proto::SETATTR_ATIME;
    a->set_atime_ns(TimespecToNs(attr.st_atim));
  }
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    valid |= proto::SETATTR_MTIME_NOW;
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    valid |= proto::SETATTR_MTIME;
    a->set_mtime_ns(TimespecToNs(attr.st_mtim));
  }
  if (to_set & FUSE_SET_ATTR_CTIME) {
    valid |= proto::SETATTR_CTIME;
    a->set_ctime_ns(TimespecToNs(attr.st_ctim));
  }
  sr.set_valid(valid);
  proto::AttrReply rep;
  if (to_set & FUSE_SET_ATTR_SIZE) {
    if (attr.st_size < 0) return Status(Code::kInval, "negative size");
    if (static_cast<uint64_t>(attr.st_size) > kMaxFileSize) {
      return Status(Code::kFBig, "size beyond the maximum file size");
    }
    const auto size = static_cast<uint64_t>(attr.st_size);
    proto::Layout layout;
    std::shared_ptr<OpenCapas> capas;
    if (fh != nullptr) {
      if (auto held = fh->inode->layout()) layout = *held;
      sr.set_handle(fh->mds_handle);  // ftruncate: write access was checked at open
      capas = fh->capas;
    } else {
      // truncate(2) by path: let the MDS check write permission before the objects change;
      // with a key, the open's capabilities let the OSTs truncate the objects.
      STRIA_ASSIGN_OR_RETURN(proto::OpenReply orep, md_.Open(sr.cred(), ino, O_WRONLY));
      layout = orep.layout();
      capas = OpenCapas::FromReply({sr.cred(), ino, orep.handle(), O_WRONLY},
                                   orep.has_capa() ? &orep.capa() : nullptr);
      Metadata::CloseArgs ca;
      ca.ino = ino;
      ca.handle = orep.handle();
      if (Status st = md_.Close(sr.cred(), ca).status(); !st.ok()) {
        LOG_WARN("close after truncate check of inode {}: {}", ino, st.ToString());
      }
    }
    STRIA_RETURN_IF_ERROR(Truncate(req, ino, layout, size, &sr, &rep, capas.get()));
  } else {
    STRIA_ASSIGN_OR_RETURN(rep, md_.Setattr(sr.cred(), sr));
  }
  uint64_t size = rep.attr().size();
  if (auto inode = inodes_.Get(ino)) {
    inode->ObserveMdsSize(size);
    inode->set_attr(rep.attr());
    size = inode->ReportedSize(size);
  }
  *out = AttrToStat(rep.attr(), size);
  // The fresh state; its ctime also keeps out any older reply racing this call.
  dir_attrs_.Put(rep.attr());
  return Status::Ok();
}

Status StriaFs::DoCreateNode(fuse_req_t req, uint64_t parent, const char* name, uint32_t mode,
                             uint32_t rdev, const char* symlink_target, fuse_entry_param* e,
                             proto::EntryReply* open_reply) {
  LliteOp counted(&llite_, S_ISDIR(mode) ? kLlMkdir
                           : S_ISLNK(mode) ? kLlSymlink
                           : S_ISREG(mode) ? kLlCreate
                                           : kLlMknod);
  Metadata::CreateArgs args;
  args.parent = parent;
  args.name = name;
  args.mode = mode;
  args.rdev = rdev;
  if (symlink_target != nullptr) args.symlink_target = symlink_target;
  args.open = open_reply != nullptr;
  proto::EntryReply local;
  proto::EntryReply& rep = open_reply != nullptr ? *open_reply : local;
  const LeaseCache::Stamp stamp = LeaseBegin();
  auto created = md_.Create(Cred(req), args);
  ahead_.DropDir(parent);  // nothing asked ahead there before the change is used
  if (!created.ok()) {
    if (leases_ != nullptr) leases_->DirUnsure(parent);
    return created.status();
  }
  rep = std::move(*created);
  if (rep.has_parent_attr()) dir_attrs_.Put(rep.parent_attr());
  FillEntry(rep, parent, name, stamp, e);
  if (leases_ != nullptr) {
    leases_->NameAdded(parent, name, rep.entry_lease_ms(), stamp);
    if (S_ISDIR(mode)) leases_->DirCreated(rep.attr().ino(), rep.dir_lease_ms(), stamp);
  }
  return Status::Ok();
}

Status StriaFs::DoLink(fuse_req_t req, uint64_t ino, uint64_t new_parent, const char* name,
                       fuse_entry_param* e) {
  LliteOp counted(&llite_, kLlLink);
  auto linked = md_.Link(Cred(req), ino, new_parent, name);
  // The file's nlink and ctime change: a reply kept for another of its names may not be
  // used (statahead.h).
  ChangingLocally(ino);
  ahead_.DropDir(new_parent);
  if (leases_ != nullptr) {
    if (linked.ok()) {
      leases_->NameAdded(new_parent, name, 0, LeaseCache::Stamp{});
    } else {
      leases_->DirUnsure(new_parent);
    }
  }
  STRIA_RETURN_IF_ERROR(linked.status());
  const proto::EntryReply& rep = *linked;
  if (rep.has_parent_attr()) dir_attrs_.Put(rep.parent_attr());
  FillEntry(rep.attr(), &rep.layout(), e);
  return Status::Ok();
}

void StriaFs::StartUnlinkWriteback() {
  if (unlink_wb_ || leases_ == nullptr) return;
  unlink_wb_ = std::make_unique<UnlinkWriteback>(
      UnlinkWriteback::kSenders, UnlinkWriteback::kMaxQueued,
      [this](const std::vector<UnlinkWriteback::Item>& items) -> std::vector<Status> {
        const uint64_t parent = items.front().parent;
        std::vector<std::string> names;
        names.reserve(items.size());
        for (const UnlinkWriteback::Item& it : items) names.push_back(it.name);
        const uint64_t epoch = unlink_wb_->Epoch();
        const LeaseCache::Stamp stamp = leases_->Begin();
        auto r = md_.UnlinkBatch(items.front().cred, parent, names, /*want_writeback=*/true);
        if (!r.ok()) return std::vector<Status>(items.size(), r.status());
        // Renewed, with the entry lease that comes with it.
        unlink_wb_->Granted(parent, r->writeback_ms(), stamp.sent, epoch);
        leases_->EntryLeaseRenewed(parent, r->writeback_ms(), stamp);
        if (r->has_parent_attr()) dir_attrs_.Put(r->parent_attr());
        std::vector<Status> results;
        results.reserve(items.size());
        for (size_t i = 0; i < items.size(); ++i) {
          const auto code = static_cast<Code>(r->codes(static_cast<int>(i)));
          results.push_back(code == Code::kOk ? Status::Ok()
                                              : Status(code, "unlink of '" + names[i] + "'"));
        }
        return results;
      },
      [this](const UnlinkWriteback::Item& it, const Status&) {
        // The name may still be there after all: the MDS is asked again.
        leases_->DirUnsure(it.parent);
        dir_attrs_.Drop(it.parent);
      });
  client_->SetMdsCallGate(unlink_wb_.get());
  unlink_wb_live_.store(unlink_wb_.get(), std::memory_order_release);
}

StriaFs::~StriaFs() { StopUnlinkWriteback(); }

void StriaFs::StopUnlinkWriteback() {
  if (!unlink_wb_) return;
  client_->SetMdsCallGate(nullptr);
  unlink_wb_->Stop();  // kept: a call that took the gate before may still ask it
}

Status StriaFs::DoUnlink(fuse_req_t req, uint64_t parent, const char* name, bool is_dir) {
  LliteOp counted(&llite_, is_dir ? kLlRmdir : kLlUnlink);
  if (!is_dir && unlink_wb_ && leases_->HoldsName(parent, name, UnlinkWriteback::kMargin) &&
      unlink_wb_->TryQueue(parent, name, Cred(req))) {
    // Answered now, sent behind (unlink_writeback.h): the kernel sends FUSE_UNLINK only for
    // a name it has (here under the entry lease) and that is not a directory, after its own
    // permission check (default_permissions) against attributes only we can change now.
    leases_->NameRemoved(parent, name);
    ahead_.DropDir(parent);
    ahead_.DropIf(HasOtherNames);
    dir_attrs_.Touch(parent, NowNs());
    return Status::Ok();
  }
  // The MDS must know every open of a file whose last link may go (local_opens.h).
  if (!is_dir) local_opens_.RegisterAll();
  const uint64_t wb_epoch = unlink_wb_ ? unlink_wb_->Epoch() : 0;
  const LeaseCache::Stamp stamp = LeaseBegin();
  auto unlinked = md_.Unlink(Cred(req), parent, name, is_dir,
                             /*want_writeback=*/!is_dir && unlink_wb_ != nullptr);
  ahead_.DropDir(parent);
  ahead_.DropIf(HasOtherNames);  // the file may be kept under another name
  if (unlinked.ok() && unlink_wb_ && unlinked->writeback_ms() != 0) {
    unlink_wb_->Granted(parent, unlinked->writeback_ms(), stamp.sent, wb_epoch);
    leases_->EntryLeaseRenewed(parent, unlinked->writeback_ms(), stamp);
  }
  if (leases_ != nullptr) {
    if (unlinked.ok()) {
      leases_->NameRemoved(parent, name);
      if (is_dir) leases_->DirUnsure(unlinked->attr().ino());
    } else {
      leases_->DirUnsure(parent);
    }
  }
  STRIA_RETURN_IF_ERROR(unlinked.status());
  const proto::UnlinkReply& rep = *unlinked;
  if (is_dir) dir_attrs_.Drop(rep.attr().ino());
  if (rep.has_parent_attr()) {
    dir_attrs_.Put(rep.parent_attr());
  } else {
    dir_attrs_.Drop(parent);
  }
  return Status::Ok();
}

Status StriaFs::DoRename(fuse_req_t req, uint64_t parent, const char* name,
                         uint64_t new_parent, const char* new_name, unsigned int flags) {
  LliteOp counted(&llite_, kLlRename);
  local_opens_.RegisterAll();  // the target's last link may go (local_opens.h)
  Status st = md_.Rename(Cred(req), parent, name, new_parent, new_name, flags);
  ahead_.DropDir(parent);
  ahead_.DropDir(new_parent);
  ahead_.DropIf(HasOtherNames);  // the files renamed or replaced may have other names
  // A moved directory changes too (its ctime, its ".."), and its number is not known here:
  // forget every directory. After the call, so no reply that raced it brings one back.
  dir_attrs_.Clear();
  if (leases_ != nullptr) {
    if (!st.ok()) {
      leases_->DirUnsure(parent);
      leases_->DirUnsure(new_parent);
    } else if ((flags & RENAME_EXCHANGE) == 0) {  // an exchange keeps both names
      leases_->NameRemoved(parent, name);
      leases_->NameAdded(new_parent, new_name, 0, LeaseCache::Stamp{});
    }
  }
  return st;
}

Status StriaFs::DoReadlink(fuse_req_t req, uint64_t ino, std::string* target) {
  STRIA_ASSIGN_OR_RETURN(*target, md_.Readlink(Cred(req), ino));
  return Status::Ok();
}

Status StriaFs::DoStatfs(fuse_req_t req, struct statvfs* out) {
  LliteOp counted(&llite_, kLlStatfs);
  STRIA_ASSIGN_OR_RETURN(proto::StatfsReply rep, md_.Statfs(Cred(req)));
  if (!options_.lazy_statfs) {
    // nolazystatfs: every active OST answers this client itself, however long that takes
    // (resent up to the mount's timeout=); the MDS's sums skip OSTs that do not answer it.
    STRIA_ASSIGN_OR_RETURN(std::vector<proto::OstStatfsReply> osts,
                           client_->OstStatfs(/*wait_all=*/true));
    const uint64_t bs = rep.bsize() ? rep.bsize() : 4096;
    auto blocks = [bs](uint64_t n, uint64_t ost_bs) {
      return static_cast<uint64_t>(static_cast<unsigned __int128>(n) * (ost_bs ? ost_bs : bs) / bs);
    };
    uint64_t b = 0, f = 0, a = 0;
    for (const proto::OstStatfsReply& o : osts) {
      b += blocks(o.blocks(), o.bsize());
      f += blocks(o.bfree(), o.bsize());
      a += blocks(o.bavail(), o.bsize());
    }
    rep.set_bsize(bs);
    rep.set_blocks(b);
    rep.set_bfree(f);
    rep.set_bavail(a);
  }
  std::memset(out, 0, sizeof(*out));
  out->f_bsize = rep.bsize() ? rep.bsize() : 4096;
  out->f_frsize = out->f_bsize;
  out->f_blocks = rep.blocks();
  out->f_bfree = rep.bfree();
  out->f_bavail = rep.bavail();
  out->f_files = rep.files();
  out->f_ffree = rep.ffree();
  out->f_favail = rep.ffree();
  out->f_namemax = rep.namelen() ? rep.namelen() : kMaxNameLen;
  return Status::Ok();
}

Result<std::string> StriaFs::GetLov(fuse_req_t req, uint64_t ino) {
  const proto::Credentials cred = Cred(req);
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply attr, md_.Getattr(cred, ino));
  if (S_ISREG(attr.attr().mode())) return PackLov(attr.layout(), /*with_objects=*/true);
  if (!S_ISDIR(attr.attr().mode())) return Status(Code::kNoData, "no layout");
  STRIA_ASSIGN_OR_RETURN(std::optional<proto::Layout> def, md_.GetDefaultLayout(cred, ino));
  if (!def) return Status(Code::kNoData, "the directory has no default layout");
  return PackLov(*def, /*with_objects=*/false);
}

Status StriaFs::SetLov(fuse_req_t req, uint64_t ino, std::string_view value) {
  STRIA_ASSIGN_OR_RETURN(proto::Layout layout, UnpackLov(value));
  const proto::Credentials cred = Cred(req);
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply attr, md_.Getattr(cred, ino));
  // A file's layout is fixed at create; like Lustre, restoring it (tar, rsync) is accepted.
  if (S_ISREG(attr.attr().mode())) return Status::Ok();
  if (!S_ISDIR(attr.attr().mode())) return Status(Code::kInval, "no layout here");
  return md_.SetDefaultLayout(cred, ino, layout);
}

Status StriaFs::DoSetxattr(fuse_req_t req, uint64_t ino, const char* name, const char* value,
                           size_t size, int flags) {
  if (name == kCapabilityXattr) return Status(Code::kNotSup, "file capabilities unsupported");
  if (const auto lctl = LctlXattrRest(ino, name)) {
    const std::string_view rest = *lctl;
    if (!rest.starts_with("set.")) return Status(Code::kNotSup, "use user.stria.lctl.set.NAME");
    return SetLocalParam(req, rest.substr(4), std::string_view(value, size));
  }
  LliteOp counted(&llite_, kLlSetxattr);
  STRIA_RETURN_IF_ERROR(CheckUserXattr(name));
  if (IsLovXattrName(name)) return SetLov(req, ino, std::string_view(value, size));
  Status st = md_.Setxattr(Cred(req), ino, name, std::string_view(value, size),
                      static_cast<uint32_t>(flags));
  dir_attrs_.Drop(ino);  // after the call: no racing reply brings the old ctime back
  return st;
}

Status StriaFs::DoGetxattr(fuse_req_t req, uint64_t ino, const char* name, size_t size,
                           std::string* value, size_t* full_size) {
  if (name == kCapabilityXattr) return Status(Code::kNoData, "no such attribute");
  if (const auto lctl = LctlXattrRest(ino, name)) {
    const std::string_view rest = *lctl;
    const bool list = rest.starts_with("list.");
    if (!list && !rest.starts_with("get.")) return Status(Code::kNoData, "no such attribute");
    std::string text = GetLocalParams(rest.substr(list ? 5 : 4), list);
    if (size == 0) {
      *full_size = text.size();
    } else if (text.size() > size) {
      return Status(Code::kRange, "attribute value larger than the buffer");
    } else {
      *value = std::move(text);
    }
    return Status::Ok();
  }
  LliteOp counted(&llite_, kLlGetxattr);
  STRIA_RETURN_IF_ERROR(CheckUserXattr(name));
  if (IsLovXattrName(name)) {
    STRIA_ASSIGN_OR_RETURN(std::string lov, GetLov(req, ino));
    if (size == 0) {
      *full_size = lov.size();
    } else if (lov.size() > size) {
      return Status(Code::kRange, "attribute value larger than the buffer");
    } else {
      *value = std::move(lov);
    }
    return Status::Ok();
  }
  STRIA_ASSIGN_OR_RETURN(proto::XattrReply rep, md_.Getxattr(Cred(req), ino, name,
                                                             static_cast<uint32_t>(size)));
  const size_t n = std::max<size_t>(rep.size(), rep.value().size());
  if (size == 0) {
    *full_size = n;
    return Status::Ok();
  }
  if (rep.value().size() > size || n > size) {
    return Status(Code::kRange, "attribute value larger than the buffer");
  }
  *value = std::move(*rep.mutable_value());
  return Status::Ok();
}

Status StriaFs::DoListxattr(fuse_req_t req, uint64_t ino, size_t size, std::string* names,
                            size_t* full_size) {
  LliteOp counted(&llite_, kLlListxattr);
  // nouser_xattr: the user.* names are left out, so the list is read whole and filtered.
  STRIA_ASSIGN_OR_RETURN(
      proto::XattrReply rep,
      md_.Listxattr(Cred(req), ino, options_.user_xattr ? static_cast<uint32_t>(size) : XATTR_LIST_MAX));
  if (!options_.user_xattr) {
    std::string kept;
    const std::string& all = rep.value();
    for (size_t pos = 0; pos < all.size();) {
      size_t end = all.find('\0', pos);
      if (end == std::string::npos) end = all.size();
      const std::string_view one(all.data() + pos, end - pos);
      if (!one.empty() && !one.starts_with("user.")) (kept += one) += '\0';
      pos = end + 1;
    }
    rep.set_value(std::move(kept));
    rep.set_size(static_cast<uint32_t>(rep.value().size()));
  }
  const size_t n = std::max<size_t>(rep.size(), rep.value().size());
  if (size == 0) {
    *full_size = n;
    return Status::Ok();
  }
  if (n > size) return Status(Code::kRange, "attribute list larger than the buffer");
  *names = std::move(*rep.mutable_value());
  return Status::Ok();
}

Status StriaFs::DoRemovexattr(fuse_req_t req, uint64_t ino, const char* name) {
  LliteOp counted(&llite_, kLlRemovexattr);
  if (name == kCapabilityXattr) return Status(Code::kNoData, "no such attribute");
  STRIA_RETURN_IF_ERROR(CheckUserXattr(name));
  Status st = md_.Removexattr(Cred(req), ino, name);
  dir_attrs_.Drop(ino);
  return st;
}

Status StriaFs::CheckUserXattr(std::string_view name) const {
  if (!options_.user_xattr && name.starts_with("user.")) {
    return Status(Code::kNotSup, "user.* extended attributes are off on this mount (nouser_xattr)");
  }
  return Status::Ok();
}

Status StriaFs::DoAccess(fuse_req_t req, uint64_t ino, int mask) {
  const proto::Credentials cred = Cred(req);
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply rep, md_.Getattr(cred, ino));
  if (mask == F_OK) return Status::Ok();
  const uint32_t mode = rep.attr().mode();
  if (cred.uid() == 0) {
    // root: everything but executing a file no one may execute.
    if ((mask & X_OK) && (mode & S_IFMT) != S_IFDIR && (mode & 0111) == 0) {
      return Status(Code::kAccess, "no execute permission");
    }
    return Status::Ok();
  }
  uint32_t bits;
  bool in_group = cred.gid() == rep.attr().gid();
  for (uint32_t g : cred.groups()) in_group |= g == rep.attr().gid();
  if (cred.uid() == rep.attr().uid()) {
    bits = (mode >> 6) & 7;
  } else if (in_group) {
    bits = (mode >> 3) & 7;
  } else {
    bits = mode & 7;
  }
  const uint32_t need = ((mask & R_OK) ? 4 : 0) | ((mask & W_OK) ? 2 : 0) | ((mask & X_OK) ? 1 : 0);
  if ((bits & need) != need) return Status(Code::kAccess, "permission denied");
  return Status::Ok();
}

}  // namespace stria::client::fuse
