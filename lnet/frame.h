// The frame: the unit of every Stria exchange on every LND.
//
//   FrameHeader (64 bytes, little endian) | body (protobuf, body_len bytes) | bulk (bulk_len)
//
// The header carries a crc32c of itself, of the body and of the bulk, so a corrupt frame is
// detected before any field is used. Requests and replies share the format; a reply has
// kFlagReply set, the request's xid and opcode, and a status code (common/status.h). A
// non-OK reply's body is the error message text, not a protobuf. A reply also carries the
// server's transaction number of the change it reports (0: none) and the highest one that is
// durable; a request resent after a server restart carries kFlagReplay and its original
// transaction number (Lustre's transno, last_committed and MSG_REPLAY; docs/durability.md).
// See docs/wire-protocol.md.
// Thread-safety: pure functions over values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace stria::lnet {

inline constexpr uint32_t kFrameMagic = 0x41525453;  // "STRA" on the wire
inline constexpr uint16_t kWireVersion = 2;
inline constexpr size_t kFrameHeaderSize = 64;

inline constexpr uint32_t kFlagReply = 1u << 0;
inline constexpr uint32_t kFlagBulkCrc = 1u << 1;  // bulk_crc is set and must be verified
// The sender chose to send the bulk without a crc (osc.*.checksums=0): a bulk needs one of
// kFlagBulkCrc or this flag, so a bulk is never unchecked by accident.
inline constexpr uint32_t kFlagBulkNoCrc = 1u << 2;
// A request replayed after the server restarted: `transno` is the one its first reply had.
inline constexpr uint32_t kFlagReplay = 1u << 3;
// A request sent again with the xid of an earlier attempt (after a lost connection, a timeout
// or a retryable error): that attempt may have been done. A server that keeps replies past
// its own life (the MDS's reply journal) looks for one only for these and replays.
inline constexpr uint32_t kFlagResend = 1u << 4;
// Shared bulk between processes on one host (lnet/shared_bulk.h). In a request:
// last_committed (unused in requests) describes where in the client's shared arena the
// reply's bulk may go. In a reply: the bulk_len bytes were put there, none follow in the
// stream, and no crc goes with them (nothing crossed a wire).
inline constexpr uint32_t kFlagBulkShared = 1u << 5;
// Request bulk by reference between processes on one host (lnet/shared_bulk.h): the
// request's bulk_len bytes are in the client's shared arena where last_committed says, none
// follow in the stream, and no crc goes with them. Requests only, never with
// kFlagBulkShared (the one descriptor field holds one or the other).
inline constexpr uint32_t kFlagRequestBulkShared = 1u << 6;
inline constexpr uint32_t kKnownFlags = kFlagReply | kFlagBulkCrc | kFlagBulkNoCrc | kFlagReplay |
                                        kFlagResend | kFlagBulkShared | kFlagRequestBulkShared;

struct FrameHeader {
  uint16_t version = kWireVersion;
  uint16_t opcode = 0;
  uint32_t flags = 0;
  int32_t status = 0;     // Code of a reply; 0 in requests
  uint64_t xid = 0;       // chosen by the requester, echoed in the reply
  uint32_t body_len = 0;
  uint32_t body_crc = 0;
  uint64_t bulk_len = 0;
  uint32_t bulk_crc = 0;
  // Replies: the transaction number of the change answered (0 when none) and the highest
  // transaction number durable on the server. Replayed requests: the original transno.
  uint64_t transno = 0;
  uint64_t last_committed = 0;
};

// Limits a receiver enforces before allocating anything.
struct FrameLimits {
  uint32_t max_body = 4u << 20;
  uint64_t max_bulk = 64ull << 20;
};

// Writes the header, with its own crc, into out[kFrameHeaderSize].
void EncodeHeader(const FrameHeader& h, uint8_t* out);

// Parses and checks a header: magic, version, header crc, known flags, lengths within
// limits. kProtocol or kTooLarge with a reason on failure.
Result<FrameHeader> DecodeHeader(const uint8_t* in, const FrameLimits& limits);

// Checks the body's crc against the header.
Status VerifyBody(const FrameHeader& h, std::string_view body);

}  // namespace stria::lnet
