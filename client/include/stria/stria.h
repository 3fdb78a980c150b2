/* libstria: the native client API of the Stria filesystem.
 *
 * Reach a Stria filesystem without a mount: connect to its MGS (`NID[,NID...]:/fsname`,
 * as for mount -t stria), then open, read, write, list and stripe files. The bytes go
 * straight between your buffers and the OSTs (all stripes of a request in parallel), with
 * no FUSE copy, no context switch and no 1 MiB request limit. A file written here is the
 * same file through the mount and back: same names, same permissions (the MDS checks them
 * with the calling process's uid, gid and groups), same close-to-open consistency (what a
 * writer wrote is visible to an open that follows its close or fsync).
 *
 * Conventions, as liburing's:
 *   - functions return 0 (or a byte count) on success and a negative errno on failure,
 *     e.g. -ENOENT; stria_errmsg() has the detail of the calling thread's last failure;
 *   - paths are absolute inside the filesystem: "/data/shard-0001.tar" ("/" is the root);
 *   - every handle is safe to use from several threads at once; a stria_file_t may be
 *     read and written concurrently (pread/pwrite have no shared file position).
 *
 * Link with `pkg-config --cflags --libs stria`. Thread-safety: see above.
 */
#ifndef STRIA_STRIA_H
#define STRIA_STRIA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRIA_API_VERSION 1

typedef struct stria_fs stria_fs_t;       /* a connection to one filesystem */
typedef struct stria_file stria_file_t;   /* an open regular file */
typedef struct stria_dir stria_dir_t;     /* an open directory listing */
typedef struct stria_queue stria_queue_t; /* an asynchronous I/O queue */

/* The API version this library implements (STRIA_API_VERSION when built). */
int stria_api_version(void);

/* The detail of the calling thread's last failure ("" if none). */
const char* stria_errmsg(void);

/* ---- connecting ---- */

struct stria_connect_opts {
  uint32_t struct_size;  /* sizeof(struct stria_connect_opts): set it, for compatibility */
  int timeout_ms;        /* a request's retry deadline (default 60000): a server that stays
                            away longer fails the call with -EIO or -ETIMEDOUT */
  int io_threads;        /* parallel stripe requests (default 16) */
  int dentry_ttl_ms;     /* how long a directory lookup is reused (default 1000) */
  const char* key_file;  /* the cluster key file (docs/security.md); NULL: $STRIA_KEY_FILE,
                            else /etc/stria/stria.key if it exists, else none. A wrong or
                            missing key is -EACCES ("authentication failed: ..."). */
};

/* Connects to `spec` ("10.0.0.5@tcp:/training", "127.0.0.1@tcp:9880:/training",
 * "mds1@tcp,mds2@tcp:/scratch"); opts may be NULL. -EINVAL for a bad spec, -ENODEV or
 * -ETIMEDOUT when the MGS cannot be reached. */
int stria_connect(const char* spec, const struct stria_connect_opts* opts, stria_fs_t** out);
/* Closes every connection; files and queues of this fs must be closed first. */
void stria_disconnect(stria_fs_t* fs);

/* ---- namespace ---- */

struct stria_stat {
  uint64_t ino;
  uint32_t mode; /* with the S_IFMT bits */
  uint32_t nlink;
  uint32_t uid;
  uint32_t gid;
  uint64_t size;
  uint64_t blocks; /* 512-byte blocks */
  int64_t atime_ns;
  int64_t mtime_ns;
  int64_t ctime_ns;
};

int stria_stat(stria_fs_t* fs, const char* path, struct stria_stat* st);  /* follows symlinks */
int stria_lstat(stria_fs_t* fs, const char* path, struct stria_stat* st);
int stria_mkdir(stria_fs_t* fs, const char* path, mode_t mode);
int stria_rmdir(stria_fs_t* fs, const char* path);
int stria_unlink(stria_fs_t* fs, const char* path);
/* flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE. A rename over an existing file is atomic. */
int stria_rename(stria_fs_t* fs, const char* from, const char* to, unsigned int flags);
int stria_symlink(stria_fs_t* fs, const char* target, const char* path);
int stria_truncate(stria_fs_t* fs, const char* path, uint64_t size);
/* fsync(2) of a directory: every namespace change answered so far (creates, renames,
 * unlinks) is durable on the MDS when this returns. */
int stria_fsync_dir(stria_fs_t* fs, const char* path);

struct stria_dirent {
  uint64_t ino;
  uint32_t type; /* DT_REG, DT_DIR, DT_LNK, ... */
  char name[256];
};
int stria_opendir(stria_fs_t* fs, const char* path, stria_dir_t** out);
/* 1 with the next entry in *ent, 0 at the end. "." and ".." are not listed. */
int stria_readdir(stria_dir_t* dir, struct stria_dirent* ent);
void stria_closedir(stria_dir_t* dir);

/* ---- layouts ---- */

/* A new file's layout (stria_open with O_CREAT) or a directory's default (stria_setstripe).
 * Zero fields inherit the parent directory's default. `spec`, when set, is a list of
 * lfs setstripe options and overrides the fields: "-c 4 -S 4M", "-p flash",
 * "-E 64K -L mdt -E 64M -c 1 -E -1 -c -1" (a composite layout with Data-on-MDT). */
