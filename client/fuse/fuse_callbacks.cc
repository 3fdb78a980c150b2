// The fuse_lowlevel_ops table: thin callbacks that call one StriaFs::Do* each and reply
// exactly once. ReplyErr (fuse_reply_err(req, st.ToFsErrno())) is the only place an errno is
// made.
#include <sys/statvfs.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/fuse/fuse_ops.h"
#include "client/fuse/fuse_ring.h"
#include "common/log.h"
#include "lnet/shared_bulk.h"

namespace stria::client::fuse {

namespace {

StriaFs* Fs(fuse_req_t req) { return static_cast<StriaFs*>(fuse_req_userdata(req)); }
FileHandle* Fh(const fuse_file_info* fi) { return reinterpret_cast<FileHandle*>(fi->fh); }
DirHandle* Dh(const fuse_file_info* fi) { return reinterpret_cast<DirHandle*>(fi->fh); }

void ReplyErr(fuse_req_t req, const Status& st) {
  if (!st.ok() && st.code() != Code::kNoEnt) LOG_DEBUG("reply {}", st.ToString());
  fuse_reply_err(req, st.ToFsErrno());
}

// Replies with an entry; if the kernel did not take it (interrupted), drops the reference
// the entry carried so lookup counts stay exact.
void ReplyEntry(fuse_req_t req, const fuse_entry_param& e) {
  if (fuse_reply_entry(req, &e) != 0 && e.ino != 0) Fs(req)->inodes().Forget(e.ino, 1);
}

void Init(void* userdata, fuse_conn_info* conn) { static_cast<StriaFs*>(userdata)->Init(conn); }

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  fuse_entry_param e;
  Status st = Fs(req)->DoLookup(req, parent, name, &e, /*open_intent=*/true);
  if (!st.ok()) return ReplyErr(req, st);
  ReplyEntry(req, e);
}

void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Fs(req)->inodes().Forget(ino, nlookup);
  fuse_reply_none(req);
}

void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) Fs(req)->inodes().Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void Getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  struct stat st;
  double timeout = 0;
  Status s = Fs(req)->DoGetattr(req, ino, &st, &timeout);
  if (!s.ok()) return ReplyErr(req, s);
  fuse_reply_attr(req, &st, timeout);
}

void Setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
             fuse_file_info* fi) {
  struct stat out;
  Status s = Fs(req)->DoSetattr(req, ino, *attr, to_set, fi ? Fh(fi) : nullptr, &out);
  if (!s.ok()) return ReplyErr(req, s);
  fuse_reply_attr(req, &out, Fs(req)->options().attr_timeout_s);
}

void Readlink(fuse_req_t req, fuse_ino_t ino) {
  std::string target;
  Status s = Fs(req)->DoReadlink(req, ino, &target);
  if (!s.ok()) return ReplyErr(req, s);
  fuse_reply_readlink(req, target.c_str());
}

void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  fuse_entry_param e;
  Status s = Fs(req)->DoCreateNode(req, parent, name, mode, static_cast<uint32_t>(rdev),
                                   nullptr, &e);
  if (!s.ok()) return ReplyErr(req, s);
  ReplyEntry(req, e);
}

void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  fuse_entry_param e;
  Status s = Fs(req)->DoCreateNode(req, parent, name, S_IFDIR | (mode & 07777), 0, nullptr, &e);
  if (!s.ok()) return ReplyErr(req, s);
  ReplyEntry(req, e);
}

void Symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  fuse_entry_param e;
  Status s = Fs(req)->DoCreateNode(req, parent, name, S_IFLNK | 0777, 0, link, &e);
  if (!s.ok()) return ReplyErr(req, s);
  ReplyEntry(req, e);
}

void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char* name) {
  fuse_entry_param e;
  Status s = Fs(req)->DoLink(req, ino, new_parent, name, &e);
  if (!s.ok()) return ReplyErr(req, s);
  ReplyEntry(req, e);
}

void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ReplyErr(req, Fs(req)->DoUnlink(req, parent, name, /*is_dir=*/false));
}

void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ReplyErr(req, Fs(req)->DoUnlink(req, parent, name, /*is_dir=*/true));
}

