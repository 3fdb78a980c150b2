// NativeFs and NativeFile: libstria's file API without a mount — what the C API
// (client/include/stria/stria.h), the Python package and the benchmarks use to reach a
// filesystem directly, with no FUSE copy or context switch on the data path.
//
// A NativeFs is one connection to `NID[,NID...]:/fsname` (client/mount_spec.h) with the
// calling process's credentials, which the MDS checks exactly as for a request through the
// mount, and an MDS session (client/session.h: lease, and replay of open handles after an
// MDS restart). Paths are absolute inside the filesystem ("/data/a"; "/" is the root).
//
// The semantics are the mount's: close-to-open consistency. A NativeFile opened here is the
// same open as one through the mount (an MDS open handle); its writes go to the OSTs (or the
// MDS, for a Data-on-MDT component) and the size and mtime it wrote reach the MDS at Fsync
// and Close (Metadata::Close); Fsync makes the data durable on every OST it touched and the
// size on the MDS. A file created here is the same file through the mount and back.
//
// Directory lookups are cached for `dentry_ttl_ms` (as the mount's entry timeout), so a
// million opens in a few directories cost a LOOKUP and an OPEN each, not a walk from the
// root. Only directories are cached; renaming or removing one through this NativeFs drops
// the cache.
//
// Thread-safety: every method of NativeFs and NativeFile is thread-safe; one NativeFile may
// be read and written from many threads at once (the IoQueue does).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "client/capa.h"
#include "client/client.h"
#include "client/metadata.h"
#include "client/session.h"
#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client {

struct NativeOptions {
  int dentry_ttl_ms = 1000;   // how long a directory's lookup is reused
  int io_threads = 16;        // parallel stripe I/O (ClientConfig::io_threads)
  int timeout_ms = 60'000;    // an RPC's retry deadline: after this a dead server is EIO/ETIMEDOUT
  bool start_session = true;  // the MDS lease and open replay (off only for short-lived tools)
  // The cluster key file (docs/security.md); empty: $STRIA_KEY_FILE, else
  // /etc/stria/stria.key if it exists, else no key.
  std::string key_file;
};

class NativeFile;

class NativeFs {
 public:
  // Connects to the MGS named by `spec` ("127.0.0.1@tcp:9880:/training").
  static Result<std::unique_ptr<NativeFs>> Connect(std::string_view spec,
                                                   NativeOptions options = {});
  ~NativeFs();
  NativeFs(const NativeFs&) = delete;
  NativeFs& operator=(const NativeFs&) = delete;

  Client* client() { return client_.get(); }
  Metadata& metadata() { return md_; }
  const proto::Credentials& cred() const { return cred_; }
  const std::string& fsname() const { return fsname_; }

  // stat(2) (follow = true: a final symlink is followed) or lstat(2).
  Result<proto::Attr> Stat(std::string_view path, bool follow = true);
  Status Mkdir(std::string_view path, uint32_t mode);
  Status Unlink(std::string_view path);
  Status Rmdir(std::string_view path);
  Status Rename(std::string_view from, std::string_view to, uint32_t flags = 0);
  Status Symlink(std::string_view target, std::string_view path);
  Result<std::string> Readlink(std::string_view path);
  Status Truncate(std::string_view path, uint64_t size);
  // fsync(2) of a directory: every change the MDS answered so far is durable.
  Status SyncDir(std::string_view path);
  // The whole listing, without "." and ".."; with_attrs fills each entry's attr.
  Result<std::vector<proto::DirEntry>> Readdir(std::string_view path, bool with_attrs = false);
  Result<proto::StatfsReply> Statfs();

  // open(2): flags O_RDONLY/O_WRONLY/O_RDWR with O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_SYNC,
  // O_DSYNC; mode for a new file (the process umask is not applied: pass the mode you mean).
  // `layout` (may be null) is the new file's layout; an existing file keeps its own.
  Result<std::unique_ptr<NativeFile>> Open(std::string_view path, int flags, uint32_t mode = 0644,
                                           const proto::Layout* layout = nullptr);

  // A regular file's layout (with its objects), or a directory's default layout (ENODATA
  // when it has none and inherits).
  Result<proto::Layout> GetStripe(std::string_view path);
  // lfs setstripe: a directory's default layout, or a new empty file with `layout` (EEXIST
  // when the file exists: a file's layout is fixed once created).
  Status SetStripe(std::string_view path, const proto::Layout& layout);

