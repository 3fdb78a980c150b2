// OP_MDS_STATFS: space summed over the active OSTs (each asked in parallel through the
// OstGateway, whose calls are bounded by a short timeout; an OST that does not answer is
// left out of the sums), and the MDT's own space: the filesystem of the MDS's data directory
// (RocksDB, Data-on-MDT bytes). Inodes: used = the MDS's own count; free = what the MDS's disk has
// room for at kBytesPerInode each (RocksDB records are far smaller; the margin is for
// compaction), at most kMaxInodes in all — as a Lustre MDT's inode count follows its disk.
#include <sys/statvfs.h>

#include <algorithm>
#include <future>
#include <vector>

#include "common/log.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"

namespace stria::mds {

inline constexpr uint64_t kStatfsBsize = 4096;
inline constexpr uint64_t kMaxInodes = 1ull << 32;
inline constexpr uint64_t kBytesPerInode = 2048;

namespace {

// n blocks of `bs` bytes in kStatfsBsize units, without overflow for any realistic size.
uint64_t ToStatfsBlocks(uint64_t n, uint64_t bs) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * bs) / kStatfsBsize);
}

// Inodes the MDS's data directory still has room for (`vfs`: its statvfs, or null).
uint64_t FreeInodes(const struct statvfs* vfs, uint64_t used) {
  const uint64_t by_limit = used >= kMaxInodes ? 0 : kMaxInodes - used;
  if (vfs == nullptr) return by_limit;
  const auto avail = static_cast<unsigned __int128>(vfs->f_bavail) * vfs->f_frsize;
  return std::min<uint64_t>(by_limit, static_cast<uint64_t>(avail / kBytesPerInode));
}

}  // namespace

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
    blocks += ToStatfsBlocks(r->blocks(), bs);
    bfree += ToStatfsBlocks(r->bfree(), bs);
    bavail += ToStatfsBlocks(r->bavail(), bs);
  }
  struct statvfs vfs {};
  const bool have_vfs = statvfs(ns.db()->GetName().c_str(), &vfs) == 0;
  if (have_vfs) {
    rep->set_mdt_blocks(ToStatfsBlocks(vfs.f_blocks, vfs.f_frsize));
    rep->set_mdt_bfree(ToStatfsBlocks(vfs.f_bfree, vfs.f_frsize));
    rep->set_mdt_bavail(ToStatfsBlocks(vfs.f_bavail, vfs.f_frsize));
  }
  const uint64_t used = ns.InodeCount();
  rep->set_bsize(kStatfsBsize);
  rep->set_blocks(blocks);
  rep->set_bfree(bfree);
  rep->set_bavail(bavail);
  const uint64_t ffree = FreeInodes(have_vfs ? &vfs : nullptr, used);
  rep->set_files(used + ffree);
  rep->set_ffree(ffree);
  rep->set_namelen(kMaxNameLen);
  return Status::Ok();
}

}  // namespace stria::mds
