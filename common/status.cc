#include "common/status.h"

#include <cerrno>
#include <cstring>

namespace stria {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kPerm: return "EPERM";
    case Code::kIntr: return "EINTR";
    case Code::kNoEnt: return "ENOENT";
    case Code::kIO: return "EIO";
    case Code::kBadF: return "EBADF";
    case Code::kAgain: return "EAGAIN";
    case Code::kNoMem: return "ENOMEM";
    case Code::kAccess: return "EACCES";
    case Code::kBusy: return "EBUSY";
    case Code::kExist: return "EEXIST";
    case Code::kXDev: return "EXDEV";
    case Code::kNoDev: return "ENODEV";
    case Code::kNotDir: return "ENOTDIR";
    case Code::kIsDir: return "EISDIR";
    case Code::kInval: return "EINVAL";
    case Code::kFBig: return "EFBIG";
    case Code::kNoSpc: return "ENOSPC";
    case Code::kMLink: return "EMLINK";
    case Code::kRange: return "ERANGE";
    case Code::kNameTooLong: return "ENAMETOOLONG";
    case Code::kNoSys: return "ENOSYS";
    case Code::kNotEmpty: return "ENOTEMPTY";
    case Code::kLoop: return "ELOOP";
    case Code::kNoData: return "ENODATA";
    case Code::kOverflow: return "EOVERFLOW";
    case Code::kNotSup: return "EOPNOTSUPP";
    case Code::kStale: return "ESTALE";
    case Code::kTooBig: return "E2BIG";
    case Code::kTimeout: return "Timeout";
    case Code::kDisconnected: return "Disconnected";
    case Code::kProtocol: return "ProtocolError";
    case Code::kChecksum: return "ChecksumMismatch";
    case Code::kBadOpcode: return "BadOpcode";
    case Code::kTooLarge: return "TooLarge";
    case Code::kShutdown: return "Shutdown";
    case Code::kCorrupt: return "Corrupt";
    case Code::kDbError: return "DbError";
    case Code::kNoOst: return "NoSuchOst";
    case Code::kWrongFs: return "WrongFilesystem";
    case Code::kNotReady: return "NotReady";
    case Code::kCapaExpired: return "CapaExpired";
    case Code::kInternal: return "Internal";
  }
  return "Unknown";
}

bool Status::retryable() const {
  switch (code_) {
    case Code::kTimeout:
    case Code::kDisconnected:
    case Code::kChecksum:
    case Code::kShutdown:
    case Code::kNotReady:
      return true;
    default:
      return false;
  }
}

int Status::ToErrno() const {
  const int v = static_cast<int>(code_);
  if (v == 0) return 0;
  if (v > 0 && v < 1000) return v;
  switch (code_) {
    case Code::kTimeout: return ETIMEDOUT;
    case Code::kTooLarge: return EFBIG;
    case Code::kNoOst: return ENODEV;
    case Code::kCapaExpired: return EACCES;
    default: return EIO;
  }
}

int Status::ToFsErrno() const { return code_ == Code::kTimeout ? EIO : ToErrno(); }

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(CodeName(code_));
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

Code CodeFromErrno(int err) {
  switch (err) {
    case EPERM: case ENOENT: case EIO: case EBADF: case EAGAIN: case ENOMEM: case EACCES:
    case EBUSY: case EEXIST: case EXDEV: case ENODEV: case ENOTDIR: case EISDIR: case EINVAL:
    case EFBIG:
    case ENOSPC: case EMLINK: case ERANGE: case ENAMETOOLONG: case ENOSYS: case ENOTEMPTY:
    case ELOOP: case ENODATA: case EOVERFLOW: case EOPNOTSUPP: case ESTALE: case E2BIG:
      return static_cast<Code>(err);
    case EDQUOT:
      return Code::kNoSpc;
    default:
      return Code::kIO;
  }
}

Status ErrnoStatus(std::string_view what, int err) {
  std::string msg(what);
  msg += ": ";
  msg += std::strerror(err);
  return Status(CodeFromErrno(err), std::move(msg));
}

}  // namespace stria
