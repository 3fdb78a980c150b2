// OP_MDS_STATFS: space summed over the active OSTs (each asked in parallel through the
// OstGateway, whose calls are bounded by a short timeout; an OST that does not answer is
// left out of the sums), inodes from the MDS's own count.
#include <future>
#include <vector>

#include "common/log.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"

namespace stria::mds {

inline constexpr uint64_t kStatfsBsize = 4096;
inline constexpr uint64_t kMaxInodes = 1ull << 32;

Status Statfs(Namespace& ns, const proto::StatfsRequest& req, proto::StatfsReply* rep) {
  std::vector<std::future<Result<proto::OstStatfsReply>>> asks;
  if (ns.gateway() != nullptr) {
    for (const proto::OstInfo& ost : ns.OstTable()) {
      if (!ost.active()) continue;
      asks.push_back(std::async(std::launch::async, [&ns, ost] { return ns.gateway()->Statfs(ost); }));
    }
  }
  uint64_t blocks = 0, bfree = 0, bavail = 0;
  for (auto& f : asks) {
    Result<proto::OstStatfsReply> r = f.get();
    if (!r.ok()) {
      LOG_WARN("statfs: an OST did not answer: {}", r.status().ToString());
      continue;
    }
    const uint64_t bs = r->bsize() == 0 ? kStatfsBsize : r->bsize();
    // Scale to kStatfsBsize units without overflow for any realistic size.
    auto scale = [bs](uint64_t n) {
      return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * bs) / kStatfsBsize);
    };
    blocks += scale(r->blocks());
    bfree += scale(r->bfree());
    bavail += scale(r->bavail());
  }
  const uint64_t used = ns.InodeCount();
  rep->set_bsize(kStatfsBsize);
  rep->set_blocks(blocks);
  rep->set_bfree(bfree);
  rep->set_bavail(bavail);
  rep->set_files(kMaxInodes);
  rep->set_ffree(used >= kMaxInodes ? 0 : kMaxInodes - used);
  rep->set_namelen(kMaxNameLen);
  return Status::Ok();
}

}  // namespace stria::mds
