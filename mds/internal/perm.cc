#include "mds/internal/perm.h"

#include <sys/stat.h>

#include <string>

namespace stria::mds {

bool InGroup(const proto::Credentials& cred, uint32_t gid) {
  if (cred.gid() == gid) return true;
  for (uint32_t g : cred.groups()) {
    if (g == gid) return true;
  }
  return false;
}

Status CheckAccess(const proto::Attr& attr, const proto::Credentials& cred, int mask) {
  const uint32_t mode = attr.mode();
  if (cred.uid() == 0) {
    if ((mask & kMayExec) && !S_ISDIR(mode) && (mode & 0111) == 0) {
      return Status(Code::kAccess, "no execute permission on inode " + std::to_string(attr.ino()));
    }
    return Status::Ok();
  }
  uint32_t bits;
  if (cred.uid() == attr.uid()) {
    bits = (mode >> 6) & 7;
  } else if (InGroup(cred, attr.gid())) {
    bits = (mode >> 3) & 7;
  } else {
    bits = mode & 7;
  }
  if ((bits & static_cast<uint32_t>(mask)) != static_cast<uint32_t>(mask)) {
    return Status(Code::kAccess, "permission denied on inode " + std::to_string(attr.ino()) +
                                     " for uid " + std::to_string(cred.uid()));
  }
  return Status::Ok();
}

Status CheckSticky(const proto::Attr& dir, const proto::Attr& child,
                   const proto::Credentials& cred) {
  if ((dir.mode() & S_ISVTX) == 0 || cred.uid() == 0) return Status::Ok();
  if (cred.uid() == dir.uid() || cred.uid() == child.uid()) return Status::Ok();
  return Status(Code::kPerm, "sticky directory: only the owner may remove or rename");
}

Status ValidateName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") {
    return Status(Code::kInval, "invalid name '" + std::string(name) + "'");
  }
  if (name.size() > kMaxNameLen) {
    return Status(Code::kNameTooLong, "name longer than 255 bytes");
  }
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return Status(Code::kInval, "name contains '/' or NUL");
  }
  return Status::Ok();
}

proto::FileType FileTypeOfMode(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return proto::FT_REG;
    case S_IFDIR: return proto::FT_DIR;
    case S_IFLNK: return proto::FT_LNK;
    case S_IFCHR: return proto::FT_CHR;
    case S_IFBLK: return proto::FT_BLK;
    case S_IFIFO: return proto::FT_FIFO;
    case S_IFSOCK: return proto::FT_SOCK;
    default: return proto::FT_UNKNOWN;
  }
}

}  // namespace stria::mds
