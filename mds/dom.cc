#include "mds/dom.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "mds/namespace.h"
#include "mds/params.h"
#include "mds/schema.h"

namespace stria::mds {

namespace {

uint32_t BlockOf(uint64_t offset) { return static_cast<uint32_t>(offset / kDomBlock); }

// The block number of a DoM key (its big-endian tail after the inode's prefix).
Result<uint32_t> BlockOfKey(const rocksdb::Slice& key, size_t prefix_size) {
  if (key.size() != prefix_size + 4) return Status(Code::kCorrupt, "bad DoM block key");
  uint32_t block = 0;
  for (size_t i = 0; i < 4; ++i) block = (block << 8) | static_cast<uint8_t>(key[prefix_size + i]);
  return block;
}

}  // namespace

Result<size_t> DomReadBlocks(rocksdb::DB* db, uint64_t ino, uint64_t offset,
                             std::span<uint8_t> out) {
  std::memset(out.data(), 0, out.size());
  if (out.empty()) return size_t{0};
  const uint64_t end = offset + out.size();
  size_t got = 0;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix = DomKey(ino);
  for (it->Seek(DomKey(ino, BlockOf(offset))); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    const rocksdb::Slice key = it->key();
    STRIA_ASSIGN_OR_RETURN(uint32_t block, BlockOfKey(key, prefix.size()));
    const uint64_t start = block * kDomBlock;
    if (start >= end) break;
    const rocksdb::Slice v = it->value();
    if (v.size() > kDomBlock) return Status(Code::kCorrupt, "DoM block larger than 64 KiB");
    const uint64_t from = std::max(start, offset);
    const uint64_t to = std::min(start + v.size(), end);
    if (from >= to) continue;
    std::memcpy(out.data() + (from - offset), v.data() + (from - start), to - from);
    got = std::max<size_t>(got, to - offset);
  }
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "DoM read"));
  return got;
}

Status DomWriteBlocks(rocksdb::DB* db, rocksdb::WriteBatch* batch, uint64_t ino, uint64_t offset,
                      std::span<const uint8_t> data) {
  uint64_t pos = offset;
  const uint64_t end = offset + data.size();
  while (pos < end) {
    const uint32_t block = BlockOf(pos);
    const uint64_t start = block * kDomBlock;
    const uint64_t to = std::min(end, start + kDomBlock);
    const std::string key = DomKey(ino, block);
    std::string value;
    if (pos != start || to != start + kDomBlock) {
      // A partial block: keep the bytes around the new ones.
      rocksdb::Status s = db->Get(rocksdb::ReadOptions(), key, &value);
      if (!s.ok() && !s.IsNotFound()) return FromRocks(s, "DoM read-modify-write");
      if (value.size() > kDomBlock) return Status(Code::kCorrupt, "DoM block larger than 64 KiB");
    }
    if (value.size() < to - start) value.resize(to - start, '\0');
    std::memcpy(value.data() + (pos - start), data.data() + (pos - offset), to - pos);
    batch->Put(key, value);
    pos = to;
  }
  return Status::Ok();
}

Status DomTruncateBlocks(rocksdb::DB* db, rocksdb::WriteBatch* batch, uint64_t ino, uint64_t size) {
  const std::string prefix = DomKey(ino);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(DomKey(ino, BlockOf(size))); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    const rocksdb::Slice key = it->key();
    STRIA_ASSIGN_OR_RETURN(uint32_t block, BlockOfKey(key, prefix.size()));
    const uint64_t start = block * kDomBlock;
    if (start >= size) {
      batch->Delete(key);
    } else if (it->value().size() > size - start) {
      batch->Put(key, rocksdb::Slice(it->value().data(), size - start));
    }
  }
  return FromRocks(it->status(), "DoM truncate");
}

Result<uint64_t> ParseDomStripeSize(const std::string& value) {
  const Status bad(Code::kInval, "dom_stripesize '" + value +
                                     "' must be 0 or a multiple of 64 KiB up to 1 GiB "
                                     "(k, M, G suffixes)");
  if (value.empty()) return bad;
  size_t i = 0;
  uint64_t v = 0;
  for (; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i) {
    if (v > (UINT64_MAX - 9) / 10) return bad;
    v = v * 10 + static_cast<uint64_t>(value[i] - '0');
  }
  if (i == 0) return bad;
  if (i < value.size()) {
    if (i + 1 != value.size()) return bad;
    int shift = 0;
    switch (value[i]) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        return bad;
    }
    if (v > (kMaxDomStripeSize >> shift)) return bad;
    v <<= shift;
  }
  if (v % kDomBlock != 0 || v > kMaxDomStripeSize) return bad;
  return v;
}

bool IsDomStripeSizeParam(const std::string& name) {
  return name.starts_with("lod.") && name.ends_with(".dom_stripesize");
}

Result<uint64_t> DomStripeSize(rocksdb::DB* db, const std::string& fsname) {
  STRIA_ASSIGN_OR_RETURN(std::optional<std::string> v,
                         MatchParam(db, "lod." + fsname + "-MDT0000-mdtlov.dom_stripesize"));
  if (!v) return kDefaultDomStripeSize;
  auto size = ParseDomStripeSize(*v);
  return size.ok() ? *size : kDefaultDomStripeSize;  // checked at set_param; never bad here
}

}  // namespace stria::mds