struct stria_layout {
  int32_t stripe_count;  /* 0: inherit; -1: every OST */
  uint64_t stripe_size;  /* 0: inherit; else a multiple of 64 KiB */
  int32_t stripe_offset; /* -1 (or 0 with stripe_count 0): the MDS chooses the first OST */
  const char* pool;      /* NULL or "": none */
  const char* spec;      /* NULL: use the fields above */
};

#define STRIA_MAX_COMPONENTS 16
#define STRIA_PATTERN_RAID0 1
#define STRIA_PATTERN_MDT 2
#define STRIA_COMP_INIT 0x10 /* lcme_flags: the component has objects */

struct stria_component {
  uint32_t id;     /* lcme_id (0 for a plain layout) */
  uint32_t flags;  /* lcme_flags */
  uint64_t start;  /* lcme_extent.e_start */
  uint64_t end;    /* lcme_extent.e_end (UINT64_MAX: end of file) */
  uint32_t pattern;
  int32_t stripe_count;
  uint64_t stripe_size;
  int32_t stripe_offset; /* the first object's OST index, or as requested for a default */
  uint32_t object_count; /* objects allocated (0 before instantiation) */
  char pool[64];
};

struct stria_layout_info {
  uint32_t generation;      /* lcm_layout_gen */
  uint32_t composite;       /* 1 for a composite (PFL) layout */
  uint32_t component_count; /* entries of comp[] filled (a plain layout: 1) */
  struct stria_component comp[STRIA_MAX_COMPONENTS];
};

/* A regular file's layout, or a directory's default (-ENODATA when it has none). */
int stria_getstripe(stria_fs_t* fs, const char* path, struct stria_layout_info* out);
/* A directory's default layout, or a new empty file with that layout (-EEXIST if the file
 * exists: a file's layout is fixed when it is created). */
int stria_setstripe(stria_fs_t* fs, const char* path, const struct stria_layout* layout);

/* ---- files ---- */

/* flags: O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_SYNC,
 * O_DSYNC, O_NOFOLLOW. mode: a new file's permissions (no umask applied). layout: a new
 * file's layout (may be NULL: the directory's default). */
int stria_open(stria_fs_t* fs, const char* path, int flags, mode_t mode,
               const struct stria_layout* layout, stria_file_t** out);
/* Bytes read (short only at the end of the file), or -errno. Holes read as zeros. */
ssize_t stria_pread(stria_file_t* f, void* buf, size_t count, uint64_t offset);
/* count bytes written, or -errno. With O_APPEND the bytes go to the end of the file. */
ssize_t stria_pwrite(stria_file_t* f, const void* buf, size_t count, uint64_t offset);
/* One contiguous file range in several buffers; the pieces go out at once (up to 16 at a
 * time), each striped in parallel. A read stops at the first short piece (end of file). */
ssize_t stria_preadv(stria_file_t* f, const struct iovec* iov, int iovcnt, uint64_t offset);
ssize_t stria_pwritev(stria_file_t* f, const struct iovec* iov, int iovcnt, uint64_t offset);
/* Data durable on every OST of the file, size and mtime durable on the MDS. */
int stria_fsync(stria_file_t* f);
int stria_ftruncate(stria_file_t* f, uint64_t size);
int stria_fstat(stria_file_t* f, struct stria_stat* st);
/* The size this handle knows: the MDS's at open, grown by its own writes. */
uint64_t stria_file_size(stria_file_t* f);
/* Reports the size written to the MDS and frees the handle, even on error. */
int stria_close(stria_file_t* f);

/* ---- asynchronous I/O ---- */

#define STRIA_OP_READ 0
#define STRIA_OP_WRITE 1
#define STRIA_OP_FSYNC 2

struct stria_io {
  uint32_t op;        /* STRIA_OP_* */
  stria_file_t* file;
  uint64_t offset;
  void* buf;          /* read into / write from; yours until the completion is reaped */
  size_t length;
  uint64_t user_data; /* returned in the completion */
};

struct stria_completion {
  uint64_t user_data;
  int64_t result; /* bytes transferred (fsync: 0), or -errno */
};

/* A queue that keeps up to `depth` requests outstanding (1..4096). */
int stria_queue_create(stria_fs_t* fs, unsigned depth, stria_queue_t** out);
/* Queues up to n requests: returns how many were taken (-EAGAIN if the queue is full). */
int stria_queue_submit(stria_queue_t* q, const struct stria_io* ios, unsigned n);
/* Waits for at least min_complete completions (or timeout_ms; < 0 waits without limit) and
 * stores up to max in out: returns how many. */
int stria_queue_complete(stria_queue_t* q, struct stria_completion* out, unsigned min_complete,
                         unsigned max, int timeout_ms);
/* Waits for what is in flight, then frees the queue. */
void stria_queue_destroy(stria_queue_t* q);

#ifdef __cplusplus
}
#endif

#endif /* STRIA_STRIA_H */
