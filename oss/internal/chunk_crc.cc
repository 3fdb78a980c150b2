#include "oss/internal/chunk_crc.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/uio.h>
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

constexpr uint64_t kEntryBytes = kCrcEntryBytes;
static_assert(kEntryBytes == sizeof(uint32_t));

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

bool Inline(const ObjectFiles& f) { return f.format == ObjectFormat::kInline; }

// Calls fn(at, len) for the pieces of [x, x + len) that lie in one 4 MiB group each (kInline:
// contiguous in the file), or once for the whole range (kSidecar). The first error stops it.
template <typename Fn>
Status ForEachPiece(const ObjectFiles& f, uint64_t x, uint64_t len, Fn fn) {
  if (!Inline(f)) return len == 0 ? Status::Ok() : fn(x, len);
  const uint64_t end = x + len;
  while (x < end) {
    const uint64_t group_end = (x / kGroupDataBytes + 1) * kGroupDataBytes;
    const uint64_t n = std::min(end, group_end) - x;
    STRIA_RETURN_IF_ERROR(fn(x, n));
    x += n;
  }
  return Status::Ok();
}

// Calls fn(first, count, pos) for the runs of entries [first, first + n) that are contiguous
// in one file (kInline: one group's block), pos being the first one's file offset.
template <typename Fn>
Status ForEachCrcRun(const ObjectFiles& f, uint64_t first, uint64_t n, Fn fn) {
  if (!Inline(f)) return n == 0 ? Status::Ok() : fn(first, n, first * kEntryBytes);
  const uint64_t end = first + n;
  while (first < end) {
    const uint64_t count = std::min(end, (first / kGroupChunks + 1) * kGroupChunks) - first;
    STRIA_RETURN_IF_ERROR(fn(first, count, InlineCrcPos(first)));
    first += count;
  }
  return Status::Ok();
}

int CrcFd(const ObjectFiles& f) { return Inline(f) ? f.fd : f.crc_fd; }

uint64_t CrcPos(const ObjectFiles& f, uint64_t chunk) {
  return Inline(f) ? InlineCrcPos(chunk) : chunk * kEntryBytes;
}

std::span<uint8_t> AsBytes(std::span<uint32_t> crcs) {
  return std::span(reinterpret_cast<uint8_t*>(crcs.data()), crcs.size_bytes());
}

// Adds to `ranges` the reads of chunks [first, first + out.size())'s entries into out.
void AddCrcReads(const ObjectFiles& f, uint64_t first, std::span<uint32_t> out,
                 std::vector<UringIo::ReadRange>* ranges) {
  std::fill(out.begin(), out.end(), 0);  // entries never stored read as 0
  if (CrcFd(f) < 0) return;
  (void)ForEachCrcRun(f, first, out.size(), [&](uint64_t i, uint64_t count, uint64_t pos) {
    ranges->push_back({CrcFd(f), AsBytes(out.subspan(i - first, count)), pos});
    return Status::Ok();
  });
}

// Adds to `ranges` the reads of object bytes [x, x + buf.size()) into buf, through `fd` (the
// object file's f.fd, or its O_DIRECT descriptor).
void AddDataReads(const ObjectFiles& f, uint64_t x, std::span<uint8_t> buf,
                  std::vector<UringIo::ReadRange>* ranges, int fd) {
  (void)ForEachPiece(f, x, buf.size(), [&](uint64_t at, uint64_t len) {
    ranges->push_back({fd, buf.subspan(at - x, len), f.DataPos(at)});
    return Status::Ok();
  });
}

// The bytes that data reads `ranges` got in a row, up to the first that came back short.
size_t Contiguous(std::span<const UringIo::ReadRange> ranges) {
  size_t got = 0;
  for (const UringIo::ReadRange& r : ranges) {
    got += r.got;
    if (r.got < r.buf.size()) break;
  }
  return got;
}

// Per-thread vector of read ranges (no allocation per request once grown).
std::vector<UringIo::ReadRange>& RangeScratch() {
  thread_local std::vector<UringIo::ReadRange> ranges;
  ranges.clear();
  return ranges;
}

