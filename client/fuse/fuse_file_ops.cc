// StriaFs: open files — open, create, read, write, flush, fsync, release (see fuse_ops.h).
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "client/fuse/fuse_ops.h"
#include "client/fuse/fuse_util.h"
#include "client/jobid.h"
#include "common/layout.h"
#include "common/log.h"
#include "common/relatime.h"
#include "proto/layout_components.h"

namespace stria::client::fuse {

Status StriaFs::OpenHandle(fuse_req_t req, uint64_t ino, int flags,
                           const proto::EntryReply* created, fuse_file_info* fi,
                           const proto::OpenReply* opened) {
  const bool just_created = created != nullptr;
  const proto::Credentials cred = Cred(req);
  proto::OpenReply rep;
  bool held_before = false;  // a size report of ours may land after the MDS answered
  if (just_created) {
    // The create opened it too (OP_MDS_CREATE with open): no second round trip.
    *rep.mutable_attr() = created->attr();
    *rep.mutable_layout() = created->layout();
    rep.set_handle(created->handle());
    if (created->has_capa()) *rep.mutable_capa() = created->capa();
  } else if (opened != nullptr) {
    // The MDS opened it with the lookup (TakePreOpen: never while this mount held the size).
    rep = *opened;
  } else {
    const auto open_flags = static_cast<uint32_t>(flags & ~(O_CREAT | O_EXCL));
    std::shared_ptr<Inode> known = inodes_.Get(ino);
    held_before = known != nullptr && known->HoldsSize();
    STRIA_ASSIGN_OR_RETURN(rep, md_.Open(cred, ino, open_flags));
  }
  const uint64_t mds_handle = rep.handle();
  const proto::Layout& layout = rep.layout();
  const uint64_t mds_size = rep.attr().size();

  std::shared_ptr<Inode> inode = inodes_.Get(ino);
  if (!inode) inode = std::make_shared<Inode>(ino);  // raced with forget; keep it private
  auto fh = std::make_unique<FileHandle>();
  fh->inode = inode;
  fh->mds_handle = mds_handle;
  fh->flags = flags;
  fh->writable = (flags & O_ACCMODE) != O_RDONLY;
  fh->sync_writes = (flags & (O_SYNC | O_DSYNC)) != 0;
  fh->cred = cred;
  fh->capas = OpenCapas::FromReply(
      {cred, ino, mds_handle, static_cast<uint32_t>(flags & ~(O_CREAT | O_EXCL))},
      rep.has_capa() ? &rep.capa() : nullptr);
  if (fh->writable) {
    inode->writers.fetch_add(1);
    ChangingLocally(ino);
  }
  inode->ObserveMdsSize(mds_size, held_before);
  // Only then is a read worth an MDS update, sent at the first flush after a read so that
  // stat(2) after close(2) sees it.
  const proto::Attr& a = rep.attr();
  fh->relatime_due = RelatimeDue(a.atime_ns(), a.mtime_ns(), a.ctime_ns(), NowNs());
  inode->set_layout(layout);
  // Read-on-open (Data-on-MDT): the bytes came with the reply; reads are served from them.
  // Any other open replaces what an earlier one left, so no stale bytes outlive it.
  inode->set_open_data(rep.has_data() && !(flags & O_TRUNC)
                           ? std::make_shared<const std::string>(std::move(*rep.mutable_data()))
                           : nullptr);

  if ((flags & O_TRUNC) && fh->writable && !just_created) {
    proto::SetattrRequest sr;
    *sr.mutable_cred() = cred;
    sr.set_ino(ino);
    proto::AttrReply arep;
    if (Status tst = Truncate(req, ino, layout, 0, &sr, &arep, fh->capas.get()); !tst.ok()) {
      DoRelease(req, fh.release()).IgnoreError();
      return tst;
    }
  }
  // Close-to-open: the file may have changed elsewhere since this client last opened it.
  // Unchanged (same size and mtime at the MDS): keep the kernel's page cache. Changed: drop
  // it (keep_cache = 0) and invalidate the kernel's cached attributes, so reads see the
  // size the MDS just gave rather than one cached up to attr_timeout ago.
  const int64_t mtime = rep.attr().mtime_ns();
  const bool same_size = inode->open_size.exchange(mds_size) == mds_size;
  const bool same_mtime = inode->open_mtime_ns.exchange(mtime) == mtime;
  const bool unchanged = !just_created && !(flags & O_TRUNC) && same_size && same_mtime;
  // The kernel's attributes are stale only if they differ from the MDS's now; those a
  // lookup just handed it (the usual cold open) are not, and invalidating them would cost a
  // GETATTR round trip before the first read.
  const bool kernel_current =
      inode->kernel_size.load() == mds_size && inode->kernel_mtime_ns.load() == mtime;
  if (!unchanged && !just_created && !kernel_current && session_ != nullptr) {
    fuse_lowlevel_notify_inval_inode(session_, ino, -1, 0);  // attributes only
  }
  if (mds_session_ != nullptr && mds_handle != 0) {
    mds_session_->Opened(mds_handle, ino, fh->writable);
  }
  fi->fh = reinterpret_cast<uint64_t>(fh.release());
  fi->keep_cache = unchanged ? 1 : 0;
  fi->direct_io = 0;
  return Status::Ok();
}

namespace {

// Whether reading the file needs nothing an open's reply brings beyond attributes and
// layout: not its bytes (Data-on-MDT's read-on-open), nor its handle (a read that finds a
// mirror stale reports it naming the handle, client/mirror_io.h).
bool ReadableWithoutOpenReply(const proto::Layout& layout) {
  if (DomEnd(layout) > 0) return false;
  for (const proto::LayoutComponent& c : layout.components()) {
    if (MirrorIdOf(c.id()) != 0) return false;
  }
  return true;
}

// The mode bits grant `cred` reading, as the MDS decides it. Root: only where anyone may
// read, as the MDS may squash it to nobody (mds/squash.h).
bool ModeGrantsRead(const proto::Attr& a, const proto::Credentials& cred) {
  // (Squashed, root is nobody: the owner's or group's bits may be the ones that apply.)
  if (cred.uid() == 0)
    return (a.mode() & (S_IRUSR | S_IRGRP | S_IROTH)) == (S_IRUSR | S_IRGRP | S_IROTH);
  if (cred.uid() == a.uid()) return (a.mode() & S_IRUSR) != 0;
  bool in_group = cred.gid() == a.gid();
  for (uint32_t g : cred.groups()) in_group |= g == a.gid();
  return (a.mode() & (in_group ? S_IRGRP : S_IROTH)) != 0;
}

}  // namespace

bool StriaFs::OpenLocally(fuse_req_t req, uint64_t ino, int flags, fuse_file_info* fi) {
  if (options_.open_register_ms <= 0 || options_.capabilities || !Gathering()) return false;
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) return false;
  std::shared_ptr<Inode> inode = inodes_.Get(ino);
  // This mount's own writers change what the MDS has: the MDS answers those opens.
  if (!inode || inode->writers.load() > 0 || inode->HoldsSize()) return false;
  std::shared_ptr<const proto::Layout> layout = inode->layout();
  std::shared_ptr<const proto::Attr> attr = inode->attr();
  if (!layout || !attr || !S_ISREG(attr->mode()) || attr->nlink() == 0 ||
      !ReadableWithoutOpenReply(*layout)) {
    return false;
  }
  const proto::Credentials cred = Cred(req);
  if (!ModeGrantsRead(*attr, cred)) return false;  // the MDS says why
  auto fh = std::make_unique<FileHandle>();
  fh->inode = inode;
  fh->flags = flags;
  fh->cred = cred;
  fh->opened_locally = true;
  fh->capas = OpenCapas::FromReply(
      {cred, ino, /*handle=*/0, static_cast<uint32_t>(flags & ~(O_CREAT | O_EXCL))}, nullptr);
  fh->relatime_due = RelatimeDue(attr->atime_ns(), attr->mtime_ns(), attr->ctime_ns(), NowNs());
  // Registered in open_register_ms unless released before; a revocation of the lease
  // registers it at once. The lease must outlast that by far: what is registered late
  // (after the lease) could miss an unlink by another mount.
  const auto margin =
      std::chrono::milliseconds(options_.open_register_ms) + std::chrono::seconds(1);
  if (!leases_->WithAttrLease(ino, margin, [&] { local_opens_.Add(fh.get(), ino); })) {
    return false;
  }
  inode->set_open_data(nullptr);  // as any open: no older read-on-open bytes outlive it
  // Close-to-open needs nothing from the MDS here: under the lease nobody else changed the
  // file since the attributes the kernel holds. The page cache stays unless this mount saw
  // the file change since its last open.
  const int64_t mtime = attr->mtime_ns();
  const uint64_t size = inode->mds_size.load();
  const bool same_size = inode->open_size.exchange(size) == size;
  const bool same_mtime = inode->open_mtime_ns.exchange(mtime) == mtime;
  fi->fh = reinterpret_cast<uint64_t>(fh.release());
  fi->keep_cache = same_size && same_mtime ? 1 : 0;
  fi->direct_io = 0;
  return true;
}

