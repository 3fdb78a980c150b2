// parallel_dirops.so: preloaded into the ceiling (libfuse's passthrough_ll example), so that
// it runs as libfuse 3.17 and later run it.
//
// libfuse before 3.17 (Debian 12 has 3.14) sets FUSE_CAP_PARALLEL_DIROPS in conn->want by
// default and never passes FUSE_PARALLEL_DIROPS on in its INIT reply (libfuse #861, fixed by
// commit c9905341): the kernel then takes a directory's mutex around each LOOKUP and
// READDIR, and 8 threads opening the files of one directory look them up one at a time.
// stria-fuse completes its own INIT reply (client/fuse/fuse_ring.h); this does the same for
// the ceiling, so that neither is measured with the other's handicap. It sets the flag in the
// first reply written to /dev/fuse, which is always INIT's (every kernel since 4.7 offers it).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/uio.h>

static atomic_int init_seen;

ssize_t writev(int fd, const struct iovec* iov, int count) {
  static ssize_t (*real_writev)(int, const struct iovec*, int);
  if (real_writev == NULL) {
    real_writev = (ssize_t(*)(int, const struct iovec*, int))dlsym(RTLD_NEXT, "writev");
  }
  if (count >= 2 && iov[0].iov_len == sizeof(struct fuse_out_header) &&
      iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t) &&
      atomic_exchange(&init_seen, 1) == 0) {
    struct fuse_init_out* out = iov[1].iov_base;
    if (out->major == FUSE_KERNEL_VERSION) out->flags |= FUSE_PARALLEL_DIROPS;
  }
  return real_writev(fd, iov, count);
}