Status WriteCrcs(const ObjectFiles& f, uint64_t first, std::span<const uint32_t> crcs) {
  return ForEachCrcRun(f, first, crcs.size(), [&](uint64_t i, uint64_t count, uint64_t pos) {
    const std::span<const uint32_t> run = crcs.subspan(i - first, count);
    return UringIo::WriteCached(
        CrcFd(f),
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(run.data()), run.size_bytes()),
        pos);
  });
}

// Frees the entries of chunks [first, first + n): they read as 0 ("no checksum") after.
// Punching zeroes the partial pages of the range and frees its whole ones, in one call per run.
Status DropCrcs(const ObjectFiles& f, uint64_t first, uint64_t n) {
  return ForEachCrcRun(f, first, n, [&](uint64_t, uint64_t count, uint64_t pos) {
    return UringIo::Fallocate(CrcFd(f), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, pos,
                              count * kEntryBytes);
  });
}

// kInline: calls fn(lo, n) for the part of [x, end) in each 4 MiB group that holds anything
// (its block or its bytes), found with SEEK_DATA, so that a punch over a huge sparse object
// costs one call per group written, not one per 4 MiB of its size.
template <typename Fn>
Status ForEachWrittenGroup(const ObjectFiles& f, uint64_t x, uint64_t end, Fn fn) {
  const uint64_t last = (end - 1) / kGroupDataBytes;
  for (uint64_t g = x / kGroupDataBytes; g <= last; ++g) {
    const off_t pos = lseek(f.fd, static_cast<off_t>(g * kGroupFileBytes), SEEK_DATA);
    if (pos < 0) {
      if (errno == ENXIO) break;  // nothing more up to the end of the file
      return ErrnoStatus("lseek SEEK_DATA", errno);
    }
    g = std::max(g, static_cast<uint64_t>(pos) / kGroupFileBytes);
    if (g > last) break;
    const uint64_t lo = std::max(x, g * kGroupDataBytes);
    const uint64_t hi = std::min(end, (g + 1) * kGroupDataBytes);
    STRIA_RETURN_IF_ERROR(fn(lo, hi - lo));
  }
  return Status::Ok();
}

