// ObjectStore: one OST — a directory on a local filesystem holding one file per object.
//
// Object (group, id) lives at `<dir>/O/<group>/d<id % 32>/<id>`. A file is created on the
// first write (or a growing truncate); until then the object reads as empty (size 0) and
// Getattr says exists=false. Object data goes to disk through io_uring (UringIo); the
// descriptors come from a bounded LRU (internal/fd_cache.h), never one held per object.
// Nothing is fsynced unless asked (a sync write, SyncObject, SyncAll).
//
// Every offset/length is checked against kMaxFileSize (common/layout.h) before any I/O; disk
// errors come back as their Status codes (ENOSPC -> kNoSpc, EIO -> kIO, EFBIG -> kFBig).
//
// Future: end-to-end checksums on disk. The plan is a sidecar per object,
// `<object path>.crc`, holding one crc32c per 64 KiB block (block-aligned, little-endian
// uint32 array), updated by Write/Punch/Truncate and verified by Read (kCorrupt on mismatch).
// Every data path below goes through WriteData/ReadData-style choke points for that reason;
// Destroy must unlink the sidecar too.
//
// Thread-safety: all methods are thread-safe; concurrent writes to disjoint ranges of one
// object are safe (pwrite semantics), overlapping ones land in some order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "oss/internal/fd_cache.h"
#include "oss/ost_meta.h"

namespace stria::oss {

struct ObjectStoreOptions {
  // Most object descriptors kept open by this OST (more are open only while requests run).
  size_t max_open_files = 512;
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
  // object's size afterwards.
  Result<uint64_t> Write(uint64_t group, uint64_t id, uint64_t offset,
                         std::span<const uint8_t> data, bool sync);

  // Reads up to buf.size() bytes at offset; returns how many exist below the object's size
  // (holes read as zeros). *object_size gets the size (0 for a missing object).
  Result<size_t> Read(uint64_t group, uint64_t id, uint64_t offset, std::span<uint8_t> buf,
                      uint64_t* object_size);

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

  // Descriptors cached now (for tests and stats).
  size_t cached_files() const { return cache_.size(); }

 private:
  ObjectStore(std::string dir, OstMeta meta, int root_fd, const ObjectStoreOptions& options);

  // The object's path relative to the OST root.
  static std::string RelPath(uint64_t group, uint64_t id);

  // The object's descriptor, opening it on a cache miss; create=false gives kNoEnt for a
  // missing object.
  Result<internal::FileRef> GetFile(uint64_t group, uint64_t id, bool create);
  Result<internal::FileRef> OpenFile(uint64_t group, uint64_t id, bool create);
  Status MakeParents(uint64_t group, uint64_t id);
  Status FsyncParent(uint64_t group, uint64_t id);

  const std::string dir_;
  const OstMeta meta_;
  const int root_fd_;  // O_DIRECTORY descriptor of dir_; object paths are relative to it
  internal::FdCache cache_;
};

}  // namespace stria::oss
