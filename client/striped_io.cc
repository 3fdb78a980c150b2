#include "client/striped_io.h"

#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <unordered_map>

#include "client/capa.h"
#include "client/internal/thread_pool.h"
#include "client/jobid.h"
#include "client/local_reads.h"
#include "proto/layout_components.h"

namespace stria::client {

namespace {

proto::ObjectId ObjectOf(const proto::Layout& layout, uint32_t stripe) {
  const proto::StripeObject& o = layout.objects(static_cast<int>(stripe));
  proto::ObjectId id;
  id.set_ost_idx(o.ost_idx());
  id.set_object_id(o.object_id());
  id.set_group(o.group());
  return id;
}

}  // namespace

std::vector<ObjectIo> PlanStripedIo(const StripeGeometry& g, uint64_t offset, uint64_t length,
                                    IoKind kind, uint64_t max_rpc_bytes) {
  std::vector<ObjectIo> plan;
  if (length == 0) return plan;
  if (max_rpc_bytes == 0) max_rpc_bytes = UINT64_MAX;
  std::unordered_map<uint32_t, size_t> last;  // stripe -> index of its latest ObjectIo
  for (const ObjectExtent& e : MapExtent(g, offset, length)) {
    auto it = last.find(e.stripe);
    if (it != last.end()) {
      ObjectIo& io = plan[it->second];
      const ObjectIo::Segment& tail = io.segments.back();
      const bool obj_contig = io.obj_offset + io.length == e.obj_offset;
      const bool buf_contig = tail.buf_offset + tail.length == e.buf_offset;
      const bool fits = io.length + e.length <= max_rpc_bytes;
      if (obj_contig && fits && (kind == IoKind::kWrite || buf_contig)) {
        io.length += e.length;
        if (buf_contig) {
          io.segments.back().length += e.length;
        } else {
          io.segments.push_back({e.buf_offset, e.length});
        }
        continue;
      }
    }
    // A single chunk larger than max_rpc_bytes is split too.
    uint64_t done = 0;
    while (done < e.length) {
      const uint64_t n = std::min(e.length - done, max_rpc_bytes);
      ObjectIo io;
      io.stripe = e.stripe;
      io.obj_offset = e.obj_offset + done;
      io.length = n;
      io.segments.push_back({e.buf_offset + done, n});
      last[e.stripe] = plan.size();
      plan.push_back(std::move(io));
      done += n;
    }
  }
  return plan;
}

Result<StripeGeometry> LayoutGeometry(const proto::Layout& layout) {
  if (layout.pattern() != proto::PATTERN_RAID0) {
    return Status(Code::kInval, "layout pattern " + std::to_string(layout.pattern()) +
                                    " is not RAID-0");
  }
  const int n = layout.objects_size();
  if (n == 0) return Status(Code::kInval, "layout has no stripe objects");
  if (layout.stripe_count() > 0 && layout.stripe_count() != n) {
    return Status(Code::kInval, "layout stripe_count " + std::to_string(layout.stripe_count()) +
                                    " != " + std::to_string(n) + " objects");
  }
  StripeGeometry g;
  g.stripe_size = layout.stripe_size();
  g.stripe_count = static_cast<uint32_t>(n);
  STRIA_RETURN_IF_ERROR(ValidateStripe(g.stripe_size, g.stripe_count));
  return g;
}

StripedIo::StripedIo(OstTransport* transport, internal::ThreadPool* pool,
                     uint64_t max_rpc_bytes)
    : transport_(transport), pool_(pool), max_rpc_bytes_(max_rpc_bytes) {}

template <typename Req, typename Rep>
Status StripedIo::CallMds(uint16_t opcode, const Req& req, Rep* rep, const lnet::CallBulk& bulk) {
  std::string body, reply;
  req.SerializeToString(&body);
  STRIA_RETURN_IF_ERROR(transport_->MdsCallBulk(opcode, body, &reply, bulk));
  if (!rep->ParseFromString(reply)) {
    return Status(Code::kProtocol, "MDS reply does not parse as " + rep->GetTypeName());
  }
  return Status::Ok();
}

template <typename Req, typename Rep>
Status StripedIo::Call(uint32_t ost_idx, uint16_t opcode, const Req& req, Rep* rep,
                       const lnet::CallBulk& bulk, int deadline_ms) {
  std::string body, reply;
  req.SerializeToString(&body);
  STRIA_RETURN_IF_ERROR(transport_->OstCallRaw(ost_idx, opcode, body, &reply, bulk, deadline_ms));
  if (!rep->ParseFromString(reply)) {
    return Status(Code::kProtocol, "OST reply does not parse as " + rep->GetTypeName());
  }
  return Status::Ok();
}

bool StripedIo::CapableLocally(OpenCapas* capas, const proto::ObjectId& obj) {
  if (capas == nullptr || !capas->keyed()) return true;
  // A keyed cluster: only with a capability to read the object that the OSS would accept.
  proto::Capability capa;
  uint64_t gen = 0;
  return capas->Fill(obj, &capa, &gen) && !capas->RenewDue();
}

template <typename Req, typename Rep>
Status StripedIo::CallObject(OpenCapas* capas, uint16_t opcode, Req& req, Rep* rep,
                             const lnet::CallBulk& bulk, int deadline_ms) {
  const uint32_t ost = req.object().ost_idx();
  if (capas == nullptr || !capas->keyed()) return Call(ost, opcode, req, rep, bulk, deadline_ms);
  for (int attempt = 0;; ++attempt) {
    uint64_t gen = 0;
    bool have = capas->Fill(req.object(), req.mutable_capa(), &gen);
    if (!have) {
      // A component instantiated or a layout swapped since the grant: ask for the file's
      // objects now.
      STRIA_RETURN_IF_ERROR(capas->Renew(transport_, gen));
      have = capas->Fill(req.object(), req.mutable_capa(), &gen);
      if (!have) {
        return Status(Code::kAccess, "no capability for object " +
                                         std::to_string(req.object().object_id()) + " on OST " +
                                         std::to_string(ost) + ": not an object of this file");
      }
    } else if (attempt == 0 && capas->RenewDue()) {
      // Renewed ahead of expiry; should the MDS not answer, the current one still works.
      if (capas->Renew(transport_, gen).ok()) capas->Fill(req.object(), req.mutable_capa(), &gen);
    }
    Status st = Call(ost, opcode, req, rep, bulk, deadline_ms);
    if (st.code() != Code::kCapaExpired || attempt >= 2) return st;
    STRIA_RETURN_IF_ERROR(capas->Renew(transport_, gen));
  }
}

Result<std::vector<StripedIo::PlannedIo>> StripedIo::Plan(const proto::Layout& layout,
                                                          uint64_t offset, uint64_t length,
                                                          IoKind kind,
                                                          std::vector<ObjectIo::Segment>* holes) {
  std::vector<PlannedIo> out;
  const uint64_t end = offset + length;
  const uint64_t layout_end = LayoutEnd(layout);
  if (kind == IoKind::kWrite && end > layout_end) {
    return Status(Code::kFBig, "write past the end of the file's layout (" +
                                   std::to_string(layout_end) + ")");
  }
  for (const LayoutExtent& e : LayoutExtents(layout)) {
    const uint64_t from = std::max(offset, e.start);
    const uint64_t to = std::min(end, e.end);
    if (from >= to) continue;
    if (e.init && e.on_mdt) {
      // Data-on-MDT: file offsets go to the MDS as they are, in RPCs of at most max_rpc_bytes.
      for (uint64_t pos = from; pos < to;) {
        const uint64_t n = std::min(to - pos, max_rpc_bytes_ == 0 ? to - pos : max_rpc_bytes_);
        ObjectIo io;
        io.obj_offset = pos;
        io.length = n;
        io.segments.push_back({pos - offset, n});
        out.push_back({e.plain, std::move(io), /*on_mdt=*/true});
        pos += n;
      }
      continue;
    }
    if (!e.init) {
      if (kind == IoKind::kWrite) {
        return Status(Code::kInval, "layout component [" + std::to_string(e.start) + ", " +
                                        std::to_string(e.end) +
                                        ") has no objects yet (OP_MDS_LAYOUT_INTENT first)");
      }
      holes->push_back({from - offset, to - from});
      continue;
    }
    STRIA_ASSIGN_OR_RETURN(StripeGeometry g, LayoutGeometry(*e.plain));
    for (ObjectIo& io : PlanStripedIo(g, from, to - from, kind, max_rpc_bytes_)) {
      for (ObjectIo::Segment& seg : io.segments) seg.buf_offset += from - offset;
      out.push_back({e.plain, std::move(io)});
    }
  }
  // A read past the last component (a file truncated up beyond it) reads a hole.
  if (end > layout_end && holes != nullptr) {
    const uint64_t from = std::max(offset, layout_end);
    holes->push_back({from - offset, end - from});
  }
  return out;
}

Result<size_t> StripedIo::Read(const proto::Layout& layout, uint64_t file_size,
                               uint64_t offset, std::span<uint8_t> buf, bool* missing_object,
                               OpenCapas* capas, int deadline_ms) {
  const std::string job = CurrentJobId();  // the caller's, for the OSTs' job_stats
  std::atomic<bool> missing{false};
  if (buf.empty() || offset >= file_size) return size_t{0};
  const uint64_t len = std::min<uint64_t>(buf.size(), file_size - offset);
  std::vector<ObjectIo::Segment> holes;
  STRIA_ASSIGN_OR_RETURN(std::vector<PlannedIo> plan,
                         Plan(layout, offset, len, IoKind::kRead, &holes));
  for (const ObjectIo::Segment& h : holes) std::memset(buf.data() + h.buf_offset, 0, h.length);
  STRIA_RETURN_IF_ERROR(internal::ParallelFor(pool_, plan.size(), [&](size_t i) -> Status {
    const ObjectIo& io = plan[i].io;
    const uint64_t buf_offset = io.segments.front().buf_offset;
    uint8_t* dst = buf.data() + buf_offset;
    // The piece that ends at the file's end asks for whole pages where the caller's buffer
    // has room: a page-aligned reply may land in place (lnet/shared_bulk.h). The object holds
    // nothing past the file's size, and the slack is not returned.
    uint64_t ask = io.length;
    if (const uint64_t whole = (io.length + 4095) & ~uint64_t{4095};
        buf_offset + io.length == len && buf_offset + whole <= buf.size()) {
      ask = whole;
    }
    size_t got = 0;
    lnet::CallBulk bulk;
    bulk.in = std::span<uint8_t>(dst, ask);
    bulk.in_len = &got;
    if (plan[i].on_mdt) {
      proto::DomIoRequest req;
      req.set_ino(layout.ino());
      req.set_offset(io.obj_offset);
      req.set_length(io.length);
      proto::DomIoReply rep;
      STRIA_RETURN_IF_ERROR(CallMds(proto::OP_MDS_DOM_READ, req, &rep, bulk));
      if (got > io.length) return Status(Code::kProtocol, "MDS returned too many DoM bytes");
      if (got < io.length) std::memset(dst + got, 0, io.length - got);
      return Status::Ok();
    }
    proto::OstIoRequest req;
    req.set_jobid(job);
    *req.mutable_object() = ObjectOf(*plan[i].plain, io.stripe);
    req.set_offset(io.obj_offset);
    req.set_length(ask);
    if (local_ != nullptr && CapableLocally(capas, req.object())) {
      STRIA_ASSIGN_OR_RETURN(
          bool done, local_->TryRead(req.object(), io.obj_offset, std::span<uint8_t>(dst, ask),
                                     &got, deadline_ms));
      if (done) {
        if (got < io.length) std::memset(dst + got, 0, io.length - got);
        return Status::Ok();
      }
    }
    proto::OstIoReply rep;
    Status st = CallObject(capas, proto::OP_OST_READ, req, &rep, bulk, deadline_ms);
    if (st.code() == Code::kNoEnt) {
      got = 0;  // an object never written: all hole
      missing.store(true);
    } else if (!st.ok()) {
      return st;
    } else if (rep.missing()) {
      missing.store(true);
    }
    if (got > ask) {
      return Status(Code::kProtocol, "OST returned " + std::to_string(got) + " bytes for a " +
                                         std::to_string(ask) + "-byte read");
    }
    // Inside the file size, what the object lacks is a hole.
    if (got < io.length) std::memset(dst + got, 0, io.length - got);
    return Status::Ok();
  }));
  if (missing_object != nullptr) *missing_object = missing.load();
  return static_cast<size_t>(len);
}

Status StripedIo::Write(const proto::Layout& layout, uint64_t offset,
                        std::span<const uint8_t> data, bool sync, OpenCapas* capas,
                        int deadline_ms) {
  const std::string job = CurrentJobId();  // the caller's, for the OSTs' job_stats
  if (data.empty()) return Status::Ok();
  if (offset > kMaxFileSize || data.size() > kMaxFileSize - offset) {
    return Status(Code::kFBig, "write past the maximum file size");
  }
  STRIA_ASSIGN_OR_RETURN(std::vector<PlannedIo> plan,
                         Plan(layout, offset, data.size(), IoKind::kWrite, nullptr));
  return internal::ParallelFor(pool_, plan.size(), [&](size_t i) -> Status {
    const ObjectIo& io = plan[i].io;
    std::vector<iovec> iov(io.segments.size());
    for (size_t s = 0; s < io.segments.size(); ++s) {
      iov[s].iov_base = const_cast<uint8_t*>(data.data() + io.segments[s].buf_offset);
      iov[s].iov_len = io.segments[s].length;
    }
    lnet::CallBulk bulk;
    bulk.out = iov;
    if (plan[i].on_mdt) {
      proto::DomIoRequest req;
      req.set_ino(layout.ino());
      req.set_offset(io.obj_offset);
      req.set_length(io.length);
      req.set_sync(sync);
      proto::DomIoReply rep;
      STRIA_RETURN_IF_ERROR(CallMds(proto::OP_MDS_DOM_WRITE, req, &rep, bulk));
      if (rep.length() != io.length) return Status(Code::kIO, "short Data-on-MDT write");
      return Status::Ok();
    }
    proto::OstIoRequest req;
    req.set_jobid(job);
    *req.mutable_object() = ObjectOf(*plan[i].plain, io.stripe);
    req.set_offset(io.obj_offset);
    req.set_length(io.length);
    req.set_sync(sync);
    proto::OstIoReply rep;
    STRIA_RETURN_IF_ERROR(CallObject(capas, proto::OP_OST_WRITE, req, &rep, bulk, deadline_ms));
    if (rep.length() != io.length) {
      return Status(Code::kIO, "short write on OST " + std::to_string(req.object().ost_idx()) +
                                   ": " + std::to_string(rep.length()) + " of " +
                                   std::to_string(io.length) + " bytes");
    }
    return Status::Ok();
  });
}

Result<std::vector<StripedIo::StripeRef>> StripedIo::Stripes(const proto::Layout& layout) {
  std::vector<StripeRef> out;
  for (const LayoutExtent& e : LayoutExtents(layout)) {
    if (!e.init || e.on_mdt) continue;
    STRIA_ASSIGN_OR_RETURN(StripeGeometry g, LayoutGeometry(*e.plain));
    for (uint32_t s = 0; s < g.stripe_count; ++s) out.push_back({e, g, s});
  }
  return out;
}

Status StripedIo::TruncateObjects(const proto::Layout& layout, uint64_t size,
                                  OpenCapas* capas, int deadline_ms) {
  const std::string job = CurrentJobId();  // the caller's, for the OSTs' job_stats
  if (size > kMaxFileSize) return Status(Code::kFBig, "size past the maximum file size");
  STRIA_ASSIGN_OR_RETURN(std::vector<StripeRef> stripes, Stripes(layout));
  return internal::ParallelFor(pool_, stripes.size(), [&](size_t i) -> Status {
    const StripeRef& r = stripes[i];
    proto::OstTruncateRequest req;
    req.set_jobid(job);
    *req.mutable_object() = ObjectOf(*r.extent.plain, r.stripe);
    // A component keeps no byte at or past the new size: none at all when the size is at or
    // before its start (its objects' low offsets belong to earlier components' bytes).
    req.set_size(size <= r.extent.start
                     ? 0
                     : ObjectSizeForFileSize(r.geometry, r.stripe, std::min(size, r.extent.end)));
    proto::OstIoReply rep;
    return CallObject(capas, proto::OP_OST_TRUNCATE, req, &rep, {}, deadline_ms);
  });
}

Status StripedIo::PunchObjects(const proto::Layout& layout, uint64_t offset, uint64_t end,
                               OpenCapas* capas, int deadline_ms) {
  const std::string job = CurrentJobId();  // the caller's, for the OSTs' job_stats
  // The Data-on-MDT part: zeros written over it (at most the DoM component, small).
  if (const uint64_t dom_end = DomEnd(layout); offset < dom_end) {
    const std::vector<uint8_t> zeros(std::min(end, dom_end) - offset, 0);
    STRIA_RETURN_IF_ERROR(Write(layout, offset, zeros, /*sync=*/false, capas, deadline_ms));
  }
  STRIA_ASSIGN_OR_RETURN(std::vector<StripeRef> stripes, Stripes(layout));
  return internal::ParallelFor(pool_, stripes.size(), [&](size_t i) -> Status {
    // The bytes of object s inside file range [from, to) are its object offsets
    // [ObjectSize(from), ObjectSize(to)).
    const StripeRef& r = stripes[i];
    const uint64_t from = std::max(offset, r.extent.start);
    const uint64_t to = std::min(end, r.extent.end);
    if (from >= to) return Status::Ok();
    const uint64_t obj_from = ObjectSizeForFileSize(r.geometry, r.stripe, from);
    const uint64_t obj_to = ObjectSizeForFileSize(r.geometry, r.stripe, to);
    if (obj_to <= obj_from) return Status::Ok();
    proto::OstPunchRequest req;
    req.set_jobid(job);
    *req.mutable_object() = ObjectOf(*r.extent.plain, r.stripe);
    req.set_offset(obj_from);
    req.set_length(obj_to - obj_from);
    proto::OstIoReply rep;
    return CallObject(capas, proto::OP_OST_PUNCH, req, &rep, {}, deadline_ms);
  });
}

Status StripedIo::SyncObjects(const proto::Layout& layout, int deadline_ms) {
  const std::string job = CurrentJobId();  // the caller's, for the OSTs' job_stats
  if (DomEnd(layout) > 0) {
    // The Data-on-MDT bytes are in the MDS's WAL: syncing it makes them durable.
    proto::SyncRequest req;
    req.set_ino(layout.ino());
    proto::SyncReply rep;
    STRIA_RETURN_IF_ERROR(CallMds(proto::OP_MDS_SYNC, req, &rep));
  }
  std::map<uint32_t, proto::OstSyncRequest> per_ost;
  for (const proto::StripeObject* o : AllObjects(layout)) {
    proto::OstSyncRequest& req = per_ost[o->ost_idx()];
    req.set_jobid(job);
    req.set_ost_idx(o->ost_idx());
    proto::ObjectId* id = req.add_objects();
    id->set_ost_idx(o->ost_idx());
    id->set_object_id(o->object_id());
    id->set_group(o->group());
  }
  std::vector<const proto::OstSyncRequest*> reqs;
  for (auto& [idx, req] : per_ost) reqs.push_back(&req);
  return internal::ParallelFor(pool_, reqs.size(), [&](size_t i) -> Status {
    proto::OstIoReply rep;
    return Call(reqs[i]->ost_idx(), proto::OP_OST_SYNC, *reqs[i], &rep, {}, deadline_ms);
  });
}

Result<uint64_t> StripedIo::GlimpseSize(const proto::Layout& layout, OpenCapas* capas,
                                        int deadline_ms) {
  STRIA_ASSIGN_OR_RETURN(std::vector<StripeRef> stripes, Stripes(layout));
  std::vector<uint64_t> sizes(stripes.size(), 0);
  STRIA_RETURN_IF_ERROR(internal::ParallelFor(pool_, stripes.size(), [&](size_t i) -> Status {
    const StripeRef& r = stripes[i];
    proto::OstGetattrRequest req;
    *req.mutable_object() = ObjectOf(*r.extent.plain, r.stripe);
    proto::OstGetattrReply rep;
    Status st = CallObject(capas, proto::OP_OST_GETATTR, req, &rep, {}, deadline_ms);
    if (st.code() == Code::kNoEnt) return Status::Ok();
    STRIA_RETURN_IF_ERROR(st);
    if (!rep.exists()) return Status::Ok();
    const uint64_t end = FileSizeFromObject(r.geometry, r.stripe, rep.size());
    // An object holds bytes of its component's extent only.
    if (end > r.extent.start) sizes[i] = std::min(end, r.extent.end);
    return Status::Ok();
  }));
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

}  // namespace stria::client
