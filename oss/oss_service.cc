#include "oss/oss_service.h"

#include <fmt/format.h>

#include <climits>
#include <cstdlib>
#include <mutex>

#include "common/layout.h"
#include "common/log.h"
#include "lnet/buffer.h"
#include "lnet/lnd.h"
#include "lnet/stats_service.h"
#include "oss/ost_scrub.h"
#include "proto/stria.pb.h"

namespace stria::oss {
namespace {

using lnet::RpcContext;
using Clock = std::chrono::steady_clock;

Status CheckRange(uint64_t offset, uint64_t length) {
  if (offset > kMaxFileSize || length > kMaxFileSize - offset) {
    return Status(Code::kInval, fmt::format("range offset {} length {} exceeds the maximum "
                                            "object size", offset, length));
  }
  return Status::Ok();
}

// Logs disk trouble (not the caller's mistakes) once per failure, and passes it on.
Status Note(const Status& st, std::string_view op, const proto::ObjectId& obj) {
  if (!st.ok() && st.code() != Code::kInval && st.code() != Code::kNoOst &&
      st.code() != Code::kNotReady) {
    LOG_WARN("{} ost {} object {}:{} failed: {}", op, obj.ost_idx(), obj.group(),
             obj.object_id(), st.ToString());
  }
  return st;
}

}  // namespace

void OssService::RequireCapabilities(std::shared_ptr<const lnet::KeyRing> keys) {
  capa_ = std::make_unique<lnet::CapaVerifier>(std::move(keys));
}

Status OssService::AddOst(std::unique_ptr<ObjectStore> store) {
  const uint32_t index = store->meta().index;
  const std::string name = fmt::format("obdfilter.{}-OST{:04x}", store->meta().fsname, index);
  OstStats* stats = nullptr;
  ObjectStore* ost = nullptr;
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (osts_.count(index) != 0) {
      return Status(Code::kExist, fmt::format("OST index {} is already served", index));
    }
    ost = store.get();
    osts_[index] = std::move(store);
    stats = (stats_[index] = std::make_unique<OstStats>()).get();
    expected_.erase(index);
  }
  registry_.Add(name + ".stats", [stats] { return stats->stats.Format(); },
                [stats] { stats->stats.Clear(); });
  registry_.Add(name + ".job_stats", [stats] { return stats->jobs.Format(); },
                [stats] { stats->jobs.Clear(); });
  if (internal::ObjectPool* pool = ost->pool()) {
    registry_.Add(
        name + ".object_pool_stats",
        [pool] {
          const internal::ObjectPoolStats p = pool->Stats();
          return fmt::format(
              "limit: {}\nready: {}\nemptying: {}\nprecreated: {}\nnew_from_pool: {}\n"
              "new_created: {}\ndestroyed_kept: {}\n",
              p.limit, p.ready, p.emptying, p.precreated, p.placed, p.missed, p.kept);
        },
        [pool] { pool->ClearCounters(); });
  }
  return Status::Ok();
}

Result<OssService::Target> OssService::FindTarget(uint32_t index) const {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = osts_.find(index);
    if (it != osts_.end()) return Target{it->second.get(), stats_.at(index).get()};
  }
  return Find(index).status();
}

