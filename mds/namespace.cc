#include "mds/namespace.h"

#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <utility>
#include <vector>

#include "common/log.h"
#include "mds/mds_record.pb.h"
#include "mds/reply_journal.h"
#include "mds/schema.h"
#include "mds/txn.h"
#include "proto/layout_components.h"

namespace stria::mds {
namespace {

// Where the memtable remembers an insert position: one hint per key prefix of 8 bytes (a
// type byte and the high 7 bytes of an inode number, or of a client's id for reply records;
// mds/schema.h). An operation writes a few keys far apart (its inode, its entry, its parent,
// the counters, its reply record), each next to the one the previous operation wrote under
// the same prefix: with a hint each insert starts from there, not from the skiplist's top.
// The start of a range deletion is left out: RocksDB until April 2024 (Debian 12 has 7.8)
// keeps one hint map for the point keys and the range tombstones, whose skiplists differ,
// and a hint from one used in the other fails an assertion (facebook/rocksdb#12558). The
// reply journal's trim is the only range deletion (IsTrimStartKey).
class InsertHintPrefix : public rocksdb::SliceTransform {
 public:
  static constexpr size_t kLen = 8;
  const char* Name() const override { return "stria.InsertHintPrefix"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return {key.data(), std::min(key.size(), kLen)};
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    return !IsTrimStartKey(std::string_view(key.data(), key.size()));
  }
};

}  // namespace

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  return Status(Code::kDbError, std::string(what) + ": " + s.ToString());
}

bool InodeRecord::is_dir() const { return S_ISDIR(attr.mode()); }
bool InodeRecord::is_reg() const { return S_ISREG(attr.mode()); }
bool InodeRecord::is_lnk() const { return S_ISLNK(attr.mode()); }

std::string InodeRecord::Encode() const {
  rec::Inode r;
  attr.SerializeToString(r.mutable_attr());
  if (layout.objects_size() > 0 || layout.stripe_count() != 0 || IsComposite(layout)) {
    layout.SerializeToString(r.mutable_layout());
  }
  r.set_has_default_layout(has_default_layout);
  if (has_default_layout) default_layout.SerializeToString(r.mutable_default_layout());
  r.set_symlink_target(symlink_target);
  r.set_parent(parent);
  for (const auto& [dir, name] : links) {
    rec::Link* l = r.add_links();
    l->set_parent(dir);
    l->set_name(name);
  }
  r.set_xattrs(static_cast<uint32_t>(xattrs));
  return r.SerializeAsString();
}

Result<InodeRecord> InodeRecord::Decode(std::string_view bytes) {
  rec::Inode r;
  InodeRecord out;
  if (!r.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
      !out.attr.ParseFromString(r.attr()) || !out.layout.ParseFromString(r.layout()) ||
      !out.default_layout.ParseFromString(r.default_layout())) {
    return Status(Code::kCorrupt, "inode record does not decode");
  }
  out.has_default_layout = r.has_default_layout();
  out.symlink_target = r.symlink_target();
  out.parent = r.parent();
  out.links.reserve(static_cast<size_t>(r.links_size()));
  for (const rec::Link& l : r.links()) out.links.emplace_back(l.parent(), l.name());
  // A value this build does not know means nothing certain: look for X keys.
  if (r.xattrs() <= static_cast<uint32_t>(Xattrs::kSome)) {
    out.xattrs = static_cast<Xattrs>(r.xattrs());
  }
  return out;
}

void InodeRecord::AddLink(uint64_t dir, std::string_view name) {
  if (links.size() < kMaxLinkRecords) links.emplace_back(dir, std::string(name));
}

void InodeRecord::RemoveLink(uint64_t dir, std::string_view name) {
  for (auto it = links.begin(); it != links.end(); ++it) {
    if (it->first == dir && it->second == name) {
      links.erase(it);
      return;
    }
  }
}

const InodeRecord* Namespace::CachedDirLocked(uint64_t ino) const {
  auto it = dir_cache_.find(ino);
  return it == dir_cache_.end() ? nullptr : &it->second;
}

