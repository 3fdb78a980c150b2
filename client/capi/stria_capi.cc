// The C API (client/include/stria/stria.h) over NativeFs, NativeFile and IoQueue: argument
// checks, the Status -> -errno mapping and the thread's last error message live here; every
// semantic rule lives in libstria's C++ classes.
#include "stria/stria.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstddef>
#include <climits>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "client/io_queue.h"
#include "client/native.h"
#include "common/log.h"
#include "proto/layout_components.h"
#include "tools/stripe_args.h"

using stria::Code;
using stria::Result;
using stria::Status;
using stria::client::NativeFile;
using stria::client::NativeFs;

struct stria_fs {
  std::unique_ptr<NativeFs> fs;
};
struct stria_file {
  std::unique_ptr<NativeFile> file;
};
struct stria_dir {
  std::vector<stria::proto::DirEntry> entries;
  size_t next = 0;
};
struct stria_queue {
  std::unique_ptr<stria::client::IoQueue> q;
};

namespace {

thread_local std::string t_errmsg;

int Fail(const Status& st) {
  t_errmsg = st.ToString();
  const int e = st.ToErrno();
  return -(e > 0 ? e : EIO);
}

int FailErrno(int err, std::string msg) {
  t_errmsg = std::move(msg);
  return -err;
}

// The library logs only warnings and errors, to stderr, unless STRIA_LOG says otherwise: a
// host program's stdout is its own.
void InitLibraryLogging() {
  static std::once_flag once;
  std::call_once(once, [] { stria::InitLogging("libstria", "warn"); });
}

int Ok() {
  t_errmsg.clear();
  return 0;
}

// Runs `fn` and turns an exception (allocation failure, a bug) into -EIO instead of
// letting it cross the C boundary.
template <typename Fn>
auto Guard(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return FailErrno(ENOMEM, "out of memory");
  } catch (const std::exception& e) {
    return FailErrno(EIO, std::string("internal error: ") + e.what());
  }
}

void FillStat(const stria::proto::Attr& a, struct stria_stat* st) {
  std::memset(st, 0, sizeof(*st));
  st->ino = a.ino();
  st->mode = a.mode();
  st->nlink = a.nlink();
  st->uid = a.uid();
  st->gid = a.gid();
  st->size = a.size();
  st->blocks = a.blocks();
  st->atime_ns = a.atime_ns();
  st->mtime_ns = a.mtime_ns();
  st->ctime_ns = a.ctime_ns();
}

uint32_t DirentType(stria::proto::FileType t) {
  switch (t) {
    case stria::proto::FT_REG: return DT_REG;
    case stria::proto::FT_DIR: return DT_DIR;
    case stria::proto::FT_LNK: return DT_LNK;
    case stria::proto::FT_CHR: return DT_CHR;
    case stria::proto::FT_BLK: return DT_BLK;
    case stria::proto::FT_FIFO: return DT_FIFO;
    case stria::proto::FT_SOCK: return DT_SOCK;
    default: return DT_UNKNOWN;
  }
}

// lfs setstripe's options in one string ("-E 64K -L mdt -E -1 -c 4") -> a layout.
Result<stria::proto::Layout> ParseSpec(const char* spec) {
  struct Opt {
    const char* name;
    int letter;
  };
  static constexpr Opt kOpts[] = {
      {"-c", 'c'}, {"--stripe-count", 'c'}, {"-S", 'S'}, {"--stripe-size", 'S'},
      {"-i", 'i'}, {"--stripe-index", 'i'}, {"-o", 'o'}, {"--ost", 'o'},
      {"-p", 'p'}, {"--pool", 'p'},         {"-E", 'E'}, {"--component-end", 'E'},
      {"-L", 'L'}, {"--layout", 'L'},
  };
  std::istringstream in(spec);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  stria::tools::LayoutOptions options;
  for (size_t i = 0; i < words.size(); i += 2) {
    int letter = 0;
    for (const Opt& o : kOpts) {
      if (words[i] == o.name) letter = o.letter;
    }
    if (letter == 0) return Status(Code::kInval, "unknown layout option '" + words[i] + "'");
    if (i + 1 >= words.size()) {
      return Status(Code::kInval, "layout option '" + words[i] + "' needs a value");
    }
    STRIA_RETURN_IF_ERROR(options.Apply(letter, words[i + 1].c_str()));
  }
  if (!options.given()) return Status(Code::kInval, "empty layout spec");
  STRIA_RETURN_IF_ERROR(options.Finish());
  return options.layout();
}

