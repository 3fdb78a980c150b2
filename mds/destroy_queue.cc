#include "mds/destroy_queue.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <algorithm>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "mds/schema.h"

namespace stria::mds {

DestroyQueue::DestroyQueue(Namespace* ns, OstGateway* gateway, int interval_ms)
    : ns_(ns), gateway_(gateway), interval_ms_(interval_ms) {}

DestroyQueue::~DestroyQueue() { Stop(); }

void DestroyQueue::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void DestroyQueue::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DestroyQueue::Kick() {
  {
    std::lock_guard lock(mu_);
    // Kicked already: the loop is gathering the burst (and would only sleep again) or
    // about to run; a wakeup per unlink cost a futex wake and two context switches.
    if (kicked_) return;
    kicked_ = true;
  }
  cv_.notify_all();
}

void DestroyQueue::Loop() {
  bool kicked = false;
  for (;;) {
    // A full rescan (over every tombstone of the records done since the last compaction)
    // only when a record may be left behind: at start and after a failed destroy.
    Result<size_t> r = RunPass(/*from_cursor=*/kicked || !NeedsRescan());
    if (!r.ok()) LOG_WARN("destroy queue pass failed: {}", r.status().ToString());
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stop_ || kicked_; });
    if (stop_) return;
    kicked = kicked_;
    if (kicked) {
      // Let a burst of unlinks gather, so that one pass (one WAL sync, one RPC per OST)
      // frees many files.
      cv_.wait_for(lock, std::chrono::milliseconds(kGatherMs), [this] { return stop_; });
      if (stop_) return;
    }
    kicked_ = false;
  }
}

bool DestroyQueue::NeedsRescan() {
  std::lock_guard run_lock(run_mu_);
  return rescan_;
}

Result<size_t> DestroyQueue::Pending() const {
  const std::string prefix(1, kPrefixDestroy);
  std::unique_ptr<rocksdb::Iterator> it(ns_->db()->NewIterator(rocksdb::ReadOptions()));
  size_t n = 0;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) ++n;
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "scan destroy queue"));
  return n;
}

Result<size_t> DestroyQueue::RunPass(bool from_cursor) {
  std::lock_guard run_lock(run_mu_);
  if (gateway_ == nullptr) return size_t{0};
  // Read the records first; unlinks may add more meanwhile (the next pass takes them).
  std::vector<std::pair<std::string, proto::OstDestroyRequest>> records;
  {
    const std::string prefix(1, kPrefixDestroy);
    const std::string end(1, static_cast<char>(kPrefixDestroy + 1));
    const rocksdb::Slice bound(end);
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &bound;  // never walk into the next key range's tombstones
    std::unique_ptr<rocksdb::Iterator> it(ns_->db()->NewIterator(ro));
    if (!from_cursor || cursor_.empty()) rescan_ = false;
    it->Seek(from_cursor && !cursor_.empty() ? cursor_ : prefix);
    for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
      cursor_ = it->key().ToString() + '\0';  // the smallest key after this one
      proto::OstDestroyRequest req;
      if (!req.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
        LOG_ERROR("destroy queue record is corrupt; dropping it");
        rocksdb::WriteBatch b;
        b.Delete(it->key());
        STRIA_RETURN_IF_ERROR(ns_->Write(&b));
        continue;
      }
      records.emplace_back(it->key().ToString(), std::move(req));
    }
    STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "scan destroy queue"));
  }
  if (records.empty()) return size_t{0};
  // An unlink may be answered before its batch is synced (the commit interval): destroy
  // objects only once the records naming them are durable, or a power loss could bring the
  // file back without its data. The committer makes them so within its interval: a burst of
  // unlinks costs no fsync of its own.
  STRIA_RETURN_IF_ERROR(ns_->WaitCommitted(ns_->db()->GetLatestSequenceNumber()));

  std::map<uint32_t, proto::OstInfo> table;
  for (proto::OstInfo& o : ns_->OstTable()) table[o.index()] = std::move(o);

  // The objects of every record, by OST, sent in RPCs of at most kObjectsPerRpc; an OST
  // that fails keeps all of its objects for the next pass.
  std::map<uint32_t, std::vector<proto::ObjectId>> by_ost;
  for (auto& [key, req] : records) {
    for (const proto::ObjectId& o : req.objects()) by_ost[o.ost_idx()].push_back(o);
  }
  std::set<uint32_t> failed;
  for (auto& [idx, objects] : by_ost) {
    auto t = table.find(idx);
    for (size_t i = 0; i < objects.size() && !failed.count(idx); i += kObjectsPerRpc) {
      proto::OstDestroyRequest part;
      for (size_t j = i; j < std::min(objects.size(), i + kObjectsPerRpc); ++j) {
        *part.add_objects() = objects[j];
      }
      Status st = t == table.end()
                      ? Status(Code::kNoOst, "OST index " + std::to_string(idx) + " unknown")
                      : gateway_->Destroy(t->second, part);
      if (!st.ok()) {
        LOG_DEBUG("destroy on OST {} failed, will retry: {}", idx, st.ToString());
        failed.insert(idx);
      }
    }
  }

  size_t done = 0;
  rocksdb::WriteBatch b;  // one unsynced batch for the whole pass (see Namespace::Write)
  for (auto& [key, req] : records) {
    proto::OstDestroyRequest left;
    for (const proto::ObjectId& o : req.objects()) {
      if (failed.count(o.ost_idx())) *left.add_objects() = o;
    }
    if (left.objects_size() != 0) rescan_ = true;  // left behind the cursor: retry
    if (left.objects_size() == 0) {
      b.Delete(key);
      ++done;
    } else if (left.objects_size() != req.objects_size()) {
      b.Put(key, left.SerializeAsString());
    }
  }
  if (b.Count() > 0) STRIA_RETURN_IF_ERROR(ns_->Write(&b, /*sync=*/false));
  return done;
}

}  // namespace stria::mds
