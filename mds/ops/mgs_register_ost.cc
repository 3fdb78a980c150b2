// OP_MGS_REGISTER_OST: an OSS announces one of its OSTs (at start and every few seconds as a
// heartbeat). The entry (index, nid, uuid, active, last_seen) is created or refreshed; the
// config generation bumps when the table changes (a new OST, a new NID, reactivation).
//   kWrongFs: the OST names another filesystem. kExist: the index is registered with another
//   uuid (a different OST directory claims the same index). kInval: malformed fields.
#include <mutex>

#include "common/log.h"
#include "mds/internal/layout_alloc.h"
#include "mds/ops/ops.h"
#include "mds/txn.h"

namespace stria::mds {

inline constexpr uint32_t kMaxOstIndex = 65535;

Status RegisterOst(Namespace& ns, const proto::RegisterOstRequest& req,
                   proto::RegisterOstReply* rep) {
  if (req.fsname() != ns.fsname()) {
    return Status(Code::kWrongFs, "OST belongs to filesystem '" + req.fsname() +
                                      "', this MGS serves '" + ns.fsname() + "'");
  }
  if (req.index() > kMaxOstIndex) {
    return Status(Code::kInval, "OST index " + std::to_string(req.index()) + " is above 65535");
  }
  if (req.nid().empty() || req.nid().size() > 256 || req.nid().find('@') == std::string::npos) {
    return Status(Code::kInval, "malformed OST NID '" + req.nid() + "'");
  }
  if (req.uuid().empty() || req.uuid().size() > 128) {
    return Status(Code::kInval, "OST uuid must be 1 to 128 bytes");
  }
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  auto& osts = txn.osts();
  auto it = osts.find(req.index());
  bool changed = false;
  if (it == osts.end()) {
    OstState st;
    st.info.set_index(req.index());
    st.info.set_uuid(req.uuid());
    it = osts.emplace(req.index(), st).first;
    changed = true;
    LOG_INFO("OST{:04x} registered: uuid {} at {}", req.index(), req.uuid(), req.nid());
  } else if (it->second.info.uuid() != req.uuid()) {
    return Status(Code::kExist, "OST index " + std::to_string(req.index()) +
                                    " is already registered with uuid " +
                                    it->second.info.uuid() + ", not " + req.uuid());
  }
  proto::OstInfo& info = it->second.info;
  if (info.nid() != req.nid() || !info.active()) {
    if (!changed) LOG_INFO("OST{:04x} now at {}", req.index(), req.nid());
    changed = true;
  }
  info.set_nid(req.nid());
  info.set_active(true);
  info.set_last_seen_ns(txn.now());
  if (req.bytes_total() != 0 && req.bytes_free() <= req.bytes_total()) {
    const bool was_full = OstNearlyFull(info);
    info.set_bytes_free(req.bytes_free());
    info.set_bytes_total(req.bytes_total());
    if (OstNearlyFull(info) != was_full) {
      LOG_INFO("OST{:04x} is {}: {} of {} bytes free", req.index(),
               was_full ? "no longer full" : "full (no new objects while others have room)",
               req.bytes_free(), req.bytes_total());
    }
  }
  if (changed) txn.super().config_gen++;
  txn.OstDirty(req.index());
  STRIA_RETURN_IF_ERROR(txn.Commit());
  rep->set_fsname(ns.fsname());
  return Status::Ok();
}

}  // namespace stria::mds