void StriaFs::RegisterLocalOpen(FileHandle* fh) {
  const uint64_t ino = fh->inode->ino;
  auto rep = md_.Open(fh->cred, ino, static_cast<uint32_t>(fh->flags & ~(O_CREAT | O_EXCL)));
  if (!rep.ok()) {
    // The file went meanwhile (this mount lost its leases and missed the unlink), or the
    // MDS refuses what the mode bits seemed to grant: reads go on as they can.
    LOG_WARN("inode {}: an open made under the lease could not be registered: {}", ino,
             rep.status().ToString());
    return;
  }
  fh->mds_handle = rep->handle();
  if (mds_session_ != nullptr && fh->mds_handle != 0) {
    mds_session_->Opened(fh->mds_handle, ino, /*writer=*/false);
  }
}

void StriaFs::KeepPreOpen(uint64_t parent, const proto::Credentials& cred, proto::OpenReply opened,
                          const LeaseCache::Stamp& stamp, uint64_t changes_before) {
  SetPreOpen(MakePreOpen(parent, cred, std::move(opened)), stamp, changes_before);
}

std::shared_ptr<PreOpen> StriaFs::MakePreOpen(uint64_t parent, const proto::Credentials& cred,
                                              proto::OpenReply opened) {
  auto p = std::make_shared<PreOpen>();
  p->parent = parent;
  p->ino = opened.attr().ino();
  p->cred = cred;
  p->reply = std::move(opened);
  // A restarted MDS gets it back with this mount's other opens (client/session.h).
  if (mds_session_ != nullptr) mds_session_->Opened(p->reply.handle(), p->ino, /*writer=*/false);
  pre_opens_.Hold(p);  // closed unless taken in open_intent_ms
  return p;
}