Status WriteData(const ObjectFiles& f, int write_fd, uint64_t x, std::span<const uint8_t> data) {
  return ForEachPiece(f, x, data.size(), [&](uint64_t at, uint64_t len) {
    const std::span<const uint8_t> piece = data.subspan(at - x, len);
    return write_fd >= 0 ? UringIo::WriteAt(write_fd, piece, f.DataPos(at))
                         : UringIo::WriteCached(f.fd, piece, f.DataPos(at));
  });
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

Status ReadPartialChunk(const ObjectFiles& f, uint64_t index, OnMismatch on_mismatch,
                        PartialChunk* c) {
  c->index = index;
  c->bytes.fill(0);
  uint32_t stored = 0;  // stays 0 where none is stored
  UringIo::ReadRange ranges[2] = {{f.fd, c->bytes, f.DataPos(ChunkStart(index))}, {}};
  if (CrcFd(f) >= 0) ranges[1] = {CrcFd(f), AsBytes(std::span(&stored, 1)), CrcPos(f, index)};
  STRIA_RETURN_IF_ERROR(UringIo::ReadAll(ranges));
  const size_t n = ranges[0].got;
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
Status ReadPartialChunks(const ObjectFiles& f, uint64_t begin, uint64_t end, ChunkEnd chunk_end,
                         OnMismatch on_mismatch, PartialChunks* out) {
  const uint64_t first = begin / kCrcChunk;
  const uint64_t last = (end - 1) / kCrcChunk;
  for (uint64_t index : {first, last}) {
    if (out->count > 0 && out->chunks[out->count - 1].index == index) continue;
    const bool whole = ChunkStart(index) >= begin && chunk_end(index) <= end;
    if (whole) continue;
    STRIA_RETURN_IF_ERROR(
        ReadPartialChunk(f, index, on_mismatch, &out->chunks[out->count]));
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

Result<uint64_t> ObjectSize(const ObjectFiles& f) {
  struct stat st;
  if (fstat(f.fd, &st) != 0) return ErrnoStatus("fstat object", errno);
  return ObjectSizeOfFile(f.format, static_cast<uint64_t>(st.st_size));
}

Result<size_t> ReadBytes(const ObjectFiles& f, uint64_t offset, std::span<uint8_t> buf) {
  std::vector<UringIo::ReadRange>& ranges = RangeScratch();
  AddDataReads(f, offset, buf, &ranges, f.fd);
  STRIA_RETURN_IF_ERROR(UringIo::ReadAll(ranges));
  return Contiguous(ranges);
}

Status LoadCrcs(const ObjectFiles& f, uint64_t first, std::span<uint32_t> out) {
  std::vector<UringIo::ReadRange>& ranges = RangeScratch();
  AddCrcReads(f, first, out, &ranges);
  return UringIo::ReadAll(ranges);
}

Status WriteChecksummed(const ObjectFiles& f, uint64_t offset, std::span<const uint8_t> data,
                        int write_fd, const uint32_t* expected_crc) {
  const uint64_t end = offset + data.size();
  PartialChunks partial;
  // Data goes to disk before its checksums, so an OSS killed between the two leaves chunks
  // whose checksum does not match (only in writes that were never acknowledged). The client
  // resends such a write; its edge chunks are re-summed rather than refused, or the resend
  // could never repair them. Reads still refuse any chunk that does not match.
  STRIA_RETURN_IF_ERROR(ReadPartialChunks(
      f, offset, end, [](uint64_t i) { return ChunkStart(i) + kCrcChunk; }, OnMismatch::kResum,
      &partial));

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
  STRIA_RETURN_IF_ERROR(WriteData(f, write_fd, offset, data));
  return WriteCrcs(f, first, crcs);
}

Status PunchChecksummed(const ObjectFiles& f, uint64_t offset, uint64_t length,
                        uint64_t object_size) {
  // Only bytes below the end of the object have checksums; a chunk cut by EOF counts as
  // punched whole when the punch reaches EOF.
  const uint64_t end = std::min(offset + length, object_size);
  // Chunks punched whole read as zeros now: "no checksum".
  const uint64_t whole_first = CeilChunks(offset);
  const uint64_t whole_end = end == object_size ? CeilChunks(end) : end / kCrcChunk;
  PartialChunks partial;
  if (offset < end) {
    auto chunk_end = [&](uint64_t i) { return std::min(ChunkStart(i) + kCrcChunk, object_size); };
    STRIA_RETURN_IF_ERROR(
        ReadPartialChunks(f, offset, end, chunk_end, OnMismatch::kResum, &partial));
  }
  if (!Inline(f)) {
    if (length == 0) return Status::Ok();
    STRIA_RETURN_IF_ERROR(
        UringIo::Fallocate(f.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length));
    if (whole_first < whole_end) {
      STRIA_RETURN_IF_ERROR(DropCrcs(f, whole_first, whole_end - whole_first));
    }
  } else if (offset < end) {
    // Past the end of the object the file holds nothing. Below it each group's bytes lie
    // between two blocks of checksums, which stay: one punch per group, and groups that are
    // holes throughout (a sparse object) are skipped, not visited one by one.
    STRIA_RETURN_IF_ERROR(ForEachWrittenGroup(f, offset, end, [&](uint64_t lo, uint64_t n) {
      STRIA_RETURN_IF_ERROR(UringIo::Fallocate(f.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                               f.DataPos(lo), n));
      const uint64_t first = std::max(whole_first, lo / kCrcChunk);
      const uint64_t last = std::min(whole_end, CeilChunks(lo + n));
      return first < last ? DropCrcs(f, first, last - first) : Status::Ok();
    }));
  }
  for (PartialChunk& c : partial.all()) {
    auto [lo, hi] = OverlapInChunk(c.index, offset, end);
    std::memset(c.bytes.data() + lo, 0, hi - lo);
    const uint32_t crc = c.Crc();
    STRIA_RETURN_IF_ERROR(WriteCrcs(f, c.index, std::span(&crc, 1)));
  }
  return Status::Ok();
}

Status TruncateChecksummed(const ObjectFiles& f, uint64_t size) {
  // The chunk holding the new end keeps only its bytes below `size` (a shrink) or all of
  // them (a grow): check it before cutting, re-sum it after.
  PartialChunks partial;
  if (size % kCrcChunk != 0) {
    partial.count = 1;
    STRIA_RETURN_IF_ERROR(
        ReadPartialChunk(f, size / kCrcChunk, OnMismatch::kResum, &partial.chunks[0]));
  }
  const uint64_t chunks = CeilChunks(size);
  if (Inline(f)) {
    // The file ends with the new last byte: the blocks of the groups above go with it, and
    // the entries above the new end in the last group's block are dropped.
    STRIA_RETURN_IF_ERROR(Ftruncate(f.fd, InlineFileSize(size), "ftruncate object"));
    if (chunks % kGroupChunks != 0) {
      STRIA_RETURN_IF_ERROR(DropCrcs(f, chunks, kGroupChunks - chunks % kGroupChunks));
    }
  } else {
    STRIA_RETURN_IF_ERROR(Ftruncate(f.fd, size, "ftruncate object"));
    STRIA_RETURN_IF_ERROR(Ftruncate(f.crc_fd, chunks * kEntryBytes, "ftruncate sidecar"));
  }
  for (PartialChunk& c : partial.all()) {
    const size_t keep = static_cast<size_t>(size - ChunkStart(c.index));
    std::memset(c.bytes.data() + keep, 0, kCrcChunk - keep);
    const uint32_t crc = c.Crc();
    STRIA_RETURN_IF_ERROR(WriteCrcs(f, c.index, std::span(&crc, 1)));
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

Status ReadVerified(const ObjectFiles& f, uint64_t offset, std::span<uint8_t> buf,
                    uint64_t object_size, uint32_t* buf_crc, int read_fd) {
  if (buf_crc != nullptr) *buf_crc = 0;
  if (buf.empty()) return Status::Ok();
  const uint64_t end = offset + buf.size();
  // The chunks inside the read are checked in place: their checksums are read in the same
  // submission as the bytes, so that a cold object costs one disk wait, not two in a row.
  const uint64_t whole_first = CeilChunks(offset);
  const uint64_t whole_end = end == object_size ? CeilChunks(end) : end / kCrcChunk;
  std::span<uint32_t> stored;
  size_t n = 0;
  if (read_fd < 0 && Inline(f) && offset % kGroupDataBytes == 0 && whole_first < whole_end &&
      buf.size() <= UringIo::kChunkBytes) {
    // From the start of a group (a small object read whole): its block and its bytes are
    // adjacent in the file, and one readv brings both with one disk read. Two reads
    // submitted together would cost two or three (each starts its own readahead).
    thread_local std::array<uint32_t, kGroupChunks> block;
    const iovec iov[2] = {{block.data(), kCrcBlockBytes}, {buf.data(), buf.size()}};
    STRIA_ASSIGN_OR_RETURN(size_t got,
                           UringIo::ReadV(f.fd, iov, InlineCrcPos(whole_first)));
    n = got > kCrcBlockBytes ? got - kCrcBlockBytes : 0;
    stored = std::span(block).first(whole_end - whole_first);
  } else {
    std::vector<UringIo::ReadRange>& ranges = RangeScratch();
    AddDataReads(f, offset, buf, &ranges, read_fd >= 0 ? read_fd : f.fd);
    const size_t data_ranges = ranges.size();
    if (whole_first < whole_end) {
      stored = CrcScratch(whole_end - whole_first);
      AddCrcReads(f, whole_first, stored, &ranges);
    }
    STRIA_RETURN_IF_ERROR(UringIo::ReadAll(ranges));
    n = Contiguous(std::span(ranges).first(data_ranges));
  }
  if (n != buf.size()) {
    return Status(Code::kIO,
                  fmt::format("short read at {}: {} of {} bytes", offset, n, buf.size()));
  }
  // The edge chunks the read covers only in part are read whole and checked on their own.
  auto chunk_end = [&](uint64_t i) { return std::min(ChunkStart(i) + kCrcChunk, object_size); };
  PartialChunks partial;
  STRIA_RETURN_IF_ERROR(
      ReadPartialChunks(f, offset, end, chunk_end, OnMismatch::kRefuse, &partial));
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
