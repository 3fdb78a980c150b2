// Credits: the flow control of one o2ib connection, as pure logic (no verbs).
//
// Each side posts queue_depth + reserved receive buffers on its queue pair. A message may be
// sent only into a receive buffer the peer has posted, so a sender holds credits:
//
//   - `send_credits`: normal messages (requests, replies) it may still send; starts at
//     queue_depth, one is consumed per message, and the peer gives them back.
//   - `noop_credits`: credit-return messages (kNoop) it may still send; starts at
//     `reserved`. These slots are never used by a normal message, so a side that has run out
//     of normal credits can still hand back the credits it owes: when both sides are out of
//     normal credits, neither waits for the other (no deadlock).
//
// A receiver reposts each buffer once it has consumed the message, and then owes the sender
// one credit of the message's kind. Owed credits ride back on every message it sends
// (piggy-backed in the o2ib header, lnet/o2ib/o2ib_msg.h); when nothing is being sent and
// at least `noop_threshold` normal credits are owed, it sends a kNoop that carries them.
// A kNoop returns normal credits (at least one) and any owed noop slots, so it never calls
// for another kNoop in answer: no ping-pong.
//
// Checks that make a misbehaving peer a disconnect rather than an RNR storm: a message
// arriving with no credit left for its kind, or a peer returning more credits than it was
// ever given, is a kProtocol error (the connection is torn down, lnet/o2ib/o2ib_conn.h).
//
// Invariants (for each kind): sender's credits + credits owed by the receiver + messages in
// flight + credits in flight back = the number of buffers posted for that kind.
// Thread-safety: none; the owner of the connection serializes calls.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace stria::lnet::o2ib {

enum class MsgKind : uint8_t {
  kNormal,  // a request or a reply: consumes a normal credit
  kNoop,    // a credit return only: consumes a reserved slot
};

// What a message hands back to its receiver (the o2ib header's two credit fields).
struct CreditReturn {
  uint16_t normal = 0;
  uint16_t noop = 0;
};

struct CreditParams {
  uint16_t queue_depth = 8;     // normal receive buffers posted for the peer
  uint16_t reserved = 2;        // receive buffers posted only for kNoop
  uint16_t noop_threshold = 4;  // owed normal credits that justify a kNoop (1..queue_depth)
};

class Credits {
 public:
  // queue_depth is raised to 1 and noop_threshold clamped to [1, queue_depth].
  explicit Credits(CreditParams params);

  const CreditParams& params() const { return params_; }

  // --- sending ---
  bool CanSend(MsgKind kind) const;
  // True when a kNoop should go out now: enough normal credits are owed, a noop slot is
  // free, and no normal message is about to carry them (`normal_queued`).
  bool NeedNoop(bool normal_queued) const;
  // Consumes a credit of `kind` (REQUIRES: CanSend(kind)) and takes everything owed, to be
  // written into the message's header.
  CreditReturn Consume(MsgKind kind);

  // --- receiving ---
  // A message of `kind` arrived carrying `returned`. kProtocol when the peer had no credit
  // for it or returns more than it holds; the connection must then be torn down.
  Status OnReceive(MsgKind kind, CreditReturn returned);
  // The buffer of a received message of `kind` was posted again: one more credit is owed.
  void OnRepost(MsgKind kind);

  uint16_t send_credits() const { return send_normal_; }
  uint16_t noop_credits() const { return send_noop_; }
  uint16_t owed_normal() const { return owed_normal_; }
  uint16_t owed_noop() const { return owed_noop_; }

 private:
  const CreditParams params_;
  uint16_t send_normal_;      // normal messages we may still send
  uint16_t send_noop_;        // kNoops we may still send
  uint16_t peer_normal_;      // normal messages the peer may still send us
  uint16_t peer_noop_;        // kNoops the peer may still send us
  uint16_t owed_normal_ = 0;  // reposted, not yet returned
  uint16_t owed_noop_ = 0;
  uint16_t unposted_normal_ = 0;  // received, buffer not reposted yet
  uint16_t unposted_noop_ = 0;
};

}  // namespace stria::lnet::o2ib
