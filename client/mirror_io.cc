#include "client/mirror_io.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "client/capa.h"
#include "client/client.h"
#include "client/internal/thread_pool.h"
#include "common/log.h"
#include "proto/layout_mirrors.h"

namespace stria::client {

namespace {

// The mirror (or its OSS) did not answer: try the others, skip it for a while.
bool Unreachable(const Status& st) {
  return st.retryable() || st.code() == Code::kDisconnected || st.code() == Code::kTimeout ||
         st.code() == Code::kNoOst || st.code() == Code::kShutdown;
}

// Errors that another mirror would answer the same way: the caller's, not a failing copy's.
bool CallerError(const Status& st) {
  return st.code() == Code::kAccess || st.code() == Code::kPerm || st.code() == Code::kInval ||
         st.code() == Code::kFBig;
}

bool Overlaps(const proto::LayoutComponent& c, uint64_t start, uint64_t end) {
  return c.start() < end && start < c.end();
}

}  // namespace

MirroredIo::MirroredIo(StripedIo* io, OstTransport* transport, internal::ThreadPool* pool,
                       int mirror_timeout_ms)
    : io_(io), transport_(transport), pool_(pool), timeout_ms_(std::max(mirror_timeout_ms, 1)) {}

std::shared_ptr<const proto::Layout> MirroredIo::Effective(const proto::Layout& given) {
  {
    std::lock_guard lock(mu_);
    auto it = newest_.find(given.ino());
    if (it != newest_.end() && it->second->generation() > given.generation()) return it->second;
  }
  return std::make_shared<const proto::Layout>(given);
}

void MirroredIo::Learn(const proto::Layout& newer) {
  std::lock_guard lock(mu_);
  auto& held = newest_[newer.ino()];
  if (held && held->generation() >= newer.generation()) return;
  held = std::make_shared<const proto::Layout>(newer);
  // Only files that had a mark lately are kept; an old entry is one to drop.
  if (newest_.size() > 4096) newest_.erase(newest_.begin());
}

bool MirroredIo::MirrorDown(const proto::Layout& l, uint32_t mirror, uint64_t start,
                            uint64_t end) {
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  for (const proto::LayoutComponent& c : l.components()) {
    if (MirrorIdOf(c.id()) != mirror || !Overlaps(c, start, end)) continue;
    for (const proto::StripeObject& o : c.layout().objects()) {
      auto it = down_until_.find(o.ost_idx());
      if (it != down_until_.end() && it->second > now) return true;
    }
  }
  return false;
}

void MirroredIo::NoteDown(const proto::Layout& l, uint32_t mirror, uint64_t start,
                          uint64_t end) {
  const auto until = Clock::now() + std::chrono::milliseconds(kDownHoldMs);
  std::lock_guard lock(mu_);
  for (const proto::LayoutComponent& c : l.components()) {
    if (MirrorIdOf(c.id()) != mirror || !Overlaps(c, start, end)) continue;
    for (const proto::StripeObject& o : c.layout().objects()) down_until_[o.ost_idx()] = until;
  }
}

Status MirroredIo::MarkStale(const proto::Layout& l, uint32_t mirror, uint64_t start,
                             uint64_t end, bool damaged, OpenCapas* capas) {
  proto::MirrorRequest req;
  *req.mutable_cred() = capas != nullptr ? capas->opened().cred : ProcessCredentials();
  req.set_handle(capas != nullptr ? capas->opened().handle : 0);
  req.set_ino(l.ino());
  req.set_command(proto::MIRROR_STALE);
  req.set_mirror_id(mirror);
  req.set_start(start);
  req.set_end(end);
  req.set_damaged(damaged);
  std::string body, reply;
  req.SerializeToString(&body);
  Status st = transport_->MdsCallBulk(proto::OP_MDS_MIRROR, body, &reply, {});
  if (!st.ok()) {
    LOG_WARN("inode {}: could not mark mirror {} stale over [{}, {}): {}", l.ino(), mirror,
             start, end, st.ToString());
    return st;
  }
  proto::MirrorReply rep;
  if (!rep.ParseFromString(reply)) return Status(Code::kProtocol, "bad OP_MDS_MIRROR reply");
  Learn(rep.layout());
  stats_.stale_marks.fetch_add(1, std::memory_order_relaxed);
  LOG_WARN("inode {}: mirror {} marked stale over [{}, {}){}", l.ino(), mirror, start, end,
           damaged ? " (damaged bytes: the MDS resyncs them)" : "");
  return Status::Ok();
}

Status MirroredIo::Fan(const proto::Layout& given, uint64_t start, uint64_t end,
                       uint64_t mark_start, uint64_t mark_end, OpenCapas* capas,
                       const std::function<Status(const proto::Layout&, int)>& op) {
  const std::shared_ptr<const proto::Layout> l = Effective(given);
  const std::vector<uint32_t> ids = MirrorIds(*l);
  // Mirrors stale over the whole range already hold nothing of it that anyone reads.
  std::vector<uint32_t> live, held;
  for (uint32_t m : ids) {
    if (StaleCovers(*l, m, start, end)) continue;
    (MirrorDown(*l, m, start, end) ? held : live).push_back(m);
  }
  if (live.empty()) live.swap(held);  // no other: try it after all
  if (live.empty()) live = ids;       // every mirror marked: the bytes go to all
  std::vector<Status> results(live.size(), Status(Code::kIO, "not sent"));
  // Sends to every mirror whose result is not OK yet.
  auto run = [&](int deadline_ms) {
    internal::ParallelFor(pool_, live.size(), [&](size_t i) -> Status {
      if (!results[i].ok()) results[i] = op(MirrorView(*l, live[i]), deadline_ms);
      return Status::Ok();
    }).IgnoreError();
  };
  run(timeout_ms_);
  auto succeeded = [&] {
    return std::count_if(results.begin(), results.end(), [](const Status& s) { return s.ok(); });
  };
  if (succeeded() == 0) {
    for (const Status& st : results) {
      if (CallerError(st)) return st;
    }
    // Every mirror failed within the mirror timeout: behave as an unmirrored file would,
    // resending with the client's own deadline.
    run(-1);
    if (succeeded() == 0) return results.front();
  }
  std::vector<uint32_t> mark = held;
  for (size_t i = 0; i < live.size(); ++i) {
    const Status& st = results[i];
    if (st.ok()) continue;
    if (CallerError(st)) return st;
    if (Unreachable(st)) NoteDown(*l, live[i], start, end);
    LOG_WARN("inode {}: mirror {} failed ({}); completing on the others", l->ino(), live[i],
             st.ToString());
    mark.push_back(live[i]);
  }
  for (uint32_t m : mark) {
    STRIA_RETURN_IF_ERROR(MarkStale(*l, m, mark_start, mark_end, /*damaged=*/false, capas));
  }
  if (!mark.empty()) stats_.degraded_writes.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status MirroredIo::Write(const proto::Layout& layout, uint64_t offset,
                         std::span<const uint8_t> data, bool sync, OpenCapas* capas) {
  if (!IsMirrored(layout) || data.empty()) {
    return io_->Write(layout, offset, data, sync, capas);
  }
  // A mirror that misses these bytes is marked from here to the end of the file, so the
  // writes after this one (a stream) find it marked and need no mark of their own.
  return Fan(layout, offset, offset + data.size(), offset, LayoutEnd(layout), capas,
             [&](const proto::Layout& view, int deadline_ms) {
               return io_->Write(view, offset, data, sync, capas, deadline_ms);
             });
}

Status MirroredIo::TruncateObjects(const proto::Layout& layout, uint64_t size,
                                   OpenCapas* capas) {
  if (!IsMirrored(layout)) return io_->TruncateObjects(layout, size, capas);
  const uint64_t end = LayoutEnd(layout);
  return Fan(layout, std::min(size, end - 1), end, std::min(size, end - 1), end, capas,
             [&](const proto::Layout& view, int deadline_ms) {
               return io_->TruncateObjects(view, size, capas, deadline_ms);
             });
}

Status MirroredIo::PunchObjects(const proto::Layout& layout, uint64_t offset, uint64_t end,
                                OpenCapas* capas) {
  if (!IsMirrored(layout) || end <= offset) return io_->PunchObjects(layout, offset, end, capas);
  return Fan(layout, offset, end, offset, LayoutEnd(layout), capas,
             [&](const proto::Layout& view, int deadline_ms) {
               return io_->PunchObjects(view, offset, end, capas, deadline_ms);
             });
}

Status MirroredIo::SyncObjects(const proto::Layout& layout, OpenCapas* capas) {
  if (!IsMirrored(layout)) return io_->SyncObjects(layout);
  // A mirror that cannot make its bytes durable may lose any of them: all are stale.
  return Fan(layout, 0, LayoutEnd(layout), 0, LayoutEnd(layout), capas,
             [&](const proto::Layout& view, int deadline_ms) {
               return io_->SyncObjects(view, deadline_ms);
             });
}

Result<uint64_t> MirroredIo::GlimpseSize(const proto::Layout& layout, OpenCapas* capas) {
  if (!IsMirrored(layout)) return io_->GlimpseSize(layout, capas);
  const std::shared_ptr<const proto::Layout> l = Effective(layout);
  // The mirrors in sync know the size; a stale one may not.
  std::vector<uint32_t> ids;
  for (uint32_t m : MirrorIds(*l)) {
    if (!HasStale(MirrorView(*l, m))) ids.push_back(m);
  }
  if (ids.empty()) ids = MirrorIds(*l);
  std::vector<Result<uint64_t>> sizes(ids.size(), Status(Code::kIO, "not asked"));
  internal::ParallelFor(pool_, ids.size(), [&](size_t i) -> Status {
    sizes[i] = io_->GlimpseSize(MirrorView(*l, ids[i]), capas,
                                i + 1 == ids.size() ? -1 : timeout_ms_);
    return Status::Ok();
  }).IgnoreError();
  Result<uint64_t> best = sizes.back();
  for (const Result<uint64_t>& s : sizes) {
    if (s.ok() && (!best.ok() || *s > *best)) best = s;
  }
  return best;
}

Result<size_t> MirroredIo::Read(const proto::Layout& layout, uint64_t file_size,
                                uint64_t offset, std::span<uint8_t> buf, bool* missing_object,
                                OpenCapas* capas) {
  if (!IsMirrored(layout)) return io_->Read(layout, file_size, offset, buf, missing_object, capas);
  if (buf.empty() || offset >= file_size) return size_t{0};
  const std::shared_ptr<const proto::Layout> l = Effective(layout);
  const uint64_t len = std::min<uint64_t>(buf.size(), file_size - offset);
  const std::vector<MirrorPiece> pieces = PlanMirrorRead(*l, offset, len);
  std::atomic<bool> missing{false};
  std::mutex damaged_mu;
  std::vector<std::tuple<uint32_t, uint64_t, uint64_t>> damaged;  // mirror, start, end
  Status st = internal::ParallelFor(pool_, pieces.size(), [&](size_t i) -> Status {
    const MirrorPiece& p = pieces[i];
    std::span<uint8_t> dst = buf.subspan(p.start - offset, p.end - p.start);
    if (p.mirrors.empty()) {  // a hole in every mirror
      std::memset(dst.data(), 0, dst.size());
      return Status::Ok();
    }
    // Mirrors on an OST that failed lately go last.
    std::vector<uint32_t> order;
    for (uint32_t m : p.mirrors) {
      if (!MirrorDown(*l, m, p.start, p.end)) order.push_back(m);
    }
    for (uint32_t m : p.mirrors) {
      if (std::find(order.begin(), order.end(), m) == order.end()) order.push_back(m);
    }
    Status last;
    for (size_t k = 0; k < order.size(); ++k) {
      const uint32_t m = order[k];
      const bool last_one = k + 1 == order.size();
      bool miss = false;
      Result<size_t> n = io_->Read(MirrorView(*l, m), file_size, p.start, dst, &miss, capas,
                                   last_one ? -1 : timeout_ms_);
      if (n.ok()) {
        if (miss) missing.store(true);
        if (m != p.mirrors.front()) stats_.read_failovers.fetch_add(1, std::memory_order_relaxed);
        return Status::Ok();
      }
      last = n.status();
      if (last.code() == Code::kCorrupt) {
        LOG_WARN("inode {}: mirror {} bytes [{}, {}) failed their checksum: {}; reading "
                 "another mirror", l->ino(), m, p.start, p.end, last.ToString());
        stats_.damaged_reads.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard lock(damaged_mu);
        damaged.emplace_back(m, p.start, p.end);
        continue;
      }
      if (Unreachable(last)) {
        NoteDown(*l, m, p.start, p.end);
        continue;
      }
      return last;
    }
    return last;
  });
  // The damage is repaired from the good copy by the MDS's resync (it has the authority to
  // write every object, this open may be read-only): a report is all it takes.
  for (const auto& [m, start, end] : damaged) {
    if (!OtherMirrorHolds(*l, m, start, end)) continue;  // nothing good to repair from
    MarkStale(*l, m, start, end, /*damaged=*/true, capas).IgnoreError();
  }
  STRIA_RETURN_IF_ERROR(st);
  if (missing_object != nullptr) *missing_object = missing.load();
  return static_cast<size_t>(len);
}

}  // namespace stria::client