void OssService::AddMetrics(PromText* page) const {
  std::vector<std::pair<ObjectStore*, OstStats*>> osts;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (const auto& [idx, store] : osts_) osts.emplace_back(store.get(), stats_.at(idx).get());
  }
  for (const auto& [store, stats] : osts) {
    const PromLabels ost = {{"fs", store->meta().fsname},
                            {"ost", fmt::format("OST{:04x}", store->meta().index)}};
    page->AddStats("stria_ost", stats->stats, ost);
    stats->jobs.ForEach([&](const std::string& job, const StatsSet& set) {
      PromLabels l = ost;
      l.emplace_back("job", job);
      page->AddStats("stria_ost_job", set, l);
    });
    Result<OstStatfs> s = store->Statfs();
    if (!s.ok()) continue;
    page->Add("stria_ost_space_bytes", "gauge", "OST space: total, free, avail (bytes)",
              [&] { PromLabels l = ost; l.emplace_back("kind", "total"); return l; }(),
              static_cast<double>(s->blocks * s->bsize));
    page->Add("stria_ost_space_bytes", "gauge", "",
              [&] { PromLabels l = ost; l.emplace_back("kind", "free"); return l; }(),
              static_cast<double>(s->bfree * s->bsize));
    page->Add("stria_ost_space_bytes", "gauge", "",
              [&] { PromLabels l = ost; l.emplace_back("kind", "avail"); return l; }(),
              static_cast<double>(s->bavail * s->bsize));
    page->Add("stria_ost_objects", "gauge", "inodes in use on the OST's filesystem", ost,
              static_cast<double>(s->files - s->ffree));
  }
}

void OssService::ExpectOst(uint32_t index) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (osts_.count(index) == 0) expected_.insert(index);
}

Result<ObjectStore*> OssService::Find(uint32_t index) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = osts_.find(index);
  if (it != osts_.end()) return it->second.get();
  if (expected_.count(index) != 0) {
    return Status(Code::kNotReady, fmt::format("OST {} is not formatted yet (waiting for the "
                                               "MGS)", index));
  }
  return Status(Code::kNoOst, fmt::format("OST {} is not served here", index));
}

std::vector<uint32_t> OssService::Served() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<uint32_t> out;
  for (const auto& [idx, store] : osts_) out.push_back(idx);
  return out;
}