void StriaFs::SetPreOpen(const std::shared_ptr<PreOpen>& p, const LeaseCache::Stamp& stamp,
                         uint64_t changes_before) {
  if (p->claimed.load()) return;  // closed unused already (PreOpens' sweep)
  std::shared_ptr<Inode> inode = inodes_.Get(p->ino);
  // Taken only under the attribute lease that came with it, for as long as the pre-open is
  // held (and its last sweep): another client's change (its write-open included) revokes
  // the lease first, and the revocation drops the pre-open (AttrLeasesRevoked), so an OPEN
  // never takes an open older than a change it should see (close-to-open). None is set
  // without that lease (another client writes the file, or a revocation came while the
  // lookup was in flight), nor where this mount changed the file meanwhile or holds its size
  // (ChangingLocally: its own changes revoke nothing here).
  const auto margin = std::chrono::milliseconds(options_.open_intent_ms + 100);
  bool set = false;
  if (inode && !inode->HoldsSize() && leases_ != nullptr) {
    leases_->WithAttrLease(
        p->ino, margin,
        [&] {
          if (local_changes_.ChangedSince(changes_before, p->ino)) return;
          inode->set_pre_open(p);
          set = true;
        },
        &stamp);
  }
  if (!set) pre_opens_.Drop(*p);
  // A change that began as it was set: ChangingLocally's drop, or this one, sees the other.
  if (set && local_changes_.ChangedSince(changes_before, p->ino)) DropPreOpensOf({p->ino});
}

void StriaFs::ChangingLocally(uint64_t ino) {
  local_changes_.Note(ino);
  DropPreOpensOf({ino});
}

void StriaFs::AttrLeasesRevoked(const std::vector<uint64_t>& inos) {
  local_opens_.RegisterInodes(inos);
  DropPreOpensOf(inos);
  ahead_.Clear();
}

void StriaFs::DropPreOpensOf(const std::vector<uint64_t>& inos) {
  for (uint64_t ino : inos) {
    std::shared_ptr<Inode> inode = inodes_.Get(ino);
    std::shared_ptr<PreOpen> p = inode ? inode->TakePreOpen() : nullptr;
    if (p) pre_opens_.Drop(*p);
  }
}

namespace {

bool SameUser(const proto::Credentials& a, const proto::Credentials& b) {
  return a.uid() == b.uid() && a.gid() == b.gid() &&
         std::equal(a.groups().begin(), a.groups().end(), b.groups().begin(), b.groups().end());
}

}  // namespace

std::shared_ptr<PreOpen> StriaFs::TakePreOpen(fuse_req_t req, uint64_t ino, int flags) {
  std::shared_ptr<Inode> inode = inodes_.Get(ino);
  if (!inode) return nullptr;
  const bool read_only = (flags & O_ACCMODE) == O_RDONLY && !(flags & O_TRUNC);
  std::shared_ptr<PreOpen> p = inode->TakePreOpen();
  if (!p) {
    const uint64_t dir = inode->looked_up_in.exchange(0);
    if (dir != 0 && read_only) pre_opens_.OpenedAfterLookup(dir);
    return nullptr;
  }
  // The MDS checked read access for the lookup's user: another user, or another access,
  // asks for itself. So does an open of a file this mount started writing since.
  if (!read_only || !SameUser(p->cred, Cred(req)) || inode->HoldsSize()) {
    pre_opens_.Drop(*p);
    return nullptr;
  }
  return pre_opens_.Take(*p) ? p : nullptr;  // null: closed unused meanwhile
}

