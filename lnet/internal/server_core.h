// The request handling every LND's server side shares (RpcServer implements it): what a
// server knows about one client connection, and the one path from a received request to
// its reply, so CONNECT, PING, the handlers, the reply cache and bulk checksums behave the
// same over TCP and o2ib.
// Thread-safety: a ServerSession is touched by the thread that owns its connection; its
// counters are atomics so a peer listing may read them at any time.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "lnet/buffer.h"
#include "lnet/frame.h"
#include "lnet/nid.h"
#include "lnet/rpc_server.h"
#include "lnet/shared_bulk.h"

namespace stria::lnet {

struct ServerSession {
  std::string peer;         // "ADDR:PORT"
  Lnd lnd = Lnd::kTcp;      // the LND carrying the connection
  bool local = false;       // over the local socket: the peer runs on this host
  std::string client_uuid;  // from CONNECT
  bool connected = false;   // CONNECT received (and, with a cluster key, OP_AUTH passed)
  // With a cluster key: between CONNECT and OP_AUTH, the nonces and the client's role.
  bool auth_pending = false;
  std::string client_nonce, server_nonce, client_role;
  // Local sockets: a descriptor the peer passed (for OP_LNET_SHARE_BULK), and the peer's
  // shared bulk arena once mapped (lnet/shared_bulk.h).
  int passed_fd = -1;
  std::shared_ptr<SharedRegion> shared;
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> bulk_bytes{0};  // request and reply bulk moved

  ServerSession() = default;
  ServerSession(const ServerSession&) = delete;
  ServerSession& operator=(const ServerSession&) = delete;
  ~ServerSession() {
    if (passed_fd >= 0) close(passed_fd);
  }

  // client_uuid as a peer listing on another thread may read it.
  std::string ListedUuid() const {
    std::lock_guard lk(mu);
    return listed_uuid;
  }
  void SetListedUuid(const std::string& uuid) {
    std::lock_guard lk(mu);
    listed_uuid = uuid;
  }

 private:
  mutable std::mutex mu;
  std::string listed_uuid;  // GUARDED_BY(mu)
};

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Verifies the bulk's crc, then runs the request: CONNECT and PING here, any other opcode
  // through its handler and the reply cache. Fills *reply (and ctx->bulk_out).
  virtual Status HandleRequest(ServerSession& s, const FrameHeader& h, std::string_view body,
                               std::span<const uint8_t> bulk, RpcContext* ctx,
                               std::string* reply) = 0;
};

// Whether the connection is dropped once the reply to a request that ended with `st` is
// sent: a malformed or refused handshake (kProtocol, kAccess before the connection is
// established).
inline bool DropAfterReply(const ServerSession& s, const Status& st) {
  return !s.connected && (st.code() == Code::kProtocol || st.code() == Code::kAccess);
}

// The reply's frame header for a request answered with `st`, with the transaction numbers
// the handler put in ctx. On an error *reply becomes the error message and bulk_out is
// dropped.
FrameHeader ReplyHeader(const FrameHeader& request, const Status& st, std::string* reply,
                        RpcContext* ctx);

}  // namespace stria::lnet
