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

TEST(Crc32cTest, DetectsOneFlippedBit) {
  std::string s(4096, 'a');
  uint32_t before = Crc32c(s.data(), s.size());
  s[1234] ^= 0x10;
  EXPECT_NE(before, Crc32c(s.data(), s.size()));
}

}  // namespace
}  // namespace stria