Result<stria::proto::Layout> ToLayout(const struct stria_layout* l) {
  if (l->spec != nullptr && l->spec[0] != '\0') return ParseSpec(l->spec);
  stria::proto::Layout out;
  out.set_stripe_offset(-1);
  if (l->stripe_count < -1) return Status(Code::kInval, "stripe_count must be -1, 0 or more");
  out.set_stripe_count(l->stripe_count);
  if (l->stripe_size != 0) {
    STRIA_ASSIGN_OR_RETURN(uint64_t size,
                           stria::tools::ParseStripeSize(std::to_string(l->stripe_size)));
    out.set_stripe_size(size);
  }
  if (l->stripe_offset < -1) return Status(Code::kInval, "stripe_offset must be -1 or more");
  if (l->stripe_offset >= 0 && !(l->stripe_offset == 0 && l->stripe_count == 0)) {
    out.set_stripe_offset(l->stripe_offset);
  }
  if (l->pool != nullptr) out.set_pool(l->pool);
  if (out.pool().size() > 31) return Status(Code::kInval, "pool name longer than 31 bytes");
  out.set_pattern(stria::proto::PATTERN_RAID0);
  return out;
}

void FillComponent(const stria::proto::Layout& plain, struct stria_component* c) {
  c->pattern = static_cast<uint32_t>(plain.pattern());
  c->stripe_count = plain.stripe_count();
  c->stripe_size = plain.stripe_size();
  c->stripe_offset =
      plain.objects_size() > 0 ? static_cast<int32_t>(plain.objects(0).ost_idx())
                               : plain.stripe_offset();
  c->object_count = static_cast<uint32_t>(plain.objects_size());
  std::snprintf(c->pool, sizeof(c->pool), "%s", plain.pool().c_str());
}

#define CHECK_ARG(cond, what) \
  if (!(cond)) return FailErrno(EINVAL, what)

}  // namespace

