// OssService: the OST RPC handlers of an OSS, over the OSTs it serves.
//
// Registers OP_OST_WRITE/READ/PUNCH/TRUNCATE/DESTROY/GETATTR/STATFS/SYNC/SCRUB on an
// lnet::RpcServer. Every request is checked before any I/O: the OST index must be one served
// here (kNoOst; kNotReady while a configured OST is still waiting to be formatted), a write's
// length must equal its bulk, ranges must stay inside kMaxFileSize, a read asks for at most
// kMaxReadBytes. Bulk is written to disk straight from the request buffer and read from disk
// straight into the reply buffer: no copies beyond socket<->buffer and buffer<->disk.
//
// OSTs are added (AddOst) as they become ready, possibly after the server has started (an OST
// formatted once the MGS answered); they are never removed while the service lives.
//
// Statistics (oss/ost_stats.h): each OST's obdfilter.FS-OSTxxxx.stats and job_stats, counted
// by the handlers, served by OP_STATS_GET from registry() and on /metrics (AddMetrics).
//
// A scrub (OP_OST_SCRUB, oss/ost_scrub.h) runs on the worker that received it, for as long
// as it takes; one per OST at a time (another gets kBusy), so at most one worker per OST is
// taken from the other clients.
//
// Thread-safety: handlers run concurrently on the server's workers; AddOst/ExpectOst may be
// called at any time. Lock order: mu_ is a leaf lock, never held during I/O.
#pragma once

#include <cstdint>
#include <chrono>
#include <functional>
#include <string_view>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/prom_text.h"
#include "common/stats_registry.h"
#include "common/status.h"
#include "lnet/capa.h"
#include "lnet/rpc_server.h"
#include "oss/object_store.h"
#include "oss/ost_stats.h"
#include "proto/stria.pb.h"

namespace stria::oss {

inline constexpr uint64_t kMaxReadBytes = 64ull << 20;      // one read RPC's bulk at most
inline constexpr int kMaxObjectsPerRequest = 65536;         // destroy/sync lists
inline constexpr uint32_t kMaxScrubListed = 10000;           // corrupt objects in one reply

class OssService {
 public:
  OssService() = default;
  OssService(const OssService&) = delete;
  OssService& operator=(const OssService&) = delete;

  // Serves `store` under its meta().index from now on. kExist if that index is served.
  Status AddOst(std::unique_ptr<ObjectStore> store);

  // Notes an OST index configured here but not ready yet: its requests get kNotReady
  // (retryable) instead of kNoOst.
  void ExpectOst(uint32_t index);

  // The OST served under `index`: kNoOst or kNotReady when there is none.
  Result<ObjectStore*> Find(uint32_t index) const;

  // Validates a destroy/sync list (size, every OST served here) before touching anything,
  // then applies fn to each object in order; the first failure is logged and returned.
  Status ForEachObject(const google::protobuf::RepeatedPtrField<proto::ObjectId>& objects,
                       std::string_view op,
                       const std::function<Status(ObjectStore*, const proto::ObjectId&)>& fn) const;

  // Indexes served now.
  std::vector<uint32_t> Served() const;

  // The statistics of the OSTs served here, by Lustre name (OP_STATS_GET).
  StatsRegistry& registry() { return registry_; }
  // Every OST's counters, job counters, space and objects, for /metrics.
  void AddMetrics(PromText* page) const;

  // From now on every object request (read, write, punch, truncate, getattr, destroy) must
  // carry a capability signed with one of `keys` (lnet/capa.h); kAccess otherwise. Call
  // before Register. Without it no capability is asked for or looked at.
  void RequireCapabilities(std::shared_ptr<const lnet::KeyRing> keys);
  // Null when capabilities are not required.
  const lnet::CapaVerifier* capa_verifier() const { return capa_.get(); }

  // Installs the handlers. Call before server->Start(); `this` must outlive the server.
  void Register(lnet::RpcServer* server);

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<uint32_t, std::unique_ptr<ObjectStore>> osts_;  // GUARDED_BY(mu_)
  std::unordered_set<uint32_t> expected_;                             // GUARDED_BY(mu_)
  std::unordered_set<uint32_t> scrubbing_;                            // GUARDED_BY(mu_)
  // Per OST, created with it and never removed, so a pointer stays valid.
  std::unordered_map<uint32_t, std::unique_ptr<OstStats>> stats_;     // GUARDED_BY(mu_)
  StatsRegistry registry_;
  std::unique_ptr<lnet::CapaVerifier> capa_;  // set before Register; then read-only

  // OK when capabilities are off, or `capa` (the request's, if it has one) lets the
  // connection's client do `need` on `obj`.
  template <typename Req>
  Status CheckCapa(const lnet::RpcContext& ctx, const Req& req, const proto::ObjectId& obj,
                   uint32_t need) {
    if (!capa_) return Status::Ok();
    return capa_->Check(req.has_capa() ? &req.capa() : nullptr, obj, ctx.client_uuid, need);
  }

  // An OST served here and its statistics, under one lookup.
  struct Target {
    ObjectStore* store;
    OstStats* stats;
  };
  Result<Target> FindTarget(uint32_t index) const;
  // Counts one `op` on the OST `ost` (the destroy and sync lists, which name objects).
  void CountOn(ObjectStore* ost, OstCounter op, std::chrono::steady_clock::time_point t0,
               std::string_view jobid) const;

  // Scrubs OST `index` unless a scrub of it is running already (kBusy).
  Result<proto::OstScrubReply> Scrub(ObjectStore* ost, uint32_t max_listed);
};

}  // namespace stria::oss
