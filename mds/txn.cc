#include "mds/txn.h"

#include <rocksdb/db.h>

#include <sys/stat.h>

#include "common/log.h"
#include "mds/dom.h"
#include "mds/mds_record.pb.h"
#include "mds/reply_journal.h"
#include "mds/schema.h"
#include "proto/layout_components.h"
#include "proto/layout_mirrors.h"

namespace stria::mds {

Txn::Txn(Namespace* ns)
    : ns_(ns),
      now_(Namespace::NowNs()),
      super_(ns->super_locked()),
      orig_super_(ns->super_locked()),
      rr_cursor_(ns->rr_cursor_locked()) {}

Result<InodeRecord*> Txn::Inode(uint64_t ino) {
  if (removed_.count(ino)) return Status(Code::kNoEnt, "inode " + std::to_string(ino) + " removed");
  auto it = inodes_.find(ino);
  if (it != inodes_.end()) return &it->second;
  if (const InodeRecord* dir = ns_->CachedDirLocked(ino)) {
    return &inodes_.emplace(ino, *dir).first->second;
  }
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns_->GetInode(ino));
  if (rec.is_dir()) ns_->CacheDirLocked(ino, rec);
  if (rec.is_reg() && rec.attr.nlink() == 0) orphans_.insert(ino);  // has a U key
  return &inodes_.emplace(ino, std::move(rec)).first->second;
}

Result<InodeRecord*> Txn::Dir(uint64_t ino) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, Inode(ino));
  if (!rec->is_dir()) return Status(Code::kNotDir, "inode " + std::to_string(ino) + " is not a directory");
  return rec;
}

InodeRecord* Txn::AddInode(uint64_t ino) {
  super_.inodes++;
  InodeRecord& rec = inodes_[ino];
  rec.attr.set_ino(ino);
  rec.attr.set_nlink(1);
  rec.attr.set_atime_ns(now_);
  rec.attr.set_mtime_ns(now_);
  rec.attr.set_ctime_ns(now_);
  rec.xattrs = InodeRecord::Xattrs::kNone;
  dirty_.insert(ino);
  return &rec;
}

InodeRecord* Txn::NewInode() { return AddInode(super_.next_ino++); }

Result<InodeRecord*> Txn::ReplayedInode(uint64_t ino) {
  if (ino < 2 || ino >= super_.next_ino) {
    return Status(Code::kInval, "replayed inode number " + std::to_string(ino) +
                                    " was never handed out");
  }
  Result<InodeRecord*> existing = Inode(ino);
  if (existing.ok()) {
    return Status(Code::kInval, "replayed inode number " + std::to_string(ino) + " is in use");
  }
  if (existing.status().code() != Code::kNoEnt) return existing.status();
  return AddInode(ino);
}

void Txn::QueueDestroy(const proto::Layout& layout) {
  const std::vector<const proto::StripeObject*> objects = AllObjects(layout);
  if (objects.empty()) return;
  proto::OstDestroyRequest q;
  for (const proto::StripeObject* o : objects) {
    proto::ObjectId* id = q.add_objects();
    id->set_ost_idx(o->ost_idx());
    id->set_object_id(o->object_id());
    id->set_group(o->group());
  }
  batch_.Put(DestroyKey(super_.destroy_seq++), q.SerializeAsString());
}

void Txn::RemoveInode(uint64_t ino) {
  auto it = inodes_.find(ino);
  if (it != inodes_.end() && it->second.is_reg()) QueueDestroy(it->second.layout);
  if (it != inodes_.end() && it->second.is_reg() && DomEnd(it->second.layout) > 0) {
    Status st = DomTruncateBlocks(ns_->db(), &batch_, ino, 0);
    if (!st.ok()) LOG_WARN("inode {}: Data-on-MDT blocks not removed: {}", ino, st.ToString());
  }
  batch_.Delete(InodeKey(ino));
  if (it == inodes_.end() || orphans_.count(ino)) batch_.Delete(OrphanKey(ino));
  if (it != inodes_.end() && it->second.is_reg() && HasStale(it->second.layout)) {
    batch_.Delete(MirrorStaleKey(ino));
  }
  // Point deletes of the inode's xattrs, not a DeleteRange: RocksDB fragments every range
  // tombstone in the memtable on each Get and iterator, so one per unlink made the MDS
  // slower with every file removed.
  if (it == inodes_.end() || it->second.xattrs != InodeRecord::Xattrs::kNone) {
    const std::string first = XattrKey(ino), end = XattrKey(ino + 1);
    std::unique_ptr<rocksdb::Iterator> x(ns_->db()->NewIterator(rocksdb::ReadOptions()));
    for (x->Seek(first); x->Valid() && x->key().compare(end) < 0; x->Next()) {
      batch_.Delete(x->key());
    }
  }
  if (super_.inodes > 0) super_.inodes--;
  dirty_.erase(ino);
  removed_.insert(ino);
  inodes_.erase(ino);
}