void Namespace::CacheDirLocked(uint64_t ino, InodeRecord rec) {
  if (dir_cache_.size() >= kDirCacheEntries && !dir_cache_.count(ino)) dir_cache_.clear();
  dir_cache_.insert_or_assign(ino, std::move(rec));
}

int64_t Namespace::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::unique_ptr<Namespace>> Namespace::Open(const NamespaceOptions& options,
                                                   OstGateway* gateway) {
  if (options.fsname.empty() || options.fsname.size() > 8 * 4) {
    return Status(Code::kInval, "fsname must be 1 to 32 characters");
  }
  std::unique_ptr<Namespace> ns(new Namespace());
  ns->gateway_ = gateway;
  // "Empty" means no files at all: a directory holding files but no RocksDB CURRENT is a
  // damaged MDS (or something else), and RocksDB would silently start a new database over
  // it, so it is refused rather than formatted.
  {
    std::error_code ec;
    const bool has_files = std::filesystem::is_directory(options.data_dir, ec) &&
                           !std::filesystem::is_empty(options.data_dir, ec);
    if (has_files && !std::filesystem::exists(options.data_dir + "/CURRENT", ec)) {
      return Status(Code::kCorrupt, options.data_dir +
                                        " is not empty but has no RocksDB CURRENT file: a "
                                        "damaged MDS directory, or not one; refusing to format it");
    }
  }
  rocksdb::Options db_options;
  db_options.create_if_missing = options.format_if_empty;
  db_options.max_open_files = 512;
  // Bloom filters over whole keys, in the memtable and in every table: a create's check
  // that its name is free is a point read of a key that is absent, which without them
  // searches the memtable's skiplist and reads an index and a data block of every L0 file
  // and every level.
  db_options.memtable_whole_key_filtering = true;
  db_options.memtable_prefix_bloom_size_ratio = 0.05;
  {
    rocksdb::BlockBasedTableOptions table;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    table.whole_key_filtering = true;
    db_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  }
  db_options.memtable_insert_with_hint_prefix_extractor = std::make_shared<InsertHintPrefix>();
  if (options.env != nullptr) db_options.env = options.env;
  rocksdb::DB* raw = nullptr;
  STRIA_RETURN_IF_ERROR(
      FromRocks(rocksdb::DB::Open(db_options, options.data_dir, &raw), "open " + options.data_dir));
  ns->db_.reset(raw);

  STRIA_ASSIGN_OR_RETURN(auto stored, ns->Get(SuperKey("fsname")));
  if (!stored) {
    if (!options.format_if_empty) {
      return Status(Code::kNoEnt, options.data_dir + " holds no Stria MDS");
    }
    std::unique_ptr<rocksdb::Iterator> it(ns->db_->NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    if (it->Valid()) {
      return Status(Code::kCorrupt, options.data_dir +
                                        " holds a database without a Stria superblock; "
                                        "refusing to format it");
    }
    STRIA_RETURN_IF_ERROR(ns->Format(options.fsname));
    ns->formatted_at_open_ = true;
    LOG_INFO("formatted MDS for filesystem '{}' in {}", options.fsname, options.data_dir);
  } else if (*stored != options.fsname) {
    return Status(Code::kWrongFs, options.data_dir + " belongs to filesystem '" + *stored +
                                      "', not '" + options.fsname + "'");
  }
  ns->fsname_ = options.fsname;
  STRIA_RETURN_IF_ERROR(ns->Load());
  // Handles of this run start far from those of earlier runs, which clients may reopen.
  ns->next_handle_ = static_cast<uint64_t>(NowNs()) << 8;
  if (options.reap_orphans_at_open) STRIA_RETURN_IF_ERROR(ns->ReapOrphans());
  return ns;
}

Namespace::~Namespace() {
  StopCommitter();
  if (db_) {
    db_->SyncWAL().PermitUncheckedError();
    db_->Close().PermitUncheckedError();
  }
}

Status Namespace::Format(const std::string& fsname) {
  const int64_t now = NowNs();
  InodeRecord root;
  proto::Attr& a = root.attr;
  a.set_ino(kRootIno);
  a.set_mode(S_IFDIR | 0755);
  a.set_nlink(2);
  a.set_size(4096);
  a.set_blocks(8);
  a.set_atime_ns(now);
  a.set_mtime_ns(now);
  a.set_ctime_ns(now);
  root.parent = kRootIno;
  rocksdb::WriteBatch batch;
  batch.Put(InodeKey(kRootIno), root.Encode());
  batch.Put(SuperKey("format"), EncodeBe64(kFormatVersion));
  batch.Put(SuperKey("next_ino"), EncodeBe64(2));
  batch.Put(SuperKey("inodes"), EncodeBe64(1));
  batch.Put(SuperKey("destroy_seq"), EncodeBe64(1));
  batch.Put(SuperKey("config_gen"), EncodeBe64(1));
  batch.Put(SuperKey("fsname"), fsname);  // last in the batch, but the batch is atomic
  return Write(&batch);
}

Status Namespace::Load() {
  auto read_u64 = [&](const char* name, uint64_t* out) -> Status {
    STRIA_ASSIGN_OR_RETURN(auto v, Get(SuperKey(name)));
    if (!v || v->size() != 8) {
      return Status(Code::kCorrupt, std::string("superblock value '") + name + "' is missing");
    }
    *out = GetBe64(*v);
    return Status::Ok();
  };
  uint64_t format = 0;
  STRIA_RETURN_IF_ERROR(read_u64("format", &format));
  if (format != kFormatVersion) {
    return Status(Code::kCorrupt, "unsupported MDS format version " + std::to_string(format));
  }
  {
    // Everything recovered is on disk: replays of transactions up to here are done.
    std::lock_guard sync_lock(sync_mu_);
    recovered_ = synced_seq_ = db_->GetLatestSequenceNumber();
    committed_.store(synced_seq_, std::memory_order_release);
  }
  std::lock_guard lock(mutex_);
  STRIA_RETURN_IF_ERROR(read_u64("next_ino", &super_.next_ino));
  super_.ino_limit = super_.next_ino;  // resume at the end of the last reserved range
  STRIA_RETURN_IF_ERROR(read_u64("inodes", &super_.inodes));
  // The destroy queue's next number follows its last record (records are deleted only when
  // done, so numbers past the last one were never used by a record that still exists);
  // Sdestroy_seq is what a format, or a build before this one, stored.
  STRIA_RETURN_IF_ERROR(read_u64("destroy_seq", &super_.destroy_seq));
  {
    std::unique_ptr<rocksdb::Iterator> q(db_->NewIterator(rocksdb::ReadOptions()));
    q->SeekForPrev(DestroyKey(UINT64_MAX));
    if (q->Valid() && q->key().size() == 9 && q->key()[0] == kPrefixDestroy) {
      super_.destroy_seq =
          std::max(super_.destroy_seq, GetBe64(std::string_view(q->key().data() + 1, 8)) + 1);
    }
    STRIA_RETURN_IF_ERROR(FromRocks(q->status(), "find the destroy queue's last record"));
  }
  STRIA_RETURN_IF_ERROR(read_u64("config_gen", &super_.config_gen));

  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix(1, kPrefixOst);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    rec::Ost r;
    OstState st;
    if (it->key().size() != 5 || !r.ParseFromArray(it->value().data(), it->value().size()) ||
        !st.info.ParseFromString(r.info())) {
      return Status(Code::kCorrupt, "OST table entry does not decode");
    }
    st.next_object_id = r.next_object_id();
    st.object_id_limit = st.next_object_id;
    osts_[GetBe32(std::string_view(it->key().data() + 1, 4))] = st;
  }
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "scan OST table"));
  LOG_INFO("MDS '{}': {} inodes, next inode {}, {} OSTs", fsname_, super_.inodes,
           super_.next_ino, osts_.size());
  return Status::Ok();
}

