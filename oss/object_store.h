// ObjectStore: one OST — a directory on a local filesystem holding one file per object.
//
// Object (group, id) lives at `<dir>/O/<group>/d<id % 32>/<id>`. A file is created on the
// first write (or a growing truncate), as a rename of an empty file from the OST's pool
// (`<dir>/P/`, internal/object_pool.h) when one is ready; until then the object reads as
// empty (size 0) and Getattr says exists=false. Destroy puts the file back into the pool.
// Object data goes to disk through io_uring (UringIo), large aligned writes and reads with
// O_DIRECT (ObjectStoreOptions::direct_writes, direct_reads), everything else buffered; the
// descriptors come from a bounded LRU (internal/fd_cache.h), never one held per object.
// Nothing is fsynced unless asked (a sync write, SyncObject, SyncAll).
//
// Every offset/length is checked against kMaxFileSize (common/layout.h) before any I/O; disk
// errors come back as their Status codes (ENOSPC -> kNoSpc, EIO -> kIO, EFBIG -> kFBig).
//
// Checksums on disk: one crc32c per 4 KiB chunk, in a 4 KiB block before each 4 MiB of the
// object inside its file, or, on OSTs formatted before 2026-11-26, in a sidecar `<id>.crc`
// beside it (object_format.h; rules in internal/chunk_crc.h). Write, Punch and Truncate
// update them; Read verifies every chunk it returns and answers kCorrupt, never the bytes, on
// a mismatch. Data and checksums are written one after the other, not atomically: after a
// crash, chunks written since their last fsync may fail verification (kCorrupt) until
// rewritten, but never pass with wrong bytes. ForEachObject and ScrubObject
// serve `lctl scrub` (oss/ost_scrub.h).
//
// Thread-safety: all methods are thread-safe. Each object has a reader/writer lock (striped
// over kObjectLocks) and its 1 MiB regions have another (internal/range_locks.h). Punch,
// Truncate and Destroy hold the object lock exclusive (so no write to a destroyed object can
// land in its file once the pool hands it out again). Write holds it shared and its regions
// exclusive, so writes to disjoint regions of one object run in parallel while writes to the
// same chunk (read-modify-write) are serialized and land in some order; Read and each scrub
// step hold both shared, so they never see the data of one write with the checksums of
// another. Lock order: the object lock, the region stripes (ascending), an FdCache shard
// lock, then the pool's (leaf); never two object locks.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "oss/internal/chunk_crc.h"
#include "oss/internal/fd_cache.h"
#include "oss/internal/object_pool.h"
#include "oss/internal/range_locks.h"
#include "oss/ost_meta.h"

namespace stria::oss {

struct ObjectStoreOptions {
  // Most objects kept open by this OST: one descriptor each (two on an OST of the sidecar
  // format), and one more once an object has had an O_DIRECT write or read; more are open only
  // while requests run.
  size_t max_open_files = 512;
  // Writes aligned to 4 KiB (offset, length and buffer: every full-chunk write a client
  // streams) go to disk with O_DIRECT: no copy into the page cache and no writeback later,
  // which was most of an OSS's CPU per byte written. Unaligned writes, and file systems
  // without O_DIRECT, stay buffered. false: every write buffered.
  bool direct_writes = true;
  // Reads aligned to 4 KiB of at least direct_min_bytes (a client streaming whole stripe
  // chunks) come from disk with O_DIRECT into the reply's buffer: no page-cache pages to
  // allocate, fill and copy out, which cost an OSS 2 CPU-s per GiB on a one-stripe stream
  // against 0.5 direct (docs/performance.md). What they read is not cached on the OSS, as
  // what such writes wrote is not. false (stria-oss --read-cache): every read buffered, and
  // the OSS's page cache serves what it holds, e.g. files many clients read at once.
  bool direct_reads = true;
  // Writes smaller than this stay buffered even when aligned: a small file's bytes land in
  // the page cache (its close does not wait for the disk, and the object needs no third
  // descriptor), and reach the disk at fsync or with writeback, as on the passthrough.
  // Streams and checkpoints write whole stripe chunks (1 MiB by default) and go direct.
  size_t direct_min_bytes = 256 << 10;
  // Empty files kept ready for new objects in `P/` (internal/object_pool.h): precreated in
  // batches of up to `precreate` by a background thread, and the files of destroyed objects,
  // emptied, up to `object_pool` in all. A new object is then a rename, not an inode
  // allocation, and a destroy a rename, not an inode freed. 0: none (each object file is
  // created by its first write and unlinked by its destroy).
  size_t object_pool = 4096;
  size_t precreate = 256;
};

struct ObjectAttr {
  uint64_t size = 0;
  uint64_t blocks = 0;  // 512-byte blocks allocated
  bool exists = false;
};

struct OstStatfs {
  uint64_t bsize = 0;   // fragment size: the unit of the block counts
  uint64_t blocks = 0;
  uint64_t bfree = 0;
  uint64_t bavail = 0;
  uint64_t files = 0;
  uint64_t ffree = 0;
};

// What ScrubObject found in one object.
struct ObjectScrub {
  uint64_t bytes = 0;       // bytes read and checked
  uint64_t bad_chunks = 0;  // 4 KiB chunks that failed verification
  uint64_t first_bad_offset = 0;
};

class ObjectStore {
 public:
  // Opens a formatted OST directory. Refused (with the reason) when it is not formatted
  // (kNoEnt), formatted for another index (kInval) or, when fsname is not empty, for another
  // filesystem (kWrongFs).
  static Result<std::unique_ptr<ObjectStore>> Open(const std::string& dir, uint32_t index,
                                                   std::string_view fsname,
                                                   const ObjectStoreOptions& options = {});
  ~ObjectStore();
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  const OstMeta& meta() const { return meta_; }
  const std::string& dir() const { return dir_; }

