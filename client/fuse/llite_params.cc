// StriaFs's local parameters (client/fuse/llite_params.h): listing, reading and setting them.
#include <fmt/format.h>
#include <fnmatch.h>

#include <charconv>
#include <functional>
#include <map>

#include "client/fuse/fuse_ops.h"
#include "client/local_reads.h"
#include "client/mirror_io.h"
#include "common/tunables.h"

namespace stria::client::fuse {
namespace {

struct Param {
  std::function<std::string()> get;
  std::function<void()> clear;  // statistics only
};

}  // namespace

std::optional<std::string_view> LctlXattrRest(uint64_t ino, std::string_view name) {
  if (ino != FUSE_ROOT_ID || !name.starts_with(kLctlXattrPrefix)) return std::nullopt;
  return name.substr(kLctlXattrPrefix.size());
}

std::map<std::string, std::function<std::string()>> StriaFs::LocalParamGetters(
    std::map<std::string, std::function<void()>>* clears) {
  std::map<std::string, std::function<std::string()>> out;
  const std::string fs = fsname_;
  const std::string inst = client_->instance();
  ClientTunables* t = &client_->tunables();
  const std::string llite = "llite." + fs + "-" + inst;
  out[llite + ".stats"] = [this] { return llite_.Format(); };
  if (clears) (*clears)[llite + ".stats"] = [this] { llite_.Clear(); };
  out[llite + ".max_read_ahead_mb"] = [t] { return std::to_string(t->Get("max_read_ahead_mb")); };
  const MirrorStats* m = &client_->mirror_stats();
  out[llite + ".mirror_stats"] = [m] {
    return "read_failovers: " + std::to_string(m->read_failovers.load()) +
           "\ndamaged_reads: " + std::to_string(m->damaged_reads.load()) +
           "\nstale_marks: " + std::to_string(m->stale_marks.load()) +
           "\ndegraded_writes: " + std::to_string(m->degraded_writes.load()) + "\n";
  };
  const LocalReads* lr = &client_->local_reads();
  out[llite + ".local_reads"] = [lr] {
    return fmt::format("reads: {}\nfallbacks: {}\npolls: {}\npolled: {}\nrandom_direct: {}\n",
                       lr->reads(), lr->fallbacks(), lr->polls(), lr->polled(),
                       lr->random_direct());
  };
  out[llite + ".close_batches"] = [this] {
    const CloseBatcher::Counters c = closes_.counters();
    return fmt::format("gathered: {}\nbatches: {}\nfailed: {}\nflushes: {}\n", c.gathered,
                       c.batches, c.failed, c.flushes);
  };
  out[llite + ".local_opens"] = [this] {
    const LocalOpens::Counters c = local_opens_.counters();
    return fmt::format("opened: {}\nwithdrawn: {}\nregistered: {}\npending: {}\n", c.opened,
                       c.withdrawn, c.registered, c.pending);
  };
  out[llite + ".open_intents"] = [this] {
    const PreOpens::Counters c = pre_opens_.counters();
    return fmt::format("opened: {}\nused: {}\nwasted: {}\npending: {}\n", c.held, c.used, c.wasted,
                       c.pending);
  };
  out[llite + ".statahead_max"] = [this] { return std::to_string(ahead_.window()); };
  out[llite + ".statahead_stats"] = [this] {
    const Statahead::Counters c = ahead_.counters();
    return fmt::format(
        "statahead total: {}\nstatahead wrong: {}\nfname_total: {}\nrequests: {}\n"
        "asked: {}\nunkept: {}\nwaits: {}\nhit_total: {}\nmiss_total: {}\ncached: {}\n",
        c.runs, c.wrong, c.runs, c.requests, c.asked, c.unkept, c.waits, c.hits, c.misses, c.kept);
  };
  if (unlink_wb_) {
    out[llite + ".unlink_writeback"] = [this] {
      const UnlinkWriteback::Counters c = unlink_wb_->counters();
      return fmt::format(
          "queued: {}\nsent: {}\nbatches: {}\nfailed: {}\ngrants: {}\nrecalls: {}\n"
          "waits: {}\npending: {}\n",
          c.queued, c.sent, c.batches, c.failed, c.grants, c.recalls, c.waits, c.pending);
    };
  }
  if (leases_ != nullptr) {
    out[llite + ".md_leases"] = [this] {
      const LeaseCache::Counters c = leases_->counters();
      return fmt::format(
          "enabled: {}\ncached: {}\nlong_timeouts: {}\nlocal_negatives: {}\n"
          "revocations: {}\ninvalidated: {}\n",
          leases_->enabled() ? 1 : 0, c.cached, c.long_timeouts, c.local_negatives,
          c.revocations, c.invalidated);
    };
  }
  out["jobid_var"] = [t] { return t->jobid_var(); };
  for (const auto& [idx, stats] : client_->OscStatsByOst()) {
    const std::string osc = fmt::format("osc.{}-OST{:04x}-osc-{}", fs, idx, inst);
    OscStats* s = stats;
    out[osc + ".rpc_stats"] = [s] { return s->Format(); };
    if (clears) (*clears)[osc + ".rpc_stats"] = [s] { s->Clear(); };
    for (const char* n : {"max_rpcs_in_flight", "max_dirty_mb", "checksums", "local_reads",
                          "local_read_poll_us"}) {
      out[osc + "." + n] = [t, n] { return std::to_string(t->Get(n)); };
    }
  }
  return out;
}

std::string StriaFs::GetLocalParams(std::string_view pattern, bool names_only) {
  std::string out;
  const std::string pat(pattern);
  for (const auto& [name, get] : LocalParamGetters(nullptr)) {
    if (fnmatch(pat.c_str(), name.c_str(), 0) != 0) continue;
    out += name;
    out += '\0';
    if (!names_only) out += get();
    out += '\0';
  }
  return out;
}

Status StriaFs::SetLocalParam(fuse_req_t req, std::string_view name, std::string_view value) {
  if (fuse_req_ctx(req)->uid != 0) return Status(Code::kPerm, "setting parameters needs root");
  std::map<std::string, std::function<void()>> clears;
  auto getters = LocalParamGetters(&clears);
  if (value == "clear" || value == "0") {
    bool any = false;
    for (const auto& [n, clear] : clears) {
      if (fnmatch(std::string(name).c_str(), n.c_str(), 0) == 0) {
        clear();
        any = true;
      }
    }
    if (any) return Status::Ok();
  }
  bool any = false;
  // Kept by this mount, not a client tunable (Lustre's llite.*.statahead_max).
  const std::string statahead = "llite." + fsname_ + "-" + client_->instance() + ".statahead_max";
  if (fnmatch(std::string(name).c_str(), statahead.c_str(), 0) == 0) {
    int v = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || v < 0 ||
        v > Statahead::kMaxWindow) {
      return Status(Code::kInval, fmt::format("statahead_max '{}' must be an integer from 0 to {}",
                                              value, Statahead::kMaxWindow));
    }
    ahead_.set_window(v);
    any = true;
  }
  for (const auto& [n, get] : getters) {
    if (n == statahead) continue;
    if (clears.count(n) || fnmatch(std::string(name).c_str(), n.c_str(), 0) != 0) continue;
    STRIA_RETURN_IF_ERROR(client_->tunables().Set(n, value));
    any = true;
  }
  if (!any) return Status(Code::kNoEnt, "no parameter '" + std::string(name) + "' on this mount");
  return Status::Ok();
}

}  // namespace stria::client::fuse
