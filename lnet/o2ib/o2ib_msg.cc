#include "lnet/o2ib/o2ib_msg.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/crc32c.h"
#include "lnet/internal/le_codec.h"

namespace stria::lnet::o2ib {
namespace {

using internal::Get;
using internal::Put;

constexpr size_t kCrcOffset = kMsgHeaderSize - 4;

// The crc covers the header up to itself and every descriptor.
uint32_t HeadCrc(const uint8_t* msg, size_t nbufs) {
  uint32_t crc = Crc32c(msg, kCrcOffset);
  return Crc32c(msg + kMsgHeaderSize, nbufs * kRemoteBufSize, crc);
}

Status Bad(const std::string& why) { return Status(Code::kProtocol, "o2ib message: " + why); }

}  // namespace

size_t EncodeMsgHead(const MsgHeader& h, std::span<const RemoteBuf> bufs, uint8_t* out) {
  uint8_t* p = out;
  Put<uint32_t>(p, kMsgMagic);
  Put<uint16_t>(p, kMsgVersion);
  Put<uint8_t>(p, static_cast<uint8_t>(h.type));
  Put<uint8_t>(p, static_cast<uint8_t>(bufs.size()));
  Put<uint16_t>(p, h.flags);
  Put<uint16_t>(p, h.credits.normal);
  Put<uint16_t>(p, h.credits.noop);
  Put<uint16_t>(p, 0);
  Put<uint32_t>(p, h.payload_len);
  Put<uint32_t>(p, 0);
  Put<uint32_t>(p, 0);
  uint8_t* crc_at = p;
  p += 4;
  for (const RemoteBuf& b : bufs) {
    Put<uint64_t>(p, b.addr);
    Put<uint32_t>(p, b.rkey);
    Put<uint32_t>(p, b.len);
    Put<uint16_t>(p, static_cast<uint16_t>(b.role));
    Put<uint16_t>(p, 0);
    Put<uint32_t>(p, 0);
  }
  uint32_t crc = HeadCrc(out, bufs.size());
  std::memcpy(crc_at, &crc, 4);
  return static_cast<size_t>(p - out);
}

Result<DecodedMsg> DecodeMsg(const uint8_t* in, size_t len, const MsgLimits& limits) {
  if (len < kMsgHeaderSize) {
    return Bad(std::to_string(len) + " bytes is shorter than the 32-byte header");
  }
  const uint8_t* p = in;
  if (Get<uint32_t>(p) != kMsgMagic) return Bad("bad magic");
  const uint16_t version = Get<uint16_t>(p);
  if (version != kMsgVersion) {
    return Bad("version " + std::to_string(version) + " not supported (this side speaks " +
               std::to_string(kMsgVersion) + ")");
  }
  DecodedMsg m;
  const uint8_t type = Get<uint8_t>(p);
  const size_t nbufs = Get<uint8_t>(p);
  m.header.flags = Get<uint16_t>(p);
  m.header.credits.normal = Get<uint16_t>(p);
  m.header.credits.noop = Get<uint16_t>(p);
  p += 2;
  m.header.payload_len = Get<uint32_t>(p);
  p += 8;
  const uint32_t crc = Get<uint32_t>(p);
  if (nbufs > limits.max_bufs) {
    return Status(Code::kTooLarge, "o2ib message: " + std::to_string(nbufs) +
                                       " remote buffers (at most " +
                                       std::to_string(limits.max_bufs) + ")");
  }
  if (MsgSize(nbufs, 0) > len) {
    return Bad(std::to_string(nbufs) + " descriptors do not fit in " + std::to_string(len) +
               " bytes");
  }
  if (HeadCrc(in, nbufs) != crc) return Bad("header checksum mismatch");
  if (type != static_cast<uint8_t>(MsgType::kFrame) &&
      type != static_cast<uint8_t>(MsgType::kNoop)) {
    return Bad("unknown type " + std::to_string(type));
  }
  m.header.type = static_cast<MsgType>(type);
  if (m.header.flags & ~kKnownMsgFlags) return Bad("unknown flags");
  if (MsgSize(nbufs, m.header.payload_len) != len) {
    return Bad("payload of " + std::to_string(m.header.payload_len) + " bytes does not match " +
               "the " + std::to_string(len) + " bytes received");
  }
  if (m.header.type == MsgType::kNoop && (nbufs != 0 || m.header.payload_len != 0)) {
    return Bad("a credit message carries nothing but credits");
  }
  m.bufs.reserve(nbufs);
  for (size_t i = 0; i < nbufs; ++i) {
    RemoteBuf b;
    b.addr = Get<uint64_t>(p);
    b.rkey = Get<uint32_t>(p);
    b.len = Get<uint32_t>(p);
    const uint16_t role = Get<uint16_t>(p);
    p += 6;
    const std::string what = "remote buffer " + std::to_string(i);
    if (role < 1 || role > 3) return Bad(what + " has unknown role " + std::to_string(role));
    b.role = static_cast<BufRole>(role);
    if (b.len == 0) return Bad(what + " is empty");
    if (b.addr + b.len < b.addr) return Bad(what + " wraps around the address space");
    if (b.role == BufRole::kBulkSource) m.source_bytes += b.len;
    if (b.role == BufRole::kBulkSink) m.sink_bytes += b.len;
    m.bufs.push_back(b);
  }
  size_t bodies = 0;
  for (size_t i = 0; i < m.bufs.size(); ++i) {
    const RemoteBuf& b = m.bufs[i];
    if (b.role != BufRole::kBody) continue;
    if (++bodies > 1) return Bad("more than one remote body");
    if (b.len > limits.max_body) {
      return Status(Code::kTooLarge, "o2ib message: remote body of " + std::to_string(b.len) +
                                         " bytes exceeds the limit of " +
                                         std::to_string(limits.max_body));
    }
    m.body_index = static_cast<int>(i);
  }
  if (m.source_bytes > limits.max_bulk || m.sink_bytes > limits.max_bulk) {
    return Status(Code::kTooLarge, "o2ib message: remote bulk of " +
                                       std::to_string(std::max(m.source_bytes, m.sink_bytes)) +
                                       " bytes exceeds the limit of " +
                                       std::to_string(limits.max_bulk));
  }
  if (m.source_bytes > 0 && (m.header.flags & kMsgInlineBulk)) {
    return Bad("bulk both inline and in remote buffers");
  }
  m.payload = {in + MsgSize(nbufs, 0), m.header.payload_len};
  return m;
}

void EncodeConnParams(const ConnParams& c, uint8_t out[kConnParamsSize]) {
  uint8_t* p = out;
  Put<uint32_t>(p, kMsgMagic);
  Put<uint16_t>(p, kMsgVersion);
  Put<uint16_t>(p, c.queue_depth);
  Put<uint16_t>(p, c.reserved);
  Put<uint16_t>(p, 0);
  Put<uint32_t>(p, c.msg_size);
}

Result<ConnParams> DecodeConnParams(const void* data, size_t len) {
  // rdma_cm may pad private data with zeros up to its transport's size.
  if (data == nullptr || len < kConnParamsSize) {
    return Status(Code::kProtocol,
                  "o2ib: the peer sent no connection parameters (not a Stria peer?)");
  }
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (Get<uint32_t>(p) != kMsgMagic) {
    return Status(Code::kProtocol,
                  "o2ib: connection parameters have a bad magic (not a Stria peer?)");
  }
  const uint16_t version = Get<uint16_t>(p);
  if (version != kMsgVersion) {
    return Status(Code::kProtocol, "o2ib: peer speaks o2ib message version " +
                                       std::to_string(version) + ", this side " +
                                       std::to_string(kMsgVersion));
  }
  ConnParams c;
  c.queue_depth = Get<uint16_t>(p);
  c.reserved = Get<uint16_t>(p);
  p += 2;
  c.msg_size = Get<uint32_t>(p);
  if (c.queue_depth < 1 || c.queue_depth > kMaxQueueDepth || c.reserved < 1 || c.reserved > 16 ||
      c.msg_size < kMinMsgSize || c.msg_size > kMaxMsgSize) {
    return Status(Code::kProtocol, "o2ib: connection parameters out of range (queue depth " +
                                       std::to_string(c.queue_depth) + ", reserved " +
                                       std::to_string(c.reserved) + ", message size " +
                                       std::to_string(c.msg_size) + ")");
  }
  return c;
}

ConnParams Negotiate(const ConnParams& mine, const ConnParams& theirs) {
  return ConnParams{std::min(mine.queue_depth, theirs.queue_depth),
                    std::min(mine.reserved, theirs.reserved),
                    std::min(mine.msg_size, theirs.msg_size)};
}

}  // namespace stria::lnet::o2ib