Result<uint64_t> Namespace::CountStart() {
  std::lock_guard lock(mutex_);
  STRIA_ASSIGN_OR_RETURN(auto v, Get(SuperKey("starts")));
  if (v && v->size() != 8) return Status(Code::kCorrupt, "superblock value 'starts' is damaged");
  const uint64_t starts = (v ? GetBe64(*v) : 0) + 1;  // missing: formatted before it was kept
  rocksdb::WriteBatch batch;
  batch.Put(SuperKey("starts"), EncodeBe64(starts));
  STRIA_RETURN_IF_ERROR(Write(&batch, /*sync=*/true));
  return starts;
}

Status Namespace::ReapOrphans() {
  std::vector<uint64_t> orphans;
  const std::string prefix(1, kPrefixOrphan);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (it->key().size() == 9) orphans.push_back(GetBe64(std::string_view(it->key().data() + 1, 8)));
  }
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "scan orphans"));
  if (orphans.empty()) return Status::Ok();
  std::lock_guard lock(mutex_);
  std::lock_guard open_lock(open_mu_);
  std::erase_if(orphans, [&](uint64_t ino) { return IsOpenLocked(ino); });
  if (orphans.empty()) return Status::Ok();
  Txn txn(this);
  for (uint64_t ino : orphans) {
    txn.batch().Delete(OrphanKey(ino));
    if (txn.Inode(ino).ok()) txn.RemoveInode(ino);
  }
  LOG_INFO("removed {} files unlinked while open that no client reopened", orphans.size());
  return txn.Commit();
}

