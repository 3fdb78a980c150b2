/* capi_test_prog DEVICE CASE [ARG]: one case of the C API test, against a running cluster.
 * Written in C and linked only with libstria.so, so it also proves that the public header
 * is C and that the library exports what it declares. Exit 0 when every check of the case
 * passed; each failed check prints "FAIL ..." to stderr. Run by capi_test.cc, which starts
 * the cluster and the mount and checks the other side through the mount. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stria/stria.h"

static int failures = 0;

#define CHECK(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              stria_errmsg());                                                         \
      ++failures;                                                                      \
    }                                                                                  \
  } while (0)

#define CHECK_EQ(a, b)                                                                  \
  do {                                                                                  \
    long long a_ = (long long)(a), b_ = (long long)(b);                                 \
    if (a_ != b_) {                                                                     \
      fprintf(stderr, "FAIL %s:%d: %s == %lld, expected %s == %lld (last error: %s)\n", \
              __FILE__, __LINE__, #a, a_, #b, b_, stria_errmsg());                      \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

/* The byte every test file holds at offset i (capi_test.cc uses the same). */
static uint8_t pattern(uint64_t i) { return (uint8_t)((i * 131u) ^ (i >> 12)); }

static void fill(uint8_t* buf, uint64_t offset, size_t n) {
  for (size_t i = 0; i < n; ++i) buf[i] = pattern(offset + i);
}

static int matches(const uint8_t* buf, uint64_t offset, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (buf[i] != pattern(offset + i)) {
      fprintf(stderr, "byte %llu is %u, expected %u\n", (unsigned long long)(offset + i),
              buf[i], pattern(offset + i));
      return 0;
    }
  }
  return 1;
}

static stria_fs_t* connect_or_die(const char* device, int timeout_ms) {
  stria_fs_t* fs = NULL;
  struct stria_connect_opts o;
  memset(&o, 0, sizeof(o));
  o.struct_size = sizeof(o);
  o.timeout_ms = timeout_ms;
  int rc = stria_connect(device, &o, &fs);
  if (rc != 0) {
    fprintf(stderr, "FAIL connect %s: %d %s\n", device, rc, stria_errmsg());
    exit(2);
  }
  return fs;
}

/* Writes `size` bytes of the pattern to `path` in uneven pieces. */
static void write_file(stria_fs_t* fs, const char* path, uint64_t size, const char* spec) {
  struct stria_layout l;
  memset(&l, 0, sizeof(l));
  l.stripe_offset = -1;
  l.spec = spec;
  stria_file_t* f = NULL;
  CHECK_EQ(stria_open(fs, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, spec ? &l : NULL, &f), 0);
  if (f == NULL) return;
  uint8_t* buf = malloc(size + 1);
  fill(buf, 0, size);
  uint64_t off = 0;
  size_t piece = 1000;
  while (off < size) {
    size_t n = size - off < piece ? (size_t)(size - off) : piece;
    CHECK_EQ(stria_pwrite(f, buf + off, n, off), n);
    off += n;
    piece = piece * 3 + 17; /* pieces cross stripe boundaries at odd offsets */
  }
  CHECK_EQ(stria_file_size(f), size);
  CHECK_EQ(stria_fsync(f), 0);
  CHECK_EQ(stria_close(f), 0);
  free(buf);
}

static void check_file(stria_fs_t* fs, const char* path, uint64_t size) {
  stria_file_t* f = NULL;
  CHECK_EQ(stria_open(fs, path, O_RDONLY, 0, NULL, &f), 0);
  if (f == NULL) return;
  uint8_t* buf = malloc(size + 4096);
  CHECK_EQ(stria_pread(f, buf, size + 4096, 0), size);
  CHECK(matches(buf, 0, size));
  CHECK_EQ(stria_close(f), 0);
  free(buf);
}

