// Raw frames for tests that speak the wire protocol by hand, to send what no RpcClient
// would (a bulk whose checksum is wrong). Test-only, header-only.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "common/status.h"
#include "lnet/frame.h"
#include "lnet/nid.h"
#include "lnet/socket.h"
#include "proto/stria.pb.h"

namespace stria::lnet::testing {

inline Nid Loopback(uint16_t port) {
  Nid n;
  n.addr = "127.0.0.1";
  n.port = port;
  return n;
}

inline Clock::time_point Soon() { return Clock::now() + std::chrono::seconds(5); }

// Sends one frame; `bulk_crc_flip` is xor-ed into the bulk's true crc (0: a correct frame);
// pass_fd >= 0 goes with it (SCM_RIGHTS, local sockets).
inline Status SendFrame(int fd, FrameHeader h, const std::string& body,
                        const std::vector<uint8_t>& bulk, uint32_t bulk_crc_flip = 0,
                        int pass_fd = -1) {
  h.body_len = static_cast<uint32_t>(body.size());
  h.body_crc = Crc32c(body.data(), body.size());
  if (!(h.flags & kFlagRequestBulkShared)) h.bulk_len = bulk.size();  // else in the arena
  if (!bulk.empty()) {
    h.flags |= kFlagBulkCrc;
    h.bulk_crc = Crc32c(bulk.data(), bulk.size()) ^ bulk_crc_flip;
  }
  uint8_t hdr[kFrameHeaderSize];
  EncodeHeader(h, hdr);
  iovec iov[3] = {{hdr, sizeof hdr},
                  {const_cast<char*>(body.data()), body.size()},
                  {const_cast<uint8_t*>(bulk.data()), bulk.size()}};
  return SendAll(fd, iov, bulk.empty() ? 2 : 3, Soon(), pass_fd);
}

struct Frame {
  FrameHeader h;
  std::string body;
  std::vector<uint8_t> bulk;
};

inline Result<Frame> RecvFrame(int fd) {
  uint8_t hdr[kFrameHeaderSize];
  STRIA_RETURN_IF_ERROR(RecvAll(fd, hdr, sizeof hdr, Soon()));
  Frame f;
  STRIA_ASSIGN_OR_RETURN(f.h, DecodeHeader(hdr, FrameLimits{}));
  f.body.resize(f.h.body_len);
  STRIA_RETURN_IF_ERROR(RecvAll(fd, f.body.data(), f.body.size(), Soon()));
  // A reply whose bulk went into a shared arena carries none in the stream.
  const bool shared =
      (f.h.flags & (kFlagReply | kFlagBulkShared)) == (kFlagReply | kFlagBulkShared);
  f.bulk.resize(shared ? 0 : f.h.bulk_len);
  STRIA_RETURN_IF_ERROR(RecvAll(fd, f.bulk.data(), f.bulk.size(), Soon()));
  return f;
}

// A TCP connection to the server on 127.0.0.1:`port` that has been through CONNECT (xid 1)
// as `client_uuid` (empty: none), ready for hand-made frames.
inline Result<int> ConnectRaw(uint16_t port, const std::string& client_uuid = "") {
  STRIA_ASSIGN_OR_RETURN(int fd, TcpConnect(Loopback(port), 1000));
  proto::ConnectRequest conn;
  conn.set_version(kWireVersion);
  conn.set_client_uuid(client_uuid);
  std::string body;
  conn.SerializeToString(&body);
  FrameHeader h;
  h.opcode = proto::OP_CONNECT;
  h.xid = 1;
  Status st = SendFrame(fd, h, body, {});
  Result<Frame> reply = st.ok() ? RecvFrame(fd) : Result<Frame>(st);
  if (reply.ok() && reply->h.status != 0) reply = Status(Code::kProtocol, "CONNECT refused");
  if (!reply.ok()) {
    close(fd);
    return reply.status();
  }
  return fd;
}

}  // namespace stria::lnet::testing
