#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace stria {
namespace {

TEST(Crc32cTest, KnownVector) {
  // The standard check value of CRC-32C over "123456789".
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
}

TEST(Crc32cTest, ChainsLikeOneCall) {
  std::string s(100000, 'x');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 31);
  uint32_t whole = Crc32c(s.data(), s.size());
  uint32_t part = Crc32c(s.data(), 777);
  part = Crc32c(s.data() + 777, s.size() - 777, part);
  EXPECT_EQ(whole, part);
}

TEST(Crc32cTest, CombineEqualsOnePass) {
  std::string s(3 * 4096 + 1000, 'x');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 131 + (i >> 7));
  const uint32_t whole = Crc32c(s.data(), s.size());
  // Split at every kind of boundary: 4 KiB chunks (the table), odd lengths, empty parts.
  for (size_t cut : {size_t{0}, size_t{1}, size_t{777}, size_t{4096}, size_t{8192},
                     s.size() - 4096, s.size() - 1, s.size()}) {
    const uint32_t a = Crc32c(s.data(), cut);
    const uint32_t b = Crc32c(s.data() + cut, s.size() - cut);
    EXPECT_EQ(Crc32cCombine(a, b, s.size() - cut), whole) << "cut at " << cut;
  }
  // Folding 4 KiB chunk sums, then the tail, gives the sum of the whole.
  uint32_t folded = 0;
  size_t at = 0;
  for (; at + 4096 <= s.size(); at += 4096) {
    folded = Crc32cCombine(folded, Crc32c(s.data() + at, 4096), 4096);
  }
  folded = Crc32cCombine(folded, Crc32c(s.data() + at, s.size() - at), s.size() - at);
  EXPECT_EQ(folded, whole);
  // Lengths far beyond any buffer still combine (the shift is computed, not walked).
  const std::string zeros(1u << 20, '\0');
  uint32_t z = Crc32c(zeros.data(), zeros.size());
  const uint32_t two = Crc32c(zeros.data(), zeros.size(), z);
  EXPECT_EQ(Crc32cCombine(z, z, zeros.size()), two);
}

TEST(Crc32cTest, DetectsOneFlippedBit) {
  std::string s(4096, 'a');
  uint32_t before = Crc32c(s.data(), s.size());
  s[1234] ^= 0x10;
  EXPECT_NE(before, Crc32c(s.data(), s.size()));
}

}  // namespace
}  // namespace stria
