// Tunables the MDS itself reads from the parameters the MGS keeps (P keys, lctl set_param),
// in Lustre's names. A stored name may be a glob (lod.*.dom_stripesize): the most specific
// stored name that matches the MDS's own name for the tunable (the longest) wins. Values are
// checked when set (CheckParamValue), so a bad one is never stored.
//
//   lod.FS-MDT0000-mdtlov.dom_stripesize    Data-on-MDT limit (mds/dom.h)
//   lod.FS-MDT0000-mdtlov.qos_threshold_rr  free-space imbalance (%) from which allocation
//                                           weighs OSTs by free space; default 17
//   lod.FS-MDT0000-mdtlov.mirror_resync_mb  the mirror resync's copy rate in MB/s (0: no
//                                           limit); default 64 (mds/mirror_resync.h)
//   osp.FS-OSTxxxx-osc-MDT0000.active       0: the OST gets no new objects (lctl deactivate)
// Thread-safety: reads of the DB only.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace stria::mds {

inline constexpr uint32_t kDefaultQosThresholdRr = 17;
inline constexpr uint32_t kDefaultMirrorResyncMb = 64;

// The value of the most specific stored param matching `canonical`, or nullopt.
Result<std::optional<std::string>> MatchParam(rocksdb::DB* db, const std::string& canonical);

// EINVAL when `name` is not a tunable Stria knows (the MDS's above, or a client tunable of
// common/tunables.h), or `value` is not one it takes. An empty value (a delete) passes for
// any known name.
Status CheckParamValue(const std::string& name, const std::string& value);

// lod.*.qos_threshold_rr for `fsname` (percent, 0-100).
Result<uint32_t> QosThresholdRr(rocksdb::DB* db, const std::string& fsname);

// lod.*.mirror_resync_mb for `fsname` (MB/s, 0 = unthrottled).
Result<uint32_t> MirrorResyncRateMb(rocksdb::DB* db, const std::string& fsname);

// What allocation reads of the params, loaded once per configuration generation (every
// set_param bumps it) rather than by a scan of the params for each OST of each create.
struct AllocTunables {
  uint64_t config_gen = UINT64_MAX;  // UINT64_MAX: never loaded
  uint32_t qos_threshold_rr = kDefaultQosThresholdRr;
  std::vector<std::pair<std::string, std::string>> osp_active;  // stored osp.*.active params
  // Whether OST `index` of `fsname` is active by the operator's params (the rule of
  // MatchParam over osp_active).
  bool OstActive(const std::string& fsname, uint32_t index) const;
};
Result<AllocTunables> LoadAllocTunables(rocksdb::DB* db, const std::string& fsname,
                                        uint64_t config_gen);

}  // namespace stria::mds
