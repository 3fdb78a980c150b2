#include "lnet/frame.h"

#include <cstring>
#include <string>

#include "common/crc32c.h"
#include "lnet/internal/le_codec.h"

namespace stria::lnet {
namespace {

using internal::Get;
using internal::Put;

constexpr size_t kCrcOffset = kFrameHeaderSize - 4;

}  // namespace

void EncodeHeader(const FrameHeader& h, uint8_t* out) {
  uint8_t* p = out;
  Put<uint32_t>(p, kFrameMagic);
  Put<uint16_t>(p, h.version);
  Put<uint16_t>(p, h.opcode);
  Put<uint32_t>(p, h.flags);
  Put<int32_t>(p, h.status);
  Put<uint64_t>(p, h.xid);
  Put<uint32_t>(p, h.body_len);
  Put<uint32_t>(p, h.body_crc);
  Put<uint64_t>(p, h.bulk_len);
  Put<uint32_t>(p, h.bulk_crc);
  Put<uint64_t>(p, h.transno);
  Put<uint64_t>(p, h.last_committed);
  Put<uint32_t>(p, Crc32c(out, kCrcOffset));
}

Result<FrameHeader> DecodeHeader(const uint8_t* in, const FrameLimits& limits) {
  const uint8_t* p = in;
  if (Get<uint32_t>(p) != kFrameMagic) return Status(Code::kProtocol, "bad frame magic");
  uint32_t stored_crc;
  std::memcpy(&stored_crc, in + kCrcOffset, 4);
  if (stored_crc != Crc32c(in, kCrcOffset)) {
    return Status(Code::kProtocol, "frame header checksum mismatch");
  }
  FrameHeader h;
  h.version = Get<uint16_t>(p);
  h.opcode = Get<uint16_t>(p);
  h.flags = Get<uint32_t>(p);
  h.status = Get<int32_t>(p);
  h.xid = Get<uint64_t>(p);
  h.body_len = Get<uint32_t>(p);
  h.body_crc = Get<uint32_t>(p);
  h.bulk_len = Get<uint64_t>(p);
  h.bulk_crc = Get<uint32_t>(p);
  h.transno = Get<uint64_t>(p);
  h.last_committed = Get<uint64_t>(p);
  if (h.version != kWireVersion) {
    return Status(Code::kProtocol, "unsupported wire version " + std::to_string(h.version));
  }
  if (h.flags & ~kKnownFlags) {
    return Status(Code::kProtocol, "unknown frame flags " + std::to_string(h.flags));
  }
  if (h.body_len > limits.max_body) {
    return Status(Code::kTooLarge, "frame body of " + std::to_string(h.body_len) +
                                       " bytes exceeds the limit of " +
                                       std::to_string(limits.max_body));
  }
  if (h.bulk_len > limits.max_bulk) {
    return Status(Code::kTooLarge, "frame bulk of " + std::to_string(h.bulk_len) +
                                       " bytes exceeds the limit of " +
                                       std::to_string(limits.max_bulk));
  }
  const bool shared_reply =
      (h.flags & (kFlagReply | kFlagBulkShared)) == (kFlagReply | kFlagBulkShared);
  const bool shared_request = (h.flags & kFlagRequestBulkShared) != 0;
  if (shared_request) {
    if (h.flags & (kFlagReply | kFlagBulkShared | kFlagBulkCrc | kFlagBulkNoCrc)) {
      return Status(Code::kProtocol,
                    "request bulk in a shared arena on a reply, with a reply descriptor or "
                    "with a checksum flag");
    }
    if (h.bulk_len == 0) return Status(Code::kProtocol, "request bulk in a shared arena of 0 bytes");
  }
  if (h.bulk_len > 0 && !shared_reply && !shared_request &&
      !(h.flags & (kFlagBulkCrc | kFlagBulkNoCrc))) {
    return Status(Code::kProtocol, "frame bulk without a checksum");
  }
  return h;
}

Status VerifyBody(const FrameHeader& h, std::string_view body) {
  if (body.size() != h.body_len) return Status(Code::kProtocol, "frame body length mismatch");
  if (Crc32c(body.data(), body.size()) != h.body_crc) {
    return Status(Code::kProtocol, "frame body checksum mismatch");
  }
  return Status::Ok();
}

}  // namespace stria::lnet