uint64_t Namespace::RegisterOpenLocked(uint64_t ino, bool track, bool writer) {
  const uint64_t h = ++next_handle_;
  if (!track) return h;
  handles_[h] = ino;
  open_counts_[ino]++;
  if (writer) {
    writer_handles_.insert(h);
    writer_counts_[ino]++;
  }
  return h;
}

bool Namespace::RestoreHandleLocked(uint64_t handle, uint64_t ino) {
  auto [it, inserted] = handles_.emplace(handle, ino);
  if (!inserted) return it->second == ino;
  open_counts_[ino]++;
  // The mode of a handle granted before the restart is not known: counted as a writer.
  writer_handles_.insert(handle);
  writer_counts_[ino]++;
  return true;
}

bool Namespace::ReleaseHandleLocked(uint64_t handle, uint64_t ino, bool* may_be_unlinked) {
  auto it = handles_.find(handle);
  if (it == handles_.end() || it->second != ino) return false;
  handles_.erase(it);
  if (writer_handles_.erase(handle) > 0) {
    auto w = writer_counts_.find(ino);
    if (w != writer_counts_.end() && --w->second == 0) writer_counts_.erase(w);
  }
  auto c = open_counts_.find(ino);
  if (c == open_counts_.end()) return false;
  if (--c->second > 0) return false;
  open_counts_.erase(c);
  const bool noted = may_be_unlinked_.erase(ino) > 0;
  if (may_be_unlinked != nullptr) *may_be_unlinked = noted;
  return true;
}

Result<std::optional<std::string>> Namespace::Get(const std::string& key) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), key, &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  STRIA_RETURN_IF_ERROR(FromRocks(s, "get"));
  return std::optional<std::string>(std::move(value));
}

Result<InodeRecord> Namespace::GetInode(uint64_t ino) const {
  uint64_t token = 0;
  if (std::shared_ptr<const InodeRecord> cached = inode_cache_.Find(ino, &token)) return *cached;
  STRIA_ASSIGN_OR_RETURN(auto v, Get(InodeKey(ino)));
  if (!v) return Status(Code::kNoEnt, "no inode " + std::to_string(ino));
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, InodeRecord::Decode(*v));
  // Bounded in bytes too: a widely striped or mirrored file's layout is large.
  if (v->size() <= kInodeCacheMaxRecordBytes) {
    inode_cache_.Offer(ino, token, std::make_shared<const InodeRecord>(rec));
  }
  return rec;
}

