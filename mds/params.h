// Tunables the MDS itself reads from the parameters the MGS keeps (P keys, lctl set_param),
// in Lustre's names. A stored name may be a glob (lod.*.dom_stripesize): the most specific
// stored name that matches the MDS's own name for the tunable (the longest) wins. Values are
// checked when set (CheckParamValue), so a bad one is never stored.
//
//   lod.FS-MDT0000-mdtlov.dom_stripesize    Data-on-MDT limit (mds/dom.h)
//   lod.FS-MDT0000-mdtlov.qos_threshold_rr  free-space imbalance (%) from which allocation
//                                           weighs OSTs by free space; default 17
//   osp.FS-OSTxxxx-osc-MDT0000.active       0: the OST gets no new objects (lctl deactivate)
// Thread-safety: reads of the DB only.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace stria::mds {

inline constexpr uint32_t kDefaultQosThresholdRr = 17;

// The value of the most specific stored param matching `canonical`, or nullopt.
Result<std::optional<std::string>> MatchParam(rocksdb::DB* db, const std::string& canonical);

// EINVAL when `name` is a tunable the MDS reads and `value` is not one it takes.
Status CheckParamValue(const std::string& name, const std::string& value);

// lod.*.qos_threshold_rr for `fsname` (percent, 0-100).
Result<uint32_t> QosThresholdRr(rocksdb::DB* db, const std::string& fsname);

// False when an operator deactivated OST `index` (osp.*.active=0, lctl deactivate).
Result<bool> OstAdminActive(rocksdb::DB* db, const std::string& fsname, uint32_t index);

}  // namespace stria::mds