void OssService::Register(lnet::RpcServer* server) {
  using proto::ObjectId;
  lnet::RegisterStatsService(server, &registry_);

  server->Register<proto::OstIoRequest, proto::OstIoReply>(
      proto::OP_OST_WRITE,
      [this](RpcContext& ctx, const proto::OstIoRequest& req, proto::OstIoReply* rep) {
        if (!req.has_object()) return Status(Code::kInval, "write names no object");
        const ObjectId& obj = req.object();
        STRIA_RETURN_IF_ERROR(CheckCapa(ctx, req, obj, proto::CAPA_WRITE));
        const Clock::time_point t0 = Clock::now();
        STRIA_ASSIGN_OR_RETURN(Target t, FindTarget(obj.ost_idx()));
        ObjectStore* ost = t.store;
        if (req.length() != ctx.bulk_in.size()) {
          return Status(Code::kInval, fmt::format("write length {} but the bulk carries {} "
                                                  "bytes", req.length(), ctx.bulk_in.size()));
        }
        STRIA_RETURN_IF_ERROR(CheckRange(req.offset(), req.length()));
        // The bulk's checksum is checked here, from the chunk sums the store computes anyway
        // (HandlerVerifiesBulk below), before a byte is written.
        Result<uint64_t> size =
            ost->Write(obj.group(), obj.object_id(), req.offset(), ctx.bulk_in, req.sync(),
                       ctx.bulk_in_crc ? &*ctx.bulk_in_crc : nullptr);
        t.stats->Count(req.jobid(), kOstWrite, t0, kOstWriteBytes,
                       size.ok() ? static_cast<int64_t>(req.length()) : -1);
        STRIA_RETURN_IF_ERROR(Note(size.status(), "write", obj));
        rep->set_length(req.length());
        rep->set_object_size(*size);
        return Status::Ok();
      });
  server->HandlerVerifiesBulk(proto::OP_OST_WRITE);
  // A local client's write bulk is read from its shared arena in place (lnet/shared_bulk.h):
  // the store sums the bytes for their chunk checksums and writes them, by O_DIRECT when
  // aligned, and decides nothing on what they say.
  server->ReadsBulkInPlace(proto::OP_OST_WRITE);

  server->Register<proto::OstIoRequest, proto::OstIoReply>(
      proto::OP_OST_READ,
      [this](RpcContext& ctx, const proto::OstIoRequest& req, proto::OstIoReply* rep) {
        if (!req.has_object()) return Status(Code::kInval, "read names no object");
        const ObjectId& obj = req.object();
        STRIA_RETURN_IF_ERROR(CheckCapa(ctx, req, obj, proto::CAPA_READ));
        const Clock::time_point t0 = Clock::now();
        STRIA_ASSIGN_OR_RETURN(Target t, FindTarget(obj.ost_idx()));
        ObjectStore* ost = t.store;
        if (req.length() > kMaxReadBytes) {
          return Status(Code::kInval, fmt::format("read length {} exceeds the {} byte limit",
                                                  req.length(), kMaxReadBytes));
        }
        STRIA_RETURN_IF_ERROR(CheckRange(req.offset(), req.length()));
        // In a local client's own memory when it offered it (lnet/shared_bulk.h): the read
        // lands there, by O_DIRECT when aligned, and nothing is copied on either side.
        const std::span<uint8_t> dst = ctx.ReplyBulkRoom(static_cast<size_t>(req.length()));
        uint64_t object_size = 0;
        bool missing = false;
        uint32_t crc = 0;
        Result<size_t> n = ost->Read(obj.group(), obj.object_id(), req.offset(), dst, &object_size,
                                     &missing, &crc);
        t.stats->Count(req.jobid(), kOstRead, t0, kOstReadBytes,
                       n.ok() ? static_cast<int64_t>(*n) : -1);
        STRIA_RETURN_IF_ERROR(Note(n.status(), "read", obj));
        ctx.ReplyBulkFilled(*n, crc);  // crc: folded from the chunk sums the read verified
        rep->set_length(*n);
        rep->set_object_size(object_size);
        rep->set_missing(missing);
        return Status::Ok();
      });

  server->Register<proto::OstPunchRequest, proto::OstIoReply>(
      proto::OP_OST_PUNCH,
      [this](RpcContext& ctx, const proto::OstPunchRequest& req, proto::OstIoReply* rep) {
        if (!req.has_object()) return Status(Code::kInval, "punch names no object");
        const ObjectId& obj = req.object();
        STRIA_RETURN_IF_ERROR(CheckCapa(ctx, req, obj, proto::CAPA_WRITE));
        const Clock::time_point t0 = Clock::now();
        STRIA_ASSIGN_OR_RETURN(Target t, FindTarget(obj.ost_idx()));
        ObjectStore* ost = t.store;
        STRIA_RETURN_IF_ERROR(CheckRange(req.offset(), req.length()));
        Result<uint64_t> size =
            ost->Punch(obj.group(), obj.object_id(), req.offset(), req.length());
        t.stats->Count(req.jobid(), kOstPunch, t0);
        STRIA_RETURN_IF_ERROR(Note(size.status(), "punch", obj));
        rep->set_length(req.length());
        rep->set_object_size(*size);
        return Status::Ok();
      });

  server->Register<proto::OstTruncateRequest, proto::OstIoReply>(
      proto::OP_OST_TRUNCATE,
      [this](RpcContext& ctx, const proto::OstTruncateRequest& req, proto::OstIoReply* rep) {
        if (!req.has_object()) return Status(Code::kInval, "truncate names no object");
        const ObjectId& obj = req.object();
        STRIA_RETURN_IF_ERROR(CheckCapa(ctx, req, obj, proto::CAPA_WRITE));
        const Clock::time_point t0 = Clock::now();
        STRIA_ASSIGN_OR_RETURN(Target t, FindTarget(obj.ost_idx()));
        ObjectStore* ost = t.store;
        STRIA_RETURN_IF_ERROR(CheckRange(req.size(), 0));
        Result<uint64_t> size = ost->Truncate(obj.group(), obj.object_id(), req.size());
        // A truncate is a punch to the end of the object, as Lustre counts it.
        t.stats->Count(req.jobid(), kOstPunch, t0);
        STRIA_RETURN_IF_ERROR(Note(size.status(), "truncate", obj));
        rep->set_object_size(*size);
        return Status::Ok();
      });

  server->Register<proto::OstDestroyRequest, proto::OstIoReply>(
      proto::OP_OST_DESTROY,
      [this](RpcContext& ctx, const proto::OstDestroyRequest& req, proto::OstIoReply* rep) {
        // Only the MDS destroys: its capability is for every object (CAPA_ANY_OBJECT).
        STRIA_RETURN_IF_ERROR(CheckCapa(ctx, req, ObjectId(), proto::CAPA_DESTROY |
                                                                 proto::CAPA_ANY_OBJECT));
        STRIA_RETURN_IF_ERROR(ForEachObject(req.objects(), "destroy",
                                            [this](ObjectStore* ost, const ObjectId& obj) {
                                              const Clock::time_point t0 = Clock::now();
                                              Status st = ost->Destroy(obj.group(), obj.object_id());
                                              CountOn(ost, kOstDestroy, t0, "");
                                              return st;
                                            }));
        rep->set_length(static_cast<uint64_t>(req.objects_size()));
        return Status::Ok();
      });

  server->Register<proto::OstGetattrRequest, proto::OstGetattrReply>(
      proto::OP_OST_GETATTR,
      [this](RpcContext& ctx, const proto::OstGetattrRequest& req, proto::OstGetattrReply* rep) {
        if (!req.has_object()) return Status(Code::kInval, "getattr names no object");
        const ObjectId& obj = req.object();
        // A glimpse: any capability for the object will do (need 0).
        STRIA_RETURN_IF_ERROR(CheckCapa(ctx, req, obj, 0));
        const Clock::time_point t0 = Clock::now();
        STRIA_ASSIGN_OR_RETURN(Target t, FindTarget(obj.ost_idx()));
        ObjectStore* ost = t.store;
        Result<ObjectAttr> attr = ost->Getattr(obj.group(), obj.object_id());
        t.stats->Count("", kOstGetattr, t0);
        STRIA_RETURN_IF_ERROR(Note(attr.status(), "getattr", obj));
        rep->set_size(attr->size);
        rep->set_blocks(attr->blocks);
        rep->set_exists(attr->exists);
        return Status::Ok();
      });

  server->Register<proto::OstStatfsRequest, proto::OstStatfsReply>(
      proto::OP_OST_STATFS,
      [this](RpcContext&, const proto::OstStatfsRequest& req, proto::OstStatfsReply* rep) {
        const Clock::time_point t0 = Clock::now();
        STRIA_ASSIGN_OR_RETURN(Target t, FindTarget(req.ost_idx()));
        ObjectStore* ost = t.store;
        Result<OstStatfs> statfs = ost->Statfs();
        t.stats->Count("", kOstStatfs, t0);
        STRIA_ASSIGN_OR_RETURN(OstStatfs s, std::move(statfs));
        rep->set_ost_idx(req.ost_idx());
        rep->set_bsize(s.bsize);
        rep->set_blocks(s.blocks);
        rep->set_bfree(s.bfree);
        rep->set_bavail(s.bavail);
        rep->set_files(s.files);
        rep->set_ffree(s.ffree);
        return Status::Ok();
      });

  // A client on this host may read small pieces of objects from the files themselves
  // (client/local_reads.h): it learns where they are here. Nothing is opened for it: it
  // opens the files with its own credentials, and verifies their checksums itself.
  server->Register<proto::OstLocalAccessRequest, proto::OstLocalAccessReply>(
      proto::OP_OST_LOCAL_ACCESS, [this](RpcContext& ctx, const proto::OstLocalAccessRequest& req,
                                         proto::OstLocalAccessReply* rep) {
        if (!ctx.local_peer) {
          return Status(Code::kInval, "local access is for clients on this host");
        }
        if (!lnet::LocalReadsEnabled()) {
          return Status(Code::kInval, "local reads are off on this OSS (STRIA_LOCAL_READS=0)");
        }
        STRIA_ASSIGN_OR_RETURN(Target t, FindTarget(req.ost_idx()));
        char real[PATH_MAX];
        if (realpath(t.store->dir().c_str(), real) == nullptr) {
          return ErrnoStatus("resolve OST directory " + t.store->dir(), errno);
        }
        rep->set_dir(real);
        rep->set_uuid(t.store->meta().uuid);
        rep->set_object_format(static_cast<uint32_t>(t.store->meta().object_format));
        rep->set_counts_destroys(true);
        return Status::Ok();
      });

  server->Register<proto::OstSyncRequest, proto::OstIoReply>(
      proto::OP_OST_SYNC,
      [this](RpcContext&, const proto::OstSyncRequest& req, proto::OstIoReply* rep) {
        const Clock::time_point t0 = Clock::now();
        if (req.objects_size() == 0) {
          STRIA_ASSIGN_OR_RETURN(Target t, FindTarget(req.ost_idx()));
          ObjectStore* ost = t.store;
          Status st = ost->SyncAll();
          t.stats->Count(req.jobid(), kOstSync, t0);
          if (!st.ok()) LOG_WARN("sync of OST {} failed: {}", req.ost_idx(), st.ToString());
          return st;
        }
        // One sync request counts once, on the OST of its first object.
        Status st = ForEachObject(req.objects(), "sync", [](ObjectStore* ost, const ObjectId& obj) {
          return ost->SyncObject(obj.group(), obj.object_id());
        });
        if (auto first = Find(req.objects(0).ost_idx()); first.ok()) {
          CountOn(*first, kOstSync, t0, req.jobid());
        }
        return st;
      });

  server->Register<proto::OstScrubRequest, proto::OstScrubReply>(
      proto::OP_OST_SCRUB,
      [this](RpcContext&, const proto::OstScrubRequest& req, proto::OstScrubReply* rep) {
        STRIA_ASSIGN_OR_RETURN(ObjectStore * ost, Find(req.ost_idx()));
        STRIA_ASSIGN_OR_RETURN(*rep, Scrub(ost, req.max_listed()));
        return Status::Ok();
      });
}