std::vector<Result<AheadEntry>> StriaFs::FetchAhead(const Statahead::Job& job) {
  AheadEntry base;
  base.stamp = LeaseBegin();
  base.changes_before = local_changes_.Now();
  base.cred = job.cred;
  auto got = md_.LookupMany(job.cred, job.dir, job.names, job.open);
  if (!got.ok()) return std::vector<Result<AheadEntry>>(job.names.size(), got.status());
  std::vector<Result<AheadEntry>> out;
  out.reserve(got->size());
  for (Result<proto::EntryReply>& r : *got) {
    if (!r.ok()) {
      out.push_back(r.status());
      continue;
    }
    AheadEntry a = base;
    a.rep = std::move(*r);
    if (a.rep.has_open()) {
      a.pre_open = MakePreOpen(job.dir, job.cred, std::move(*a.rep.mutable_open()));
      a.rep.clear_open();
    }
    if (a.rep.entry_lease_ms() == 0 || a.rep.attr_lease_ms() == 0) {
      // Without the leases nothing tells this mount of a change before it uses the reply.
      if (a.pre_open) pre_opens_.Drop(*a.pre_open);
      out.push_back(Status(Code::kAgain, "no lease"));
      continue;
    }
    out.push_back(std::move(a));
  }
  return out;
}

bool StriaFs::UseAhead(AheadEntry& a, uint64_t parent, std::string_view name,
                       const proto::Credentials& cred, fuse_entry_param* e) {
  const uint64_t ino = a.rep.attr().ino();
  // As a reply that just came: under leases no revocation has ended since its request
  // began, for the user the MDS checked, and of a file this mount did not change since.
  if (leases_ == nullptr || !leases_->Current(a.stamp, a.rep.entry_lease_ms()) ||
      !leases_->Current(a.stamp, a.rep.attr_lease_ms()) || !SameUser(a.cred, cred) ||
      local_changes_.ChangedSince(a.changes_before, ino)) {
    if (a.pre_open) pre_opens_.Drop(*a.pre_open);
    ahead_.Unused(parent);
    return false;
  }
  FillEntry(a.rep, parent, name, a.stamp, e);
  ahead_.Used(parent);
  if (a.pre_open) {
    SetPreOpen(a.pre_open, a.stamp, a.changes_before);
  } else if (S_ISREG(a.rep.attr().mode())) {
    if (auto inode = inodes_.Get(ino)) inode->looked_up_in.store(parent);
  }
  return true;
}

void StriaFs::ClosePreOpen(const PreOpen& p) {
  const uint64_t handle = p.reply.handle();
  if (mds_session_ != nullptr) mds_session_->Closed(handle);
  if (options_.close_gather_ms > 0) {
    proto::CloseRequest c;
    *c.mutable_cred() = p.cred;
    c.set_ino(p.ino);
    c.set_handle(handle);
    closes_.Add(std::move(c));
    return;
  }
  Metadata::CloseArgs ca;
  ca.ino = p.ino;
  ca.handle = handle;
  if (auto r = md_.Close(p.cred, ca); !r.ok()) {
    LOG_WARN("inode {}: closing the open made with its lookup (handle {}): {}", p.ino, handle,
             r.status().ToString());
  }
}

Status StriaFs::DoOpen(fuse_req_t req, uint64_t ino, fuse_file_info* fi) {
  LliteOp counted(&llite_, kLlOpen);
  if (OpenLocally(req, ino, fi->flags, fi)) return Status::Ok();
  if (std::shared_ptr<PreOpen> p = TakePreOpen(req, ino, fi->flags)) {
    return OpenHandle(req, ino, fi->flags, /*created=*/nullptr, fi, &p->reply);
  }
  return OpenHandle(req, ino, fi->flags, /*created=*/nullptr, fi);
}

Status StriaFs::DoCreate(fuse_req_t req, uint64_t parent, const char* name, uint32_t mode,
                         fuse_file_info* fi, fuse_entry_param* e) {
  LliteOp counted(&llite_, kLlOpen);
  proto::EntryReply created;
  Status st = DoCreateNode(req, parent, name, S_IFREG | (mode & 07777), 0, nullptr, e, &created);
  if (st.code() == Code::kExist && !(fi->flags & O_EXCL)) {
    // Another client created it between the kernel's lookup and ours: open it instead.
    st = DoLookup(req, parent, name, e);
    if (st.ok() && !S_ISREG(e->attr.st_mode)) {
      inodes_.Forget(e->ino, 1);
      return Status(S_ISDIR(e->attr.st_mode) ? Code::kIsDir : Code::kExist, "not a file");
    }
    STRIA_RETURN_IF_ERROR(st);
    st = OpenHandle(req, e->ino, fi->flags, /*created=*/nullptr, fi);
  } else {
    STRIA_RETURN_IF_ERROR(st);
    st = OpenHandle(req, e->ino, fi->flags, &created, fi);
  }
  if (!st.ok()) inodes_.Forget(e->ino, 1);  // the entry is not handed to the kernel
  return st;
}

