#include "oss/object_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <mutex>
#include <optional>
#include <vector>

#include "common/layout.h"
#include "common/log.h"
#include "oss/internal/chunk_crc.h"
#include "oss/uring_io.h"

namespace stria::oss {

using internal::FileRef;
using internal::ObjKey;
using internal::ObjKeyHash;

namespace {

constexpr uint64_t kSubdirs = kObjectSubdirs;

// EINVAL unless [offset, offset+length) lies inside [0, kMaxFileSize].
// Whether I/O of `size` bytes at `offset` from or into `mem` may use O_DIRECT: aligned to
// kCrcChunk in all three (no partial chunk, a page-aligned buffer) and at least `min_bytes`.
bool DirectEligible(uint64_t offset, size_t size, const void* mem, size_t min_bytes) {
  return offset % internal::kCrcChunk == 0 && size % internal::kCrcChunk == 0 &&
         reinterpret_cast<uintptr_t>(mem) % internal::kCrcChunk == 0 && size >= min_bytes;
}

Status CheckRange(uint64_t offset, uint64_t length) {
  if (offset > kMaxFileSize || length > kMaxFileSize - offset) {
    return Status(Code::kInval, fmt::format("range [{}, +{}) exceeds the maximum object size",
                                            offset, length));
  }
  return Status::Ok();
}

Status MkdirAt(int dirfd, const std::string& rel) {
  if (mkdirat(dirfd, rel.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus("mkdir " + rel, errno);
  }
  return Status::Ok();
}

// Maps the OST's destroy counters (object_format.h), creating the file on the OST's first
// open by this build, and ends a destroy that a crash cut short.
Result<DestroyCounters*> MapDestroyCounters(int root_fd) {
  const int fd = openat(root_fd, kDestroysFile, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(std::string("open ") + kDestroysFile, errno);
  struct stat st;
  if (fstat(fd, &st) != 0 || (static_cast<size_t>(st.st_size) < kDestroysFileBytes &&
                              ftruncate(fd, kDestroysFileBytes) != 0)) {
    const int err = errno;
    close(fd);
    return ErrnoStatus(std::string("size ") + kDestroysFile, err);
  }
  void* p = mmap(nullptr, kDestroysFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (p == MAP_FAILED) return ErrnoStatus(std::string("map ") + kDestroysFile, err);
  auto* c = static_cast<DestroyCounters*>(p);
  c->finished.store(c->started.load());
  return c;
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> ObjectStore::Open(const std::string& dir, uint32_t index,
                                                       std::string_view fsname,
                                                       const ObjectStoreOptions& options) {
  STRIA_ASSIGN_OR_RETURN(OstMeta meta, ReadOstMeta(dir));
  STRIA_RETURN_IF_ERROR(CheckOstMeta(dir, meta, index, fsname));
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open " + dir, errno);
  Result<DestroyCounters*> destroys = MapDestroyCounters(fd);
  if (!destroys.ok()) {
    close(fd);
    return Status(destroys.status().code(),
                  fmt::format("OST {} destroy counters: {}", dir, destroys.status().message()));
  }
  std::unique_ptr<internal::ObjectPool> pool;
  if (options.object_pool > 0) {
    Result<std::unique_ptr<internal::ObjectPool>> opened = internal::ObjectPool::Open(
        fd, {.max_files = options.object_pool, .precreate = options.precreate});
    if (!opened.ok()) {
      munmap(*destroys, kDestroysFileBytes);
      close(fd);
      return Status(opened.status().code(),
                    fmt::format("OST {} object pool: {}", dir, opened.status().message()));
    }
    pool = std::move(*opened);
  }
  return std::unique_ptr<ObjectStore>(
      new ObjectStore(dir, std::move(meta), fd, options, std::move(pool), *destroys));
}

ObjectStore::ObjectStore(std::string dir, OstMeta meta, int root_fd,
                         const ObjectStoreOptions& options,
                         std::unique_ptr<internal::ObjectPool> pool, DestroyCounters* destroys)
    : dir_(std::move(dir)),
      meta_(std::move(meta)),
      root_fd_(root_fd),
      options_(options),
      cache_(options.max_open_files),
      pool_(std::move(pool)),
      destroys_(destroys) {}

ObjectStore::~ObjectStore() {
  pool_.reset();  // its thread works under root_fd_
  munmap(destroys_, kDestroysFileBytes);
  close(root_fd_);
}

std::string ObjectStore::RelPath(uint64_t group, uint64_t id) { return ObjectRelPath(group, id); }

std::string ObjectStore::CrcPath(uint64_t group, uint64_t id) {
  return RelPath(group, id) + ".crc";
}

std::shared_mutex& ObjectStore::ObjectLock(uint64_t group, uint64_t id) {
  return object_locks_[ObjKeyHash()(ObjKey{group, id}) % kObjectLocks];
}

Status ObjectStore::NameCorruption(const Status& st, uint64_t group, uint64_t id) const {
  if (st.code() != Code::kCorrupt) return st;
  return Status(Code::kCorrupt,
                fmt::format("OST {} object {}:{}: {}", meta_.index, group, id, st.message()));
}

Status ObjectStore::MakeParents(uint64_t group, uint64_t id) {
  STRIA_RETURN_IF_ERROR(MkdirAt(root_fd_, "O"));
  STRIA_RETURN_IF_ERROR(MkdirAt(root_fd_, fmt::format("O/{}", group)));
  return MkdirAt(root_fd_, fmt::format("O/{}/d{}", group, id % kSubdirs));
}

internal::ObjectFiles ObjectStore::Files(const internal::OpenFile& file) const {
  return internal::ObjectFiles{meta_.object_format, file.fd(), file.crc_fd()};
}

Result<FileRef> ObjectStore::OpenedObject(int fd, uint64_t group, uint64_t id, bool fresh) {
  if (meta_.object_format == ObjectFormat::kInline) {
    return std::make_shared<internal::OpenFile>(fd, -1);  // checksums inside the object file
  }
  // An object from before checksums gets an empty sidecar: no checksums until rewritten. A
  // new object's sidecar is emptied in case one was left by a destroy cut short.
  const std::string rel = CrcPath(group, id);
  const int crc_fd =
      openat(root_fd_, rel.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (fresh ? O_TRUNC : 0), 0644);
  if (crc_fd < 0) {
    Status st = ErrnoStatus("open checksum sidecar " + rel, errno);
    close(fd);
    return st;
  }
  return std::make_shared<internal::OpenFile>(fd, crc_fd);
}

Result<FileRef> ObjectStore::OpenFile(uint64_t group, uint64_t id, bool create) {
  const std::string rel = RelPath(group, id);
  int fd = openat(root_fd_, rel.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) return OpenedObject(fd, group, id, /*fresh=*/false);
  if (errno != ENOENT) return ErrnoStatus("open object " + rel, errno);
  if (!create) return Status(Code::kNoEnt, "object " + rel + " does not exist");
  for (int attempt = 0; attempt < 3; ++attempt) {
    // An empty file from the pool when one is ready, else a file created here.
    Result<bool> placed = pool_ ? pool_->Place(rel) : Result<bool>(false);
    if (!placed.ok()) {
      if (placed.status().code() == Code::kExist) {
        errno = EEXIST;
      } else if (placed.status().code() == Code::kNoEnt) {
        errno = ENOENT;
      } else {
        return placed.status();
      }
      fd = -1;
    } else if (*placed) {
      fd = openat(root_fd_, rel.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) return ErrnoStatus("open object " + rel, errno);
    } else {
      fd = openat(root_fd_, rel.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (fd >= 0) {
      STRIA_ASSIGN_OR_RETURN(FileRef file, OpenedObject(fd, group, id, /*fresh=*/true));
      file->dir_dirty.store(true, std::memory_order_relaxed);
      return file;
    }
    if (errno == EEXIST) {  // created by a racing opener
      fd = openat(root_fd_, rel.c_str(), O_RDWR | O_CLOEXEC);
      if (fd >= 0) return OpenedObject(fd, group, id, /*fresh=*/false);
      if (errno != ENOENT) return ErrnoStatus("open object " + rel, errno);
      continue;
    }
    if (errno != ENOENT) return ErrnoStatus("create object " + rel, errno);
    STRIA_RETURN_IF_ERROR(MakeParents(group, id));
  }
  return Status(Code::kIO, "could not create object " + rel);
}

Result<FileRef> ObjectStore::GetFile(uint64_t group, uint64_t id, bool create) {
  return cache_.Get(ObjKey{group, id}, [&] { return OpenFile(group, id, create); });
}

Status ObjectStore::FsyncParent(uint64_t group, uint64_t id) {
  const std::string rel = fmt::format("O/{}/d{}", group, id % kSubdirs);
  const int fd = openat(root_fd_, rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open " + rel, errno);
  Status st = UringIo::Sync(fd, false);
  close(fd);
  return st;
}

Status ObjectStore::SyncFiles(const internal::OpenFile& file, bool datasync) {
  STRIA_RETURN_IF_ERROR(UringIo::Sync(file.fd(), datasync));
  if (file.crc_fd() >= 0) STRIA_RETURN_IF_ERROR(UringIo::Sync(file.crc_fd(), datasync));
  return Status::Ok();
}

Result<uint64_t> ObjectStore::Write(uint64_t group, uint64_t id, uint64_t offset,
                                    std::span<const uint8_t> data, bool sync,
                                    const uint32_t* expected_crc) {
  STRIA_RETURN_IF_ERROR(CheckRange(offset, data.size()));
  if (data.empty()) {  // nothing to store: no object is created for it
    STRIA_ASSIGN_OR_RETURN(ObjectAttr attr, Getattr(group, id));
    return attr.size;
  }
  FileRef file;
  {
    std::shared_lock lock(ObjectLock(group, id));
    auto range = range_locks_.Lock(ObjKey{group, id}, offset, data.size(), /*exclusive=*/true);
    STRIA_ASSIGN_OR_RETURN(file, GetFile(group, id, /*create=*/true));
    const bool direct = options_.direct_writes && DirectEligible(offset, data.size(), data.data(),
                                                                  options_.direct_min_bytes);
    const int direct_fd = direct ? file->direct_fd() : -1;
    Status st = internal::WriteChecksummed(Files(*file), offset, data, direct_fd, expected_crc);
    if (st.code() == Code::kInval && direct_fd >= 0) {
      // The device wants a larger alignment than 4 KiB: this write goes buffered.
      st = internal::WriteChecksummed(Files(*file), offset, data, -1, expected_crc);
    }
    if (!st.ok()) return NameCorruption(st, group, id);
  }
  if (sync) {  // outside the lock: the flush covers whatever is written by then
    STRIA_RETURN_IF_ERROR(SyncFiles(*file, /*datasync=*/true));
    if (file->dir_dirty.exchange(false)) {
      Status st = FsyncParent(group, id);
      if (!st.ok()) {
        file->dir_dirty.store(true);
        return st;
      }
    }
  }
  return internal::ObjectSize(Files(*file));
}

Result<size_t> ObjectStore::Read(uint64_t group, uint64_t id, uint64_t offset,
                                 std::span<uint8_t> buf, uint64_t* object_size, bool* missing,
                                 uint32_t* crc) {
  *object_size = 0;
  if (crc != nullptr) *crc = 0;  // the crc32c of no bytes
  if (missing != nullptr) *missing = false;
  STRIA_RETURN_IF_ERROR(CheckRange(offset, buf.size()));
  // The regions are locked before the size is read: a write elsewhere may grow the object
  // meanwhile, which leaves the chunks read here (zero-padded at the old end) unchanged.
  std::shared_lock lock(ObjectLock(group, id));
  auto range = range_locks_.Lock(ObjKey{group, id}, offset, std::max<size_t>(buf.size(), 1),
                                 /*exclusive=*/false);
  Result<FileRef> file = GetFile(group, id, /*create=*/false);
  if (!file.ok()) {
    if (file.status().code() != Code::kNoEnt) return file.status();
    if (missing != nullptr) *missing = true;
    return size_t{0};
  }
  const internal::ObjectFiles files = Files(**file);
  STRIA_ASSIGN_OR_RETURN(uint64_t size, internal::ObjectSize(files));
  *object_size = size;
  if (offset >= size) return size_t{0};
  const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - offset));
  const bool direct = options_.direct_reads &&
                      DirectEligible(offset, want, buf.data(), options_.direct_min_bytes);
  const int direct_fd = direct ? (*file)->direct_fd() : -1;
  Status st = internal::ReadVerified(files, offset, buf.first(want), size, crc, direct_fd);
  if (st.code() == Code::kInval && direct_fd >= 0) {
    // The device wants a larger alignment than 4 KiB: this read goes buffered.
    st = internal::ReadVerified(files, offset, buf.first(want), size, crc);
  }
  if (!st.ok()) return NameCorruption(st, group, id);
  return want;
}

Result<uint64_t> ObjectStore::Punch(uint64_t group, uint64_t id, uint64_t offset,
                                    uint64_t length) {
  STRIA_RETURN_IF_ERROR(CheckRange(offset, length));
  std::unique_lock lock(ObjectLock(group, id));
  Result<FileRef> file = GetFile(group, id, /*create=*/false);
  if (!file.ok()) {
    if (file.status().code() == Code::kNoEnt) return uint64_t{0};
    return file.status();
  }
  const internal::ObjectFiles files = Files(**file);
  STRIA_ASSIGN_OR_RETURN(uint64_t size, internal::ObjectSize(files));
  Status st = internal::PunchChecksummed(files, offset, length, size);
  if (!st.ok()) return NameCorruption(st, group, id);
  return size;
}

Result<uint64_t> ObjectStore::Truncate(uint64_t group, uint64_t id, uint64_t size) {
  STRIA_RETURN_IF_ERROR(CheckRange(size, 0));
  std::unique_lock lock(ObjectLock(group, id));
  Result<FileRef> file = GetFile(group, id, /*create=*/size > 0);
  if (!file.ok()) {
    if (size == 0 && file.status().code() == Code::kNoEnt) return uint64_t{0};
    return file.status();
  }
  Status st = internal::TruncateChecksummed(Files(**file), size);
  if (!st.ok()) return NameCorruption(st, group, id);
  return size;
}

Status ObjectStore::Destroy(uint64_t group, uint64_t id) {
  const std::string rel = RelPath(group, id);
  const std::string crc_rel = CrcPath(group, id);
  // Exclusive: a write still in flight lands before the file can go back to the pool.
  std::unique_lock lock(ObjectLock(group, id));
  // Readers of the object files on this host check the object's path again (object_format.h).
  destroys_->started.fetch_add(1);
  struct Finished {
    DestroyCounters* c;
    ~Finished() { c->finished.fetch_add(1); }
  } finished{destroys_};
  return cache_.Invalidate(ObjKey{group, id}, [&]() -> Status {
    // The sidecar first: a destroy cut short leaves an object without checksums (it reads
    // unverified), never an orphan sidecar that nothing would remove.
    if (meta_.object_format == ObjectFormat::kSidecar &&
        unlinkat(root_fd_, crc_rel.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoStatus("unlink checksum sidecar " + crc_rel, errno);
    }
    if (pool_) {
      Result<bool> kept = pool_->Recycle(rel);
      if (kept.ok() && *kept) return Status::Ok();
      if (!kept.ok()) return kept.status().code() == Code::kNoEnt ? Status::Ok() : kept.status();
    }
    if (unlinkat(root_fd_, rel.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoStatus("unlink object " + rel, errno);
    }
    return Status::Ok();
  });
}

Result<ObjectAttr> ObjectStore::Getattr(uint64_t group, uint64_t id) {
  const std::string rel = RelPath(group, id);
  struct stat st;
  ObjectAttr attr;
  if (fstatat(root_fd_, rel.c_str(), &st, 0) != 0) {
    if (errno == ENOENT) return attr;
    return ErrnoStatus("stat object " + rel, errno);
  }
  attr.exists = true;
  attr.size = ObjectSizeOfFile(meta_.object_format, static_cast<uint64_t>(st.st_size));
  attr.blocks = static_cast<uint64_t>(st.st_blocks);
  return attr;
}

Result<OstStatfs> ObjectStore::Statfs() {
  struct statvfs vfs;
  if (fstatvfs(root_fd_, &vfs) != 0) return ErrnoStatus("statvfs " + dir_, errno);
  OstStatfs out;
  out.bsize = vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize;
  out.blocks = vfs.f_blocks;
  out.bfree = vfs.f_bfree;
  out.bavail = vfs.f_bavail;
  out.files = vfs.f_files;
  out.ffree = vfs.f_ffree;
  return out;
}

Status ObjectStore::SyncObject(uint64_t group, uint64_t id) {
  Result<FileRef> file = GetFile(group, id, /*create=*/false);
  if (!file.ok()) {
    if (file.status().code() == Code::kNoEnt) return Status::Ok();
    return file.status();
  }
  STRIA_RETURN_IF_ERROR(SyncFiles(**file, /*datasync=*/false));
  if ((*file)->dir_dirty.exchange(false)) {
    Status st = FsyncParent(group, id);
    if (!st.ok()) {
      (*file)->dir_dirty.store(true);
      return st;
    }
  }
  return Status::Ok();
}

Status ObjectStore::SyncAll() {
  if (syncfs(root_fd_) != 0) return ErrnoStatus("syncfs " + dir_, errno);
  return Status::Ok();
}

namespace {

// The number a directory entry's name spells after `prefix`, in canonical decimal (no sign,
// no leading zero); nullopt for anything else ("7.crc", "007", ".", a temporary file).
std::optional<uint64_t> NumberedName(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name.remove_prefix(prefix.size());
  if (name.empty() || (name[0] == '0' && name.size() > 1)) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return v;
}

// Calls fn(number) for each entry of directory `rel` (under root_fd) named prefix+number, one
// entry at a time. A missing directory has no entries.
Status ForEachNumberedEntry(int root_fd, const std::string& rel, std::string_view prefix,
                            const std::function<Status(uint64_t)>& fn) {
  const int fd = openat(root_fd, rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? Status::Ok() : ErrnoStatus("open " + rel, errno);
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    Status st = ErrnoStatus("opendir " + rel, errno);
    close(fd);
    return st;
  }
  Status st;
  errno = 0;
  while (dirent* e = readdir(dir)) {
    if (std::optional<uint64_t> n = NumberedName(e->d_name, prefix)) {
      st = fn(*n);
      if (!st.ok()) break;
    }
    errno = 0;
  }
  if (st.ok() && errno != 0) st = ErrnoStatus("readdir " + rel, errno);
  closedir(dir);
  return st;
}

}  // namespace

Status ObjectStore::ForEachObject(const std::function<Status(uint64_t group, uint64_t id)>& fn) {
  return ForEachNumberedEntry(root_fd_, "O", "", [&](uint64_t group) {
    return ForEachNumberedEntry(root_fd_, fmt::format("O/{}", group), "d", [&](uint64_t sub) {
      if (sub >= kSubdirs) return Status::Ok();
      const std::string rel = fmt::format("O/{}/d{}", group, sub);
      return ForEachNumberedEntry(root_fd_, rel, "", [&](uint64_t id) {
        return id % kSubdirs == sub ? fn(group, id) : Status::Ok();  // else not an object
      });
    });
  });
}

Result<ObjectScrub> ObjectStore::ScrubObject(uint64_t group, uint64_t id, size_t step) {
  using internal::kCrcChunk;
  ObjectScrub out;
  const int fd = openat(root_fd_, RelPath(group, id).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return out;  // destroyed meanwhile
    return ErrnoStatus("open object " + RelPath(group, id), errno);
  }
  int crc_fd = -1;
  if (meta_.object_format == ObjectFormat::kSidecar) {
    crc_fd = openat(root_fd_, CrcPath(group, id).c_str(), O_RDONLY | O_CLOEXEC);
    if (crc_fd < 0 && errno != ENOENT) {
      Status st = ErrnoStatus("open checksum sidecar " + CrcPath(group, id), errno);
      close(fd);
      return st;
    }
  }
  const internal::OpenFile file(fd, crc_fd);  // closes both
  const internal::ObjectFiles files = Files(file);
  // Without a sidecar (a destroy under way) there is nothing to check against.
  const bool checked = meta_.object_format == ObjectFormat::kInline || crc_fd >= 0;
  step = std::max<size_t>(kCrcChunk, step / kCrcChunk * kCrcChunk);
  std::vector<uint8_t> buf(step);
  struct stat opened;
  if (fstat(fd, &opened) != 0) return ErrnoStatus("stat object " + RelPath(group, id), errno);
  for (uint64_t offset = 0;; offset += step) {
    std::shared_lock lock(ObjectLock(group, id));
    auto range = range_locks_.Lock(ObjKey{group, id}, offset, step, /*exclusive=*/false);
    // Destroyed meanwhile: its file may be in the pool already, or be another object's.
    struct stat now;
    if (fstatat(root_fd_, RelPath(group, id).c_str(), &now, 0) != 0 ||
        now.st_ino != opened.st_ino) {
      break;
    }
    STRIA_ASSIGN_OR_RETURN(uint64_t size, internal::ObjectSize(files));
    if (offset >= size) break;
    const size_t len = static_cast<size_t>(std::min<uint64_t>(step, size - offset));
    STRIA_ASSIGN_OR_RETURN(size_t n, internal::ReadBytes(files, offset, std::span(buf).first(len)));
    out.bytes += n;
    if (!checked) continue;
    const uint64_t chunks = (n + kCrcChunk - 1) / kCrcChunk;
    std::vector<uint32_t> stored(chunks);  // one 1 KiB block per 1 MiB step
    STRIA_RETURN_IF_ERROR(internal::LoadCrcs(files, offset / kCrcChunk, stored));
    const internal::ChunkCheck check = internal::CheckChunks(std::span(buf).first(n), stored);
    if (check.bad_chunks > 0 && out.bad_chunks == 0) {
      out.first_bad_offset = offset + check.first_bad * kCrcChunk;
    }
    out.bad_chunks += check.bad_chunks;
  }
  return out;
}

}  // namespace stria::oss
