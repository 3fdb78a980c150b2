// OstGateway: how the MDS talks to OSTs (destroying orphaned objects, statfs).
//
// The seam between the namespace and the network: the MDS's real implementation
// (LnetOstGateway, mds/lnet_ost_gateway.h) sends RPCs with lnet::RpcClient; unit tests plug
// in a gateway that records calls and injects failures, while the namespace underneath stays
// real RocksDB. Calls must return within a short, bounded time (seconds): they are made from
// RPC handlers (statfs) and from the destroy-queue thread.
// Thread-safety: implementations must be thread-safe.
#pragma once

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::mds {

class OstGateway {
 public:
  virtual ~OstGateway() = default;

  // Destroys `req.objects` (all on OST `ost`). Destroying an object that does not exist is
  // success (replays after a crash are expected).
  virtual Status Destroy(const proto::OstInfo& ost, const proto::OstDestroyRequest& req) = 0;

  // The usage of OST `ost`.
  virtual Result<proto::OstStatfsReply> Statfs(const proto::OstInfo& ost) = 0;
};

}  // namespace stria::mds