void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
            const char* new_name, unsigned int flags) {
  ReplyErr(req, Fs(req)->DoRename(req, parent, name, new_parent, new_name, flags));
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Status s = Fs(req)->DoOpen(req, ino, fi);
  if (!s.ok()) return ReplyErr(req, s);
  if (fuse_reply_open(req, fi) != 0) Fs(req)->DoRelease(nullptr, Fh(fi)).IgnoreError();
}

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
            fuse_file_info* fi) {
  fuse_entry_param e;
  Status s = Fs(req)->DoCreate(req, parent, name, mode, fi, &e);
  if (!s.ok()) return ReplyErr(req, s);
  if (fuse_reply_create(req, &e, fi) != 0) {
    Fs(req)->DoRelease(nullptr, Fh(fi)).IgnoreError();
    Fs(req)->inodes().Forget(e.ino, 1);
  }
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  if (off < 0) return ReplyErr(req, Status(Code::kInval, "negative offset"));
  // Over io_uring, straight into the ring entry that carries the reply.
  // Otherwise into a block for this request alone, from the shared bulk arena where there
  // is one, so that a local OSS reads straight into it (lnet/shared_bulk.h). Freed blocks
  // are handed out again last-in first-out: a mount's reads cycle through as many blocks as
  // it has reads at once, whose pages stay warm, not through one per libfuse thread.
  std::span<uint8_t> buf = FuseRing::ReplySpace(size);
  lnet::BulkBlock own;
  if (buf.empty()) {
    own = lnet::BulkBlock(std::max<size_t>(size, 1));
    buf = {own.data(), size};
  }
  auto n = Fs(req)->DoRead(Fh(fi), static_cast<uint64_t>(off), buf);
  if (!n.ok()) return ReplyErr(req, n.status());
  fuse_reply_buf(req, reinterpret_cast<const char*>(buf.data()), *n);
}

// Every WRITE comes here (libfuse prefers write_buf to write). Its data is either in
// libfuse's buffer, which libfuse read the whole request into, or, when the request was
// spliced (FsOptions::splice_writes), still in the pipe: it is then read once into a bulk
// buffer that the write-behind sends as it is.
void WriteBuf(fuse_req_t req, fuse_ino_t ino, fuse_bufvec* in, off_t off, fuse_file_info* fi) {
  if (off < 0) return ReplyErr(req, Status(Code::kInval, "negative offset"));
  const size_t size = fuse_buf_size(in);
  const fuse_buf& first = in->buf[in->idx];
  Status s;
  if (in->count - in->idx == 1 && !(first.flags & FUSE_BUF_IS_FD)) {
    s = Fs(req)->DoWrite(Fh(fi), static_cast<uint64_t>(off),
                         {static_cast<const uint8_t*>(first.mem) + in->off, size});
  } else {
    auto data = std::make_shared<lnet::Buffer>(size);
    size_t got = 0;
    while (got < size) {
      fuse_bufvec dst = FUSE_BUFVEC_INIT(size - got);
      dst.buf[0].mem = data->data() + got;
      const ssize_t n = fuse_buf_copy(&dst, in, static_cast<fuse_buf_copy_flags>(0));
      if (n < 0) {
        return ReplyErr(req, Status(Code::kIO, std::string("reading a spliced write: ") +
                                                   std::strerror(static_cast<int>(-n))));
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != size) {
      return ReplyErr(req, Status(Code::kIO, "short spliced write: " + std::to_string(got) +
                                                 " of " + std::to_string(size) + " bytes"));
    }
    const std::span<const uint8_t> bytes = std::as_const(*data).span();
    s = Fs(req)->DoWrite(Fh(fi), static_cast<uint64_t>(off), bytes, std::move(data));
  }
  if (!s.ok()) return ReplyErr(req, s);
  fuse_reply_write(req, size);
}

void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Status s = Fs(req)->DoFlush(req, Fh(fi));
  // close(2) of any descriptor drops the process's fcntl locks on the file (POSIX).
  Fs(req)->ReleaseLocks(ino, fi->lock_owner, LockKind::kPosix);
  ReplyErr(req, s);
}

void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (fi->flock_release) Fs(req)->ReleaseLocks(ino, fi->lock_owner, LockKind::kFlock);
  // The kernel ignores release errors; DoRelease logs them.
  Fs(req)->DoRelease(req, Fh(fi)).IgnoreError();
  fuse_reply_err(req, 0);
}

void Fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  ReplyErr(req, Fs(req)->DoFsync(req, Fh(fi), datasync != 0));
}

void Getlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock) {
  Status s = Fs(req)->DoGetlk(req, ino, fi, lock);
  if (!s.ok()) return ReplyErr(req, s);
  fuse_reply_lock(req, lock);
}

void Setlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock, int sleep) {
  if (auto st = Fs(req)->DoSetlk(req, ino, fi, *lock, sleep != 0)) ReplyErr(req, *st);
}

void Flock(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, int op) {
  if (auto st = Fs(req)->DoFlock(req, ino, fi, op)) ReplyErr(req, *st);
}

void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
               fuse_file_info* fi) {
  if (offset < 0 || length <= 0) return ReplyErr(req, Status(Code::kInval, "bad range"));
  ReplyErr(req, Fs(req)->DoFallocate(req, Fh(fi), mode, static_cast<uint64_t>(offset),
                                     static_cast<uint64_t>(length)));
}

void Opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Status s = Fs(req)->DoOpendir(req, ino, fi);
  if (!s.ok()) return ReplyErr(req, s);
  if (fuse_reply_open(req, fi) != 0) delete Dh(fi);
}

void ReaddirCommon(fuse_req_t req, size_t size, off_t off, fuse_file_info* fi, bool plus) {
  std::string out;
  Status s = Fs(req)->DoReaddir(req, Dh(fi), size, off, plus, &out);
  if (!s.ok()) return ReplyErr(req, s);
  fuse_reply_buf(req, out.data(), out.size());
}

void Readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReaddirCommon(req, size, off, fi, /*plus=*/false);
}

void Readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReaddirCommon(req, size, off, fi, /*plus=*/true);
}

void Releasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  delete Dh(fi);
  fuse_reply_err(req, 0);
}

void Fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  ReplyErr(req, Fs(req)->DoFsyncdir(req, ino));
}

void Statfs(fuse_req_t req, fuse_ino_t ino) {
  struct statvfs st;
  Status s = Fs(req)->DoStatfs(req, &st);
  if (!s.ok()) return ReplyErr(req, s);
  fuse_reply_statfs(req, &st);
}

void Setxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int flags) {
  ReplyErr(req, Fs(req)->DoSetxattr(req, ino, name, value, size, flags));
}

void Getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  std::string value;
  size_t full = 0;
  Status s = Fs(req)->DoGetxattr(req, ino, name, size, &value, &full);
  if (!s.ok()) return ReplyErr(req, s);
  if (size == 0) {
    fuse_reply_xattr(req, full);
  } else {
    fuse_reply_buf(req, value.data(), value.size());
  }
}

void Listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  std::string names;
  size_t full = 0;
  Status s = Fs(req)->DoListxattr(req, ino, size, &names, &full);
  if (!s.ok()) return ReplyErr(req, s);
  if (size == 0) {
    fuse_reply_xattr(req, full);
  } else {
    fuse_reply_buf(req, names.data(), names.size());
  }
}

void Removexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  ReplyErr(req, Fs(req)->DoRemovexattr(req, ino, name));
}

void Access(fuse_req_t req, fuse_ino_t ino, int mask) {
  ReplyErr(req, Fs(req)->DoAccess(req, ino, mask));
}

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = Init;
  ops.lookup = Lookup;
  ops.forget = Forget;
  ops.forget_multi = ForgetMulti;
  ops.getattr = Getattr;
  ops.setattr = Setattr;
  ops.readlink = Readlink;
  ops.mknod = Mknod;
  ops.mkdir = Mkdir;
  ops.symlink = Symlink;
  ops.link = Link;
  ops.unlink = Unlink;
  ops.rmdir = Rmdir;
  ops.rename = Rename;
  ops.open = Open;
  ops.create = Create;
  ops.read = Read;
  ops.write_buf = WriteBuf;
  ops.flush = Flush;
  ops.release = Release;
  ops.fsync = Fsync;
  ops.fallocate = Fallocate;
  ops.opendir = Opendir;
  ops.readdir = Readdir;
  ops.readdirplus = Readdirplus;
  ops.releasedir = Releasedir;
  ops.fsyncdir = Fsyncdir;
  ops.statfs = Statfs;
  ops.setxattr = Setxattr;
  ops.getxattr = Getxattr;
  ops.listxattr = Listxattr;
  ops.removexattr = Removexattr;
  ops.access = Access;
  ops.getlk = Getlk;
  ops.setlk = Setlk;
  ops.flock = Flock;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& StriaFs::Ops() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace stria::client::fuse