Result<std::shared_ptr<const proto::Layout>> StriaFs::WriteLayout(FileHandle* fh,
                                                                  uint64_t offset,
                                                                  uint64_t end) {
  std::shared_ptr<const proto::Layout> layout = fh->inode->layout();
  if (!layout) return Status(Code::kIO, "file has no stripe objects");
  STRIA_ASSIGN_OR_RETURN(
      std::optional<proto::Layout> newer,
      md_.LayoutForWrite(fh->cred, fh->inode->ino, fh->mds_handle, *layout, offset, end));
  if (!newer) return layout;
  layout = fh->inode->set_layout(*newer);
  if (!layout || !RangeInstantiated(*layout, offset, end)) {
    return Status(Code::kIO, "the MDS did not instantiate the layout for the write");
  }
  return layout;
}

Result<std::shared_ptr<const proto::Layout>> StriaFs::ReadLayout(FileHandle* fh,
                                                                 uint64_t offset,
                                                                 uint64_t end) {
  std::shared_ptr<const proto::Layout> layout = fh->inode->layout();
  if (!ReadNeedsNewerLayout(layout.get(), offset, end)) return layout;
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply rep, md_.Getattr(fh->cred, fh->inode->ino));
  return fh->inode->set_layout(rep.layout());
}

Result<size_t> StriaFs::DoRead(FileHandle* fh, uint64_t offset, std::span<uint8_t> buf) {
  LliteOp counted(&llite_, kLlRead);
  ScopedJobId job(fh->cred.jobid());
  Result<size_t> n = ReadData(fh, offset, buf);
  if (n.ok()) llite_.Add(kLlReadBytes, *n);
  return n;
}

Result<size_t> StriaFs::ReadData(FileHandle* fh, uint64_t offset, std::span<uint8_t> buf) {
  // Read what this client wrote. A write's failure is not the read's: it stays for the
  // file's next write, fsync or close.
  SettleWrites(fh->inode.get(), fh->inode->write_behind.Drain()).IgnoreError();
  fh->atime_ns.store(NowNs());  // reported at close (relatime, mds/ops/open_close.cc)
  const uint64_t size = fh->inode->known_size.load();
  if (offset >= size) return size_t{0};
  if (std::shared_ptr<const std::string> data = fh->inode->open_data();
      data != nullptr && data->size() == size) {
    const size_t n = std::min<uint64_t>(buf.size(), size - offset);
    std::memcpy(buf.data(), data->data() + offset, n);
    return n;
  }
  STRIA_ASSIGN_OR_RETURN(std::shared_ptr<const proto::Layout> layout,
                         ReadLayout(fh, offset, std::min<uint64_t>(size, offset + buf.size())));
  if (!layout) return size_t{0};
  bool missing = false;
  STRIA_ASSIGN_OR_RETURN(size_t n,
                         client_->Read(*layout, size, offset, buf, &missing, fh->capas.get()));
  if (!missing) return n;
  // An object was missing: a hole, or the layout changed under this open file (lfs migrate
  // swapped it and the old objects are being destroyed). A newer layout means read again.
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply rep, md_.Getattr(fh->cred, fh->inode->ino));
  std::shared_ptr<const proto::Layout> now = fh->inode->set_layout(rep.layout());
  if (now == nullptr || now->generation() == layout->generation()) return n;
  return client_->Read(*now, size, offset, buf, nullptr, fh->capas.get());
}

Status StriaFs::DoWrite(FileHandle* fh, uint64_t offset, std::span<const uint8_t> data,
                        std::shared_ptr<const lnet::Buffer> owned) {
  if (data.empty()) return Status::Ok();
  LliteOp counted(&llite_, kLlWrite);
  fh->writes.fetch_add(1);  // before its dirty flag is set (DoFlush)
  ScopedJobId job(fh->cred.jobid());
  llite_.Add(kLlWriteBytes, data.size());
  // Only a spliced write (WriteBuf) comes with a buffer of its own.
  if (owned != nullptr) llite_.Add(kLlSplicedWriteBytes, data.size());
  // osc.*.max_dirty_mb: the write-behind bytes in flight per file; 0 writes synchronously.
  const uint64_t max_dirty = static_cast<uint64_t>(client_->tunables().Get("max_dirty_mb")) << 20;
  if (offset > kMaxFileSize || data.size() > kMaxFileSize - offset) {
    return Status(Code::kFBig, "write past the maximum file size");
  }
  STRIA_ASSIGN_OR_RETURN(std::shared_ptr<const proto::Layout> layout,
                         WriteLayout(fh, offset, offset + data.size()));
  fh->inode->DropOpenData();
  if (fh->sync_writes) {
    STRIA_RETURN_IF_ERROR(client_->Write(*layout, offset, data, /*sync=*/true, fh->capas.get()));
    fh->inode->NoteAcked(offset + data.size());
  } else if ((max_dirty == 0 || (offset == 0 && !Gathering())) && fh->inode->write_behind.Idle()) {
    // Without gathered closes a file's first bytes (all of a small file's) go out from this
    // thread: the application waits for them at close anyway, and handing them to a pool
    // thread costs two wakeups. Its error, if any, comes back from this write(2).
    STRIA_RETURN_IF_ERROR(client_->Write(*layout, offset, data, /*sync=*/false, fh->capas.get()));
    fh->inode->NoteAcked(offset + data.size());
  } else {
    // The data is written in the background (copied first unless it is in a buffer of its
    // own already); flush, fsync, close, reads and truncates wait for it (Drain) and report
    // its errors.
    Client* client = client_;
    WriteBehind::WriteFn write =
        [client, layout = std::move(layout), inode = fh->inode, jobid = fh->cred.jobid(),
         capas = fh->capas](uint64_t off, std::span<const uint8_t> bytes) {
          ScopedJobId job(jobid);
          Status st = client->Write(*layout, off, bytes, /*sync=*/false, capas.get());
          if (st.ok()) {
            inode->NoteAcked(off + bytes.size());
          } else {
            inode->write_failed.store(true);
          }
          return st;
        };
    const uint64_t max_bytes = std::max<uint64_t>(max_dirty, data.size());
    STRIA_RETURN_IF_ERROR(
        owned ? fh->inode->write_behind.Submit(&write_pool_, offset, std::move(owned),
                                               std::move(write), max_bytes)
              : fh->inode->write_behind.Submit(&write_pool_, offset, data, std::move(write),
                                               max_bytes));
  }
  fh->inode->NoteWrite(offset + data.size());
  fh->mtime_ns.store(NowNs());
  fh->inode->write_time_ns.store(fh->mtime_ns.load());
  fh->wrote.store(true);
  fh->dirty.store(true);
  // O_SYNC/O_DSYNC: the data is durable on the OSTs (sync write); make the size durable too.
  if (fh->sync_writes) return ReportSize(nullptr, fh, /*close=*/false, /*sync=*/true);
  return Status::Ok();
}

