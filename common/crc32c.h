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

// The crc32c of A followed by B, from crc32c(A), crc32c(B) and the length of B, without
// touching the bytes: a checksum of a whole transfer from the sums of its 4 KiB chunks that
// were computed anyway (the OSS's on-disk checksums), instead of a second pass over the data.
// A few table lookups when len_b is 4 KiB, a few hundred operations otherwise.
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

}  // namespace stria
