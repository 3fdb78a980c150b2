#include "oss/internal/chunk_crc.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>

#include "common/crc32c.h"
#include "common/log.h"
#include "oss/uring_io.h"

namespace stria::oss::internal {
namespace {

// The sidecar is a raw array of the host's uint32; the format says little-endian.
static_assert(std::endian::native == std::endian::little, "sidecar format is little-endian");

constexpr uint64_t kEntryBytes = sizeof(uint32_t);

uint64_t ChunkStart(uint64_t index) { return index * kCrcChunk; }
uint64_t CeilChunks(uint64_t bytes) { return (bytes + kCrcChunk - 1) / kCrcChunk; }

Status Mismatch(uint64_t index) {
  return Status(Code::kCorrupt,
                fmt::format("crc32c mismatch in the 4 KiB chunk at offset {}", ChunkStart(index)));
}

// A per-thread buffer for `n` checksum entries, so that reads and writes allocate nothing per
// request beside the bulk buffers lnet keeps off mmap (lnet/buffer.h). At most 64 KiB per
// thread (a 64 MiB request).
std::span<uint32_t> CrcScratch(size_t n) {
  thread_local std::vector<uint32_t> scratch;
  if (scratch.size() < n) scratch.resize(n);
  return std::span(scratch).first(n);
}

Status WriteCrcs(int crc_fd, uint64_t first, std::span<const uint32_t> crcs) {
  return UringIo::WriteCached(
      crc_fd,
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(crcs.data()), crcs.size_bytes()),
      first * kEntryBytes);
}

// One chunk that an update changes only in part: its bytes before the update, checked
// against the stored crc, then merged with the update in memory. Checking first means a
// partial overwrite never launders a corrupt chunk into a fresh checksum.
struct PartialChunk {
  uint64_t index = 0;
  std::array<uint8_t, kCrcChunk> bytes;  // zero past the end of the object (once read)

  uint32_t Crc() const { return ChunkCrc(bytes); }
};

// The (at most two) partial chunks of one update, kept on the stack.
struct PartialChunks {
  std::array<PartialChunk, 2> chunks;
  size_t count = 0;

