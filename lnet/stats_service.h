// What any server tells about itself: OP_STATS_GET answers from the daemon's StatsRegistry
// (common/stats_registry.h) what `lctl get_param` asks of its statistics, and clears them for
// `lctl set_param X.stats=clear` (the pattern is at most 256 bytes); AddRpcServerMetrics
// writes the RpcServer's load into a /metrics page, the same lines for every daemon.
// Thread-safety: as the registry; AddRpcServerMetrics reads relaxed atomics.
#pragma once

#include <string_view>

#include "common/prom_text.h"
#include "common/stats_registry.h"
#include "lnet/rpc_server.h"

namespace stria::lnet {

// Registers OP_STATS_GET on `server` (before Start); `registry` must outlive it.
void RegisterStatsService(RpcServer* server, StatsRegistry* registry);

// The server's load (RpcServer::load) as /metrics samples labelled service=`service`:
//   stria_rpc_active_requests                   gauge: handlers running now
//   stria_rpc_workers                           gauge: RPC worker threads
//   stria_rpc_requests_total                    counter: requests received
//   stria_rpc_bulk_requests_total{checksum=...} counter: requests with a bulk, "crc32c" or
//                                               "none" (sent with osc.*.checksums=0)
//   stria_rpc_bulk_replies_spliced_total        counter: reply bulks sent to local peers by
//                                               reference (lnet/socket.h, SpliceAll)
void AddRpcServerMetrics(const RpcServer& server, std::string_view service, PromText* page);

}  // namespace stria::lnet
