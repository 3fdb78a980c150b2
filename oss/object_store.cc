#include "oss/object_store.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "common/layout.h"
#include "common/log.h"
#include "oss/uring_io.h"

namespace stria::oss {

using internal::FileRef;
using internal::ObjKey;

namespace {

constexpr uint64_t kSubdirs = 32;

// EINVAL unless [offset, offset+length) lies inside [0, kMaxFileSize].
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

}  // namespace

Result<std::unique_ptr<ObjectStore>> ObjectStore::Open(const std::string& dir, uint32_t index,
                                                       std::string_view fsname,
                                                       const ObjectStoreOptions& options) {
  STRIA_ASSIGN_OR_RETURN(OstMeta meta, ReadOstMeta(dir));
  STRIA_RETURN_IF_ERROR(CheckOstMeta(dir, meta, index, fsname));
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open " + dir, errno);
  return std::unique_ptr<ObjectStore>(new ObjectStore(dir, std::move(meta), fd, options));
}

ObjectStore::ObjectStore(std::string dir, OstMeta meta, int root_fd,
                         const ObjectStoreOptions& options)
    : dir_(std::move(dir)),
      meta_(std::move(meta)),
      root_fd_(root_fd),
      cache_(options.max_open_files) {}

ObjectStore::~ObjectStore() { close(root_fd_); }

std::string ObjectStore::RelPath(uint64_t group, uint64_t id) {
  return fmt::format("O/{}/d{}/{}", group, id % kSubdirs, id);
}

Status ObjectStore::MakeParents(uint64_t group, uint64_t id) {
  STRIA_RETURN_IF_ERROR(MkdirAt(root_fd_, "O"));
  STRIA_RETURN_IF_ERROR(MkdirAt(root_fd_, fmt::format("O/{}", group)));
  return MkdirAt(root_fd_, fmt::format("O/{}/d{}", group, id % kSubdirs));
}

Result<FileRef> ObjectStore::OpenFile(uint64_t group, uint64_t id, bool create) {
  const std::string rel = RelPath(group, id);
  int fd = openat(root_fd_, rel.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) return std::make_shared<internal::OpenFile>(fd);
  if (errno != ENOENT) return ErrnoStatus("open object " + rel, errno);
  if (!create) return Status(Code::kNoEnt, "object " + rel + " does not exist");
  for (int attempt = 0; attempt < 3; ++attempt) {
    fd = openat(root_fd_, rel.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      auto file = std::make_shared<internal::OpenFile>(fd);
      file->dir_dirty.store(true, std::memory_order_relaxed);
      return file;
    }
    if (errno == EEXIST) {  // created by a racing opener
      fd = openat(root_fd_, rel.c_str(), O_RDWR | O_CLOEXEC);
      if (fd >= 0) return std::make_shared<internal::OpenFile>(fd);
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

namespace {

Result<uint64_t> FileSize(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoStatus("fstat object", errno);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

Result<uint64_t> ObjectStore::Write(uint64_t group, uint64_t id, uint64_t offset,
                                    std::span<const uint8_t> data, bool sync) {
  STRIA_RETURN_IF_ERROR(CheckRange(offset, data.size()));
  if (data.empty()) {  // nothing to store: no object is created for it
    STRIA_ASSIGN_OR_RETURN(ObjectAttr attr, Getattr(group, id));
    return attr.size;
  }
  STRIA_ASSIGN_OR_RETURN(FileRef file, GetFile(group, id, /*create=*/true));
  // Checksums on disk would be computed and stored here (see the header).
  STRIA_RETURN_IF_ERROR(UringIo::WriteAt(file->fd(), data, offset));
  if (sync) {
    STRIA_RETURN_IF_ERROR(UringIo::Sync(file->fd(), /*datasync=*/true));
    if (file->dir_dirty.exchange(false)) {
      Status st = FsyncParent(group, id);
      if (!st.ok()) {
        file->dir_dirty.store(true);
        return st;
      }
    }
  }
  return FileSize(file->fd());
}

Result<size_t> ObjectStore::Read(uint64_t group, uint64_t id, uint64_t offset,
                                 std::span<uint8_t> buf, uint64_t* object_size) {
  *object_size = 0;
  STRIA_RETURN_IF_ERROR(CheckRange(offset, buf.size()));
  Result<FileRef> file = GetFile(group, id, /*create=*/false);
  if (!file.ok()) {
    if (file.status().code() == Code::kNoEnt) return size_t{0};
    return file.status();
  }
  STRIA_ASSIGN_OR_RETURN(uint64_t size, FileSize((*file)->fd()));
  *object_size = size;
  if (offset >= size) return size_t{0};
  const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - offset));
  // Checksums on disk would be verified here (see the header).
  return UringIo::ReadAt((*file)->fd(), buf.first(want), offset);
}

Result<uint64_t> ObjectStore::Punch(uint64_t group, uint64_t id, uint64_t offset,
                                    uint64_t length) {
  STRIA_RETURN_IF_ERROR(CheckRange(offset, length));
  Result<FileRef> file = GetFile(group, id, /*create=*/false);
  if (!file.ok()) {
    if (file.status().code() == Code::kNoEnt) return uint64_t{0};
    return file.status();
  }
  if (length > 0) {
    STRIA_RETURN_IF_ERROR(UringIo::Fallocate((*file)->fd(),
                                             FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                             offset, length));
  }
  return FileSize((*file)->fd());
}

Result<uint64_t> ObjectStore::Truncate(uint64_t group, uint64_t id, uint64_t size) {
  STRIA_RETURN_IF_ERROR(CheckRange(size, 0));
  Result<FileRef> file = GetFile(group, id, /*create=*/size > 0);
  if (!file.ok()) {
    if (size == 0 && file.status().code() == Code::kNoEnt) return uint64_t{0};
    return file.status();
  }
  int rc;
  do {
    rc = ftruncate((*file)->fd(), static_cast<off_t>(size));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return ErrnoStatus("ftruncate " + RelPath(group, id), errno);
  return size;
}

Status ObjectStore::Destroy(uint64_t group, uint64_t id) {
  const std::string rel = RelPath(group, id);
  return cache_.Invalidate(ObjKey{group, id}, [&]() -> Status {
    if (unlinkat(root_fd_, rel.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoStatus("unlink object " + rel, errno);
    }
    // A checksum sidecar would be unlinked here too.
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
  attr.size = static_cast<uint64_t>(st.st_size);
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
  STRIA_RETURN_IF_ERROR(UringIo::Sync((*file)->fd(), /*datasync=*/false));
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

}  // namespace stria::oss