void Txn::DropLastLink(uint64_t ino) {
  if (!open_lock_.owns_lock()) open_lock_ = std::unique_lock(ns_->open_mutex());
  auto it = inodes_.find(ino);
  if (it != inodes_.end() && it->second.is_reg() && ns_->IsOpenLocked(ino)) {
    batch_.Put(OrphanKey(ino), "");
    ns_->NoteMayBeUnlinkedLocked(ino);
    dirty_.insert(ino);
    return;
  }
  RemoveInode(ino);
}

void Txn::PutDirent(uint64_t parent, std::string_view name, uint64_t ino,
                    proto::FileType type) {
  rec::Dirent d;
  d.set_ino(ino);
  d.set_type(type);
  batch_.Put(DirentKey(parent, name), d.SerializeAsString());
  changed_dirs_.insert(parent);
}

void Txn::DeleteDirent(uint64_t parent, std::string_view name) {
  batch_.Delete(DirentKey(parent, name));
  changed_dirs_.insert(parent);
}

std::map<uint32_t, OstState>& Txn::osts() {
  if (!osts_) osts_ = ns_->osts_locked();
  return *osts_;
}

void Txn::NoteChanges() {
  MdChanges* capture = ScopedChangeCapture::Active();
  if (capture == nullptr && !ns_->change_listener()) return;
  MdChanges changes;
  changes.dirs = changed_dirs_;
  changes.inos = dirty_;
  changes.inos.insert(removed_.begin(), removed_.end());
  if (capture != nullptr) {
    capture->Merge(changes);
  } else {
    ns_->change_listener()(std::move(changes));
  }
}

Status Txn::Commit(bool sync) {
  for (uint64_t ino : dirty_) {
    const InodeRecord& rec = inodes_.at(ino);
    batch_.Put(InodeKey(ino), rec.Encode());
    // A file with a stale mirror is on the resync list, stamped with its latest change.
    if (rec.is_reg() && HasStale(rec.layout)) batch_.Put(MirrorStaleKey(ino), EncodeBe64(now_));
  }
  // Ids past the reserved ranges: reserve the next range in this batch, which must then be
  // durable before the reply (DeferredSync::Require).
  bool reserved = false;
  if (super_.next_ino > super_.ino_limit) {
    super_.ino_limit = super_.next_ino + kIdReserve;
    batch_.Put(SuperKey("next_ino"), EncodeBe64(super_.ino_limit));
    reserved = true;
  }
  if (super_.inodes != orig_super_.inodes) {
    batch_.Put(SuperKey("inodes"), EncodeBe64(super_.inodes));
  }
  if (super_.config_gen != orig_super_.config_gen) {
    batch_.Put(SuperKey("config_gen"), EncodeBe64(super_.config_gen));
  }
  if (osts_) {
    for (auto& [idx, st] : *osts_) {
      const bool exhausted = st.next_object_id > st.object_id_limit;
      if (exhausted) {
        st.object_id_limit = st.next_object_id + kIdReserve;
        reserved = true;
      }
      if (!exhausted && !dirty_osts_.count(idx)) continue;  // ids within the reserved range
      rec::Ost r;
      st.info.SerializeToString(r.mutable_info());
      r.set_next_object_id(st.object_id_limit);
      batch_.Put(OstKey(idx), r.SerializeAsString());
    }
  }
  if (batch_.Count() != 0) {
    AppendReplyRecord(&batch_);
    if (reserved) {
      sync = true;
      if (DeferredSync* d = DeferredSync::Active(ns_)) d->Require();
    }
    STRIA_RETURN_IF_ERROR(ns_->Write(&batch_, sync));
    NoteChanges();
    // Written: the directory cache follows (a copy: callers may still read their records).
    for (uint64_t ino : removed_) ns_->ForgetDirLocked(ino);
    for (uint64_t ino : dirty_) {
      if (const InodeRecord& rec = inodes_.at(ino); rec.is_dir()) ns_->CacheDirLocked(ino, rec);
    }
  }
  // Even with nothing to write (object ids handed out inside their reserved range, as a
  // migration's new layout), the counters move on: an id handed out is never handed out again.
  ns_->super_locked() = super_;
  if (osts_) ns_->osts_locked() = std::move(*osts_);
  ns_->rr_cursor_locked() = rr_cursor_;
  return Status::Ok();
}

}  // namespace stria::mds
