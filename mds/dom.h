// Data-on-MDT: the bytes of a file's first component kept by the MDS itself, so a small
// file is stored and read with no OST round trip (Lustre's DoM).
//
// A file's DoM bytes live in RocksDB in 64 KiB blocks (key M<ino><block>, mds/schema.h):
// block k holds file bytes [k*64K, k*64K + value size); a missing or shorter block is a hole.
// Writes read-modify-write partial blocks under the namespace mutex and go to the WAL
// unsynced, as OST writes go to the page cache: they survive a crash of the MDS process, and
// fsync (OP_MDS_SYNC) makes them durable. RocksDB checksums the WAL and every block on disk.
// The size of the DoM component is capped by lod.*.dom_stripesize (1 MiB by default; 0
// disables DoM), a parameter set with lctl set_param and kept by the MGS.
// Thread-safety: functions over a DB; callers serialize writers (the namespace mutex).
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"

namespace stria::mds {

inline constexpr uint64_t kDomBlock = 64ull << 10;
inline constexpr uint64_t kDefaultDomStripeSize = 1ull << 20;
inline constexpr uint64_t kMaxDomStripeSize = 1ull << 30;  // as Lustre's LOD limit
// Files up to this size whose bytes are all on the MDS come back with the open reply.
inline constexpr uint64_t kReadOnOpenMax = 256ull << 10;

// Reads file bytes [offset, offset + out.size()) into out: returns how many bytes up to the
// end of the last stored byte in the range (0 when none); holes before it read as zeros.
Result<size_t> DomReadBlocks(rocksdb::DB* db, uint64_t ino, uint64_t offset,
                             std::span<uint8_t> out);

// Adds the write of `data` at `offset` to `batch` (partial blocks read from `db` first).
Status DomWriteBlocks(rocksdb::DB* db, rocksdb::WriteBatch* batch, uint64_t ino, uint64_t offset,
                      std::span<const uint8_t> data);

// Adds to `batch` what keeps only the first `size` DoM bytes of the file (0: none).
Status DomTruncateBlocks(rocksdb::DB* db, rocksdb::WriteBatch* batch, uint64_t ino, uint64_t size);

// The lod.*.dom_stripesize in effect for `fsname`: the most specific stored param whose
// name matches lod.FSNAME-MDT0000-mdtlov.dom_stripesize, else kDefaultDomStripeSize.
Result<uint64_t> DomStripeSize(rocksdb::DB* db, const std::string& fsname);

// EINVAL unless `value` is a dom_stripesize lctl accepts: a size (k/M/G suffixes) that is 0
// or a multiple of 64 KiB, at most kMaxDomStripeSize.
Result<uint64_t> ParseDomStripeSize(const std::string& value);

// True for a param name that names dom_stripesize (lod.*.dom_stripesize and the like).
bool IsDomStripeSizeParam(const std::string& name);

}  // namespace stria::mds