static void case_basic(stria_fs_t* fs) {
  struct stria_stat st;
  CHECK_EQ(stria_mkdir(fs, "/capi", 0755), 0);
  CHECK_EQ(stria_mkdir(fs, "/capi", 0755), -EEXIST);
  CHECK_EQ(stria_stat(fs, "/capi", &st), 0);
  CHECK(S_ISDIR(st.mode));

  /* Two stripes of 64 KiB; 1 MiB written in uneven pieces. */
  const uint64_t size = 1 << 20;
  write_file(fs, "/capi/a", size, "-c 2 -S 64K");
  CHECK_EQ(stria_stat(fs, "/capi/a", &st), 0);
  CHECK_EQ(st.size, size);
  CHECK(S_ISREG(st.mode));
  CHECK_EQ(st.mode & 07777, 0644);
  CHECK_EQ(st.uid, geteuid());

  struct stria_layout_info li;
  CHECK_EQ(stria_getstripe(fs, "/capi/a", &li), 0);
  CHECK_EQ(li.composite, 0);
  CHECK_EQ(li.component_count, 1);
  CHECK_EQ(li.comp[0].stripe_count, 2);
  CHECK_EQ(li.comp[0].stripe_size, 65536);
  CHECK_EQ(li.comp[0].object_count, 2);

  /* Partial reads at and across stripe boundaries, and at the end of the file. */
  stria_file_t* f = NULL;
  CHECK_EQ(stria_open(fs, "/capi/a", O_RDONLY, 0, NULL, &f), 0);
  uint8_t buf[300000];
  const uint64_t offs[] = {0, 65536 - 10, 65536, 131072 - 1, 3 * 65536 + 7, size - 100};
  for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); ++i) {
    size_t want = 200000;
    if (offs[i] + want > size) want = (size_t)(size - offs[i]);
    CHECK_EQ(stria_pread(f, buf, 200000, offs[i]), want);
    CHECK(matches(buf, offs[i], want));
  }
  CHECK_EQ(stria_pread(f, buf, 10, size), 0);
  CHECK_EQ(stria_pread(f, buf, 10, size + 12345), 0);
  /* Vectored: three buffers, one file range across a boundary. */
  struct iovec iov[3] = {{buf, 10}, {buf + 10, 65536}, {buf + 10 + 65536, 5}};
  CHECK_EQ(stria_preadv(f, iov, 3, 65530), 10 + 65536 + 5);
  CHECK(matches(buf, 65530, 10 + 65536 + 5));
  /* Vectored read past the end: stops at the end of the file. */
  struct iovec tail[2] = {{buf, 60}, {buf + 60, 1000}};
  CHECK_EQ(stria_preadv(f, tail, 2, size - 100), 100);
  CHECK(matches(buf, size - 100, 100));
  /* Writing through a read-only handle. */
  CHECK_EQ(stria_pwrite(f, buf, 10, 0), -EBADF);
  CHECK_EQ(stria_close(f), 0);

  /* Vectored write: five pieces of odd sizes, across stripe boundaries, in one call. */
  {
    stria_file_t* v = NULL;
    CHECK_EQ(stria_open(fs, "/capi/vec", O_RDWR | O_CREAT, 0644, NULL, &v), 0);
    static uint8_t vbuf[400000];
    fill(vbuf, 0, sizeof(vbuf));
    struct iovec pieces[5] = {{vbuf, 1}, {vbuf + 1, 70000}, {vbuf + 70001, 3},
                              {vbuf + 70004, 200000}, {vbuf + 270004, 129996}};
    CHECK_EQ(stria_pwritev(v, pieces, 5, 0), sizeof(vbuf));
    CHECK_EQ(stria_fsync(v), 0);
    CHECK_EQ(stria_close(v), 0);
    check_file(fs, "/capi/vec", sizeof(vbuf));
    CHECK_EQ(stria_unlink(fs, "/capi/vec"), 0);
  }
  /* O_APPEND and ftruncate. */
  CHECK_EQ(stria_open(fs, "/capi/a", O_WRONLY | O_APPEND, 0, NULL, &f), 0);
  fill(buf, size, 5000);
  CHECK_EQ(stria_pwrite(f, buf, 5000, 0), 5000); /* goes to the end, as Linux pwrite */
  CHECK_EQ(stria_fstat(f, &st), 0);
  CHECK_EQ(st.size, size + 5000);
  CHECK_EQ(stria_close(f), 0);
  check_file(fs, "/capi/a", size + 5000);
  CHECK_EQ(stria_truncate(fs, "/capi/a", 70000), 0);
  CHECK_EQ(stria_stat(fs, "/capi/a", &st), 0);
  CHECK_EQ(st.size, 70000);
  check_file(fs, "/capi/a", 70000);

  /* Listing, rename, unlink, rmdir. */
  CHECK_EQ(stria_symlink(fs, "a", "/capi/link"), 0);
  CHECK_EQ(stria_lstat(fs, "/capi/link", &st), 0);
  CHECK(S_ISLNK(st.mode));
  CHECK_EQ(stria_stat(fs, "/capi/link", &st), 0);
  CHECK_EQ(st.size, 70000);
  stria_dir_t* d = NULL;
  CHECK_EQ(stria_opendir(fs, "/capi", &d), 0);
  struct stria_dirent ent;
  int seen_a = 0, seen_link = 0, n = 0, rc;
  while ((rc = stria_readdir(d, &ent)) == 1) {
    ++n;
    if (strcmp(ent.name, "a") == 0 && ent.type == DT_REG) seen_a = 1;
    if (strcmp(ent.name, "link") == 0 && ent.type == DT_LNK) seen_link = 1;
  }
  CHECK_EQ(rc, 0);
  CHECK_EQ(n, 2);
  CHECK(seen_a && seen_link);
  stria_closedir(d);
  CHECK_EQ(stria_rmdir(fs, "/capi"), -ENOTEMPTY);
  CHECK_EQ(stria_rename(fs, "/capi/a", "/capi/b", 0), 0);
  CHECK_EQ(stria_stat(fs, "/capi/a", &st), -ENOENT);
  CHECK_EQ(stria_stat(fs, "/capi/b", &st), 0);
  CHECK_EQ(stria_unlink(fs, "/capi/b"), 0);
  CHECK_EQ(stria_unlink(fs, "/capi/link"), 0);
  CHECK_EQ(stria_rmdir(fs, "/capi"), 0);

  /* Bad input: clear errors, never a crash. */
  CHECK_EQ(stria_open(fs, "relative/path", O_RDONLY, 0, NULL, &f), -EINVAL);
  CHECK(strstr(stria_errmsg(), "absolute") != NULL);
  CHECK_EQ(stria_open(fs, "/missing", O_RDONLY, 0, NULL, &f), -ENOENT);
  CHECK_EQ(stria_open(fs, "/", O_RDONLY, 0, NULL, &f), -EINVAL);
  CHECK_EQ(stria_open(fs, NULL, O_RDONLY, 0, NULL, &f), -EINVAL);
  char longname[400];
  memset(longname, 'x', sizeof(longname));
  longname[0] = '/';
  longname[sizeof(longname) - 1] = 0;
  CHECK_EQ(stria_mkdir(fs, longname, 0755), -ENAMETOOLONG);
  struct stria_layout bad;
  memset(&bad, 0, sizeof(bad));
  bad.spec = "-c 2 -S 1000"; /* not a multiple of 64 KiB */
  CHECK_EQ(stria_setstripe(fs, "/bad", &bad), -EINVAL);
  bad.spec = "--frobnicate 3";
  CHECK_EQ(stria_open(fs, "/bad", O_RDWR | O_CREAT, 0644, &bad, &f), -EINVAL);
  CHECK(strstr(stria_errmsg(), "frobnicate") != NULL);
  CHECK_EQ(stria_stat(fs, "/bad", &st), -ENOENT);
  stria_queue_t* q = NULL;
  CHECK_EQ(stria_queue_create(fs, 0, &q), -EINVAL);
  stria_fs_t* other = NULL;
  CHECK_EQ(stria_connect("not a device", NULL, &other), -EINVAL);

  /* O_EXCL, and the default layout of a directory. */
  CHECK_EQ(stria_mkdir(fs, "/wide", 0755), 0);
  struct stria_layout wide;
  memset(&wide, 0, sizeof(wide));
  wide.stripe_count = -1;
  wide.stripe_size = 1 << 20;
  wide.stripe_offset = -1;
  CHECK_EQ(stria_setstripe(fs, "/wide", &wide), 0);
  CHECK_EQ(stria_getstripe(fs, "/wide", &li), 0);
  CHECK_EQ(li.comp[0].stripe_count, -1);
  CHECK_EQ(stria_open(fs, "/wide/f", O_RDWR | O_CREAT | O_EXCL, 0600, NULL, &f), 0);
  CHECK_EQ(stria_close(f), 0);
  CHECK_EQ(stria_open(fs, "/wide/f", O_RDWR | O_CREAT | O_EXCL, 0600, NULL, &f), -EEXIST);
  CHECK_EQ(stria_getstripe(fs, "/wide/f", &li), 0);
  CHECK_EQ(li.comp[0].stripe_count, 4); /* every OST of the test cluster */
  CHECK_EQ(stria_setstripe(fs, "/wide/f", &wide), -EEXIST);
}