void OssService::CountOn(ObjectStore* ost, OstCounter op, std::chrono::steady_clock::time_point t0,
                         std::string_view jobid) const {
  OstStats* stats = nullptr;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = stats_.find(ost->meta().index);
    if (it != stats_.end()) stats = it->second.get();
  }
  if (stats) stats->Count(jobid, op, t0);
}

Result<proto::OstScrubReply> OssService::Scrub(ObjectStore* ost, uint32_t max_listed) {
  const uint32_t index = ost->meta().index;
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (!scrubbing_.insert(index).second) {
      return Status(Code::kBusy, fmt::format("a scrub of OST {} is already running", index));
    }
  }
  const size_t listed =
      max_listed == 0 ? kDefaultScrubListed : std::min(max_listed, kMaxScrubListed);
  Result<proto::OstScrubReply> r = ScrubOst(*ost, listed);
  std::unique_lock<std::shared_mutex> lock(mu_);
  scrubbing_.erase(index);
  return r;
}

Status OssService::ForEachObject(
    const google::protobuf::RepeatedPtrField<proto::ObjectId>& objects, std::string_view op,
    const std::function<Status(ObjectStore*, const proto::ObjectId&)>& fn) const {
  if (objects.size() > kMaxObjectsPerRequest) {
    return Status(Code::kInval, fmt::format("{} of {} objects exceeds the limit {}", op,
                                            objects.size(), kMaxObjectsPerRequest));
  }
  // Check every index first, so a bad request changes nothing.
  std::vector<ObjectStore*> stores;
  stores.reserve(objects.size());
  for (const proto::ObjectId& obj : objects) {
    STRIA_ASSIGN_OR_RETURN(ObjectStore * ost, Find(obj.ost_idx()));
    stores.push_back(ost);
  }
  for (int i = 0; i < objects.size(); ++i) {
    STRIA_RETURN_IF_ERROR(Note(fn(stores[i], objects[i]), op, objects[i]));
  }
  return Status::Ok();
}

}  // namespace stria::oss
