// OP_STATS_GET on any server: answers from the daemon's StatsRegistry (common/stats_registry.h)
// what `lctl get_param` asks of its statistics, and clears them for
// `lctl set_param X.stats=clear`. The pattern is at most 256 bytes.
// Thread-safety: as the registry.
#pragma once

#include "common/stats_registry.h"
#include "lnet/rpc_server.h"

namespace stria::lnet {

// Registers OP_STATS_GET on `server` (before Start); `registry` must outlive it.
void RegisterStatsService(RpcServer* server, StatsRegistry* registry);

}  // namespace stria::lnet