  std::span<PartialChunk> all() { return std::span(chunks).first(count); }
};

// How an update treats an edge chunk whose stored checksum does not match its bytes.
enum class OnMismatch {
  kRefuse,  // EIO: reads (never return bytes that fail verification)
  kResum,   // re-sum it with the new bytes: writes and punches (see WriteChecksummed)
};

Status ReadPartialChunk(int data_fd, int crc_fd, uint64_t index, OnMismatch on_mismatch,
                        PartialChunk* c) {
  c->index = index;
  c->bytes.fill(0);
  STRIA_ASSIGN_OR_RETURN(size_t n, UringIo::ReadAt(data_fd, c->bytes, ChunkStart(index)));
  uint32_t stored = 0;
  STRIA_RETURN_IF_ERROR(LoadCrcs(crc_fd, index, std::span(&stored, 1)));
  if (stored != 0 && ChunkCrc(std::span(c->bytes).first(n)) != stored) {
    if (on_mismatch == OnMismatch::kRefuse) return Mismatch(index);
    LOG_WARN("{}; partly overwritten now, so re-summed (a write torn by a crash?)",
             Mismatch(index).message());
  }
  return Status::Ok();
}

// The chunks touched by [begin, end) that it does not cover whole, read and checked: at
// most the first and the last. `chunk_end(i)` is where chunk i's bytes end for this update
// (the chunk's end, or the object's end when a punch counts a chunk cut by EOF as whole).
template <typename ChunkEnd>
Status ReadPartialChunks(int data_fd, int crc_fd, uint64_t begin, uint64_t end, ChunkEnd chunk_end,
                         OnMismatch on_mismatch, PartialChunks* out) {
  const uint64_t first = begin / kCrcChunk;
  const uint64_t last = (end - 1) / kCrcChunk;
  for (uint64_t index : {first, last}) {
    if (out->count > 0 && out->chunks[out->count - 1].index == index) continue;
    const bool whole = ChunkStart(index) >= begin && chunk_end(index) <= end;
    if (whole) continue;
    STRIA_RETURN_IF_ERROR(
        ReadPartialChunk(data_fd, crc_fd, index, on_mismatch, &out->chunks[out->count]));
    ++out->count;
  }
  return Status::Ok();
}

// The part of chunk `index` that [begin, end) overlaps, as offsets inside the chunk.
std::pair<size_t, size_t> OverlapInChunk(uint64_t index, uint64_t begin, uint64_t end) {
  const uint64_t cs = ChunkStart(index);
  const uint64_t lo = std::max(cs, begin);
  const uint64_t hi = std::min(cs + kCrcChunk, end);
  return {static_cast<size_t>(lo - cs), static_cast<size_t>(hi - cs)};
}

Status Ftruncate(int fd, uint64_t size, const char* what) {
  int rc;
  do {
    rc = ftruncate(fd, static_cast<off_t>(size));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return ErrnoStatus(what, errno);
  return Status::Ok();
}

}  // namespace

uint32_t ChunkCrc(std::span<const uint8_t> bytes) {
  static const std::array<uint8_t, kCrcChunk> kZeros{};
  const uint32_t crc = Crc32c(bytes.data(), bytes.size());
  if (bytes.size() >= kCrcChunk) return crc;
  return Crc32c(kZeros.data(), kCrcChunk - bytes.size(), crc);
}

Status LoadCrcs(int crc_fd, uint64_t first, std::span<uint32_t> out) {
  std::fill(out.begin(), out.end(), 0);  // entries past the sidecar's end stay 0
  std::span<uint8_t> raw(reinterpret_cast<uint8_t*>(out.data()), out.size_bytes());
  return UringIo::ReadAt(crc_fd, raw, first * kEntryBytes).status();
}

Status WriteChecksummed(int data_fd, int crc_fd, uint64_t offset, std::span<const uint8_t> data,
                        int write_fd, const uint32_t* expected_crc) {
  const uint64_t end = offset + data.size();
  PartialChunks partial;
  // Data goes to disk before its checksums, so an OSS killed between the two leaves chunks
  // whose checksum does not match (only in writes that were never acknowledged). The client
  // resends such a write; its edge chunks are re-summed rather than refused, or the resend
  // could never repair them. Reads still refuse any chunk that does not match.
  STRIA_RETURN_IF_ERROR(ReadPartialChunks(
      data_fd, crc_fd, offset, end, [](uint64_t i) { return ChunkStart(i) + kCrcChunk; },
      OnMismatch::kResum, &partial));

  // The sums are computed before anything is written: with expected_crc they also check
  // the bytes as they came off the wire.
  const uint64_t first = offset / kCrcChunk;
  std::span<uint32_t> crcs = CrcScratch((end - 1) / kCrcChunk - first + 1);
  for (PartialChunk& c : partial.all()) {
    auto [lo, hi] = OverlapInChunk(c.index, offset, end);
    std::memcpy(c.bytes.data() + lo, data.data() + (ChunkStart(c.index) + lo - offset), hi - lo);
    crcs[c.index - first] = c.Crc();
  }
  uint32_t bulk = 0;   // the crc32c of data[0, at - offset), when checking
  uint64_t at = offset;
  for (size_t i = 0; i < crcs.size(); ++i) {
    const uint64_t cs = ChunkStart(first + i);
    if (cs < offset || cs + kCrcChunk > end) continue;  // a partial chunk, done above
    crcs[i] = ChunkCrc(data.subspan(cs - offset, kCrcChunk));
    if (expected_crc != nullptr) {
      bulk = Crc32c(data.data() + (at - offset), cs - at, bulk);  // the head, before the first
      bulk = Crc32cCombine(bulk, crcs[i], kCrcChunk);
      at = cs + kCrcChunk;
    }
  }
  if (expected_crc != nullptr) {
    bulk = Crc32c(data.data() + (at - offset), end - at, bulk);
    if (bulk != *expected_crc) {
      return Status(Code::kChecksum, "request bulk checksum mismatch (nothing written)");
    }
  }
  STRIA_RETURN_IF_ERROR(write_fd >= 0 ? UringIo::WriteAt(write_fd, data, offset)
                                       : UringIo::WriteCached(data_fd, data, offset));
  return WriteCrcs(crc_fd, first, crcs);
}

Status PunchChecksummed(int data_fd, int crc_fd, uint64_t offset, uint64_t length,
                        uint64_t object_size) {
  // Only bytes below the end of the object have checksums; a chunk cut by EOF counts as
  // punched whole when the punch reaches EOF.
  const uint64_t end = std::min(offset + length, object_size);
  if (length == 0 || offset >= end) {
    return length == 0 ? Status::Ok()
                       : UringIo::Fallocate(data_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                            offset, length);
  }
  auto chunk_end = [&](uint64_t i) { return std::min(ChunkStart(i) + kCrcChunk, object_size); };
  PartialChunks partial;
  STRIA_RETURN_IF_ERROR(ReadPartialChunks(data_fd, crc_fd, offset, end, chunk_end,
                                          OnMismatch::kResum, &partial));
  STRIA_RETURN_IF_ERROR(
      UringIo::Fallocate(data_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length));

  // Chunks punched whole read as zeros now: "no checksum". Punching the sidecar range zeroes
  // its partial pages and frees its whole ones, in one call.
  const uint64_t whole_first = CeilChunks(offset);
  const uint64_t whole_end = end == object_size ? CeilChunks(end) : end / kCrcChunk;
  if (whole_first < whole_end) {
    STRIA_RETURN_IF_ERROR(UringIo::Fallocate(crc_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                             whole_first * kEntryBytes,
                                             (whole_end - whole_first) * kEntryBytes));
  }
  for (PartialChunk& c : partial.all()) {
    auto [lo, hi] = OverlapInChunk(c.index, offset, end);
    std::memset(c.bytes.data() + lo, 0, hi - lo);
    const uint32_t crc = c.Crc();
    STRIA_RETURN_IF_ERROR(WriteCrcs(crc_fd, c.index, std::span(&crc, 1)));
  }
  return Status::Ok();
}

Status TruncateChecksummed(int data_fd, int crc_fd, uint64_t size) {
  // The chunk holding the new end keeps only its bytes below `size` (a shrink) or all of
  // them (a grow): check it before cutting, re-sum it after.
  PartialChunks partial;
  if (size % kCrcChunk != 0) {
    partial.count = 1;
    STRIA_RETURN_IF_ERROR(ReadPartialChunk(data_fd, crc_fd, size / kCrcChunk, OnMismatch::kResum,
                                           &partial.chunks[0]));
  }
  STRIA_RETURN_IF_ERROR(Ftruncate(data_fd, size, "ftruncate object"));
  STRIA_RETURN_IF_ERROR(Ftruncate(crc_fd, CeilChunks(size) * kEntryBytes, "ftruncate sidecar"));
  for (PartialChunk& c : partial.all()) {
    const size_t keep = static_cast<size_t>(size - ChunkStart(c.index));
    std::memset(c.bytes.data() + keep, 0, kCrcChunk - keep);
    const uint32_t crc = c.Crc();
    STRIA_RETURN_IF_ERROR(WriteCrcs(crc_fd, c.index, std::span(&crc, 1)));
  }
  return Status::Ok();
}

ChunkCheck CheckChunks(std::span<const uint8_t> data, std::span<const uint32_t> stored,
                       uint32_t* data_crc) {
  static const std::array<uint8_t, kCrcChunk> kZeros{};
  ChunkCheck check;
  uint32_t folded = 0;
  size_t covered = 0;  // bytes of data folded into `folded`
  for (size_t i = 0; i < stored.size(); ++i) {
    const size_t lo = i * kCrcChunk;
    if (lo >= data.size()) break;
    const size_t len = std::min<size_t>(kCrcChunk, data.size() - lo);
    if (stored[i] == 0 && data_crc == nullptr) continue;  // no checksum and none wanted
    // ChunkCrc, split: the sum of the bytes themselves, then the zeros padding a short chunk.
    const uint32_t raw = Crc32c(data.data() + lo, len);
    if (data_crc != nullptr) {
      folded = Crc32cCombine(folded, raw, len);
      covered = lo + len;
    }
    if (stored[i] == 0) continue;
    const uint32_t sum = len == kCrcChunk ? raw : Crc32c(kZeros.data(), kCrcChunk - len, raw);
    if (sum == stored[i]) continue;
    if (check.bad_chunks++ == 0) check.first_bad = i;
  }
  if (data_crc != nullptr) {
    *data_crc = Crc32cCombine(folded, Crc32c(data.data() + covered, data.size() - covered),
                              data.size() - covered);
  }
  return check;
}

Status ReadVerified(int data_fd, int crc_fd, uint64_t offset, std::span<uint8_t> buf,
                    uint64_t object_size, uint32_t* buf_crc) {
  if (buf_crc != nullptr) *buf_crc = 0;
  if (buf.empty()) return Status::Ok();
  const uint64_t end = offset + buf.size();
  // The chunks inside the read are checked in place: their checksums are read in the same
  // submission as the bytes, so that a cold object costs one disk wait, not two in a row.
  const uint64_t whole_first = CeilChunks(offset);
  const uint64_t whole_end = end == object_size ? CeilChunks(end) : end / kCrcChunk;
  std::span<uint32_t> stored;
  UringIo::ReadRange reads[2] = {{data_fd, buf, offset}, {}};
  if (whole_first < whole_end) {
    stored = CrcScratch(whole_end - whole_first);
    std::fill(stored.begin(), stored.end(), 0);  // entries past the sidecar's end stay 0
    reads[1] = {crc_fd,
                std::span(reinterpret_cast<uint8_t*>(stored.data()), stored.size_bytes()),
                whole_first * kEntryBytes};
  }
  STRIA_RETURN_IF_ERROR(UringIo::ReadAll(reads));
  const size_t n = reads[0].got;
  if (n != buf.size()) {
    return Status(Code::kIO,
                  fmt::format("short read at {}: {} of {} bytes", offset, n, buf.size()));
  }
  // The edge chunks the read covers only in part are read whole and checked on their own.
  auto chunk_end = [&](uint64_t i) { return std::min(ChunkStart(i) + kCrcChunk, object_size); };
  PartialChunks partial;
  STRIA_RETURN_IF_ERROR(ReadPartialChunks(data_fd, crc_fd, offset, end, chunk_end,
                                          OnMismatch::kRefuse, &partial));
  if (whole_first >= whole_end) {
    if (buf_crc != nullptr) *buf_crc = Crc32c(buf.data(), buf.size());
    return Status::Ok();
  }
  const uint64_t lo = ChunkStart(whole_first) - offset;
  const uint64_t hi = std::min(ChunkStart(whole_end), end) - offset;
  uint32_t whole_crc = 0;
  ChunkCheck check = CheckChunks(buf.subspan(lo, hi - lo), stored,
                                 buf_crc != nullptr ? &whole_crc : nullptr);
  if (check.bad_chunks > 0) return Mismatch(whole_first + check.first_bad);
  if (buf_crc != nullptr) {
    // The bytes before the first whole chunk and after the last: summed directly.
    uint32_t crc = Crc32c(buf.data(), lo);
    crc = Crc32cCombine(crc, whole_crc, hi - lo);
    *buf_crc = Crc32cCombine(crc, Crc32c(buf.data() + hi, buf.size() - hi), buf.size() - hi);
  }
  return Status::Ok();
}

}  // namespace stria::oss::internal
