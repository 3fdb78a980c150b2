// RpcServer: serves Stria RPCs on a NID, on the LND that carries it here (lnet/lnd.h): TCP
// connections as below, or o2ib connections whose completion channels share the same epoll
// set and workers (lnet/o2ib/o2ib_server.h). Either way a request goes through one path
// (lnet/internal/server_core.h): CONNECT, PING, OP_LNET_PEERS, handlers, the reply cache.
//
// Concurrency model: a fixed pool of worker_threads threads share one epoll set over the
// listening socket and every connection (non-blocking sockets, EPOLLONESHOT). A thread takes
// one readable connection, assembles the frame under FrameLimits as its bytes arrive and,
// once it is whole, runs the handler and writes the reply itself before rearming the
// connection: one wakeup per request, no hand-off between threads, and bulk received in
// parallel by as many threads as connections send it. At most worker_threads handlers run
// at once. A connection has at most one request being handled at a time (clients open
// several connections for parallelism), which bounds server memory by
// connections x (max_body + max_bulk). A malformed frame or a peer that stalls mid-frame
// for longer than stall_timeout drops that connection with a log line; every other
// connection is unaffected.
//
// The first frame of a connection must be OP_CONNECT (handled here): it names the client's
// uuid (RpcContext::client_uuid) and the filesystem it expects. With ServerOptions::keys the
// second must be OP_AUTH, and nothing else is served until the client proved the key.
//
// Handlers are registered before Start() and must be thread-safe: several run at once.
// Thread-safety: Register* before Start(); Start/Stop from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "lnet/auth.h"
#include "lnet/buffer.h"
#include "lnet/frame.h"
#include "lnet/nid.h"

namespace stria::lnet {

struct ServerOptions {
  std::string name = "stria";        // for logs
  std::string fsname;                // answered in CONNECT; a client naming another is refused
  std::string server_uuid;
  int worker_threads = 8;            // threads that read frames and run handlers
  FrameLimits limits;                // per-frame body/bulk limits
  int stall_timeout_ms = 60'000;     // a partly received frame older than this drops the peer
  int max_connections = 4096;
  // Opcodes whose replies are kept per (client uuid, xid) so that a resend does not run
  // the request twice (lnet/reply_cache.h): every non-idempotent MDS operation.
  std::vector<uint16_t> reply_cache_opcodes;
  // The cluster key ring (lnet/auth.h): with one, a connection is served only after the
  // challenge-response at CONNECT; a peer without the key, or with another, is refused with
  // one log line and kAccess. Null: every peer is served (a test cluster's trust model).
  std::shared_ptr<const KeyRing> keys;
  std::string role = "server";       // ours, in CONNECT replies and the proofs: mds, oss
  // This start of the server, in CONNECT replies (random when 0): a client that sees it
  // change knows the server restarted and replays what it had not seen committed.
  uint64_t instance = 0;
  // The start count on the server's disk, in CONNECT replies (ConnectReply.generation; 0:
  // not counted): how a replaying client knows it saw every instance (lnet/rpc_client.h).
  uint64_t generation = 0;
};

// What a handler knows about the request beyond its message, and where it puts reply bulk.
struct RpcContext {
  std::string peer;                       // "127.0.0.1:41234"
  Lnd lnd = Lnd::kTcp;                    // the LND carrying the connection
  bool local_peer = false;                // the peer came over the local socket (this host)
  std::string client_uuid;                // from the connection's CONNECT
  uint64_t xid = 0;
  uint16_t opcode = 0;
  // Request bulk; valid only during the handler. For an opcode that ReadsBulkInPlace, it
  // may be a local client's shared memory, which that client could change meanwhile.
  std::span<const uint8_t> bulk_in;
  // Set only for an opcode registered with HandlerVerifiesBulk whose request came with a
  // bulk checksum: the server has not checked bulk_in, the handler must, against this
  // value, before using a byte of it (kChecksum when it differs).
  std::optional<uint32_t> bulk_in_crc;
  Buffer bulk_out;                        // reply bulk: the handler allocates and fills it;
                                          // its size() is what is sent (Buffer::Shrink)
  // The crc32c of bulk_out's bytes, when the handler knows it without another pass over
  // them (the OSS folds the sums of the 4 KiB chunks it verified, Crc32cCombine); unset, the
  // server computes it.
  std::optional<uint32_t> bulk_out_crc;
  // Where the reply's bulk may go instead: the client's own memory, when a local client
  // shared its arena and asked for it (lnet/shared_bulk.h); empty otherwise. Set once the
  // bulk is there: how many bytes (nothing then follows the reply in the stream). Handlers
  // use ReplyBulkRoom and ReplyBulkFilled rather than these.
  std::span<uint8_t> bulk_out_shared;
  std::optional<size_t> bulk_out_shared_len;

