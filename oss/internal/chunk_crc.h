// Chunk checksums: the on-disk crc32c of an object's data, kept in a sidecar file beside it.
//
// Format: the sidecar `<object path>.crc` is an array of little-endian uint32, one per
// kCrcChunk (4 KiB) chunk of the object: entry i, at byte 4*i, is the crc32c of object bytes
// [i*4096, (i+1)*4096), zero-padded past the end of the object. 0 means "no checksum": a
// chunk never written since the sidecar existed (a hole, a punched chunk, the gap a sparse
// write leaves, an object from before checksums) verifies as anything, because it reads as
// zeros anyway. Entries past the sidecar's end read as 0. (A chunk whose real crc32c is 0,
// one in 2^32, is therefore stored unverified.)
//
// Why zero-padded chunks: growing an object (a truncate up, a write past the end) never
// changes the crc of the old last chunk, so only writes, punches and shrinking truncates touch
// the sidecar, and each touches exactly the chunks whose bytes changed.
//
// Why 4 KiB: the page size, so the read-modify-write at an unaligned write's edges rereads at
// most two pages (from the page cache, just written), and the sidecar is 1/1024 of the data.
//
// The functions take the two descriptors and do no locking: the caller (ObjectStore) holds
// the locks of the chunks involved, exclusive for the updates and shared for the reads, so a
// reader never sees data and checksums from two different writes. Every function is
// otherwise stateless and thread-safe (per-thread scratch buffers). Data I/O goes through
// UringIo.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"

namespace stria::oss::internal {

inline constexpr uint64_t kCrcChunk = 4096;

// The crc32c of one chunk whose bytes (at most kCrcChunk) are `bytes`, zero-padded.
uint32_t ChunkCrc(std::span<const uint8_t> bytes);

// Reads the stored entries for chunks [first, first + out.size()) into out (0 where the
// sidecar has none).
Status LoadCrcs(int crc_fd, uint64_t first, std::span<uint32_t> out);

// Writes `data` at `offset` and records its checksums: chunks the write covers whole are
// summed from `data`; the (at most two) it covers in part are read and checked before the
// write (kCorrupt, nothing written, when one fails: a partial overwrite must not launder a
// corrupt chunk into a fresh checksum) and re-summed with the new bytes merged in. One
// sidecar write. The data goes through `write_fd` when it is >= 0 (the same file opened with
// O_DIRECT, for writes aligned to kCrcChunk, which have no partial chunks), else data_fd.
// With `expected_crc`, the request's bulk checksum that lnet left to this write
// (RpcServer::HandlerVerifiesBulk): data is checked against it before anything is written,
// from the chunk sums computed anyway, and a mismatch is kChecksum with nothing written.
// REQUIRES: data is not empty.
Status WriteChecksummed(int data_fd, int crc_fd, uint64_t offset, std::span<const uint8_t> data,
                        int write_fd = -1, const uint32_t* expected_crc = nullptr);

// Punches [offset, offset + length) (keeping the size `object_size`) and fixes the
// checksums: chunks punched whole get "no checksum"; partly punched edge chunks are checked
// first and re-summed.
Status PunchChecksummed(int data_fd, int crc_fd, uint64_t offset, uint64_t length,
                        uint64_t object_size);

// Truncates the object to `size` and cuts the sidecar to the chunks below it; the chunk
// holding the new end (when not aligned) is checked first and re-summed.
Status TruncateChecksummed(int data_fd, int crc_fd, uint64_t size);

// The outcome of checking a run of whole chunks.
struct ChunkCheck {
  uint64_t bad_chunks = 0;
  uint64_t first_bad = 0;  // chunk index (from the run's start) of the first bad chunk
};

// Checks `data`, the object's bytes from a chunk-aligned offset (whole chunks, the last one
// may end at the object's end), against `stored` (one entry per chunk of data). With
// `data_crc`, also the crc32c of all of data, folded from the chunks' sums (Crc32cCombine).
ChunkCheck CheckChunks(std::span<const uint8_t> data, std::span<const uint32_t> stored,
                       uint32_t* data_crc = nullptr);

// Reads [offset, offset + buf.size()) of an object of `object_size` bytes (the range must lie
// below it) into buf and verifies every chunk it touches; the partly covered edge chunks are
// read whole (and the verified bytes copied out). kCorrupt names the offset of the first bad
// chunk; corrupt bytes are never left in buf as if they were good.
// With `buf_crc`, *buf_crc gets the crc32c of buf, mostly folded from the chunk sums the
// check computed: the reply's wire checksum costs no second pass over the bytes.
Status ReadVerified(int data_fd, int crc_fd, uint64_t offset, std::span<uint8_t> buf,
                    uint64_t object_size, uint32_t* buf_crc = nullptr);

}  // namespace stria::oss::internal
