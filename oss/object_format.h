// ObjectFormat: where an OST keeps an object's bytes and their checksums, on its local file
// system. Each OST records its format in ost.meta (`object_format=`) when it is formatted and
// keeps it for life; an OSS serves OSTs of either format side by side.
//
// Every object is checksummed per 4 KiB chunk (kCrcChunk): one crc32c per chunk, rules in
// internal/chunk_crc.h. The formats differ only in where those checksums lie:
//
//  - kSidecar (1, OSTs formatted before 2026-11-26): the object file holds object byte x at
//    file offset x; the checksums are a second file beside it, `<id>.crc`, entry i at byte
//    4 i. Two files to create, open and sync per object, and two disk reads for a cold one.
//
//  - kInline (2, every OST formatted since): one file. The object is cut into groups of 4 MiB
//    (kGroupChunks chunks), and each group is preceded in the file by a 4 KiB block holding
//    that group's checksums. Group g's block starts at g * kGroupFileBytes; object byte x
//    lies at InlineDataPos(x) = x + 4 KiB * (x / 4 MiB + 1). A small object is its block of
//    checksums followed by its bytes: creating it creates one file, and one disk read (one
//    readv) brings both when it is read cold. The blocks cost 1/1024 of the data, as the
//    sidecar did.
//
// Header-only constants and arithmetic, shared by the OSS and the tests that damage objects
// on disk behind its back.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "common/crc32c.h"

namespace stria::oss {

enum class ObjectFormat : uint32_t {
  kSidecar = 1,
  kInline = 2,
};

// The OST's destroy counters: `<ost>/destroys`, kDestroysFileBytes long, mapped shared by
// the OSS (read-write) and by clients reading object files themselves (read-only,
// client/local_reads.h). A destroy adds one to `started` before the object's file leaves its
// path (to the pool, or unlinked), and one to `finished` after; the OSS sets `finished` to
// `started` when it opens the OST (a destroy cut short by a crash is over). A reader that
// found started == finished before it checked an object's path, and finds `started`
// unchanged after a later read, knows no destroy has moved any file since the check: the
// descriptor it read still is the object's file, with no system call to ask.
inline constexpr char kDestroysFile[] = "destroys";
inline constexpr size_t kDestroysFileBytes = 4096;
struct DestroyCounters {
  std::atomic<uint64_t> started;
  std::atomic<uint64_t> finished;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared between processes");

// Object (group, id) is the file O/<group>/d<id % kObjectSubdirs>/<id> under its OST's
// directory (oss/object_store.h).
inline constexpr uint64_t kObjectSubdirs = 32;
inline std::string ObjectRelPath(uint64_t group, uint64_t id) {
  return "O/" + std::to_string(group) + "/d" + std::to_string(id % kObjectSubdirs) + "/" +
         std::to_string(id);
}

// The checksum of one chunk whose bytes (at most kCrcChunk) are `bytes`, zero-padded past the
// object's end (rules in internal/chunk_crc.h): what the OSS stores and verifies, and what a
// client reading object files itself verifies (client/local_reads.h).
inline uint32_t ChunkCrc(std::span<const uint8_t> bytes);

// What FormatOst gives a new OST.
inline constexpr ObjectFormat kNewOstObjectFormat = ObjectFormat::kInline;

inline constexpr uint64_t kCrcChunk = 4096;                           // bytes per checksum
inline constexpr uint64_t kCrcEntryBytes = 4;                         // one little-endian crc32c
inline constexpr uint64_t kCrcBlockBytes = 4096;                      // kInline: a group's block
inline constexpr uint64_t kGroupChunks = kCrcBlockBytes / kCrcEntryBytes;  // 1024
inline constexpr uint64_t kGroupDataBytes = kGroupChunks * kCrcChunk;      // 4 MiB
inline constexpr uint64_t kGroupFileBytes = kGroupDataBytes + kCrcBlockBytes;

// kInline: the file offset of object byte x.
constexpr uint64_t InlineDataPos(uint64_t x) {
  return x + kCrcBlockBytes * (x / kGroupDataBytes + 1);
}

// kInline: the file offset of chunk i's checksum.
constexpr uint64_t InlineCrcPos(uint64_t chunk) {
  return chunk / kGroupChunks * kGroupFileBytes + chunk % kGroupChunks * kCrcEntryBytes;
}

// kInline: the file size of an object of `size` bytes (its last group's block included).
constexpr uint64_t InlineFileSize(uint64_t size) {
  return size == 0 ? 0 : InlineDataPos(size - 1) + 1;
}

// kInline: the object size a file of `file_size` bytes holds. A file that ends inside a
// group's block holds no byte of that group.
constexpr uint64_t InlineObjectSize(uint64_t file_size) {
  if (file_size == 0) return 0;
  const uint64_t g = (file_size - 1) / kGroupFileBytes;
  const uint64_t in_group = file_size - g * kGroupFileBytes;
  return g * kGroupDataBytes + (in_group > kCrcBlockBytes ? in_group - kCrcBlockBytes : 0);
}

// The object size a file of `file_size` bytes holds, in `format`.
constexpr uint64_t ObjectSizeOfFile(ObjectFormat format, uint64_t file_size) {
  return format == ObjectFormat::kInline ? InlineObjectSize(file_size) : file_size;
}

static_assert(InlineDataPos(0) == 4096 && InlineDataPos(kGroupDataBytes) == kGroupFileBytes + 4096);
static_assert(InlineObjectSize(InlineFileSize(100'000)) == 100'000);
static_assert(InlineObjectSize(InlineFileSize(kGroupDataBytes)) == kGroupDataBytes);
static_assert(InlineObjectSize(InlineFileSize(kGroupDataBytes + 1)) == kGroupDataBytes + 1);
static_assert(InlineObjectSize(kGroupFileBytes + 100) == kGroupDataBytes);
static_assert(InlineCrcPos(kGroupChunks + 2) == kGroupFileBytes + 8);

inline uint32_t ChunkCrc(std::span<const uint8_t> bytes) {
  static const std::array<uint8_t, kCrcChunk> kZeros{};
  const uint32_t crc = Crc32c(bytes.data(), bytes.size());
  if (bytes.size() >= kCrcChunk) return crc;
  return Crc32c(kZeros.data(), kCrcChunk - bytes.size(), crc);
}

}  // namespace stria::oss