Result<std::optional<std::pair<uint64_t, proto::FileType>>> Namespace::GetDirent(
    uint64_t parent, std::string_view name) const {
  using Out = std::optional<std::pair<uint64_t, proto::FileType>>;
  STRIA_ASSIGN_OR_RETURN(auto v, Get(DirentKey(parent, name)));
  if (!v) return Out();
  rec::Dirent d;
  if (!d.ParseFromString(*v)) return Status(Code::kCorrupt, "directory entry does not decode");
  return Out(std::make_pair(d.ino(), static_cast<proto::FileType>(d.type())));
}

Result<bool> Namespace::DirIsEmpty(uint64_t ino) const {
  const std::string prefix = DirentKey(ino);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  it->Seek(prefix);
  if (it->Valid() && it->key().starts_with(prefix)) return false;
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "scan directory"));
  return true;
}

std::vector<proto::OstInfo> Namespace::OstTable() {
  std::lock_guard lock(mutex_);
  std::vector<proto::OstInfo> out;
  for (const auto& [idx, st] : osts_) out.push_back(st.info);
  return out;
}

uint64_t Namespace::ConfigGeneration() {
  std::lock_guard lock(mutex_);
  return super_.config_gen;
}

uint64_t Namespace::InodeCount() {
  std::lock_guard lock(mutex_);
  return super_.inodes;
}

namespace {

// The inodes whose records a batch writes or deletes.
class InodeKeys : public rocksdb::WriteBatch::Handler {
 public:
  std::vector<uint64_t> inos;

  void Put(const rocksdb::Slice& key, const rocksdb::Slice&) override { Note(key); }
  void Delete(const rocksdb::Slice& key) override { Note(key); }
  void SingleDelete(const rocksdb::Slice& key) override { Note(key); }
  void Merge(const rocksdb::Slice& key, const rocksdb::Slice&) override { Note(key); }
  rocksdb::Status DeleteRangeCF(uint32_t, const rocksdb::Slice& begin,
                                const rocksdb::Slice& end) override {
    // [begin, end) meets the inode keys, ["I", "J"), unless it ends before or starts after.
    static constexpr char kAfterInodes = kPrefixInode + 1;
    if (begin.compare(rocksdb::Slice(&kAfterInodes, 1)) < 0 &&
        end.compare(rocksdb::Slice(&kPrefixInode, 1)) > 0) {
      range = true;
    }
    return rocksdb::Status::OK();
  }
  bool range = false;  // a range that may hold inode records: the whole cache goes

 private:
  void Note(const rocksdb::Slice& key) {
    if (key.size() == 9 && key[0] == kPrefixInode) {
      inos.push_back(GetBe64(std::string_view(key.data() + 1, 8)));
    }
  }
};

}  // namespace

Status Namespace::Write(rocksdb::WriteBatch* batch, bool sync) {
  InodeKeys changed;
  STRIA_RETURN_IF_ERROR(FromRocks(batch->Iterate(&changed), "read write batch"));
  auto invalidate = [&] {
    if (changed.range) inode_cache_.Clear();
    for (uint64_t ino : changed.inos) inode_cache_.Changed(ino);
  };
  invalidate();
  Status st = WriteBatchNow(batch, sync);
  invalidate();
  return st;
}

Status Namespace::WriteBatchNow(rocksdb::WriteBatch* batch, bool sync) {
  DeferredSync* active = DeferredSync::Active(this);
  DeferredSync* deferred = sync ? active : nullptr;
  rocksdb::WriteOptions wo;
  wo.sync = sync && deferred == nullptr;
  STRIA_RETURN_IF_ERROR(FromRocks(db_->Write(wo, batch), "write batch"));
  // Writers are serialized by the namespace mutex, so the latest sequence covers this batch.
  const uint64_t seq = db_->GetLatestSequenceNumber();
  if (active != nullptr) active->NoteWritten(seq);
  if (deferred != nullptr) deferred->Note(seq);
  // An unsynced write is made durable by the committer (when one runs) within its interval.
  if (!sync) CommitLater(seq);
  return Status::Ok();
}

