#include "mds/size_glimpse.h"

#include <algorithm>
#include <mutex>
#include <string>

#include "common/layout.h"
#include "common/log.h"
#include "mds/txn.h"
#include "proto/layout_components.h"

namespace stria::mds {

Result<uint64_t> GlimpseObjects(OstGateway& gateway,
                                const std::map<uint32_t, proto::OstInfo>& osts,
                                const proto::Layout& layout) {
  uint64_t size = 0;
  for (const LayoutExtent& e : LayoutExtents(layout)) {
    if (!e.init || e.on_mdt || e.plain == nullptr || e.plain->objects_size() == 0) continue;
    StripeGeometry g;
    g.stripe_size = e.plain->stripe_size();
    g.stripe_count = static_cast<uint32_t>(e.plain->objects_size());
    STRIA_RETURN_IF_ERROR(ValidateStripe(g.stripe_size, g.stripe_count));
    for (uint32_t s = 0; s < g.stripe_count; ++s) {
      const proto::StripeObject& o = e.plain->objects(static_cast<int>(s));
      auto ost = osts.find(o.ost_idx());
      if (ost == osts.end()) {
        return Status(Code::kNoOst, "OST index " + std::to_string(o.ost_idx()) + " unknown");
      }
      proto::ObjectId id;
      id.set_ost_idx(o.ost_idx());
      id.set_object_id(o.object_id());
      id.set_group(o.group());
      STRIA_ASSIGN_OR_RETURN(uint64_t object_size, gateway.ObjectSize(ost->second, id));
      if (object_size == 0) continue;
      // An object holds bytes of its component's extent only.
      const uint64_t end = FileSizeFromObject(g, s, object_size);
      if (end > e.start) size = std::max(size, std::min(end, e.end));
    }
  }
  return size;
}

Result<uint64_t> RaiseSizeToObjects(Namespace& ns, OstGateway& gateway, uint64_t ino) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord before, ns.GetInode(ino));
  if (!before.is_reg()) return before.attr.size();
  std::map<uint32_t, proto::OstInfo> osts;
  for (proto::OstInfo& o : ns.OstTable()) osts[o.index()] = std::move(o);
  STRIA_ASSIGN_OR_RETURN(uint64_t glimpsed, GlimpseObjects(gateway, osts, before.layout));
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, txn.Inode(ino));
  if (glimpsed <= rec->attr.size()) return rec->attr.size();
  LOG_WARN("inode {}: size {} raised to {}, the end of what its objects hold (its writer did "
           "not report it)", ino, rec->attr.size(), glimpsed);
  rec->attr.set_size(glimpsed);
  rec->attr.set_ctime_ns(std::max(rec->attr.ctime_ns(), txn.now()));
  txn.Dirty(ino);
  STRIA_RETURN_IF_ERROR(txn.Commit(/*sync=*/false));
  return glimpsed;
}

}  // namespace stria::mds