 private:
  friend class NativeFile;
  NativeFs(std::unique_ptr<Client> client, NativeOptions options);

  struct Parent {
    uint64_t ino = 0;
    std::string name;  // the last component
  };
  // The directory holding the last component of `path`, and that name. EINVAL for a path
  // that is not absolute or names the root.
  Result<Parent> SplitParent(std::string_view path);
  // The inode of directory `dir` (an absolute path), through the cache.
  Result<uint64_t> DirIno(const std::string& dir);
  Result<proto::EntryReply> Resolve(std::string_view path, bool follow);
  void DropDirCache();

  std::unique_ptr<Client> client_;
  Metadata md_;
  NativeOptions options_;
  proto::Credentials cred_;
  std::string fsname_;
  std::unique_ptr<ClientSession> session_;

  struct CachedDir {
    uint64_t ino;
    int64_t expires_ns;
  };
  std::mutex cache_mu_;
  std::unordered_map<std::string, CachedDir> dirs_;  // GUARDED_BY(cache_mu_)
};

class NativeFile {
 public:
  ~NativeFile();  // Close()s; an error then is logged (call Close to see it)
  NativeFile(const NativeFile&) = delete;
  NativeFile& operator=(const NativeFile&) = delete;

  // pread(2): the bytes read, short only at the end of the file; holes read as zeros.
  Result<size_t> Pread(uint64_t offset, std::span<uint8_t> buf);
  // pwrite(2): all of `data` or an error; with O_APPEND the data goes to the end of the file
  // (as Linux's pwrite on an O_APPEND descriptor). With O_SYNC/O_DSYNC it is durable (data
  // and size) when this returns.
  Result<size_t> Pwrite(uint64_t offset, std::span<const uint8_t> data);
  // preadv(2)/pwritev(2): one contiguous file range in several buffers. The buffers' pieces
  // go out at once (at most kMaxVectorParallel at a time), each striped in parallel too.
  // A read returns the bytes up to the first short piece (the end of the file).
  static constexpr size_t kMaxVectorParallel = 16;
  Result<size_t> Preadv(uint64_t offset, std::span<const std::span<uint8_t>> iov);
  Result<size_t> Pwritev(uint64_t offset, std::span<const std::span<const uint8_t>> iov);
  // Data durable on every OST of the file, and the size and mtime on the MDS.
  Status Fsync();
  // ftruncate(2) (write access was granted at open).
  Status Truncate(uint64_t size);
  // fstat(2): the MDS's attributes with this handle's writes applied.
  Result<proto::Attr> Stat();
  // Reports what was written (size, mtime) and read (relatime) and closes the MDS handle.
  // The first call's result; later calls return OK.
  Status Close();

  uint64_t ino() const { return ino_; }
  int flags() const { return flags_; }
  bool readable() const;
  bool writable() const;
  // The size this handle knows: the MDS's at open, grown by its own writes and truncates.
  uint64_t size() const { return size_.load(); }
  std::shared_ptr<const proto::Layout> layout() const;

 private:
  friend class NativeFs;
  NativeFile(NativeFs* fs, uint64_t ino, uint64_t handle, int flags, proto::OpenReply open);

  // pwrite at `offset` exactly (O_APPEND already resolved by the caller).
  Result<size_t> WriteAt(uint64_t offset, std::span<const uint8_t> data);
  Status Report(bool close, bool sync);
  void SetLayout(proto::Layout layout);  // keeps the higher generation

  NativeFs* const fs_;
  const uint64_t ino_;
  const uint64_t handle_;  // the MDS open handle
  const int flags_;
  mutable std::mutex mu_;                        // guards layout_ and the report
  std::shared_ptr<const proto::Layout> layout_;  // GUARDED_BY(mu_)
  std::shared_ptr<const std::string> open_data_; // GUARDED_BY(mu_): read-on-open bytes
  std::shared_ptr<OpenCapas> capas_;             // OSS capabilities (keyless without a key)
  std::atomic<uint64_t> size_{0};
  std::atomic<uint64_t> acked_end_{0};  // end of the bytes the OSTs acknowledged
  std::atomic<bool> dirty_{false};      // written since the last report
  std::atomic<int64_t> mtime_ns_{0};
  std::atomic<int64_t> atime_ns_{0};    // last read, for a relatime report at close
  bool relatime_due_ = false;
  bool closed_ = false;                 // GUARDED_BY(mu_)
};

}  // namespace stria::client