bool StriaFs::Gathering() const {
  return options_.close_gather_ms > 0 && leases_ != nullptr && leases_->enabled();
}

Status StriaFs::ReportSize(fuse_req_t req, FileHandle* fh, bool close, bool sync) {
  // Sizes are reported only for data that reached the OSTs.
  return ReportDrained(req, fh, close, sync, fh->inode->DrainWrites());
}

Status StriaFs::ReportDrained(fuse_req_t req, FileHandle* fh, bool close, bool sync,
                              Status drained) {
  if (!drained.ok() && !close) return drained;
  std::lock_guard lock(fh->report_mu);
  const bool dirty = fh->dirty.exchange(false);
  const int64_t read_ns = fh->atime_ns.load();
  // The atime of a read goes with the release (which the application does not wait for)
  // or an fsync, not with each flush: a cold read's close(2) then costs no MDS request.
  const bool atime_pending = read_ns > 0 && fh->relatime_due && !fh->atime_sent.load();
  if (atime_pending && !close && !sync) fh->inode->NoteUnreportedAtime(read_ns);
  const bool atime_due = (close || sync) && atime_pending && !fh->atime_sent.exchange(true);
  // fsync sends even with nothing to report: the MDS then syncs its WAL (the create of this
  // file may be answered and not yet durable).
  if (!close && !dirty && !atime_due && !sync) return Status::Ok();
  // No handle (an open the MDS never heard of, local_opens.h): a close only for an atime.
  if (close && !dirty && fh->mds_handle == 0 && !atime_due) return Status::Ok();
  const proto::Credentials cred = req != nullptr ? Cred(req) : fh->cred;
  const bool gathering = Gathering();
  if (!close && !sync && dirty && gathering) {
    // The size at close(2) (a flush) goes with the gathered closes, usually in the same
    // request as this handle's release: the application does not wait for an MDS round
    // trip. Until the MDS has it, this client shows the size it knows (Inode::HoldsSize),
    // and another client's request about the file makes the MDS ask for it first
    // (mds_service.cc, SettleWriters), as it does where a writer refuses an operation.
    proto::CloseRequest c;
    *c.mutable_cred() = cred;
    c.set_ino(fh->inode->ino);
    c.set_wrote(true);
    c.set_size(fh->inode->acked_end.load());  // only bytes the OSTs acknowledged
    c.set_mtime_ns(fh->mtime_ns.load());
    fh->inode->unreported_sizes.fetch_add(1);
    closes_.Add(std::move(c));
    return Status::Ok();
  }
  // A close that reports no write only drops the handle, and at most sets the atime of a
  // read (relatime), or reports the size of writes that its flush left to it (DoFlush) in
  // the same request: it goes with others a few milliseconds later (close_batcher.h). Until
  // then GETATTR shows the read's atime from unreported_atime_ns, which the batch's reply
  // clears; a setattr of this inode sends the gathered closes first, so that an atime set
  // after the read (touch -a, tar and rsync restoring atimes) is not overwritten by it. A
  // handle open for writing only while this mount's leases work: an MDS that finds it still
  // open where a writer refuses an operation asks the mount, through the lease callback, to
  // send its gathered closes first.
  if (close && options_.close_gather_ms > 0 && (dirty ? gathering : !fh->writable || gathering)) {
    proto::CloseRequest c;
    *c.mutable_cred() = cred;
    c.set_ino(fh->inode->ino);
    c.set_handle(fh->mds_handle);
    if (dirty) {
      c.set_wrote(true);
      c.set_size(fh->inode->acked_end.load());  // only bytes the OSTs acknowledged
      c.set_mtime_ns(fh->mtime_ns.load());
      fh->inode->unreported_sizes.fetch_add(1);
    }
    if (atime_due) {
      // Shown until the batch is answered (a read through mmap after the last flush has
      // not been noted yet).
      fh->inode->NoteUnreportedAtime(read_ns);
      c.set_atime_ns(read_ns);
    }
    closes_.Add(std::move(c));
    if (mds_session_ != nullptr) mds_session_->Closed(fh->mds_handle);
    return Status::Ok();
  }
  Metadata::CloseArgs ca;
  ca.ino = fh->inode->ino;
  ca.handle = close ? fh->mds_handle : 0;
  // wrote: new writes since the last report (the MDS then takes max(size) and the mtime).
  ca.wrote = dirty;
  ca.sync = sync;
  if (atime_due) ca.atime_ns = read_ns;
  ca.size = fh->inode->acked_end.load();  // only bytes the OSTs acknowledged
  ca.mtime_ns = fh->mtime_ns.load();
  Result<proto::AttrReply> rep = md_.Close(cred, ca);
  Status st = rep.status();
  if (close && mds_session_ != nullptr && fh->mds_handle != 0) {
    mds_session_->Closed(fh->mds_handle);
  }
  if (!st.ok()) {
    if (dirty) fh->dirty.store(true);  // report again at the next chance
    return st;
  }
  fh->inode->ObserveMdsSize(rep->attr().size());
  if (atime_due) {  // the MDS has it now
    int64_t cur = read_ns;
    fh->inode->unreported_atime_ns.compare_exchange_strong(cur, 0);
  }
  return Status::Ok();
}

