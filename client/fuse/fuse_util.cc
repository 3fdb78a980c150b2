#include "client/fuse/fuse_util.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace stria::client::fuse {

namespace {
constexpr uint32_t kBlockSize = 1u << 20;  // st_blksize: the size of one FUSE write
}

proto::Credentials CredentialsOf(fuse_req_t req, GroupsCache& groups) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  proto::Credentials cred;
  cred.set_uid(ctx->uid);
  cred.set_gid(ctx->gid);
  cred.set_pid(static_cast<uint32_t>(ctx->pid));
  // A request the kernel makes on its own (a release after the last close) has no process
  // (pid 0), hence no groups to read: /proc/0 does not exist.
  if (ctx->pid == 0) return cred;
  std::vector<gid_t> list;
  const bool known = groups.Get(ctx->pid, ctx->uid, ctx->gid, [req](std::vector<gid_t>* out) {
    gid_t small[32];
    int n = fuse_req_getgroups(req, 32, small);
    if (n < 0) return false;
    if (n > 32) {
      out->resize(static_cast<size_t>(n));
      n = fuse_req_getgroups(req, n, out->data());
      if (n < 0) return false;
      out->resize(std::min(out->size(), static_cast<size_t>(n)));
    } else {
      out->assign(small, small + n);
    }
    return true;
  }, &list);
  if (known) {
    for (gid_t g : list) cred.add_groups(g);
  }
  return cred;
}

struct stat AttrToStat(const proto::Attr& a, uint64_t size) {
  struct stat st;
  std::memset(&st, 0, sizeof(st));
  st.st_ino = a.ino();
  st.st_mode = a.mode();
  st.st_nlink = a.nlink();
  st.st_uid = a.uid();
  st.st_gid = a.gid();
  st.st_rdev = a.rdev();
  st.st_size = static_cast<off_t>(size);
  st.st_blksize = kBlockSize;
  st.st_blocks = static_cast<blkcnt_t>(a.blocks());
  st.st_atim.tv_sec = a.atime_ns() / 1'000'000'000;
  st.st_atim.tv_nsec = a.atime_ns() % 1'000'000'000;
  st.st_mtim.tv_sec = a.mtime_ns() / 1'000'000'000;
  st.st_mtim.tv_nsec = a.mtime_ns() % 1'000'000'000;
  st.st_ctim.tv_sec = a.ctime_ns() / 1'000'000'000;
  st.st_ctim.tv_nsec = a.ctime_ns() % 1'000'000'000;
  return st;
}

uint32_t ModeOfType(proto::FileType type) {
  switch (type) {
    case proto::FT_REG: return S_IFREG;
    case proto::FT_DIR: return S_IFDIR;
    case proto::FT_LNK: return S_IFLNK;
    case proto::FT_CHR: return S_IFCHR;
    case proto::FT_BLK: return S_IFBLK;
    case proto::FT_FIFO: return S_IFIFO;
    case proto::FT_SOCK: return S_IFSOCK;
    default: return 0;
  }
}

int64_t TimespecToNs(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return TimespecToNs(ts);
}

}  // namespace stria::client::fuse
