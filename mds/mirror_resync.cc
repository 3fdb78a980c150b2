#include "mds/mirror_resync.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <vector>

#include "common/fid.h"
#include "common/layout.h"
#include "common/log.h"
#include "mds/params.h"
#include "mds/schema.h"
#include "mds/txn.h"
#include "proto/layout_components.h"
#include "proto/layout_mirrors.h"

namespace stria::mds {

namespace {

using Clock = std::chrono::steady_clock;

// Bytes read and written per step of a copy.
constexpr uint64_t kCopyChunk = 1 << 20;

using OstMap = std::map<uint32_t, proto::OstInfo>;

bool Instantiated(const proto::LayoutComponent& c) {
  return (c.flags() & kLcmeFlInit) && c.layout().objects_size() > 0;
}

proto::ObjectId IdOf(const proto::StripeObject& o) {
  proto::ObjectId id;
  id.set_ost_idx(o.ost_idx());
  id.set_object_id(o.object_id());
  id.set_group(o.group());
  return id;
}

Result<const proto::OstInfo*> InfoOf(const OstMap& osts, uint32_t idx) {
  auto it = osts.find(idx);
  if (it == osts.end()) {
    return Status(Code::kNoOst, "OST index " + std::to_string(idx) + " is not registered");
  }
  return &it->second;
}

StripeGeometry GeometryOf(const proto::Layout& plain) {
  return {plain.stripe_size(), static_cast<uint32_t>(plain.objects_size())};
}

// File bytes [offset, offset + buf.size()) as the plain layout `plain` stores them; what
// its objects lack reads as zeros (holes).
Status ReadPlain(OstGateway* gw, const OstMap& osts, const proto::Layout& plain,
                 uint64_t offset, std::span<uint8_t> buf) {
  STRIA_RETURN_IF_ERROR(ValidateStripe(plain.stripe_size(), plain.objects_size()));
  for (const ObjectExtent& e : MapExtent(GeometryOf(plain), offset, buf.size())) {
    const proto::StripeObject& o = plain.objects(static_cast<int>(e.stripe));
    STRIA_ASSIGN_OR_RETURN(const proto::OstInfo* info, InfoOf(osts, o.ost_idx()));
    std::span<uint8_t> dst = buf.subspan(e.buf_offset, e.length);
    STRIA_ASSIGN_OR_RETURN(size_t got, gw->ReadObject(*info, IdOf(o), e.obj_offset, dst));
    if (got < dst.size()) std::memset(dst.data() + got, 0, dst.size() - got);
  }
  return Status::Ok();
}

Status WritePlain(OstGateway* gw, const OstMap& osts, const proto::Layout& plain,
                  uint64_t offset, std::span<const uint8_t> data) {
  STRIA_RETURN_IF_ERROR(ValidateStripe(plain.stripe_size(), plain.objects_size()));
  for (const ObjectExtent& e : MapExtent(GeometryOf(plain), offset, data.size())) {
    const proto::StripeObject& o = plain.objects(static_cast<int>(e.stripe));
    STRIA_ASSIGN_OR_RETURN(const proto::OstInfo* info, InfoOf(osts, o.ost_idx()));
    STRIA_RETURN_IF_ERROR(
        gw->WriteObject(*info, IdOf(o), e.obj_offset, data.subspan(e.buf_offset, e.length)));
  }
  return Status::Ok();
}

// The component of mirror `mirror` that holds file byte `at`, or null.
const proto::LayoutComponent* ComponentAt(const proto::Layout& l, uint32_t mirror, uint64_t at) {
  for (const proto::LayoutComponent& c : l.components()) {
    if (MirrorIdOf(c.id()) == mirror && c.start() <= at && at < c.end()) return &c;
  }
  return nullptr;
}

// Every object of `c` sized for a file of `size` bytes, then synced: the component holds
// nothing past the file's end, and what it holds is on disk.
Status TrimAndSync(OstGateway* gw, const OstMap& osts, const proto::LayoutComponent& c,
                   uint64_t size) {
  const StripeGeometry g = GeometryOf(c.layout());
  std::map<uint32_t, std::vector<proto::ObjectId>> per_ost;
  for (int s = 0; s < c.layout().objects_size(); ++s) {
    const proto::StripeObject& o = c.layout().objects(s);
    STRIA_ASSIGN_OR_RETURN(const proto::OstInfo* info, InfoOf(osts, o.ost_idx()));
    const uint64_t want =
        size <= c.start()
            ? 0
            : ObjectSizeForFileSize(g, static_cast<uint32_t>(s), std::min(size, c.end()));
    STRIA_RETURN_IF_ERROR(gw->TruncateObject(*info, IdOf(o), want));
    per_ost[o.ost_idx()].push_back(IdOf(o));
  }
  for (const auto& [idx, ids] : per_ost) {
    STRIA_ASSIGN_OR_RETURN(const proto::OstInfo* info, InfoOf(osts, idx));
    STRIA_RETURN_IF_ERROR(gw->SyncObjects(*info, ids));
  }
  return Status::Ok();
}

}  // namespace

MirrorResync::MirrorResync(Namespace* ns, OstGateway* gateway, MirrorResyncOptions options)
    : ns_(ns), gateway_(gateway), options_(options) {}

MirrorResync::~MirrorResync() { Stop(); }

void MirrorResync::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void MirrorResync::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MirrorResync::CountStaleMark(bool damaged) {
  stale_marks_.fetch_add(1, std::memory_order_relaxed);
  if (damaged) damage_reports_.fetch_add(1, std::memory_order_relaxed);
}

Result<uint64_t> MirrorResync::ResyncFile(uint64_t ino) {
  std::lock_guard serial(resync_mu_);
  if (gateway_ == nullptr) return Status(Code::kNotSup, "this MDS has no OST gateway");
  runs_.fetch_add(1, std::memory_order_relaxed);
  // The snapshot: the layout and the version the copy is valid for.
  InodeRecord rec;
  {
    std::lock_guard lock(ns_->mutex());
    STRIA_ASSIGN_OR_RETURN(rec, ns_->GetInode(ino));
    std::lock_guard open_lock(ns_->open_mutex());
    if (rec.is_reg() && HasStale(rec.layout) && ns_->HasWritersLocked(ino)) {
      busy_.fetch_add(1, std::memory_order_relaxed);
      return Status(Code::kBusy, "the file is open for writing: it is resynced after its close");
    }
  }
  if (!rec.is_reg()) {
    return Status(Code::kInval, "inode " + std::to_string(ino) + " is not a regular file");
  }
  if (!HasStale(rec.layout)) return uint64_t{0};
  const proto::Layout& l = rec.layout;
  const uint64_t size = rec.attr.size();
  OstMap osts;
  for (proto::OstInfo& o : ns_->OstTable()) osts[o.index()] = std::move(o);

  uint64_t total = 0;
  for (const proto::LayoutComponent& c : l.components()) {
    for (const ByteSpan& s : StaleSpans(c)) {
      if (s.start < size) total += std::min(s.end, size) - s.start;
    }
  }
  active_ino_ = ino;
  active_copied_ = 0;
  active_total_ = total;
  struct ClearActive {
    MirrorResync* r;
    ~ClearActive() { r->active_ino_ = 0; }
  } clear_active{this};

  uint32_t rate_mb = kDefaultMirrorResyncMb;
  if (auto r = MirrorResyncRateMb(ns_->db(), ns_->fsname()); r.ok()) rate_mb = *r;
  const auto t0 = Clock::now();
  std::vector<uint8_t> buf(kCopyChunk);
  uint64_t copied = 0;
  Status first_error;
  std::set<uint32_t> cleared;  // component ids copied in full
  for (const proto::LayoutComponent& c : l.components()) {
    if (!(c.flags() & kLcmeFlStale)) continue;
    if (!Instantiated(c)) {  // no objects: nothing to copy into, nothing stale
      cleared.insert(c.id());
      continue;
    }
    const uint32_t mirror = MirrorIdOf(c.id());
    Status st;
    for (const ByteSpan& span : StaleSpans(c)) {
      const uint64_t end = std::min(span.end, size);
      for (uint64_t pos = span.start; pos < end && st.ok();) {
        if (stopping_) {
          st = Status(Code::kShutdown, "the MDS is stopping");
          break;
        }
        const uint64_t n = std::min(kCopyChunk, end - pos);
        if (!OtherMirrorHolds(l, mirror, pos, pos + n)) {
          st = Status(Code::kIO, "no good mirror holds bytes [" + std::to_string(pos) + ", " +
                                     std::to_string(pos + n) + ")");
          break;
        }
        // Each piece from a good mirror, the next one when a read fails.
        for (const MirrorPiece& piece : PlanMirrorRead(l, pos, n)) {
          std::span<uint8_t> dst(buf.data() + (piece.start - pos), piece.end - piece.start);
          Status read(Code::kIO, "no mirror to read from");
          if (piece.mirrors.empty()) {
            std::memset(dst.data(), 0, dst.size());  // a hole in every mirror
            read = Status::Ok();
          }
          for (uint32_t m : piece.mirrors) {
            const proto::LayoutComponent* src = ComponentAt(l, m, piece.start);
            if (m == mirror || src == nullptr || (src->flags() & kLcmeFlStale)) continue;
            read = ReadPlain(gateway_, osts, src->layout(), piece.start, dst);
            if (read.ok()) break;
            LOG_INFO("resync of inode {}: mirror {} unreadable at {}: {}", ino, m, piece.start,
                     read.ToString());
          }
          if (!read.ok()) {
            st = read;
            break;
          }
        }
        if (!st.ok()) break;
        st = WritePlain(gateway_, osts, c.layout(), pos,
                        std::span<const uint8_t>(buf.data(), n));
        if (!st.ok()) break;
        pos += n;
        copied += n;
        active_copied_.fetch_add(n, std::memory_order_relaxed);
        bytes_resynced_.fetch_add(n, std::memory_order_relaxed);
        if (rate_mb > 0) {
          // Throttle: never ahead of rate_mb MB/s since the start of this file.
          const auto due = t0 + std::chrono::microseconds(copied / rate_mb);
          if (due > Clock::now()) std::this_thread::sleep_until(due);
        }
      }
      if (!st.ok()) break;
    }
    if (st.ok()) st = TrimAndSync(gateway_, osts, c, size);
    if (st.ok()) {
      cleared.insert(c.id());
    } else {
      LOG_WARN("resync of inode {} mirror {} (component {}): {}", ino, mirror, c.id(),
               st.ToString());
      if (first_error.ok()) first_error = st;
    }
  }

  if (!cleared.empty()) {
    std::lock_guard lock(ns_->mutex());
    Txn txn(ns_);
    STRIA_ASSIGN_OR_RETURN(InodeRecord * now, txn.Inode(ino));
    bool writers = false;
    {
      std::lock_guard open_lock(ns_->open_mutex());
      writers = ns_->HasWritersLocked(ino);
    }
    if (writers || now->attr.size() != size || now->attr.mtime_ns() != rec.attr.mtime_ns() ||
        now->layout.generation() != l.generation()) {
      busy_.fetch_add(1, std::memory_order_relaxed);
      return Status(Code::kBusy, "the file changed during the resync: it is tried again");
    }
    for (proto::LayoutComponent& c : *now->layout.mutable_components()) {
      if (!cleared.count(c.id())) continue;
      c.set_flags(c.flags() & ~kLcmeFlStale);
      c.clear_stale_ranges();
    }
    now->layout.set_generation(now->layout.generation() + 1);
    txn.Dirty(ino);
    if (!HasStale(now->layout)) txn.batch().Delete(MirrorStaleKey(ino));
    STRIA_RETURN_IF_ERROR(txn.Commit());
    if (!HasStale(now->layout)) files_resynced_.fetch_add(1, std::memory_order_relaxed);
    LOG_INFO("resync of inode {}: {} bytes copied, {} component(s) in sync", ino, copied,
             cleared.size());
  }
  if (!first_error.ok()) {
    failures_total_.fetch_add(1, std::memory_order_relaxed);
    return first_error;
  }
  return copied;
}

bool MirrorResync::Due(const InodeRecord& rec, int64_t changed_ns) {
  std::map<uint32_t, int64_t> seen;
  for (const proto::OstInfo& o : ns_->OstTable()) {
    seen[o.index()] = static_cast<int64_t>(o.last_seen_ns());
  }
  for (const proto::LayoutComponent& c : rec.layout.components()) {
    if (!(c.flags() & kLcmeFlStale)) continue;
    bool back = true;
    for (const proto::StripeObject& o : c.layout().objects()) {
      auto it = seen.find(o.ost_idx());
      back = back && it != seen.end() && it->second > changed_ns;
    }
    if (back) return true;  // also a component without objects: its mark just goes
  }
  return false;
}

void MirrorResync::Run() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(options_.scan_interval_ms),
                   [this] { return stop_; });
      if (stop_) return;
    }
    // The resync list.
    std::vector<std::pair<uint64_t, int64_t>> files;
    {
      const std::string prefix(1, kPrefixMirrorStale);
      std::unique_ptr<rocksdb::Iterator> it(ns_->db()->NewIterator(rocksdb::ReadOptions()));
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
        if (it->key().size() != 9 || it->value().size() != 8) continue;
        files.emplace_back(GetBe64(it->key().ToStringView().substr(1)),
                           static_cast<int64_t>(GetBe64(it->value().ToStringView())));
      }
    }
    for (const auto& [ino, changed_ns] : files) {
      if (stopping_) return;
      const int64_t now = Namespace::NowNs();
      {
        std::lock_guard lock(mu_);
        auto r = retry_at_ns_.find(ino);
        if (r != retry_at_ns_.end() && r->second > now) continue;
      }
      Result<InodeRecord> rec = ns_->GetInode(ino);
      if (!rec.ok() || !rec->is_reg() || !HasStale(rec->layout)) {
        // Gone or in sync: leave the list (checked again under the mutex, so a mark made
        // meanwhile keeps its key).
        std::lock_guard lock(ns_->mutex());
        Result<InodeRecord> again = ns_->GetInode(ino);
        if (again.ok() && again->is_reg() && HasStale(again->layout)) continue;
        rocksdb::WriteBatch batch;
        batch.Delete(MirrorStaleKey(ino));
        ns_->Write(&batch, /*sync=*/false).IgnoreError();
        continue;
      }
      if (!Due(*rec, changed_ns)) continue;
      Result<uint64_t> done = ResyncFile(ino);
      std::lock_guard lock(mu_);
      if (done.ok()) {
        retry_at_ns_.erase(ino);
        failures_.erase(ino);
        continue;
      }
      // A file open for writing is looked at again soon (the check costs no copy); a
      // failed copy waits longer each time.
      const bool busy = done.status().code() == Code::kBusy;
      const int n = busy ? 1 : std::min(++failures_[ino], 5);
      const int64_t wait_ms = std::min<int64_t>(options_.max_backoff_ms, 1000ll << n);
      retry_at_ns_[ino] = Namespace::NowNs() + wait_ms * 1'000'000;
      if (done.status().code() != Code::kBusy) {
        LOG_INFO("resync of inode {} failed ({}); next try in {} ms", ino,
                 done.status().ToString(), wait_ms);
      }
    }
  }
}