// close(2) does not wait for the file's writes to reach the OSTs (nor does Lustre's, whose
// dirty pages stay in the client's cache): where size reports are gathered anyway, the
// report goes once they have, and a small file's create no longer waits behind the previous
// file's write. Nothing is promised durable before fsync either way. A write that fails
// after close(2) returned is logged, and shows in the size (which claims only what the OSTs
// acknowledged); fsync reports such failures, as Lustre's does. Others see the file
// complete as before: an MDS that answers another client about a file open here asks this
// mount for its closes first (FlushCloses), which waits for these.
Status StriaFs::DoFlush(fuse_req_t req, FileHandle* fh) {
  const uint64_t writes = fh->writes.load();
  auto report = [this, fh, writes](Status drained, uint64_t ticket) {
    if (Status st = SettleWrites(fh->inode.get(), std::move(drained)); !st.ok()) {
      LOG_WARN("writes of inode {} before a close(2): {}", fh->inode->ino, st.ToString());
      return;
    }
    // The release queued since reports the size with its close, in one request; it took
    // this flush's ticket, so FlushCloses waits for it as it would for this report.
    if (fh->released.load() && fh->flush_ticket.load() == ticket) return;
    // Gathered: a failure is the batcher's to log.
    ReportDrained(nullptr, fh, /*close=*/false, /*sync=*/false, Status::Ok()).IgnoreError();
    // A write through the handle since the flush (a dup'ed descriptor) is still to report:
    // the report above may have cleared the flag it set.
    if (fh->writes.load() != writes) fh->dirty.store(true);
  };
  if (fh->dirty.load() && fh->inode->write_behind.InFlightBytes() <= kMaxDeferredBytes &&
      DeferUntilWritten(fh, std::move(report), /*release=*/false)) {
    return Status::Ok();
  }
  return ReportSize(req, fh, /*close=*/false, /*sync=*/false);
}

void StriaFs::ForgetKernelSize(uint64_t ino) {
  if (session_ != nullptr) fuse_lowlevel_notify_inval_inode(session_, ino, -1, 0);
}

