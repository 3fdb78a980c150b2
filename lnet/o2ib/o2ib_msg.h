// The o2ib message: what one RDMA SEND carries into one pre-posted receive buffer.
//
//   MsgHeader (32 bytes) | nbufs x RemoteBuf (24 bytes each) | payload (payload_len bytes)
//
// The payload of a kFrame message is a Stria frame (lnet/frame.h: FrameHeader and body)
// followed, when kMsgInlineBulk is set, by the frame's bulk. When the body does not fit in
// a receive buffer it stays in the sender's memory, named by a kBody RemoteBuf, and the
// receiver RDMA READs it. Bulk that does not fit travels by RDMA between registered
// buffers: a request names the client's source buffers (kBulkSource: the server RDMA READs
// them, a client write) and the buffer its reply bulk goes to (kBulkSink: the server RDMA
// WRITEs it, a client read). A kNoop carries credits only. docs/wire-protocol.md ("RDMA")
// has the whole flow.
//
// Every field is checked by DecodeMsg before use: a bad or oversized descriptor is a
// kProtocol (or kTooLarge) error with a reason, and the connection is dropped.
// Thread-safety: pure functions over values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "lnet/o2ib/credits.h"

namespace stria::lnet::o2ib {

inline constexpr uint32_t kMsgMagic = 0x42494f53;  // "SOIB" on the wire
inline constexpr uint16_t kMsgVersion = 1;
inline constexpr size_t kMsgHeaderSize = 32;
inline constexpr size_t kRemoteBufSize = 24;
inline constexpr size_t kMaxRemoteBufs = 64;  // descriptors in one message

enum class MsgType : uint8_t {
  kFrame = 1,  // a request or a reply frame
  kNoop = 2,   // credits only
};

inline constexpr uint16_t kMsgInlineBulk = 1u << 0;  // the frame's bulk follows its body
inline constexpr uint16_t kKnownMsgFlags = kMsgInlineBulk;

enum class BufRole : uint16_t {
  kBulkSource = 1,  // request bulk in the client's memory: the server RDMA READs it
  kBulkSink = 2,    // where the reply bulk goes: the server RDMA WRITEs it
  kBody = 3,        // a frame body too large to send inline: the receiver RDMA READs it
};

// A piece of the sender's registered memory that the receiver may read or write.
struct RemoteBuf {
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t len = 0;
  BufRole role = BufRole::kBulkSource;
  bool operator==(const RemoteBuf&) const = default;
};

struct MsgHeader {
  MsgType type = MsgType::kFrame;
  uint16_t flags = 0;
  CreditReturn credits;  // credits handed back to the receiver (lnet/o2ib/credits.h)
  uint32_t payload_len = 0;
};

// Limits a receiver enforces on descriptors.
struct MsgLimits {
  uint64_t max_bulk = 64ull << 20;  // total of the kBulkSource or of the kBulkSink buffers
  uint32_t max_body = 4u << 20;     // a kBody buffer
  size_t max_bufs = kMaxRemoteBufs;
};

struct DecodedMsg {
  MsgHeader header;
  std::vector<RemoteBuf> bufs;
  std::span<const uint8_t> payload;  // points into the receive buffer
  uint64_t source_bytes = 0;         // total of kBulkSource
  uint64_t sink_bytes = 0;           // total of kBulkSink
  int body_index = -1;               // the kBody descriptor in bufs, if any
};

// The parameters a connection runs with, proposed by the client and answered (lowered
// where it wants) by the server in the rdma_cm private data of CONNECT and ACCEPT.
struct ConnParams {
  uint16_t queue_depth = 8;  // normal receive buffers each side posts
  uint16_t reserved = 2;     // receive buffers each side posts for kNoop only
  uint32_t msg_size = 16u << 10;
  bool operator==(const ConnParams&) const = default;
};
inline constexpr size_t kConnParamsSize = 16;
inline constexpr uint16_t kMaxQueueDepth = 256;
inline constexpr uint32_t kMinMsgSize = 4u << 10;
inline constexpr uint32_t kMaxMsgSize = 1u << 20;

void EncodeConnParams(const ConnParams& p, uint8_t out[kConnParamsSize]);
// kProtocol when the bytes are not connection parameters or are out of range.
Result<ConnParams> DecodeConnParams(const void* data, size_t len);
// What both sides run with: the smaller of each.
ConnParams Negotiate(const ConnParams& mine, const ConnParams& theirs);

// Bytes a message with `nbufs` descriptors and `payload_len` payload occupies.
inline size_t MsgSize(size_t nbufs, size_t payload_len) {
  return kMsgHeaderSize + nbufs * kRemoteBufSize + payload_len;
}

// Writes the header and descriptors into out (at least MsgSize(bufs.size(), 0) bytes); the
// caller writes header.payload_len payload bytes after them. Returns the payload's offset.
size_t EncodeMsgHead(const MsgHeader& header, std::span<const RemoteBuf> bufs, uint8_t* out);

// Parses and checks a received message of `len` bytes. kProtocol / kTooLarge with a reason.
Result<DecodedMsg> DecodeMsg(const uint8_t* in, size_t len, const MsgLimits& limits);

}  // namespace stria::lnet::o2ib
