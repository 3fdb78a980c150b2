// Chunk checksums: the on-disk crc32c of an object's data, in its OST's object format
// (oss/object_format.h: a block of checksums before each 4 MiB of the object in the object
// file itself, or a sidecar file beside it on OSTs formatted before).
//
// Entry i is the crc32c of object bytes [i*4096, (i+1)*4096), zero-padded past the end of the
// object, as a little-endian uint32. 0 means "no checksum": a chunk never written since the
// checksums existed (a hole, a punched chunk, the gap a sparse write leaves, an object from
// before checksums) verifies as anything, because it reads as zeros anyway. Entries never
// written (past a sidecar's end, in a block that is a hole) read as 0. (A chunk whose real
// crc32c is 0, one in 2^32, is therefore stored unverified.)
//
// Why zero-padded chunks: growing an object (a truncate up, a write past the end) never
// changes the crc of the old last chunk, so only writes, punches and shrinking truncates touch
// the checksums, and each touches exactly the chunks whose bytes changed.
//
// Why 4 KiB: the page size, so the read-modify-write at an unaligned write's edges rereads at
// most two pages (from the page cache, just written), and the checksums are 1/1024 of the data.
//
// The functions take the object's files and do no locking: the caller (ObjectStore) holds
// the locks of the chunks involved, exclusive for the updates and shared for the reads, so a
// reader never sees data and checksums from two different writes. Every function is
// otherwise stateless and thread-safe (per-thread scratch buffers). Data I/O goes through
// UringIo.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "oss/object_format.h"

namespace stria::oss::internal {

using oss::kCrcChunk;

// One object's open files, in its OST's format.
struct ObjectFiles {
  ObjectFormat format = ObjectFormat::kInline;
  int fd = -1;      // the object file (with its checksum blocks, kInline)
  int crc_fd = -1;  // kSidecar: the sidecar; -1 when it has none (every entry reads as 0)

  // The file offset of object byte x.
  uint64_t DataPos(uint64_t x) const {
    return format == ObjectFormat::kInline ? InlineDataPos(x) : x;
  }
};

// The object's size, from its file's.
Result<uint64_t> ObjectSize(const ObjectFiles& f);

// Reads up to buf.size() object bytes at `offset`, unverified (the scrub checks them itself);
// returns how many lie before the end of the file.
Result<size_t> ReadBytes(const ObjectFiles& f, uint64_t offset, std::span<uint8_t> buf);

// The crc32c of one chunk whose bytes (at most kCrcChunk) are `bytes`, zero-padded.
using oss::ChunkCrc;

// Reads the stored entries for chunks [first, first + out.size()) into out (0 where none is
// stored).
Status LoadCrcs(const ObjectFiles& f, uint64_t first, std::span<uint32_t> out);

// Writes `data` at `offset` and records its checksums: chunks the write covers whole are
// summed from `data`; the (at most two) it covers in part are read and checked before the
// write (kCorrupt, nothing written, when one fails: a partial overwrite must not launder a
// corrupt chunk into a fresh checksum) and re-summed with the new bytes merged in. One
// checksum write per 4 MiB group the write touches. The data goes through `write_fd` when it
// is >= 0 (the object file opened with O_DIRECT, for writes aligned to kCrcChunk, which have
// no partial chunks), else f.fd. REQUIRES (kSidecar): f.crc_fd >= 0.
// With `expected_crc`, the request's bulk checksum that lnet left to this write
// (RpcServer::HandlerVerifiesBulk): data is checked against it before anything is written,
// from the chunk sums computed anyway, and a mismatch is kChecksum with nothing written.
// REQUIRES: data is not empty.
Status WriteChecksummed(const ObjectFiles& f, uint64_t offset, std::span<const uint8_t> data,
                        int write_fd = -1, const uint32_t* expected_crc = nullptr);

// Punches [offset, offset + length) (keeping the size `object_size`) and fixes the
// checksums: chunks punched whole get "no checksum"; partly punched edge chunks are checked
// first and re-summed.
Status PunchChecksummed(const ObjectFiles& f, uint64_t offset, uint64_t length,
                        uint64_t object_size);

// Truncates the object to `size` and drops the checksums of the chunks above it; the chunk
// holding the new end (when not aligned) is checked first and re-summed.
Status TruncateChecksummed(const ObjectFiles& f, uint64_t size);

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
// The bytes and their checksums are read in one submission; a read from the start of a
// group (kInline: every small object) reads its block and its bytes in one readv, one disk
// read when cold. With `read_fd` >= 0 (the object file opened with O_DIRECT; offset, size
// and buf aligned to kCrcChunk) the bytes are read through it, the checksums still through
// f.fd.
Status ReadVerified(const ObjectFiles& f, uint64_t offset, std::span<uint8_t> buf,
                    uint64_t object_size, uint32_t* buf_crc = nullptr, int read_fd = -1);

}  // namespace stria::oss::internal
