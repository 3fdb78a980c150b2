#include "common/tunables.h"

#include <charconv>

namespace stria {
namespace {

constexpr TunableSpec kTunables[] = {
    {"osc", "max_rpcs_in_flight", 1, 256, 8, "RPCs"},
    {"osc", "max_dirty_mb", 0, 2048, 8, "MiB"},
    {"osc", "checksums", 0, 1, 1, "0 or 1"},
    // Stria's own: small reads of an OST served from this host read its files (local_reads.h).
    {"osc", "local_reads", 0, 1, 1, "0 or 1"},
    // Stria's own: how long a local read alone polls for the disk before it sleeps.
    {"osc", "local_read_poll_us", 0, 10000, 200, "microseconds"},
    {"llite", "max_read_ahead_mb", 0, 1024, 8, "MiB"},
};

}  // namespace

std::span<const TunableSpec> ClientTunables() { return kTunables; }

const TunableSpec* FindClientTunable(std::string_view name) {
  const size_t first = name.find('.');
  const size_t last = name.rfind('.');
  if (first == std::string_view::npos || first == last) return nullptr;
  const std::string_view device = name.substr(0, first);
  const std::string_view tunable = name.substr(last + 1);
  for (const TunableSpec& t : kTunables) {
    if (t.device == device && t.name == tunable) return &t;
  }
  return nullptr;
}

Result<int64_t> ParseTunable(const TunableSpec& spec, std::string_view value) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || v < spec.min ||
      v > spec.max) {
    return Status(Code::kInval, std::string(spec.name) + " '" + std::string(value) +
                                    "' must be an integer from " + std::to_string(spec.min) +
                                    " to " + std::to_string(spec.max) + " (" +
                                    std::string(spec.unit) + ")");
  }
  return v;
}

Status CheckJobidVar(std::string_view value) {
  bool ok = !value.empty() && value.size() <= 64 && !(value[0] >= '0' && value[0] <= '9');
  for (char c : value) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) ok = false;
  }
  if (!ok) {
    return Status(Code::kInval, "jobid_var '" + std::string(value) +
                                    "' must be an environment variable name or 'disable'");
  }
  return Status::Ok();
}

Status CheckClientParam(std::string_view name, std::string_view value) {
  if (name == kJobidVar) return CheckJobidVar(value);
  const TunableSpec* spec = FindClientTunable(name);
  if (spec == nullptr) return Status(Code::kNoEnt, "not a client tunable");
  return ParseTunable(*spec, value).status();
}

}  // namespace stria
