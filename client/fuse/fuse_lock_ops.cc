// StriaFs: advisory locks — fcntl (getlk, setlk) and flock — coordinated by the MDS, so
// processes on different mounts exclude each other (see fuse_ops.h).
//
// The kernel keeps no local copy of these locks (FUSE_CAP_POSIX_LOCKS / FLOCK_LOCKS), so the
// releases POSIX implies are ours: a close of any descriptor (FLUSH) drops the closing
// process's fcntl locks on the file, the last close of an open file description (RELEASE
// with flock_release) drops its flock. A process killed by a signal closes its descriptors
// too. A waiting F_SETLKW / blocking flock waits in lock_waiters_ (lock_waiters.h), which
// polls the MDS with backoff and answers EINTR when the kernel interrupts the request (a
// signal reached the waiter); no thread waits with it.
// A noflock mount answers every lock request ENOSYS, as Lustre's; a localflock mount never
// sees them (StriaFs::Init leaves them to the kernel).
#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "client/fuse/fuse_ops.h"
#include "common/log.h"

namespace stria::client::fuse {

namespace {

proto::LockType ToLockType(short type) {  // NOLINT(runtime/int): struct flock's type
  switch (type) {
    case F_RDLCK: return proto::LOCKTYPE_READ;
    case F_WRLCK: return proto::LOCKTYPE_WRITE;
    default: return proto::LOCKTYPE_UNLOCK;
  }
}

short FromLockType(proto::LockType type) {  // NOLINT(runtime/int)
  switch (type) {
    case proto::LOCKTYPE_READ: return F_RDLCK;
    case proto::LOCKTYPE_WRITE: return F_WRLCK;
    default: return F_UNLCK;
  }
}

// The kernel hands absolute ranges (l_whence SEEK_SET); l_len 0 means "to end of file".
Status FillRange(const struct flock& lock, proto::LockRequest* req) {
  if (lock.l_start < 0 || lock.l_len < 0) return Status(Code::kInval, "negative lock range");
  req->set_start(static_cast<uint64_t>(lock.l_start));
  req->set_end(lock.l_len == 0 ? kLockEof
                               : static_cast<uint64_t>(lock.l_start) +
                                     static_cast<uint64_t>(lock.l_len) - 1);
  return Status::Ok();
}

}  // namespace

std::optional<Status> StriaFs::LockOrWait(fuse_req_t req, const proto::LockRequest& lr,
                                          bool wait) {
  if (mds_session_ == nullptr) return Status(Code::kNoSys, "no MDS session for locks");
  proto::LockReply rep;
  Status st = mds_session_->Lock(lr, &rep);
  if (st.code() != Code::kAgain || !wait) return st;
  ClientSession* session = mds_session_;
  lock_waiters_.Add(LockWaiters::Waiter{
      .attempt =
          [session, lr] {
            proto::LockReply r;
            return session->Lock(lr, &r);
          },
      .interrupted = [req] { return fuse_req_interrupted(req) != 0; },
      .done = [req](const Status& s) { fuse_reply_err(req, s.ToFsErrno()); },
  });
  return std::nullopt;
}

namespace {

Status NoFlock() { return Status(Code::kNoSys, "locks are off on this mount (noflock)"); }

}  // namespace

Status StriaFs::DoGetlk(fuse_req_t req, uint64_t ino, const fuse_file_info* fi,
                        struct flock* lock) {
  if (options_.locks == LockMode::kNone) return NoFlock();
  if (mds_session_ == nullptr) return Status(Code::kNoSys, "no MDS session for locks");
  proto::LockRequest lr;
  lr.set_ino(ino);
  lr.set_owner(fi->lock_owner);
  lr.set_cmd(proto::LOCKCMD_TEST);
  lr.set_kind(proto::LOCKKIND_POSIX);
  lr.set_type(ToLockType(lock->l_type));
  lr.set_pid(static_cast<uint32_t>(lock->l_pid));
  STRIA_RETURN_IF_ERROR(FillRange(*lock, &lr));
  proto::LockReply rep;
  STRIA_RETURN_IF_ERROR(mds_session_->Lock(lr, &rep));
  lock->l_type = FromLockType(rep.type());
  if (rep.type() != proto::LOCKTYPE_UNLOCK) {
    lock->l_whence = SEEK_SET;
    lock->l_start = static_cast<off_t>(rep.start());
    lock->l_len = rep.end() == kLockEof ? 0 : static_cast<off_t>(rep.end() - rep.start() + 1);
    lock->l_pid = static_cast<pid_t>(rep.pid());
  }
  return Status::Ok();
}

std::optional<Status> StriaFs::DoSetlk(fuse_req_t req, uint64_t ino, const fuse_file_info* fi,
                                       const struct flock& lock, bool wait) {
  if (options_.locks == LockMode::kNone) return NoFlock();
  proto::LockRequest lr;
  lr.set_ino(ino);
  lr.set_owner(fi->lock_owner);
  lr.set_cmd(proto::LOCKCMD_SET);
  lr.set_kind(proto::LOCKKIND_POSIX);
  lr.set_type(ToLockType(lock.l_type));
  lr.set_pid(static_cast<uint32_t>(lock.l_pid));
  STRIA_RETURN_IF_ERROR(FillRange(lock, &lr));
  return LockOrWait(req, lr, wait);
}

std::optional<Status> StriaFs::DoFlock(fuse_req_t req, uint64_t ino, const fuse_file_info* fi,
                                       int op) {
  if (options_.locks == LockMode::kNone) return NoFlock();
  proto::LockRequest lr;
  lr.set_ino(ino);
  lr.set_owner(fi->lock_owner);
  lr.set_cmd(proto::LOCKCMD_SET);
  lr.set_kind(proto::LOCKKIND_FLOCK);
  switch (op & ~LOCK_NB) {
    case LOCK_SH: lr.set_type(proto::LOCKTYPE_READ); break;
    case LOCK_EX: lr.set_type(proto::LOCKTYPE_WRITE); break;
    case LOCK_UN: lr.set_type(proto::LOCKTYPE_UNLOCK); break;
    default: return Status(Code::kInval, "unknown flock operation");
  }
  lr.set_pid(static_cast<uint32_t>(fuse_req_ctx(req)->pid));
  lr.set_start(0);
  lr.set_end(kLockEof);
  // flock(2) says EWOULDBLOCK (== EAGAIN) for LOCK_NB on a held lock.
  return LockOrWait(req, lr, /*wait=*/(op & LOCK_NB) == 0);
}

void StriaFs::ReleaseLocks(uint64_t ino, uint64_t owner, LockKind kind) {
  if (mds_session_ == nullptr || !mds_session_->Holds(ino, owner, kind)) return;
  proto::LockRequest lr;
  lr.set_ino(ino);
  lr.set_owner(owner);
  lr.set_cmd(proto::LOCKCMD_RELEASE_OWNER);
  lr.set_kind(kind == LockKind::kFlock ? proto::LOCKKIND_FLOCK : proto::LOCKKIND_POSIX);
  proto::LockReply rep;
  if (Status st = mds_session_->Lock(lr, &rep); !st.ok()) {
    LOG_WARN("releasing the locks of owner {:x} on inode {}: {}", owner, ino, st.ToString());
  }
}

}  // namespace stria::client::fuse
