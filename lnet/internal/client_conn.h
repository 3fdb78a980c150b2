// ClientConn: one connection of an RpcClient, on whichever LND carries it (lnet/lnd.h).
//
// RpcClient pools ClientConns and borrows one per exchange: the TCP LND's (rpc_client.cc)
// or the o2ib LND's (lnet/o2ib/o2ib_client.h). One virtual call per exchange, none per byte.
// The helpers below are the frame handling both LNDs share, so a reply is checked the same
// way whatever carried it.
// Thread-safety: a ClientConn is used by one thread at a time (the borrower).
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "lnet/frame.h"
#include "lnet/nid.h"
#include "lnet/rpc_client.h"

namespace stria::lnet {

// The outcome of one attempt: the status, and whether the connection is still usable.
struct Attempt {
  Status status;
  bool conn_ok = false;
};

// One request/reply exchange as RpcClient asks for it.
struct ExchangeArgs {
  uint16_t opcode = 0;
  uint64_t xid = 0;
  std::string_view request;
  std::string* reply = nullptr;
  const CallBulk* bulk = nullptr;
  std::chrono::steady_clock::time_point deadline;
  const FrameLimits* limits = nullptr;
  const Nid* peer = nullptr;
  // A replay (kFlagReplay) carries the transno of its first reply.
  bool replay = false;
  uint64_t replay_transno = 0;
  // Not the first attempt of this xid (kFlagResend).
  bool resend = false;
  // A descriptor to pass with the request (SCM_RIGHTS; local sockets only): the shared bulk
  // arena, with OP_LNET_SHARE_BULK.
  int pass_fd = -1;
  // Where FinishReply puts the reply's transno and last_committed, when set.
  uint64_t* reply_transno = nullptr;
  uint64_t* reply_committed = nullptr;
};

class ClientConn {
 public:
  virtual ~ClientConn() = default;
  virtual Lnd lnd() const = 0;
  virtual Attempt Exchange(const ExchangeArgs& a) = 0;

  // The server instance that answered this connection's CONNECT (0: one that names none):
  // a reply that comes late, from an instance the client has since seen replaced, is kept
  // as that instance's, not the new one's (RpcClient's replay).
  uint64_t instance = 0;
};

// The request's frame header: lengths and crc32c of the body and of the bulk gathered from
// `bulk_out`. With bulk_in_arena the bulk stays in the client's shared arena at the packed
// descriptor (kFlagRequestBulkShared, lnet/shared_bulk.h): no crc is computed for it.
FrameHeader RequestHeader(const ExchangeArgs& a,
                          std::optional<uint64_t> bulk_in_arena = std::nullopt);

// Checks a decoded reply header against the request (reply flag, xid, opcode) and against
// the caller's reply buffer. OK, or the failure with conn_ok = false.
Attempt CheckReplyHeader(const FrameHeader& rh, const ExchangeArgs& a);

// Once the reply's body is in *a.reply and its bulk in a.bulk->in: verifies the bulk's crc
// (kChecksum, retryable), sets *in_len, and turns the reply's status into the result.
Attempt FinishReply(const FrameHeader& rh, const ExchangeArgs& a);

}  // namespace stria::lnet