  // Where a handler puts a reply bulk of at most len bytes: the client's memory when it
  // offered room for it (bulk_out_shared), else a fresh bulk_out. ReplyBulkFilled then says
  // how many bytes it put there, and their crc32c when known (bulk_out_crc; unused in
  // place, where no crc goes).
  std::span<uint8_t> ReplyBulkRoom(size_t len);
  void ReplyBulkFilled(size_t n, std::optional<uint32_t> crc = std::nullopt);
  // A request replayed after a restart (kFlagReplay), and the transno its first reply had.
  bool replay = false;
  uint64_t replay_transno = 0;
  // A request sent again with the xid of an earlier attempt (kFlagResend), which may have
  // been done (by this server, or by an earlier run of it).
  bool resent = false;
  // Set by the handler for the reply header: the transaction number of the change it made
  // (0: none, or already durable) and the highest durable one (docs/durability.md).
  uint64_t transno = 0;
  uint64_t last_committed = 0;
};

class RpcServer {
 public:
  // Decodes nothing: the body bytes in, the reply body bytes out. A non-OK return becomes an
  // error reply carrying the code and message; reply_body and bulk_out are then discarded.
  using RawHandler =
      std::function<Status(RpcContext& ctx, std::string_view body, std::string* reply_body)>;

  explicit RpcServer(ServerOptions options);
  ~RpcServer();  // Stop()s
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  void RegisterRaw(uint16_t opcode, RawHandler handler);

  // Requests of `opcode` reach the handler with their bulk unchecked and its expected crc32c
  // in RpcContext::bulk_in_crc: for a handler that sums the bytes anyway (the OSS's chunk
  // sums of a write) and so checks them without a pass of the server's own. Before Start().
  void HandlerVerifiesBulk(uint16_t opcode);

  // Requests of `opcode` whose bulk a local client left in its shared arena
  // (kFlagRequestBulkShared, lnet/shared_bulk.h) reach the handler with bulk_in pointing into
  // the client's memory, not copied: for a handler that only reads the bytes once into
  // their place (the OSS's write, straight to disk) and never decides on what it read, since
  // the client could change them meanwhile. A server that has any offers request bulk in
  // place to local clients; other opcodes' shared bulk is copied out before their handler
  // runs. Before Start().
  void ReadsBulkInPlace(uint16_t opcode);

  // Typed registration: the body is parsed as Req (kProtocol if it does not parse) and the
  // reply serialized from Rep.
  template <typename Req, typename Rep>
  void Register(uint16_t opcode, std::function<Status(RpcContext&, const Req&, Rep*)> fn) {
    RegisterRaw(opcode, [fn = std::move(fn)](RpcContext& ctx, std::string_view body,
                                             std::string* reply_body) -> Status {
      Req req;
      if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
        return Status(Code::kProtocol, "request body does not parse as " + req.GetTypeName());
      }
      Rep rep;
      Status st = fn(ctx, req, &rep);
      if (st.ok()) rep.SerializeToString(reply_body);
      return st;
    });
  }

  // Binds `listen` (port 0 picks a free port) and starts the loop and workers.
  Status Start(const Nid& listen);

  // The bound port (after Start).
  uint16_t port() const;

  // How busy the server is, for /metrics: handlers running now (at most worker_threads;
  // requests beyond wait in their sockets), requests received since Start, and of those the
  // requests with a bulk, by whether it came with a crc32c (kFlagBulkCrc) or without one
  // (kFlagBulkNoCrc: the client's osc.*.checksums=0).
  struct Load {
    int64_t active = 0;
    uint64_t requests = 0;
    int workers = 0;
    uint64_t bulk_checked = 0;
    uint64_t bulk_unchecked = 0;
    uint64_t bulk_spliced = 0;  // reply bulks sent by reference to local peers (SpliceAll)
    uint64_t bulk_shared = 0;   // reply bulks put straight into a local peer's arena
    uint64_t bulk_in_shared = 0;  // request bulks read from a local peer's arena
  };
  Load load() const;

  // Stops accepting, closes every connection, waits for handlers in flight. Idempotent.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stria::lnet
