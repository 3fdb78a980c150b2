// RpcClient: sends requests to one peer (a NID) and waits for their replies.
//
// It keeps a pool of up to max_connections connections to the peer, on the LND that carries
// its NID here (lnet/lnd.h: TCP, or RDMA for o2ib NIDs); each call borrows
// one for the whole exchange, so calls from many threads proceed in parallel and bulk never
// queues behind bulk. Request bulk is written straight from the caller's iovecs and reply
// bulk is read straight into the caller's buffer (scatter/gather, no copy). Every frame is
// checksummed (crc32c); a reply whose bulk fails its checksum is a kChecksum error.
//
// Retry: a call that fails with a retryable status (connection refused or lost, timeout,
// checksum, a peer that is restarting) is resent with the same xid on a fresh connection,
// with backoff, until ClientOptions::retry_deadline_ms has passed since the call began;
// then the last error is returned. Servers that must not run a request twice key their
// reply cache on (client_uuid, xid).
//
// Replay: see ClientOptions::keep_replays.
//
// Authentication: with ClientOptions::keys, CONNECT carries a nonce and the connection is
// used only once both sides proved the key (lnet/auth.h); a failure is kAccess, not retried.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "lnet/auth.h"
#include "lnet/frame.h"
#include "lnet/nid.h"

namespace stria::lnet {

struct ClientOptions {
  std::string client_uuid;            // sent in CONNECT; random when empty
  std::string fsname;                 // expected filesystem; empty = any
  int connect_timeout_ms = 5'000;     // one connection attempt
  int rpc_timeout_ms = 60'000;        // one attempt's wait for its reply
  int retry_deadline_ms = 300'000;    // keep resending retryable failures this long (then EIO)
  int max_connections = 8;            // connections kept to this peer
  FrameLimits limits;                 // what replies may carry
  // The cluster key (lnet/auth.h): with one, every connection proves it and makes the server
  // prove it before any request (kAccess "authentication failed: ..." otherwise); null: no
  // authentication, as a test cluster without a key.
  std::shared_ptr<const KeyRing> keys;
  std::string role = "client";        // who we are, in CONNECT and the proofs: client, mds, oss, tool
  // Replay (Lustre's replay of uncommitted requests; docs/durability.md). With keep_replays,
  // every request whose reply carries a transno above the reply's last_committed is kept
  // until a later reply reports it committed; when a new connection finds the server
  // restarted (another instance in its CONNECT reply), the kept requests are resent on it
  // first, in the order they were done, with kFlagReplay, their original xid and the
  // transno they were last given (0 where that came from two instances back: a replay cut
  // short by another restart, or an instance the client never saw, which
  // ConnectReply.generation tells), before any other request goes out. A reply that comes
  // late, from an instance already found replaced, trims nothing; what it had not committed
  // is replayed without a number before the next request borrows a connection (so out of
  // the order it was done in, behind what was replayed already). Idle connections to a
  // replaced instance are closed, and a CONNECT answered by one fails (kDisconnected) and is
  // retried.
  // replay_patch, when set, rewrites a kept
  // request's body from its reply just before its first replay (a create replays under the
  // inode number its reply gave): the reply is kept beside the request, since nearly every
  // kept request is trimmed unreplayed (parsing and re-encoding each create at keep time was
  // a sixth of a creating client's CPU).
  bool keep_replays = false;
  std::function<void(uint16_t opcode, std::string* request, std::string_view reply)>
      replay_patch;
  // Called when a new connection finds the server restarted (before any replay), on the
  // connecting thread: must not block or call this RpcClient (a client's write-back grants,
  // which the restarted server no longer knows, end there: client/fuse/unlink_writeback.h).
  std::function<void()> on_restart;
};

// Bulk for one call: what to send after the request body, and where the reply's bulk goes.
struct CallBulk {
  std::span<const iovec> out;         // request bulk, gathered from these
  std::span<uint8_t> in;              // reply bulk lands here (at most in.size() bytes)
  size_t* in_len = nullptr;           // set to the reply's bulk length
  // false: the request bulk goes without a crc32c and the reply bulk's is not verified
  // (osc.*.checksums=0, as Lustre's); the frame header and body are checksummed always.
  bool checksum = true;
};

class RpcClient {
 public:
  RpcClient(Nid peer, ClientOptions options);
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  const Nid& peer() const;

  // One exchange with raw bodies. A non-OK status is either the server's reply (its code and
  // message) or a transport failure after retries. retry_deadline_ms >= 0 overrides the
  // option for this call (e.g. a keepalive that must not outlive its period).
  // attempt_timeout_ms >= 0 bounds each attempt's connect and reply wait below the options'
  // (a mirrored write that moves on to the other mirrors after a short wait).
  Status CallRaw(uint16_t opcode, std::string_view request, std::string* reply,
                 const CallBulk& bulk = {}, int retry_deadline_ms = -1,
                 int attempt_timeout_ms = -1);

  template <typename Req, typename Rep>
  Status Call(uint16_t opcode, const Req& req, Rep* rep, const CallBulk& bulk = {}) {
    std::string body, reply;
    req.SerializeToString(&body);
    STRIA_RETURN_IF_ERROR(CallRaw(opcode, body, &reply, bulk));
    if (!rep->ParseFromString(reply)) {
      return Status(Code::kProtocol, "reply does not parse as " + rep->GetTypeName());
    }
    return Status::Ok();
  }

  // Overrides the retry deadline for calls from now on (e.g. a tool that should fail fast).
  void set_retry_deadline_ms(int ms);

  // Requests kept for replay now (keep_replays), and replays sent since construction.
  size_t pending_replays() const;
  uint64_t replays_sent() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stria::lnet