std::string MirrorResync::Format() {
  std::string stale;
  uint64_t files = 0;
  {
    const std::string prefix(1, kPrefixMirrorStale);
    std::unique_ptr<rocksdb::Iterator> it(ns_->db()->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      if (it->key().size() != 9) continue;
      const uint64_t ino = GetBe64(it->key().ToStringView().substr(1));
      Result<InodeRecord> rec = ns_->GetInode(ino);
      if (!rec.ok() || !HasStale(rec->layout)) continue;
      ++files;
      if (files > 100) continue;  // the count stays exact; the list is capped
      std::string mirrors;
      uint64_t bytes = 0;
      std::set<uint32_t> ids;
      for (const proto::LayoutComponent& c : rec->layout.components()) {
        for (const ByteSpan& s : StaleSpans(c)) {
          ids.insert(MirrorIdOf(c.id()));
          bytes += std::min(s.end, rec->attr.size()) - std::min(s.start, rec->attr.size());
        }
      }
      for (uint32_t m : ids) mirrors += (mirrors.empty() ? "" : ", ") + std::to_string(m);
      stale += "  - { fid: " + FormatFid(FidOfIno(ino)) + ", stale_mirrors: [" + mirrors +
               "], stale_bytes: " + std::to_string(bytes) + " }\n";
    }
  }
  std::string out = "stale_files: " + std::to_string(files) + "\n";
  const uint64_t active = active_ino_.load();
  if (active != 0) {
    out += "resyncing: { fid: " + FormatFid(FidOfIno(active)) +
           ", copied_bytes: " + std::to_string(active_copied_.load()) +
           ", total_bytes: " + std::to_string(active_total_.load()) + " }\n";
  } else {
    out += "resyncing: none\n";
  }
  uint32_t rate = kDefaultMirrorResyncMb;
  if (auto r = MirrorResyncRateMb(ns_->db(), ns_->fsname()); r.ok()) rate = *r;
  out += "resync_rate_mb: " + std::to_string(rate) + "\n";
  out += "resync_runs: " + std::to_string(runs_.load()) + "\n";
  out += "files_resynced: " + std::to_string(files_resynced_.load()) + "\n";
  out += "bytes_resynced: " + std::to_string(bytes_resynced_.load()) + "\n";
  out += "resync_failures: " + std::to_string(failures_total_.load()) + "\n";
  out += "resync_busy: " + std::to_string(busy_.load()) + "\n";
  out += "stale_marks: " + std::to_string(stale_marks_.load()) + "\n";
  out += "damage_reports: " + std::to_string(damage_reports_.load()) + "\n";
  out += "stale:" + std::string(stale.empty() ? " []\n" : "\n" + stale);
  return out;
}

}  // namespace stria::mds
