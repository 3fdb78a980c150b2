// Fuzz target: whatever bytes arrive, frame and message decoding reject them cleanly or
// accept them without reading out of bounds. Built with clang's libFuzzer where available
// (lnet/CMakeLists.txt); the suite runs it for a bounded time (label fault).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lnet/frame.h"
#include "lnet/o2ib/o2ib_msg.h"
#include "proto/stria.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stria;
  // The o2ib LND's message and connection-parameter decoding sees the same bytes.
  (void)lnet::o2ib::DecodeMsg(data, size, lnet::o2ib::MsgLimits{}).ok();
  (void)lnet::o2ib::DecodeConnParams(data, size).ok();
  if (size < lnet::kFrameHeaderSize) return 0;
  lnet::FrameLimits limits;
  Result<lnet::FrameHeader> h = lnet::DecodeHeader(data, limits);
  std::string_view rest(reinterpret_cast<const char*>(data) + lnet::kFrameHeaderSize,
                        size - lnet::kFrameHeaderSize);
  if (h.ok()) {
    const size_t body_len = std::min<size_t>(h->body_len, rest.size());
    (void)lnet::VerifyBody(*h, rest.substr(0, body_len)).ok();
  }
  // Every request type must parse or fail to parse without harm.
  proto::CreateRequest create;
  (void)create.ParseFromArray(rest.data(), static_cast<int>(rest.size()));
  proto::OstIoRequest io;
  (void)io.ParseFromArray(rest.data(), static_cast<int>(rest.size()));
  proto::ReaddirRequest readdir;
  (void)readdir.ParseFromArray(rest.data(), static_cast<int>(rest.size()));
  proto::FsConfig config;
  (void)config.ParseFromArray(rest.data(), static_cast<int>(rest.size()));
  return 0;
}
