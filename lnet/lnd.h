// The LND seam: which network driver carries traffic for a NID on this host.
//
// A NID names its network (`@tcp`, `@o2ib`, lnet/nid.h); RpcClient and RpcServer ask
// ResolveLnd which LND carries it here and use that one, so their callers never change:
//
//   @tcp   the TCP LND (lnet/socket.h): always.
//   @o2ib  the RDMA LND (lnet/o2ib/) where it is built and an RDMA device is present.
//          Where not, the NID fails with one message saying why, unless the operator
//          allowed TCP (`--lnet-fallback tcp` on every daemon and tool, `-o lnet_fallback=tcp`
//          on a mount, or STRIA_LNET_FALLBACK=tcp in the environment): then TCP carries the
//          o2ib NID to the same address and port, and one log line says so.
//
// The configuration is process-wide, as Lustre's lnet module parameters are: a daemon sets
// it once from its options, before it starts any client or server.
// Thread-safety: ConfigureLnds before any other call (or never); the rest is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "lnet/nid.h"

namespace stria::lnet {

enum class LndFallback : uint8_t {
  kNone,  // an o2ib NID without an RDMA device is an error (the default)
  kTcp,   // ... is carried by TCP to the same address and port
};

// The o2ib LND's tunables (docs/operations.md, "RDMA (o2ib)").
struct O2ibTunables {
  uint16_t queue_depth = 8;       // receive buffers (credits) per connection and side
  uint16_t reserved_credits = 2;  // extra receive buffers for credit-return messages only
  uint32_t msg_size = 16u << 10;  // bytes of one receive buffer: larger bodies go by RDMA READ
  bool poll = false;              // busy-poll completion queues rather than sleep on the
                                  // completion channel (lower latency, one core per waiter)
  size_t reg_cache_bytes = size_t{4} << 30;  // unpinned registrations kept per device
};

struct LndConfig {
  LndFallback fallback = LndFallback::kNone;
  O2ibTunables o2ib;
  // Peers at loopback addresses go over the local socket (lnet/socket.h, LocalListen).
  // STRIA_LNET_LOCAL=0 in the environment turns it off, to compare with TCP.
  bool local_sockets = true;
  // Bulk over a local socket goes by reference (lnet/socket.h, SpliceAll).
  // STRIA_LNET_ZEROCOPY=0 in the environment turns it off, to compare.
  bool local_zero_copy = true;
  // Reply bulk from a local server lands straight in the client's shared arena
  // (lnet/shared_bulk.h). STRIA_LNET_SHARED=0 in the environment turns it off, to compare.
  bool local_shared_bulk = true;
  // Request bulk to a local server that takes it in place (the OSS's writes) stays in the
  // client's shared arena: the server reads it from there, nothing crosses the socket
  // (lnet/shared_bulk.h). Needs local_shared_bulk. STRIA_LNET_SHARED_WRITES=0 in the
  // environment turns it off (on a client: writes go over the socket; on a server: it
  // does not offer to take them), to compare.
  bool local_shared_writes = true;
  // Small reads of objects on an OST served from this host read its object files directly
  // (client/local_reads.h). STRIA_LOCAL_READS=0 in the environment turns it off on a
  // client (it reads over the socket) or an OSS (it refuses OP_OST_LOCAL_ACCESS).
  bool local_reads = true;
};

// Sets the process-wide configuration (a daemon's --lnet-fallback, a mount's options).
void ConfigureLnds(const LndConfig& config);
// The configuration in force: ConfigureLnds's, or the defaults with STRIA_LNET_FALLBACK
// from the environment ("tcp" or "none"; anything else is ignored with a warning).
LndConfig CurrentLndConfig();
// CurrentLndConfig().local_zero_copy without taking a lock (asked for every bulk).
bool LocalZeroCopyEnabled();
// CurrentLndConfig().local_shared_bulk (asked once per connection).
bool LocalSharedBulkEnabled();
// CurrentLndConfig().local_shared_bulk && local_shared_writes (asked once per connection).
bool LocalSharedWritesEnabled();
// CurrentLndConfig().local_reads.
bool LocalReadsEnabled();

// "tcp" or "none". EINVAL naming the accepted values otherwise.
Result<LndFallback> ParseLndFallback(std::string_view text);

// "tcp" or "o2ib".
std::string_view LndName(Lnd lnd);

// True when this build has the o2ib LND (libibverbs and librdmacm were found).
bool O2ibBuilt();

// Why o2ib cannot run here ("" when it can): the LND is not built, or no RDMA device
// (ibv_get_device_list's answer). Probed once per process.
std::string O2ibUnavailableReason();

// The LND that carries traffic to or from `nid` on this host (see the file comment).
// kNoDev with the one documented message when an o2ib NID has no device and no fallback:
//   "o2ib: no RDMA device found (ibv_get_device_list returned 0 devices) for NID; use
//    --lnet-fallback tcp to carry o2ib NIDs over TCP"
// Not retryable: sending again would fail the same way.
Result<Lnd> ResolveLnd(const Nid& nid);

// What the daemons' and tools' `--lnet-fallback tcp|none` and `--o2ib-poll` set (and a
// mount's lnet_fallback= and o2ib_poll): EINVAL naming the option for a bad value.
Status ConfigureLndsFromOptions(std::string_view fallback, bool o2ib_poll);

// ResolveLnd for each NID: a daemon calls it on its NIDs before anything else, so an o2ib
// NID it cannot carry stops it at once with the one message.
Status CheckNids(const std::vector<Nid>& nids);

}  // namespace stria::lnet
