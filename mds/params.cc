#include "mds/params.h"

#include <fnmatch.h>

#include <cstdio>
#include <memory>

#include "common/tunables.h"
#include "mds/dom.h"
#include "mds/namespace.h"
#include "mds/schema.h"

namespace stria::mds {

namespace {

bool IsQosThresholdParam(const std::string& name) {
  return name.starts_with("lod.") && name.ends_with(".qos_threshold_rr");
}
bool IsResyncRateParam(const std::string& name) {
  return name.starts_with("lod.") && name.ends_with(".mirror_resync_mb");
}
// "64" -> 64 (MB/s); nullopt unless 0..100000.
std::optional<uint32_t> ParseResyncRate(const std::string& value) {
  if (value.empty() || value.size() > 6) return std::nullopt;
  uint32_t v = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v > 100000) return std::nullopt;
  return v;
}
bool IsOstActiveParam(const std::string& name) {
  return name.starts_with("osp.") && name.ends_with(".active");
}

// "17" or "17%" -> 17; nullopt unless 0..100.
std::optional<uint32_t> ParsePercent(std::string value) {
  if (value.ends_with('%')) value.pop_back();
  if (value.empty() || value.size() > 3) return std::nullopt;
  uint32_t v = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v > 100) return std::nullopt;
  return v;
}

}  // namespace

Result<std::optional<std::string>> MatchParam(rocksdb::DB* db, const std::string& canonical) {
  // Stored names that can match start with the tunable's first component ("lod.", "osp.").
  const std::string first = canonical.substr(0, canonical.find('.') + 1);
  const std::string prefix = ParamKey(first);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  std::optional<std::string> value;
  size_t best = 0;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const std::string name(it->key().data() + 1, it->key().size() - 1);
    if (name.size() < best || fnmatch(name.c_str(), canonical.c_str(), 0) != 0) continue;
    value = it->value().ToString();
    best = name.size();
  }
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "read params"));
  return value;
}

Status CheckParamValue(const std::string& name, const std::string& value) {
  const bool mds_tunable =
      IsDomStripeSizeParam(name) || IsQosThresholdParam(name) || IsOstActiveParam(name) ||
      IsResyncRateParam(name);
  Status client = CheckClientParam(name, value.empty() ? "1" : value);
  if (!mds_tunable && client.code() == Code::kNoEnt) {
    return Status(Code::kInval, "unknown parameter '" + name +
                                    "' (see docs/operations.md for the tunables)");
  }
  if (value.empty()) return Status::Ok();  // a delete
  if (!mds_tunable) return client;
  if (IsDomStripeSizeParam(name)) return ParseDomStripeSize(value).status();
  if (IsQosThresholdParam(name) && !ParsePercent(value)) {
    return Status(Code::kInval, "qos_threshold_rr '" + value + "' must be a percentage, 0-100");
  }
  if (IsResyncRateParam(name) && !ParseResyncRate(value)) {
    return Status(Code::kInval, "mirror_resync_mb '" + value +
                                    "' must be a rate in MB/s, 0 (unthrottled) to 100000");
  }
  if (IsOstActiveParam(name) && value != "0" && value != "1") {
    return Status(Code::kInval, "active '" + value + "' must be 0 or 1");
  }
  return Status::Ok();
}

Result<uint32_t> QosThresholdRr(rocksdb::DB* db, const std::string& fsname) {
  STRIA_ASSIGN_OR_RETURN(std::optional<std::string> v,
                         MatchParam(db, "lod." + fsname + "-MDT0000-mdtlov.qos_threshold_rr"));
  if (!v) return kDefaultQosThresholdRr;
  return ParsePercent(*v).value_or(kDefaultQosThresholdRr);
}

Result<uint32_t> MirrorResyncRateMb(rocksdb::DB* db, const std::string& fsname) {
  STRIA_ASSIGN_OR_RETURN(std::optional<std::string> v,
                         MatchParam(db, "lod." + fsname + "-MDT0000-mdtlov.mirror_resync_mb"));
  if (!v) return kDefaultMirrorResyncMb;
  return ParseResyncRate(*v).value_or(kDefaultMirrorResyncMb);
}

namespace {

std::string OstActiveName(const std::string& fsname, uint32_t index) {
  char name[64];
  std::snprintf(name, sizeof(name), "-OST%04x-osc-MDT0000.active", index);
  return "osp." + fsname + name;
}

}  // namespace

bool AllocTunables::OstActive(const std::string& fsname, uint32_t index) const {
  if (osp_active.empty()) return true;  // no name to format for each OST of each create
  const std::string canonical = OstActiveName(fsname, index);
  size_t best = 0;
  bool active = true;
  for (const auto& [name, value] : osp_active) {
    if (name.size() < best || fnmatch(name.c_str(), canonical.c_str(), 0) != 0) continue;
    active = value != "0";
    best = name.size();
  }
  return active;
}

Result<AllocTunables> LoadAllocTunables(rocksdb::DB* db, const std::string& fsname,
                                        uint64_t config_gen) {
  AllocTunables t;
  STRIA_ASSIGN_OR_RETURN(t.qos_threshold_rr, QosThresholdRr(db, fsname));
  const std::string prefix = ParamKey("osp.");
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string name(it->key().data() + 1, it->key().size() - 1);
    if (IsOstActiveParam(name)) t.osp_active.emplace_back(std::move(name), it->value().ToString());
  }
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "read params"));
  t.config_gen = config_gen;
  return t;
}

}  // namespace stria::mds
