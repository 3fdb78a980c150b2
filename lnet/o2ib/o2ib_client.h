// The client side of the o2ib LND: opening a connection with librdmacm and one
// request/reply exchange over it.
//
// Connect: rdma_resolve_addr, rdma_resolve_route, a queue pair with every receive posted,
// rdma_connect with this side's ConnParams in the private data; the server's answer in
// ESTABLISHED sets what both run with. Each connection keeps its own rdma_cm event channel,
// watched while it waits, so a peer that disconnects fails the exchange at once.
//
// Exchange: the request frame (header and body) travels in one SEND, with its bulk inline
// when everything fits in a receive buffer. Otherwise the bulk stays where the caller has
// it: each piece is registered (from the device's registration cache for BufferPool memory)
// and named by a kBulkSource descriptor, and the server RDMA READs it. The caller's reply
// buffer is named by a kBulkSink descriptor for the server to RDMA WRITE into. A body too
// large for a receive buffer is named by a kBody descriptor and read by the other side.
// Checksums are the frame's, as on TCP: the server verifies the request bulk after its
// READ, and the client the reply bulk once the reply arrives.
// Thread-safety: a connection is used by one thread at a time (RpcClient borrows it).
#pragma once

#include <memory>

#include "common/status.h"
#include "lnet/internal/client_conn.h"
#include "lnet/nid.h"
#include "lnet/rpc_client.h"

namespace stria::lnet::o2ib {

// Opens an o2ib connection to `peer` within options.connect_timeout_ms. kDisconnected with
// what rdma_cm answered (address or route unresolved, rejected, unreachable) on failure.
Result<std::unique_ptr<ClientConn>> O2ibConnect(const Nid& peer, const ClientOptions& options);

}  // namespace stria::lnet::o2ib