static void case_queue(stria_fs_t* fs) {
  const uint64_t size = 8 << 20;
  write_file(fs, "/queued", size, "-c 4 -S 64K");
  stria_file_t* f = NULL;
  CHECK_EQ(stria_open(fs, "/queued", O_RDONLY, 0, NULL, &f), 0);
  if (f == NULL) return;
  enum { kDepth = 32, kReads = 400, kLen = 4096 };
  stria_queue_t* q = NULL;
  CHECK_EQ(stria_queue_create(fs, kDepth, &q), 0);
  static uint8_t bufs[kReads][kLen];
  uint64_t offsets[kReads];
  int done[kReads];
  memset(done, 0, sizeof(done));
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < kReads; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    offsets[i] = x % (size - kLen + 4096); /* some reads run past the end: short */
  }
  int submitted = 0, completed = 0, saw_full = 0, max_outstanding = 0;
  while (completed < kReads) {
    struct stria_io ios[64];
    int n = 0;
    for (; n < 64 && submitted + n < kReads; ++n) {
      ios[n].op = STRIA_OP_READ;
      ios[n].file = f;
      ios[n].offset = offsets[submitted + n];
      ios[n].buf = bufs[submitted + n];
      ios[n].length = kLen;
      ios[n].user_data = (uint64_t)(submitted + n);
    }
    if (n > 0) {
      int taken = stria_queue_submit(q, ios, (unsigned)n);
      if (taken == -EAGAIN) {
        saw_full = 1;
      } else {
        CHECK(taken > 0 && taken <= n);
        if (taken < n) saw_full = 1;
        if (taken > 0) submitted += taken;
      }
    }
    if (submitted - completed > max_outstanding) max_outstanding = submitted - completed;
    struct stria_completion cs[16];
    int got = stria_queue_complete(q, cs, 1, 16, 10000);
    CHECK(got > 0);
    if (got <= 0) break;
    for (int i = 0; i < got; ++i) {
      uint64_t id = cs[i].user_data;
      CHECK(id < (uint64_t)submitted && !done[id]);
      done[id] = 1;
      size_t want = offsets[id] + kLen <= size ? kLen : (size_t)(size - offsets[id]);
      if (offsets[id] >= size) want = 0;
      CHECK_EQ(cs[i].result, want);
      CHECK(matches(bufs[id], offsets[id], want));
    }
    completed += got;
  }
  CHECK(saw_full);                      /* the queue refused more than its depth */
  CHECK_EQ(max_outstanding, kDepth);    /* and kept that many in flight */
  /* A write and an fsync through the queue, then a read back. */
  stria_file_t* w = NULL;
  CHECK_EQ(stria_open(fs, "/queued", O_RDWR, 0, NULL, &w), 0);
  uint8_t wbuf[10000];
  fill(wbuf, size, sizeof(wbuf));
  struct stria_io io2[2] = {{STRIA_OP_WRITE, w, size, wbuf, sizeof(wbuf), 7},
                            {STRIA_OP_FSYNC, w, 0, NULL, 0, 8}};
  CHECK_EQ(stria_queue_submit(q, io2, 1), 1);
  struct stria_completion c;
  CHECK_EQ(stria_queue_complete(q, &c, 1, 1, 10000), 1);
  CHECK_EQ(c.user_data, 7);
  CHECK_EQ(c.result, sizeof(wbuf));
  CHECK_EQ(stria_queue_submit(q, io2 + 1, 1), 1);
  CHECK_EQ(stria_queue_complete(q, &c, 1, 1, 10000), 1);
  CHECK_EQ(c.user_data, 8);
  CHECK_EQ(c.result, 0);
  CHECK_EQ(stria_close(w), 0);
  /* A bad request is refused whole. */
  struct stria_io bad = {STRIA_OP_READ, NULL, 0, wbuf, 10, 9};
  CHECK_EQ(stria_queue_submit(q, &bad, 1), -EINVAL);
  stria_queue_destroy(q);
  CHECK_EQ(stria_close(f), 0);
  check_file(fs, "/queued", size + sizeof(wbuf));
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DEVICE CASE [ARG]\n", argv[0]);
    return 2;
  }
  const char* device = argv[1];
  const char* which = argv[2];
  const char* arg = argc > 3 ? argv[3] : "";
  CHECK_EQ(stria_api_version(), STRIA_API_VERSION);
  if (strcmp(which, "as-nobody") == 0) {
    /* The MDS checks the caller's credentials: drop root before connecting. */
    if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0) {
      perror("dropping privileges");
      return 2;
    }
  }
  const int server_gone = strcmp(which, "server-gone") == 0;
  stria_fs_t* fs = connect_or_die(device, server_gone ? 3000 : 20000);
  if (strcmp(which, "basic") == 0) {
    case_basic(fs);
  } else if (strcmp(which, "queue") == 0) {
    case_queue(fs);
  } else if (strcmp(which, "write") == 0) {
    /* ARG: "PATH SIZE SPEC...": written natively, checked through the mount. */
    char path[256];
    unsigned long long size = 0;
    int used = 0;
    if (sscanf(arg, "%255s %llu %n", path, &size, &used) < 2) return 2;
    write_file(fs, path, size, arg[used] ? arg + used : NULL);
  } else if (strcmp(which, "read") == 0) {
    /* ARG: "PATH SIZE": written through the mount, read natively. */
    char path[256];
    unsigned long long size = 0;
    if (sscanf(arg, "%255s %llu", path, &size) != 2) return 2;
    check_file(fs, path, size);
  } else if (strcmp(which, "as-nobody") == 0) {
    /* ARG: a root-owned 0600 file: opening it is refused; the root directory is not
     * writable for nobody either. */
    stria_file_t* f = NULL;
    CHECK_EQ(stria_open(fs, arg, O_RDONLY, 0, NULL, &f), -EACCES);
    CHECK_EQ(stria_mkdir(fs, "/nobody-dir", 0755), -EACCES);
  } else if (strcmp(which, "server-gone") == 0) {
    /* ARG: a marker path. Connected, we create ARG.ready and wait for ARG.go, which the
     * driver creates once it has killed every daemon: calls then fail with an errno,
     * they neither crash nor hang. */
    char ready[512], go[512];
    snprintf(ready, sizeof(ready), "%s.ready", arg);
    snprintf(go, sizeof(go), "%s.go", arg);
    stria_file_t* open_file = NULL;
    CHECK_EQ(stria_open(fs, "/gone", O_RDWR | O_CREAT, 0644, NULL, &open_file), 0);
    FILE* r = fopen(ready, "w");
    if (r != NULL) fclose(r);
    for (int i = 0; i < 600 && access(go, F_OK) != 0; ++i) usleep(100000);
    uint8_t b[100] = {0};
    ssize_t w = stria_pwrite(open_file, b, sizeof(b), 0);
    CHECK(w < 0);
    printf("server-gone write: %zd %s\n", w, stria_errmsg());
    stria_close(open_file); /* fails too; the handle is freed either way */
    struct stria_stat st;
    int rc = stria_stat(fs, "/", &st);
    CHECK(rc == -ETIMEDOUT || rc == -EIO || rc == -ECONNREFUSED || rc == -ENODEV);
    printf("server-gone: %d %s\n", rc, stria_errmsg());
  } else {
    fprintf(stderr, "unknown case %s\n", which);
    return 2;
  }
  stria_disconnect(fs);
  if (failures > 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("ok %s\n", which);
  return 0;
}
