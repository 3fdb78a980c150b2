#include "lnet/lnd.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "common/log.h"
#ifdef STRIA_HAVE_O2IB
#include "lnet/o2ib/device.h"
#endif

namespace stria::lnet {
namespace {

std::mutex config_mu;
bool configured = false;  // GUARDED_BY(config_mu)
LndConfig config;         // GUARDED_BY(config_mu)

// A switch from the environment: "0" or "1" sets *on; unset or empty leaves it; anything
// else is ignored with a warning.
void EnvSwitch(const char* name, bool* on) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return;
  const std::string_view v(env);
  if (v == "0" || v == "1") {
    *on = v == "1";
  } else {
    LOG_WARN("{} ignored: '{}' is not 0 or 1", name, v);
  }
}

// LndConfig::local_zero_copy as of the last ConfigureLnds (or the environment's): asked on
// every bulk exchange, so read without config_mu. -1: not known yet.
std::atomic<int> zero_copy{-1};

LndConfig FromEnvironment() {
  LndConfig c;
  if (const char* env = std::getenv("STRIA_LNET_FALLBACK"); env != nullptr && *env != '\0') {
    Result<LndFallback> f = ParseLndFallback(env);
    if (f.ok()) {
      c.fallback = *f;
    } else {
      LOG_WARN("STRIA_LNET_FALLBACK ignored: {}", f.status().message());
    }
  }
  EnvSwitch("STRIA_LNET_LOCAL", &c.local_sockets);
  EnvSwitch("STRIA_LNET_ZEROCOPY", &c.local_zero_copy);
  EnvSwitch("STRIA_LNET_SHARED", &c.local_shared_bulk);
  EnvSwitch("STRIA_LNET_SHARED_WRITES", &c.local_shared_writes);
  EnvSwitch("STRIA_LOCAL_READS", &c.local_reads);
  return c;
}

}  // namespace

void ConfigureLnds(const LndConfig& c) {
  std::lock_guard lk(config_mu);
  config = c;
  configured = true;
  zero_copy.store(c.local_zero_copy ? 1 : 0, std::memory_order_relaxed);
}

LndConfig CurrentLndConfig() {
  std::lock_guard lk(config_mu);
  if (!configured) {
    config = FromEnvironment();
    configured = true;
    zero_copy.store(config.local_zero_copy ? 1 : 0, std::memory_order_relaxed);
  }
  return config;
}

bool LocalZeroCopyEnabled() {
  const int on = zero_copy.load(std::memory_order_relaxed);
  return on >= 0 ? on == 1 : CurrentLndConfig().local_zero_copy;
}

bool LocalSharedBulkEnabled() { return CurrentLndConfig().local_shared_bulk; }
bool LocalSharedWritesEnabled() {
  const LndConfig c = CurrentLndConfig();
  return c.local_shared_bulk && c.local_shared_writes;
}
bool LocalReadsEnabled() { return CurrentLndConfig().local_reads; }

Result<LndFallback> ParseLndFallback(std::string_view text) {
  if (text == "tcp") return LndFallback::kTcp;
  if (text == "none") return LndFallback::kNone;
  return Status(Code::kInval, "lnet fallback '" + std::string(text) + "' is not tcp or none");
}

std::string_view LndName(Lnd lnd) { return lnd == Lnd::kO2ib ? "o2ib" : "tcp"; }

bool O2ibBuilt() {
#ifdef STRIA_HAVE_O2IB
  return true;
#else
  return false;
#endif
}

std::string O2ibUnavailableReason() {
  static const std::string reason = [] {
#ifdef STRIA_HAVE_O2IB
    return o2ib::ProbeDevices();
#else
    return std::string(
        "this build has no o2ib LND (libibverbs and librdmacm were not found when it was built)");
#endif
  }();
  return reason;
}

Result<Lnd> ResolveLnd(const Nid& nid) {
  if (nid.lnd == Lnd::kTcp) return Lnd::kTcp;
  const std::string why = O2ibUnavailableReason();
  if (why.empty()) return Lnd::kO2ib;
  if (CurrentLndConfig().fallback == LndFallback::kTcp) {
    static std::once_flag once;
    std::call_once(once, [&] {
      LOG_WARN(
          "o2ib: {}; carrying o2ib NIDs over TCP to the same address and port "
          "(--lnet-fallback tcp)",
          why);
    });
    return Lnd::kTcp;
  }
  return Status(Code::kNoDev, "o2ib: " + why + " for " + nid.ToString() +
                                  "; use --lnet-fallback tcp to carry o2ib NIDs over TCP");
}

Status ConfigureLndsFromOptions(std::string_view fallback, bool o2ib_poll) {
  LndConfig c = CurrentLndConfig();
  if (!fallback.empty()) {
    Result<LndFallback> f = ParseLndFallback(fallback);
    if (!f.ok()) return Status(Code::kInval, "--lnet-fallback: " + f.status().message());
    c.fallback = *f;
  }
  c.o2ib.poll = o2ib_poll;
  ConfigureLnds(c);
  return Status::Ok();
}

Status CheckNids(const std::vector<Nid>& nids) {
  for (const Nid& nid : nids) STRIA_RETURN_IF_ERROR(ResolveLnd(nid).status());
  return Status::Ok();
}

}  // namespace stria::lnet
