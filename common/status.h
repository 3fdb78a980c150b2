// Status and Result<T>: how every Stria function reports failure.
//
// A Status is a Code from the single table below plus a human-readable message. Codes are
// grouped in numeric ranges per subsystem and never renumbered: they travel on the wire in
// every reply frame. Whether an error is worth retrying is a property of the code
// (Status::retryable()), so retry and failover logic never parse messages. The one place
// a Status becomes an errno is ToErrno() / ToFsErrno() (common/status.cc).
//
// Thread-safety: values; safe to copy between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace stria {

enum class Code : int32_t {
  kOk = 0,

  // 1-999: POSIX-shaped filesystem errors; the value is the Linux errno it becomes.
  kPerm = 1,             // EPERM
  kNoEnt = 2,            // ENOENT
  kIntr = 4,             // EINTR
  kIO = 5,               // EIO
  kBadF = 9,             // EBADF
  kAgain = 11,           // EAGAIN
  kNoMem = 12,           // ENOMEM
  kAccess = 13,          // EACCES
  kBusy = 16,            // EBUSY
  kExist = 17,           // EEXIST
  kXDev = 18,            // EXDEV
  kNoDev = 19,           // ENODEV (e.g. an o2ib NID on a host without an RDMA device)
  kNotDir = 20,          // ENOTDIR
  kIsDir = 21,           // EISDIR
  kInval = 22,           // EINVAL
  kFBig = 27,            // EFBIG
  kNoSpc = 28,           // ENOSPC
  kMLink = 31,           // EMLINK
  kRange = 34,           // ERANGE
  kNameTooLong = 36,     // ENAMETOOLONG
  kNoSys = 38,           // ENOSYS
  kNotEmpty = 39,        // ENOTEMPTY
  kLoop = 40,            // ELOOP
  kNoData = 61,          // ENODATA
  kOverflow = 75,        // EOVERFLOW
  kNotSup = 95,          // EOPNOTSUPP
  kStale = 116,          // ESTALE
  kTooBig = 7,           // E2BIG

  // 1000-1999: transport (lnet).
  kTimeout = 1000,       // no reply in time; retryable
  kDisconnected = 1001,  // connection lost or refused; retryable
  kProtocol = 1002,      // malformed frame or message
  kChecksum = 1003,      // bulk crc32c mismatch on the wire; retryable
  kBadOpcode = 1004,     // opcode not served by this peer
  kTooLarge = 1005,      // frame exceeds the peer's limits
  kShutdown = 1006,      // the peer is stopping; retryable

  // 2000-2999: storage (oss, mds on-disk state).
  kCorrupt = 2000,       // stored data failed verification
  kDbError = 2001,       // RocksDB returned an error

  // 3000-3999: cluster state.
  kNoOst = 3000,         // OST index unknown to the MGS
  kWrongFs = 3001,       // peer belongs to another filesystem
  kNotReady = 3002,      // service starting or recovering; retryable
  kCapaExpired = 3003,   // an OSS capability's lifetime is over: the client renews it at the
                         // MDS (OP_MDS_CAPA_RENEW) and resends; EACCES if it ever surfaces

  kInternal = 9999,
};

// The symbolic name of a code ("ENOENT", "Timeout", ...), for logs and messages.
std::string_view CodeName(Code code);

// Whether `code` is a POSIX errno (1-999): the peer's answer about the request itself, not
// the transport's failure to carry it (nor storage or cluster state).
constexpr bool IsErrno(Code code) {
  const auto c = static_cast<int32_t>(code);
  return c > 0 && c < 1000;
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // True where the same request may succeed if sent again (transport trouble, a restarting
  // peer). POSIX errors are never retryable: the answer would be the same.
  bool retryable() const;

  // The errno for this status (positive), as the tools report it. EIO for non-POSIX codes,
  // ETIMEDOUT for a peer that never answered.
  int ToErrno() const;

  // The errno a filesystem system call returns (what the FUSE client replies): ToErrno(),
  // except that a server still silent past the mount's timeout is EIO, the errno read(2),
  // write(2) and fsync(2) document (as an NFS soft mount gives), never ETIMEDOUT.
  int ToFsErrno() const;

  // "ENOENT: no such entry 'foo'".
  std::string ToString() const;

  // Marks a status as intentionally ignored.
  void IgnoreError() const {}

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Maps a Linux errno to the matching POSIX-range code (EIO for ones outside the table).
Code CodeFromErrno(int err);

// A Status built from errno with a context message: ErrnoStatus("open " + path, errno).
Status ErrnoStatus(std::string_view what, int err);

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace stria

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define STRIA_RETURN_IF_ERROR(expr)              \
  do {                                           \
    ::stria::Status _st = (expr);                \
    if (!_st.ok()) return _st;                   \
  } while (0)

#define STRIA_CONCAT_INNER(a, b) a##b
#define STRIA_CONCAT(a, b) STRIA_CONCAT_INNER(a, b)
// STRIA_ASSIGN_OR_RETURN(auto x, F()): x = F().value() or return its Status.
#define STRIA_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto STRIA_CONCAT(_res_, __LINE__) = (expr);                             \
  if (!STRIA_CONCAT(_res_, __LINE__).ok())                                 \
    return STRIA_CONCAT(_res_, __LINE__).status();                         \
  lhs = std::move(STRIA_CONCAT(_res_, __LINE__)).value()
