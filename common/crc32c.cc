#include "common/crc32c.h"

#include <isa-l/crc.h>

namespace stria {

uint32_t Crc32c(const void* data, size_t len, uint32_t crc) {
  // ISA-L's iSCSI CRC takes and returns the raw register; invert on both sides so that
  // results match the standard crc32c (and chained calls compose).
  return ~crc32_iscsi(static_cast<unsigned char*>(const_cast<void*>(data)),
                      static_cast<int>(len), ~crc);
}

namespace {

// GF(2) polynomials modulo the Castagnoli polynomial, in the reflected bit order crc32c uses:
// bit 31 is the coefficient of x^0, bit 0 that of x^31.
constexpr uint32_t kPoly = 0x82F63B78;
constexpr uint32_t kOne = 1u << 31;

constexpr uint32_t MulModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = kOne; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;  // b *= x
  }
  return product;
}

// kXPow2[k] = x^(2^k) mod P.
struct PowersOfX {
  uint32_t x_pow2[64];
  constexpr PowersOfX() : x_pow2() {
    x_pow2[0] = kOne >> 1;  // x
    for (int k = 1; k < 64; ++k) x_pow2[k] = MulModP(x_pow2[k - 1], x_pow2[k - 1]);
  }
};
constexpr PowersOfX kPowers;

// x^(8 n) mod P: what a crc is multiplied by to move it past n bytes.
uint32_t ShiftFactor(uint64_t n) {
  uint32_t r = kOne;
  uint64_t bits = n;  // the exponent is 8 n = n << 3: start at x^(2^3)
  for (int k = 3; bits != 0 && k < 64; ++k, bits >>= 1) {
    if (bits & 1) r = MulModP(kPowers.x_pow2[k], r);
  }
  return r;
}

// Multiplication by the factor for 4 KiB is linear in the crc: four tables of 256 entries.
struct Shift4K {
  uint32_t table[4][256];
  Shift4K() : table() {
    const uint32_t factor = ShiftFactor(4096);
    for (int byte = 0; byte < 4; ++byte) {
      for (uint32_t v = 0; v < 256; ++v) table[byte][v] = MulModP(factor, v << (8 * byte));
    }
  }
  uint32_t Apply(uint32_t crc) const {
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
           table[3][crc >> 24];
  }
};

}  // namespace

uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  if (len_b == 4096) {
    static const Shift4K shift;
    return shift.Apply(crc_a) ^ crc_b;
  }
  return MulModP(ShiftFactor(len_b), crc_a) ^ crc_b;
}

}  // namespace stria