extern "C" {

int stria_api_version(void) { return STRIA_API_VERSION; }

const char* stria_errmsg(void) { return t_errmsg.c_str(); }

int stria_connect(const char* spec, const struct stria_connect_opts* opts, stria_fs_t** out) {
  CHECK_ARG(spec != nullptr && out != nullptr, "spec and out must not be NULL");
  return Guard([&]() -> int {
    InitLibraryLogging();
    stria::client::NativeOptions o;
    if (opts != nullptr) {
      CHECK_ARG(opts->struct_size >= sizeof(uint32_t) + sizeof(int),
                "stria_connect_opts.struct_size is not set");
      if (opts->timeout_ms > 0) o.timeout_ms = opts->timeout_ms;
      if (opts->io_threads > 0) o.io_threads = opts->io_threads;
      // A field is read only when the caller's struct_size says its struct has it, so a
      // program built against an older stria.h keeps working.
      auto has = [&](size_t offset, size_t size) { return opts->struct_size >= offset + size; };
      if (has(offsetof(stria_connect_opts, dentry_ttl_ms), sizeof(int)) &&
          opts->dentry_ttl_ms >= 0) {
        o.dentry_ttl_ms = opts->dentry_ttl_ms;
      }
      if (has(offsetof(stria_connect_opts, key_file), sizeof(const char*)) &&
          opts->key_file != nullptr) {
        o.key_file = opts->key_file;
      }
    }
    Result<std::unique_ptr<NativeFs>> fs = NativeFs::Connect(spec, o);
    if (!fs.ok()) return Fail(fs.status());
    *out = new stria_fs{std::move(*fs)};
    return Ok();
  });
}

void stria_disconnect(stria_fs_t* fs) { delete fs; }

int stria_stat(stria_fs_t* fs, const char* path, struct stria_stat* st) {
  CHECK_ARG(fs != nullptr && path != nullptr && st != nullptr, "NULL argument");
  return Guard([&]() -> int {
    Result<stria::proto::Attr> a = fs->fs->Stat(path, /*follow=*/true);
    if (!a.ok()) return Fail(a.status());
    FillStat(*a, st);
    return Ok();
  });
}

int stria_lstat(stria_fs_t* fs, const char* path, struct stria_stat* st) {
  CHECK_ARG(fs != nullptr && path != nullptr && st != nullptr, "NULL argument");
  return Guard([&]() -> int {
    Result<stria::proto::Attr> a = fs->fs->Stat(path, /*follow=*/false);
    if (!a.ok()) return Fail(a.status());
    FillStat(*a, st);
    return Ok();
  });
}

#define SIMPLE_CALL(expr)                        \
  return Guard([&]() -> int {                    \
    Status s_ = (expr);                          \
    return s_.ok() ? Ok() : Fail(s_);            \
  })

int stria_mkdir(stria_fs_t* fs, const char* path, mode_t mode) {
  CHECK_ARG(fs != nullptr && path != nullptr, "NULL argument");
  SIMPLE_CALL(fs->fs->Mkdir(path, mode));
}

int stria_rmdir(stria_fs_t* fs, const char* path) {
  CHECK_ARG(fs != nullptr && path != nullptr, "NULL argument");
  SIMPLE_CALL(fs->fs->Rmdir(path));
}

int stria_unlink(stria_fs_t* fs, const char* path) {
  CHECK_ARG(fs != nullptr && path != nullptr, "NULL argument");
  SIMPLE_CALL(fs->fs->Unlink(path));
}

int stria_rename(stria_fs_t* fs, const char* from, const char* to, unsigned int flags) {
  CHECK_ARG(fs != nullptr && from != nullptr && to != nullptr, "NULL argument");
  SIMPLE_CALL(fs->fs->Rename(from, to, flags));
}

int stria_symlink(stria_fs_t* fs, const char* target, const char* path) {
  CHECK_ARG(fs != nullptr && target != nullptr && path != nullptr, "NULL argument");
  SIMPLE_CALL(fs->fs->Symlink(target, path));
}

int stria_truncate(stria_fs_t* fs, const char* path, uint64_t size) {
  CHECK_ARG(fs != nullptr && path != nullptr, "NULL argument");
  SIMPLE_CALL(fs->fs->Truncate(path, size));
}

int stria_fsync_dir(stria_fs_t* fs, const char* path) {
  CHECK_ARG(fs != nullptr && path != nullptr, "NULL argument");
  SIMPLE_CALL(fs->fs->SyncDir(path));
}

int stria_opendir(stria_fs_t* fs, const char* path, stria_dir_t** out) {
  CHECK_ARG(fs != nullptr && path != nullptr && out != nullptr, "NULL argument");
  return Guard([&]() -> int {
    auto entries = fs->fs->Readdir(path);
    if (!entries.ok()) return Fail(entries.status());
    *out = new stria_dir{std::move(*entries), 0};
    return Ok();
  });
}

int stria_readdir(stria_dir_t* dir, struct stria_dirent* ent) {
  CHECK_ARG(dir != nullptr && ent != nullptr, "NULL argument");
  if (dir->next >= dir->entries.size()) return Ok();
  const stria::proto::DirEntry& e = dir->entries[dir->next++];
  ent->ino = e.ino();
  ent->type = DirentType(e.type());
  std::snprintf(ent->name, sizeof(ent->name), "%s", e.name().c_str());
  t_errmsg.clear();
  return 1;
}

void stria_closedir(stria_dir_t* dir) { delete dir; }

int stria_getstripe(stria_fs_t* fs, const char* path, struct stria_layout_info* out) {
  CHECK_ARG(fs != nullptr && path != nullptr && out != nullptr, "NULL argument");
  return Guard([&]() -> int {
    Result<stria::proto::Layout> l = fs->fs->GetStripe(path);
    if (!l.ok()) return Fail(l.status());
    std::memset(out, 0, sizeof(*out));
    out->generation = l->generation();
    if (stria::IsComposite(*l)) {
      out->composite = 1;
      for (const auto& c : l->components()) {
        if (out->component_count == STRIA_MAX_COMPONENTS) break;
        struct stria_component* oc = &out->comp[out->component_count++];
        oc->id = c.id();
        oc->flags = c.flags();
        oc->start = c.start();
        oc->end = c.end();
        FillComponent(c.layout(), oc);
      }
    } else {
      out->component_count = 1;
      out->comp[0].end = std::numeric_limits<uint64_t>::max();
      FillComponent(*l, &out->comp[0]);
      if (l->objects_size() > 0) out->comp[0].flags = STRIA_COMP_INIT;
    }
    return Ok();
  });
}

int stria_setstripe(stria_fs_t* fs, const char* path, const struct stria_layout* layout) {
  CHECK_ARG(fs != nullptr && path != nullptr && layout != nullptr, "NULL argument");
  return Guard([&]() -> int {
    Result<stria::proto::Layout> l = ToLayout(layout);
    if (!l.ok()) return Fail(l.status());
    Status st = fs->fs->SetStripe(path, *l);
    return st.ok() ? Ok() : Fail(st);
  });
}

int stria_open(stria_fs_t* fs, const char* path, int flags, mode_t mode,
               const struct stria_layout* layout, stria_file_t** out) {
  CHECK_ARG(fs != nullptr && path != nullptr && out != nullptr, "NULL argument");
  return Guard([&]() -> int {
    stria::proto::Layout parsed;
    if (layout != nullptr) {
      Result<stria::proto::Layout> l = ToLayout(layout);
      if (!l.ok()) return Fail(l.status());
      parsed = std::move(*l);
    }
    auto f = fs->fs->Open(path, flags, mode, layout != nullptr ? &parsed : nullptr);
    if (!f.ok()) return Fail(f.status());
    *out = new stria_file{std::move(*f)};
    return Ok();
  });
}

ssize_t stria_pread(stria_file_t* f, void* buf, size_t count, uint64_t offset) {
  CHECK_ARG(f != nullptr && (buf != nullptr || count == 0), "NULL argument");
  CHECK_ARG(count <= static_cast<size_t>(SSIZE_MAX), "count too large");
  return Guard([&]() -> ssize_t {
    Result<size_t> n = f->file->Pread(offset, {static_cast<uint8_t*>(buf), count});
    if (!n.ok()) return Fail(n.status());
    t_errmsg.clear();
    return static_cast<ssize_t>(*n);
  });
}

ssize_t stria_pwrite(stria_file_t* f, const void* buf, size_t count, uint64_t offset) {
  CHECK_ARG(f != nullptr && (buf != nullptr || count == 0), "NULL argument");
  CHECK_ARG(count <= static_cast<size_t>(SSIZE_MAX), "count too large");
  return Guard([&]() -> ssize_t {
    Result<size_t> n = f->file->Pwrite(offset, {static_cast<const uint8_t*>(buf), count});
    if (!n.ok()) return Fail(n.status());
    t_errmsg.clear();
    return static_cast<ssize_t>(*n);
  });
}

// Vectored I/O: one contiguous file range; the pieces go out at once (NativeFile::Preadv).
ssize_t stria_preadv(stria_file_t* f, const struct iovec* iov, int iovcnt, uint64_t offset) {
  CHECK_ARG(f != nullptr && (iov != nullptr || iovcnt == 0) && iovcnt >= 0 && iovcnt <= IOV_MAX,
            "bad iovec arguments");
  return Guard([&]() -> ssize_t {
    std::vector<std::span<uint8_t>> v;
    for (int i = 0; i < iovcnt; ++i) {
      if (iov[i].iov_base == nullptr && iov[i].iov_len > 0) return FailErrno(EINVAL, "NULL iovec");
      v.emplace_back(static_cast<uint8_t*>(iov[i].iov_base), iov[i].iov_len);
    }
    Result<size_t> n = v.empty() ? Result<size_t>(size_t{0}) : f->file->Preadv(offset, v);
    if (!n.ok()) return Fail(n.status());
    t_errmsg.clear();
    return static_cast<ssize_t>(*n);
  });
}

ssize_t stria_pwritev(stria_file_t* f, const struct iovec* iov, int iovcnt, uint64_t offset) {
  CHECK_ARG(f != nullptr && (iov != nullptr || iovcnt == 0) && iovcnt >= 0 && iovcnt <= IOV_MAX,
            "bad iovec arguments");
  return Guard([&]() -> ssize_t {
    std::vector<std::span<const uint8_t>> v;
    for (int i = 0; i < iovcnt; ++i) {
      if (iov[i].iov_base == nullptr && iov[i].iov_len > 0) return FailErrno(EINVAL, "NULL iovec");
      v.emplace_back(static_cast<const uint8_t*>(iov[i].iov_base), iov[i].iov_len);
    }
    Result<size_t> n = v.empty() ? Result<size_t>(size_t{0}) : f->file->Pwritev(offset, v);
    if (!n.ok()) return Fail(n.status());
    t_errmsg.clear();
    return static_cast<ssize_t>(*n);
  });
}

int stria_fsync(stria_file_t* f) {
  CHECK_ARG(f != nullptr, "NULL file");
  SIMPLE_CALL(f->file->Fsync());
}

int stria_ftruncate(stria_file_t* f, uint64_t size) {
  CHECK_ARG(f != nullptr, "NULL file");
  SIMPLE_CALL(f->file->Truncate(size));
}

int stria_fstat(stria_file_t* f, struct stria_stat* st) {
  CHECK_ARG(f != nullptr && st != nullptr, "NULL argument");
  return Guard([&]() -> int {
    Result<stria::proto::Attr> a = f->file->Stat();
    if (!a.ok()) return Fail(a.status());
    FillStat(*a, st);
    return Ok();
  });
}

uint64_t stria_file_size(stria_file_t* f) { return f != nullptr ? f->file->size() : 0; }

int stria_close(stria_file_t* f) {
  if (f == nullptr) return Ok();
  std::unique_ptr<stria_file> owned(f);
  return Guard([&]() -> int {
    Status st = owned->file->Close();
    return st.ok() ? Ok() : Fail(st);
  });
}

int stria_queue_create(stria_fs_t* fs, unsigned depth, stria_queue_t** out) {
  CHECK_ARG(fs != nullptr && out != nullptr, "NULL argument");
  return Guard([&]() -> int {
    auto q = stria::client::IoQueue::Create(depth);
    if (!q.ok()) return Fail(q.status());
    *out = new stria_queue{std::move(*q)};
    return Ok();
  });
}

int stria_queue_submit(stria_queue_t* q, const struct stria_io* ios, unsigned n) {
  CHECK_ARG(q != nullptr && (ios != nullptr || n == 0), "NULL argument");
  return Guard([&]() -> int {
    std::vector<stria::client::IoRequest> reqs(n);
    for (unsigned i = 0; i < n; ++i) {
      stria::client::IoRequest& r = reqs[i];
      switch (ios[i].op) {
        case STRIA_OP_READ: r.op = stria::client::IoRequest::Op::kRead; break;
        case STRIA_OP_WRITE: r.op = stria::client::IoRequest::Op::kWrite; break;
        case STRIA_OP_FSYNC: r.op = stria::client::IoRequest::Op::kFsync; break;
        default:
          if (i == 0) return FailErrno(EINVAL, "unknown op in stria_io");
          reqs.resize(i);
          break;
      }
      if (reqs.size() <= i) break;
      if (ios[i].file == nullptr) {
        if (i == 0) return FailErrno(EINVAL, "stria_io without a file");
        reqs.resize(i);
        break;
      }
      r.file = ios[i].file->file.get();
      r.offset = ios[i].offset;
      r.buf = ios[i].buf;
      r.length = ios[i].length;
      r.user_data = ios[i].user_data;
    }
    Result<size_t> taken = q->q->Submit(reqs);
    if (!taken.ok()) return Fail(taken.status());
    t_errmsg.clear();
    return static_cast<int>(*taken);
  });
}

int stria_queue_complete(stria_queue_t* q, struct stria_completion* out, unsigned min_complete,
                         unsigned max, int timeout_ms) {
  CHECK_ARG(q != nullptr && (out != nullptr || max == 0), "NULL argument");
  return Guard([&]() -> int {
    std::vector<stria::client::IoCompletion> got = q->q->Reap(min_complete, max, timeout_ms);
    for (size_t i = 0; i < got.size(); ++i) {
      out[i].user_data = got[i].user_data;
      out[i].result = got[i].result;
    }
    t_errmsg.clear();
    return static_cast<int>(got.size());
  });
}

void stria_queue_destroy(stria_queue_t* q) { delete q; }

}  // extern "C"
