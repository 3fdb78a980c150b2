// Test helpers for the oss tests: a temporary directory removed at the end, byte patterns.
// Thread-safety: none needed (used from one test thread).
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace stria::oss::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/stria-oss-test-XXXXXX";
    const char* p = mkdtemp(tmpl);
    path_ = p ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A deterministic pattern: byte i of the stream named `seed` (position-dependent, so a byte
// landing at the wrong offset is caught).
inline std::vector<uint8_t> Pattern(size_t len, uint64_t start, uint32_t seed) {
  std::vector<uint8_t> v(len);
  for (size_t i = 0; i < len; ++i) {
    const uint64_t x = (start + i) * 2654435761u + seed * 40503u;
    v[i] = static_cast<uint8_t>((x >> 13) ^ (x >> 5) ^ seed);
  }
  return v;
}

}  // namespace stria::oss::testing