bool StriaFs::DeferUntilWritten(FileHandle* fh, std::function<void(Status, uint64_t)> then,
                                bool release) {
  if (!release && !Gathering()) return false;
  uint64_t ticket;
  {
    std::lock_guard lock(deferred_mu_);
    if (!release && deferred_.size() >= kMaxDeferred) return false;
    // A release takes its flush's ticket (when one was deferred): a FlushCloses that waits
    // for the flush's size report then waits for the release that carries it instead.
    const uint64_t flush_ticket = release ? fh->flush_ticket.load() : 0;
    ticket = flush_ticket != 0 ? flush_ticket : ++deferred_tickets_;
    deferred_.insert(ticket);
  }
  if (release) {
    fh->released.store(true);  // after the ticket: see DoFlush
  } else {
    fh->flush_ticket.store(ticket);
  }
  std::shared_ptr<Inode> inode = fh->inode;
  Hold(*inode);
  auto done = [this, inode, ticket] {
    Unhold(inode);
    std::lock_guard lock(deferred_mu_);
    deferred_.erase(deferred_.find(ticket));
    deferred_cv_.notify_all();
  };
  std::function<void(Status, uint64_t)> later;
  if (release) later = then;  // kept for the case below
  const bool queued =
      inode->write_behind.AfterWrites([then = std::move(then), done, ticket](Status drained) {
        then(std::move(drained), ticket);
        done();
      });
  if (!queued && release) {
    // No write in flight: the release finishes here, with its ticket held until its close
    // is gathered. Its flush's report may have left the size to it (DoFlush: released
    // already), and a FlushCloses that found no ticket and no close pending in between
    // would let the MDS answer another client with the size from before.
    later(inode->write_behind.Drain(), ticket);
    done();
    return true;
  }
  if (!queued) done();
  return queued;
}

void StriaFs::Hold(Inode& inode) { inode.deferred_reports.fetch_add(1); }

void StriaFs::Unhold(const std::shared_ptr<Inode>& inode) {
  {
    std::lock_guard lock(deferred_mu_);
    inode->deferred_reports.fetch_sub(1);
    deferred_cv_.notify_all();
  }
  inodes_.DropIfForgotten(inode->ino);
}

Status StriaFs::SettleWrites(Inode* inode, Status drained) {
  drained = inode->WritesDrained(std::move(drained));
  if (!drained.ok()) {
    // Not reported to the application: its next write, fsync or close of the file is.
    inode->write_behind.KeepError(drained);
    ForgetKernelSize(inode->ino);
  }
  return drained;
}

void StriaFs::FlushCloses() {
  {
    // The ones deferred before this call, not those a busy writer adds meanwhile.
    std::unique_lock lock(deferred_mu_);
    const uint64_t upto = deferred_tickets_;
    deferred_cv_.wait(lock, [&] { return deferred_.empty() || *deferred_.begin() > upto; });
  }
  closes_.Flush();
}

void StriaFs::FlushClosesOf(Inode& inode) {
  {
    // Every deferred report and close of the file holds it, and so does a release between
    // its start and its gathered close. Their writes end, in success or failure, within
    // the mount's timeouts.
    std::unique_lock lock(deferred_mu_);
    deferred_cv_.wait(lock, [&] { return inode.deferred_reports.load() == 0; });
  }
  closes_.Flush();
}

Status StriaFs::DoFsync(fuse_req_t req, FileHandle* fh, bool datasync) {
  LliteOp counted(&llite_, kLlFsync);
  if (Status drained = fh->inode->DrainWrites(); !drained.ok()) {
    ForgetKernelSize(fh->inode->ino);
    return drained;
  }
  if (auto layout = fh->inode->layout()) {
    STRIA_RETURN_IF_ERROR(client_->SyncObjects(*layout, fh->capas.get()));
  }
  // The size must be durable too: report what this client wrote (the MDS syncs its WAL).
  if (fh->writable && fh->inode->written_end.load() > 0) fh->dirty.store(true);
  return ReportSize(req, fh, /*close=*/false, /*sync=*/true);
}

Status StriaFs::DoRelease(fuse_req_t req, FileHandle* fh) {
  LliteOp counted(&llite_, kLlClose);
  // As a flush: the close goes once the writes have (the kernel does not wait for a
  // release, but this thread would serve the next request). Not bounded: it keeps no bytes
  // in memory that the writes in flight do not, and it must run after its flush's
  // callback, which uses the handle. Held until the close is gathered or sent, so that a
  // setattr meanwhile sends it first (FlushClosesOf).
  Hold(*fh->inode);
  auto finish = [this, fh](Status drained, uint64_t /*ticket*/) {
    FinishRelease(nullptr, fh, SettleWrites(fh->inode.get(), std::move(drained)))
        .IgnoreError();  // logged there
  };
  DeferUntilWritten(fh, std::move(finish), /*release=*/true);  // now, when nothing is in flight
  return Status::Ok();  // a failure is logged (FinishRelease); the kernel ignores it anyway
}

Status StriaFs::FinishRelease(fuse_req_t req, FileHandle* fh, Status written) {
  std::unique_ptr<FileHandle> owned(fh);
  // Not registered yet: it never will be (mds_handle stays 0). Being registered: wait.
  if (fh->opened_locally) local_opens_.Withdraw(fh);
  Status st = ReportDrained(req, fh, /*close=*/true, /*sync=*/false, Status::Ok());
  if (st.ok()) st = written;
  if (fh->writable) {
    fh->inode->writers.fetch_sub(1);
    ChangingLocally(fh->inode->ino);
  }
  if (!st.ok()) {
    LOG_WARN("close of inode {} (handle {}): {}", fh->inode->ino, fh->mds_handle,
             st.ToString());
  }
  Unhold(fh->inode);
  return st;
}

}  // namespace stria::client::fuse