Status Namespace::WaitDurable(uint64_t seq) {
  std::unique_lock lock(sync_mu_);
  while (synced_seq_ < seq) {
    if (syncing_) {
      sync_cv_.wait(lock);
      continue;
    }
    syncing_ = true;
    const uint64_t target = db_->GetLatestSequenceNumber();
    lock.unlock();
    Status st = FromRocks(db_->SyncWAL(), "sync WAL");
    lock.lock();
    syncing_ = false;
    ++wal_syncs_;
    if (st.ok()) {
      synced_seq_ = std::max(synced_seq_, target);
      committed_.store(synced_seq_, std::memory_order_release);
    }
    sync_cv_.notify_all();
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

void Namespace::StartCommitter(int interval_ms) {
  interval_ms = std::max(interval_ms, 1);
  {
    std::lock_guard lock(sync_mu_);
    committer_running_ = true;
  }
  committer_ = std::thread([this, interval_ms] {
    std::unique_lock lock(sync_mu_);
    for (;;) {
      committer_cv_.wait(lock, [&] { return committer_stop_ || pending_seq_ > synced_seq_; });
      if (committer_stop_) return;
      // Let more changes join this sync; a stop cuts the wait short.
      committer_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms),
                             [&] { return committer_stop_; });
      const uint64_t seq = pending_seq_;
      lock.unlock();
      if (Status st = WaitDurable(seq); !st.ok()) {
        LOG_ERROR("committing the WAL: {}", st.ToString());
      }
      lock.lock();
    }
  });
}

void Namespace::StopCommitter() {
  {
    std::lock_guard lock(sync_mu_);
    committer_stop_ = true;
  }
  committer_cv_.notify_all();
  if (committer_.joinable()) committer_.join();
  {
    std::lock_guard lock(sync_mu_);
    committer_running_ = false;
  }
  sync_cv_.notify_all();
}

Status Namespace::WaitCommitted(uint64_t seq) {
  {
    std::unique_lock lock(sync_mu_);
    if (synced_seq_ >= seq) return Status::Ok();
    if (committer_running_) {
      if (seq > pending_seq_) {
        pending_seq_ = seq;
        committer_cv_.notify_one();
      }
      // The committer syncs within its interval; a failing disk falls through to a sync here.
      sync_cv_.wait_for(lock, std::chrono::seconds(15),
                        [&] { return synced_seq_ >= seq || !committer_running_; });
      if (synced_seq_ >= seq) return Status::Ok();
    }
  }
  return WaitDurable(seq);
}

void Namespace::CommitLater(uint64_t seq) {
  {
    std::lock_guard lock(sync_mu_);
    if (seq <= pending_seq_) return;
    // The committer waits for work only while nothing is pending beyond what is synced;
    // otherwise it is waiting out its interval or syncing, and rechecks pending_seq_ under
    // this lock when done. Waking it for every write cost a futex wake and two context
    // switches per change (its interval wait would only sleep again).
    const bool idle = pending_seq_ <= synced_seq_;
    pending_seq_ = seq;
    if (!idle) return;
  }
  committer_cv_.notify_one();
}

namespace {
thread_local DeferredSync* t_deferred = nullptr;
}  // namespace

DeferredSync::DeferredSync(Namespace* ns) : ns_(ns), outer_(t_deferred) { t_deferred = this; }

DeferredSync::~DeferredSync() {
  t_deferred = outer_;
  if (seq_ != 0) {
    if (Status st = ns_->WaitDurable(seq_); !st.ok()) LOG_ERROR("WAL sync: {}", st.ToString());
  }
}

void DeferredSync::Later() {
  const uint64_t seq = std::exchange(seq_, 0);
  if (seq != 0) ns_->CommitLater(seq);
}

Status DeferredSync::Wait() {
  const uint64_t seq = std::exchange(seq_, 0);
  return seq == 0 ? Status::Ok() : ns_->WaitDurable(seq);
}

DeferredSync* DeferredSync::Active(const Namespace* ns) {
  for (DeferredSync* d = t_deferred; d != nullptr; d = d->outer_) {
    if (d->ns_ == ns) return d;
  }
  return nullptr;
}

}  // namespace stria::mds
