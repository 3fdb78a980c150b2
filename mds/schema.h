// The MDS's on-disk schema: how the namespace, the OST table and the MGS state map onto
// RocksDB keys. One RocksDB instance (the --data directory) holds everything.
//
// Every key starts with a one-byte prefix; integers inside keys are big-endian so that
// RocksDB's bytewise order is numeric order and a directory's entries are contiguous.
//
//   S<name>                  superblock / config values
//       Sfsname              the filesystem name (string), written once at format
//       Sformat              format version (be32), kFormatVersion
//       Snext_ino            the next inode number to hand out (be64)
//       Sinodes              the number of inodes in use (be64), for statfs
//       Sconfig_gen          FsConfig.config_generation (be64): bumps on OST table/param changes
//       Sdestroy_seq         the first destroy-queue sequence number (be64), written at
//                            format: the next one is found after the last Q key at open
//   I<ino:be64>              inode record: rec::Inode (mds/mds_record.proto), holding a
//                            serialized proto::Attr, the file's proto::Layout (regular files),
//                            a directory's default proto::Layout, the symlink target and a
//                            directory's parent inode (for rename loop checks and "..")
//   D<parent:be64><name>     directory entry: rec::Dirent {child ino, FileType}
//   X<ino:be64><name>        extended attribute value (raw bytes)
//   O<ost idx:be32>          OST table entry: rec::Ost {serialized proto::OstInfo,
//                            next_object_id}; next_object_id is the per-OST object id counter,
//                            advanced in the same WriteBatch as the create that uses it
//   P<name>                  tunable (lctl set_param -P): raw value string
//   Q<seq:be64>              destroy queue record: a serialized proto::OstDestroyRequest
//                            listing the objects of a file whose last link went away
//   U<ino:be64>              an orphan: a regular file unlinked while open (its inode stays,
//                            nlink 0, until the last close; orphans left at a restart are
//                            removed when the MDS opens, objects queued for destruction)
//   M<ino:be64><block:be32>  Data-on-MDT bytes of a regular file: block k holds file bytes
//                            [k*64K, k*64K + value size); shorter or missing blocks are holes
//                            (mds/dom.h)
//   T<pool name>             OST pool: a serialized proto::PoolInfo (lctl pool_new)
//   F<ino:be64>              a regular file with a stale mirror component (the resync list,
//                            mds/mirror_resync.h): the time of the last change to it (be64
//                            ns), written with every change while a component is stale and
//                            deleted with the last stale mark (or the inode)
//   R<len:u8><client uuid><xid:be64>
//                            the reply of a non-idempotent request, written in the batch of
//                            the change it reports (mds/reply_journal.h), so a resend after a
//                            restart is answered, not run twice
//
// Durability: every namespace change is exactly one rocksdb::WriteBatch written with
// WriteOptions::sync = true before the reply is sent (the WAL is fsynced), so kill -9 at any
// moment loses nothing acknowledged and never leaves a half-done operation. A destroy-queue
// record is written in the same batch as the unlink that orphans the objects, so a crash
// between the unlink and the OST destroys leaves the record to be replayed at restart.
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace stria::mds {

inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint64_t kRootIno = 1;

inline constexpr char kPrefixSuper = 'S';
inline constexpr char kPrefixInode = 'I';
inline constexpr char kPrefixDirent = 'D';
inline constexpr char kPrefixXattr = 'X';
inline constexpr char kPrefixOst = 'O';
inline constexpr char kPrefixParam = 'P';
inline constexpr char kPrefixDestroy = 'Q';
inline constexpr char kPrefixReply = 'R';
inline constexpr char kPrefixOrphan = 'U';
inline constexpr char kPrefixDom = 'M';
inline constexpr char kPrefixPool = 'T';
inline constexpr char kPrefixMirrorStale = 'F';

// Appends v big-endian.
inline void PutBe64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (i * 8)) & 0xff));
}
inline void PutBe32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>((v >> (i * 8)) & 0xff));
}
// Reads a big-endian integer from the first 8 (4) bytes of p; the caller checks the length.
inline uint64_t GetBe64(std::string_view p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline uint32_t GetBe32(std::string_view p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

inline std::string SuperKey(std::string_view name) {
  std::string k(1, kPrefixSuper);
  k.append(name);
  return k;
}
inline std::string InodeKey(uint64_t ino) {
  std::string k(1, kPrefixInode);
  PutBe64(&k, ino);
  return k;
}
// The prefix shared by every entry of directory `parent` (and, with name, one entry).
inline std::string DirentKey(uint64_t parent, std::string_view name = {}) {
  std::string k(1, kPrefixDirent);
  PutBe64(&k, parent);
  k.append(name);
  return k;
}
inline std::string XattrKey(uint64_t ino, std::string_view name = {}) {
  std::string k(1, kPrefixXattr);
  PutBe64(&k, ino);
  k.append(name);
  return k;
}
inline std::string OstKey(uint32_t idx) {
  std::string k(1, kPrefixOst);
  PutBe32(&k, idx);
  return k;
}
inline std::string ParamKey(std::string_view name) {
  std::string k(1, kPrefixParam);
  k.append(name);
  return k;
}
inline std::string OrphanKey(uint64_t ino) {
  std::string k(1, kPrefixOrphan);
  PutBe64(&k, ino);
  return k;
}
// The prefix of a file's Data-on-MDT blocks (and, with block, one block).
inline std::string DomKey(uint64_t ino) {
  std::string k(1, kPrefixDom);
  PutBe64(&k, ino);
  return k;
}
inline std::string DomKey(uint64_t ino, uint32_t block) {
  std::string k = DomKey(ino);
  PutBe32(&k, block);
  return k;
}
inline std::string PoolKey(std::string_view name) {
  std::string k(1, kPrefixPool);
  k.append(name);
  return k;
}
inline std::string MirrorStaleKey(uint64_t ino) {
  std::string k(1, kPrefixMirrorStale);
  PutBe64(&k, ino);
  return k;
}
inline std::string DestroyKey(uint64_t seq) {
  std::string k(1, kPrefixDestroy);
  PutBe64(&k, seq);
  return k;
}

// Big-endian encodings of superblock values.
inline std::string EncodeBe64(uint64_t v) {
  std::string s;
  PutBe64(&s, v);
  return s;
}

}  // namespace stria::mds
