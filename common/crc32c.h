// crc32c (Castagnoli), the checksum Stria puts on bulk data on the wire and on disk.
//
// Backed by ISA-L's crc32_iscsi, which uses the SSE4.2/PCLMUL instructions where present.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stria {

// Extends `crc` (0 for a fresh checksum) over `len` bytes at `data`.
uint32_t Crc32c(const void* data, size_t len, uint32_t crc = 0);

}  // namespace stria