  // Writes data at offset (creating the object); fdatasync first when sync. Returns the
  // object's size afterwards. With expected_crc (the request's bulk checksum, which lnet
  // left to this write), data is checked against it from the chunk sums, before anything
  // is written: kChecksum when it differs.
  Result<uint64_t> Write(uint64_t group, uint64_t id, uint64_t offset,
                         std::span<const uint8_t> data, bool sync,
                         const uint32_t* expected_crc = nullptr);

  // Reads up to buf.size() bytes at offset; returns how many exist below the object's size
  // (holes read as zeros). *object_size gets the size (0 for a missing object); *missing
  // (when given) whether the object does not exist at all. *crc (when given) gets the
  // crc32c of the bytes returned, folded from the chunk sums the read verified.
  Result<size_t> Read(uint64_t group, uint64_t id, uint64_t offset, std::span<uint8_t> buf,
                      uint64_t* object_size, bool* missing = nullptr, uint32_t* crc = nullptr);

  // Frees [offset, offset+length) keeping the size; a missing object stays missing. Returns
  // the object's size.
  Result<uint64_t> Punch(uint64_t group, uint64_t id, uint64_t offset, uint64_t length);

  // Sets the object's size (grow leaves a hole). Creates the object when size > 0.
  Result<uint64_t> Truncate(uint64_t group, uint64_t id, uint64_t size);

  // Removes the object; a missing one is fine.
  Status Destroy(uint64_t group, uint64_t id);

  Result<ObjectAttr> Getattr(uint64_t group, uint64_t id);

  Result<OstStatfs> Statfs();

  // fsync of one object (its data, size and directory entry); a missing object is fine.
  Status SyncObject(uint64_t group, uint64_t id);

  // syncfs(2) of the filesystem under the OST.
  Status SyncAll();

  // Calls fn(group, id) for every object stored on this OST, walking O/<group>/d<n>/ one
  // directory entry at a time (memory does not grow with the number of objects). Sidecars
  // and anything else that is not an object file are skipped. Objects created or destroyed
  // during the walk may or may not be seen. Stops at the first error fn returns.
  Status ForEachObject(const std::function<Status(uint64_t group, uint64_t id)>& fn);

  // Reads one object in `step`-byte pieces and verifies every chunk against its checksum,
  // holding the object's locks (shared) for one piece at a time so writers wait at most one
  // piece. Uses its own descriptors, not the cache (a scrub must not evict the hot objects).
  // A missing object scrubs as empty.
  Result<ObjectScrub> ScrubObject(uint64_t group, uint64_t id, size_t step = 1u << 20);

  // Descriptors cached now (for tests and stats).
  size_t cached_files() const { return cache_.size(); }

  // The pool of empty object files (nullptr when ObjectStoreOptions::object_pool is 0).
  internal::ObjectPool* pool() const { return pool_.get(); }

  // The destroy counters (object_format.h kDestroysFile), mapped from the OST's directory.
  const DestroyCounters& destroys() const { return *destroys_; }

 private:
  ObjectStore(std::string dir, OstMeta meta, int root_fd, const ObjectStoreOptions& options,
              std::unique_ptr<internal::ObjectPool> pool, DestroyCounters* destroys);

  static constexpr size_t kObjectLocks = 256;

  // The object's path relative to the OST root, and its checksum sidecar's.
  static std::string RelPath(uint64_t group, uint64_t id);
  static std::string CrcPath(uint64_t group, uint64_t id);

  // The lock of object (group, id) (shared by the objects that hash alike).
  std::shared_mutex& ObjectLock(uint64_t group, uint64_t id);

  // kCorrupt from the chunk layer, naming this OST and the object.
  Status NameCorruption(const Status& st, uint64_t group, uint64_t id) const;

  // The object's descriptor, opening it on a cache miss; create=false gives kNoEnt for a
  // missing object.
  Result<internal::FileRef> GetFile(uint64_t group, uint64_t id, bool create);
  Result<internal::FileRef> OpenFile(uint64_t group, uint64_t id, bool create);
  // The cache entry of a just opened object file: with its sidecar (opened, or created and
  // emptied when `fresh`) on an OST of the sidecar format, the file alone on others.
  Result<internal::FileRef> OpenedObject(int fd, uint64_t group, uint64_t id, bool fresh);

  // An open object's files, in this OST's format.
  internal::ObjectFiles Files(const internal::OpenFile& file) const;
  // fsync (fdatasync when datasync) of an open object's files.
  static Status SyncFiles(const internal::OpenFile& file, bool datasync);

  Status MakeParents(uint64_t group, uint64_t id);
  Status FsyncParent(uint64_t group, uint64_t id);

  const std::string dir_;
  const OstMeta meta_;
  const int root_fd_;  // O_DIRECTORY descriptor of dir_; object paths are relative to it
  const ObjectStoreOptions options_;
  internal::FdCache cache_;
  std::array<std::shared_mutex, kObjectLocks> object_locks_;
  internal::RangeLocks range_locks_;
  std::unique_ptr<internal::ObjectPool> pool_;  // uses root_fd_: reset before it is closed
  DestroyCounters* const destroys_;             // mapped kDestroysFileBytes, unmapped at the end
};

}  // namespace stria::oss
