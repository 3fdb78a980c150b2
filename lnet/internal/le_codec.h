// Little-endian fixed-width fields for lnet's wire codecs (frame.cc, o2ib/o2ib_msg.cc): Put
// writes a value at p and advances it, Get reads one and advances. The wire is little endian,
// and so are the machines Stria runs on (x86-64, aarch64).
// Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace stria::lnet::internal {

static_assert(std::endian::native == std::endian::little, "lnet's codecs assume little endian");

template <typename T>
void Put(uint8_t*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}

template <typename T>
T Get(const uint8_t*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

}  // namespace stria::lnet::internal
