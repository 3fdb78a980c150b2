// NativeFs and NativeFile (see native.h).
#include "client/native.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>

#include "client/mount_spec.h"
#include "common/layout.h"
#include "common/log.h"
#include "common/relatime.h"
#include "proto/layout_components.h"

namespace stria::client {

namespace {

constexpr uint64_t kRootIno = 1;
constexpr size_t kMaxCachedDirs = 65536;
constexpr int kMaxSymlinks = 40;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t MonoNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "/a//b/" -> "/a/b"; "" stays "" (the caller refuses it).
std::string Normalize(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

Status CheckAbsolute(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return Status(Code::kInval, "path '" + std::string(path) +
                                    "' is not absolute inside the filesystem");
  }
  if (path.find('\0') != std::string_view::npos) {
    return Status(Code::kInval, "path contains a NUL byte");
  }
  return Status::Ok();
}

}  // namespace

// ---- NativeFs ----

NativeFs::NativeFs(std::unique_ptr<Client> client, NativeOptions options)
    : client_(std::move(client)),
      md_(client_.get()),
      options_(options),
      cred_(ProcessCredentials()) {}

NativeFs::~NativeFs() {
  if (session_) session_->Stop();
}

Result<std::unique_ptr<NativeFs>> NativeFs::Connect(std::string_view spec,
                                                    NativeOptions options) {
  STRIA_ASSIGN_OR_RETURN(MountSpec ms, ParseMountSpec(spec));
  ClientConfig cfg;
  cfg.mgs_nids = ms.mgs_nids;
  cfg.fsname = ms.fsname;
  cfg.io_threads = std::max(1, options.io_threads);
  cfg.rpc.retry_deadline_ms = std::max(1000, options.timeout_ms);
  cfg.rpc.rpc_timeout_ms = std::min(cfg.rpc.rpc_timeout_ms, cfg.rpc.retry_deadline_ms);
  cfg.rpc.connect_timeout_ms = std::min(cfg.rpc.connect_timeout_ms, cfg.rpc.retry_deadline_ms);
  STRIA_ASSIGN_OR_RETURN(cfg.rpc.keys, options.key_file.empty()
                                           ? lnet::DefaultKeyRing()
                                           : lnet::LoadKeyRing({options.key_file}));
  STRIA_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect(std::move(cfg)));
  std::unique_ptr<NativeFs> fs(new NativeFs(std::move(client), options));
  fs->fsname_ = ms.fsname;
  if (options.start_session) {
    fs->session_ = std::make_unique<ClientSession>(fs->client_.get());
    fs->session_->Start();
  }
  return fs;
}

void NativeFs::DropDirCache() {
  std::lock_guard lock(cache_mu_);
  dirs_.clear();
}

Result<uint64_t> NativeFs::DirIno(const std::string& dir) {
  if (dir == "/") return kRootIno;
  const int64_t now = MonoNs();
  {
    std::lock_guard lock(cache_mu_);
    auto it = dirs_.find(dir);
    if (it != dirs_.end() && it->second.expires_ns > now) return it->second.ino;
  }
  STRIA_ASSIGN_OR_RETURN(proto::EntryReply e, Resolve(dir, /*follow=*/true));
  if (!S_ISDIR(e.attr().mode())) {
    return Status(Code::kNotDir, "'" + dir + "' is not a directory");
  }
  std::lock_guard lock(cache_mu_);
  if (dirs_.size() >= kMaxCachedDirs) dirs_.clear();
  dirs_[dir] = CachedDir{e.attr().ino(),
                         now + static_cast<int64_t>(options_.dentry_ttl_ms) * 1'000'000};
  return e.attr().ino();
}

Result<NativeFs::Parent> NativeFs::SplitParent(std::string_view path) {
  STRIA_RETURN_IF_ERROR(CheckAbsolute(path));
  const std::string norm = Normalize(path);
  if (norm == "/") return Status(Code::kInval, "the root has no parent");
  const size_t slash = norm.rfind('/');
  Parent p;
  p.name = norm.substr(slash + 1);
  if (p.name == "." || p.name == "..") {
    return Status(Code::kInval, "path '" + std::string(path) + "' ends in '" + p.name + "'");
  }
  STRIA_RETURN_IF_ERROR(CheckName(p.name));
  STRIA_ASSIGN_OR_RETURN(p.ino, DirIno(slash == 0 ? "/" : norm.substr(0, slash)));
  return p;
}

Result<proto::EntryReply> NativeFs::Resolve(std::string_view path, bool follow) {
  STRIA_RETURN_IF_ERROR(CheckAbsolute(path));
  std::string target = Normalize(path);
  for (int links = 0;; ++links) {
    STRIA_ASSIGN_OR_RETURN(proto::EntryReply e, client_->ResolvePath(cred_, target));
    if (!follow || !S_ISLNK(e.attr().mode())) return e;
    if (links >= kMaxSymlinks) return Status(Code::kLoop, "too many symlinks in " + target);
    STRIA_ASSIGN_OR_RETURN(std::string to, md_.Readlink(cred_, e.attr().ino()));
    if (!to.empty() && to.front() == '/') {
      target = Normalize(to);
    } else {
      const size_t slash = target.rfind('/');
      target = Normalize(target.substr(0, slash + 1) + to);
    }
  }
}

Result<proto::Attr> NativeFs::Stat(std::string_view path, bool follow) {
  STRIA_RETURN_IF_ERROR(CheckAbsolute(path));
  if (Normalize(path) == "/") {
    STRIA_ASSIGN_OR_RETURN(proto::AttrReply r, md_.Getattr(cred_, kRootIno));
    return r.attr();
  }
  STRIA_ASSIGN_OR_RETURN(Parent p, SplitParent(path));
  STRIA_ASSIGN_OR_RETURN(proto::EntryReply e, md_.Lookup(cred_, p.ino, p.name));
  if (follow && S_ISLNK(e.attr().mode())) {
    STRIA_ASSIGN_OR_RETURN(e, Resolve(path, /*follow=*/true));
  }
  return e.attr();
}

Status NativeFs::Mkdir(std::string_view path, uint32_t mode) {
  STRIA_ASSIGN_OR_RETURN(Parent p, SplitParent(path));
  Metadata::CreateArgs a;
  a.parent = p.ino;
  a.name = p.name;
  a.mode = S_IFDIR | (mode & 07777);
  return md_.Create(cred_, a).status();
}

Status NativeFs::Unlink(std::string_view path) {
  STRIA_ASSIGN_OR_RETURN(Parent p, SplitParent(path));
  return md_.Unlink(cred_, p.ino, p.name, /*is_dir=*/false).status();
}

Status NativeFs::Rmdir(std::string_view path) {
  STRIA_ASSIGN_OR_RETURN(Parent p, SplitParent(path));
  Status st = md_.Unlink(cred_, p.ino, p.name, /*is_dir=*/true).status();
  if (st.ok()) DropDirCache();
  return st;
}

Status NativeFs::Rename(std::string_view from, std::string_view to, uint32_t flags) {
  STRIA_ASSIGN_OR_RETURN(Parent a, SplitParent(from));
  STRIA_ASSIGN_OR_RETURN(Parent b, SplitParent(to));
  Status st = md_.Rename(cred_, a.ino, a.name, b.ino, b.name, flags);
  if (st.ok()) DropDirCache();  // a directory may have moved
  return st;
}

Status NativeFs::Symlink(std::string_view target, std::string_view path) {
  if (target.empty()) return Status(Code::kNoEnt, "empty symlink target");
  STRIA_ASSIGN_OR_RETURN(Parent p, SplitParent(path));
  Metadata::CreateArgs a;
  a.parent = p.ino;
  a.name = p.name;
  a.mode = S_IFLNK | 0777;
  a.symlink_target = target;
  return md_.Create(cred_, a).status();
}

Result<std::string> NativeFs::Readlink(std::string_view path) {
  STRIA_ASSIGN_OR_RETURN(proto::Attr attr, Stat(path, /*follow=*/false));
  if (!S_ISLNK(attr.mode())) return Status(Code::kInval, "not a symbolic link");
  return md_.Readlink(cred_, attr.ino());
}

Status NativeFs::Truncate(std::string_view path, uint64_t size) {
  STRIA_ASSIGN_OR_RETURN(std::unique_ptr<NativeFile> f, Open(path, O_WRONLY));
  Status st = f->Truncate(size);
  Status closed = f->Close();
  return st.ok() ? closed : st;
}

Status NativeFs::SyncDir(std::string_view path) {
  STRIA_RETURN_IF_ERROR(CheckAbsolute(path));
  STRIA_ASSIGN_OR_RETURN(uint64_t ino, DirIno(Normalize(path)));
  return md_.Sync(cred_, ino);
}

Result<std::vector<proto::DirEntry>> NativeFs::Readdir(std::string_view path, bool with_attrs) {
  STRIA_RETURN_IF_ERROR(CheckAbsolute(path));
  STRIA_ASSIGN_OR_RETURN(uint64_t ino, DirIno(Normalize(path)));
  std::vector<proto::DirEntry> out;
  Metadata::ReaddirArgs args;
  args.ino = ino;
  args.want_attrs = with_attrs;
  for (;;) {
    STRIA_ASSIGN_OR_RETURN(proto::ReaddirReply page, md_.Readdir(cred_, args));
    for (auto& e : *page.mutable_entries()) {
      if (e.name().empty() || e.name() == "." || e.name() == ".." || e.ino() == 0) continue;
      out.push_back(std::move(e));
    }
    if (page.eof() || page.next_cookie().empty()) break;
    args.cookie = page.next_cookie();
  }
  return out;
}

Result<proto::StatfsReply> NativeFs::Statfs() { return md_.Statfs(cred_); }

Result<std::unique_ptr<NativeFile>> NativeFs::Open(std::string_view path, int flags,
                                                   uint32_t mode, const proto::Layout* layout) {
  const int acc = flags & O_ACCMODE;
  if (acc != O_RDONLY && acc != O_WRONLY && acc != O_RDWR) {
    return Status(Code::kInval, "bad access mode in open flags");
  }
  STRIA_ASSIGN_OR_RETURN(Parent p, SplitParent(path));
  proto::OpenReply opened;
  uint64_t ino = 0;
  bool created = false;
  if (flags & O_CREAT) {
    Metadata::CreateArgs a;
    a.parent = p.ino;
    a.name = p.name;
    a.mode = S_IFREG | (mode & 07777);
    a.layout = layout;
    a.open = true;
    Result<proto::EntryReply> c = md_.Create(cred_, a);
    if (c.ok()) {
      created = true;
      ino = c->attr().ino();
      *opened.mutable_attr() = c->attr();
      *opened.mutable_layout() = c->layout();
      opened.set_handle(c->handle());
      if (c->has_capa()) *opened.mutable_capa() = c->capa();
    } else if (c.status().code() != Code::kExist || (flags & O_EXCL)) {
      return c.status();
    }
  }
  if (!created) {
    STRIA_ASSIGN_OR_RETURN(proto::EntryReply e, md_.Lookup(cred_, p.ino, p.name));
    if (S_ISLNK(e.attr().mode())) {
      if (flags & O_NOFOLLOW) return Status(Code::kLoop, "the last component is a symlink");
      STRIA_ASSIGN_OR_RETURN(e, Resolve(path, /*follow=*/true));
    }
    if (S_ISDIR(e.attr().mode())) {
      if (acc != O_RDONLY) return Status(Code::kIsDir, "is a directory");
      return Status(Code::kIsDir, "is a directory (use Readdir)");
    }
    if (!S_ISREG(e.attr().mode())) return Status(Code::kInval, "not a regular file");
    ino = e.attr().ino();
    const auto open_flags =
        static_cast<uint32_t>(flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC));
    STRIA_ASSIGN_OR_RETURN(opened, md_.Open(cred_, ino, open_flags));
  }
  const uint64_t handle = opened.handle();
  std::unique_ptr<NativeFile> f(new NativeFile(this, ino, handle, flags, std::move(opened)));
  if (session_ && handle != 0) session_->Opened(handle, ino);
  if ((flags & O_TRUNC) && acc != O_RDONLY && !created && f->size() > 0) {
    if (Status st = f->Truncate(0); !st.ok()) {
      f->Close().IgnoreError();
      return st;
    }
  }
  return f;
}

Result<proto::Layout> NativeFs::GetStripe(std::string_view path) {
  STRIA_ASSIGN_OR_RETURN(proto::Attr attr, Stat(path, /*follow=*/true));
  if (S_ISDIR(attr.mode())) {
    STRIA_ASSIGN_OR_RETURN(std::optional<proto::Layout> def,
                           md_.GetDefaultLayout(cred_, attr.ino()));
    if (!def) return Status(Code::kNoData, "the directory has no default layout");
    return *def;
  }
  if (!S_ISREG(attr.mode())) return Status(Code::kNoData, "no layout: not a regular file");
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply r, md_.Getattr(cred_, attr.ino()));
  return r.layout();
}

Status NativeFs::SetStripe(std::string_view path, const proto::Layout& layout) {
  Result<proto::Attr> attr = Stat(path, /*follow=*/true);
  if (attr.ok()) {
    if (S_ISDIR(attr->mode())) return md_.SetDefaultLayout(cred_, attr->ino(), layout);
    return Status(Code::kExist, "'" + std::string(path) +
                                    "' exists: a file's layout is fixed when it is created");
  }
  if (attr.status().code() != Code::kNoEnt) return attr.status();
  STRIA_ASSIGN_OR_RETURN(std::unique_ptr<NativeFile> f,
                         Open(path, O_WRONLY | O_CREAT | O_EXCL, 0644, &layout));
  return f->Close();
}

// ---- NativeFile ----

NativeFile::NativeFile(NativeFs* fs, uint64_t ino, uint64_t handle, int flags,
                       proto::OpenReply open)
    : fs_(fs), ino_(ino), handle_(handle), flags_(flags) {
  capas_ = OpenCapas::FromReply(
      {fs->cred_, ino, handle,
       static_cast<uint32_t>(flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC))},
      open.has_capa() ? &open.capa() : nullptr);
  const proto::Attr& a = open.attr();
  size_.store(a.size());
  relatime_due_ = RelatimeDue(a.atime_ns(), a.mtime_ns(), a.ctime_ns(), NowNs());
  SetLayout(std::move(*open.mutable_layout()));
  if (open.has_data() && !(flags & O_TRUNC)) {
    open_data_ = std::make_shared<const std::string>(std::move(*open.mutable_data()));
  }
}

NativeFile::~NativeFile() {
  Status st = Close();
  if (!st.ok()) LOG_WARN("close of inode {} (handle {}): {}", ino_, handle_, st.ToString());
}

bool NativeFile::readable() const { return (flags_ & O_ACCMODE) != O_WRONLY; }
bool NativeFile::writable() const { return (flags_ & O_ACCMODE) != O_RDONLY; }

std::shared_ptr<const proto::Layout> NativeFile::layout() const {
  std::lock_guard lock(mu_);
  return layout_;
}

void NativeFile::SetLayout(proto::Layout layout) {
  if (!HasObjects(layout) && !IsComposite(layout)) return;
  std::lock_guard lock(mu_);
  if (layout_ && layout_->generation() > layout.generation()) return;
  layout_ = std::make_shared<const proto::Layout>(std::move(layout));
}

Result<size_t> NativeFile::Pread(uint64_t offset, std::span<uint8_t> buf) {
  if (!readable()) return Status(Code::kBadF, "file not open for reading");
  if (offset > kMaxFileSize) return Status(Code::kInval, "offset beyond the maximum file size");
  atime_ns_.store(NowNs());
  const uint64_t size = size_.load();
  if (offset >= size || buf.empty()) return size_t{0};
  const uint64_t end = std::min<uint64_t>(size, offset + buf.size());
  std::shared_ptr<const proto::Layout> layout;
  {
    std::lock_guard lock(mu_);
    if (open_data_ != nullptr && open_data_->size() == size) {
      const size_t n = end - offset;
      std::memcpy(buf.data(), open_data_->data() + offset, n);
      return n;
    }
    layout = layout_;
  }
  Metadata& md = fs_->md_;
  if (ReadNeedsNewerLayout(layout.get(), offset, end)) {
    STRIA_ASSIGN_OR_RETURN(proto::AttrReply r, md.Getattr(fs_->cred_, ino_));
    SetLayout(std::move(*r.mutable_layout()));
    layout = this->layout();
  }
  if (!layout) return size_t{0};  // no objects: nothing was ever written
  const std::span<uint8_t> want = buf.first(end - offset);
  bool missing = false;
  STRIA_ASSIGN_OR_RETURN(size_t n, fs_->client_->Read(*layout, size, offset, want, &missing,
                                                          capas_.get()));
  if (!missing) return n;
  // A missing object: a hole, or the layout changed under this open file (lfs migrate).
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply r, md.Getattr(fs_->cred_, ino_));
  if (r.layout().generation() == layout->generation()) return n;
  SetLayout(std::move(*r.mutable_layout()));
  return fs_->client_->Read(*this->layout(), size, offset, want, nullptr, capas_.get());
}

Result<size_t> NativeFile::Pwrite(uint64_t offset, std::span<const uint8_t> data) {
  if (!writable()) return Status(Code::kBadF, "file not open for writing");
  if (flags_ & O_APPEND) offset = size_.load();
  return WriteAt(offset, data);
}

Result<size_t> NativeFile::WriteAt(uint64_t offset, std::span<const uint8_t> data) {
  if (data.empty()) return size_t{0};
  if (offset > kMaxFileSize || data.size() > kMaxFileSize - offset) {
    return Status(Code::kFBig, "write past the maximum file size");
  }
  const uint64_t end = offset + data.size();
  std::shared_ptr<const proto::Layout> layout = this->layout();
  if (!layout) return Status(Code::kIO, "file has no stripe objects");
  STRIA_ASSIGN_OR_RETURN(std::optional<proto::Layout> newer,
                         fs_->md_.LayoutForWrite(fs_->cred_, ino_, handle_, *layout, offset, end));
  if (newer) {
    SetLayout(std::move(*newer));
    layout = this->layout();
  }
  {
    std::lock_guard lock(mu_);
    open_data_.reset();
  }
  const bool sync = (flags_ & (O_SYNC | O_DSYNC)) != 0;
  STRIA_RETURN_IF_ERROR(fs_->client_->Write(*layout, offset, data, sync, capas_.get()));
  auto raise = [](std::atomic<uint64_t>& a, uint64_t v) {
    uint64_t cur = a.load();
    while (cur < v && !a.compare_exchange_weak(cur, v)) {
    }
  };
  raise(acked_end_, end);
  raise(size_, end);
  mtime_ns_.store(NowNs());
  dirty_.store(true);
  if (sync) STRIA_RETURN_IF_ERROR(Report(/*close=*/false, /*sync=*/true));
  return data.size();
}

namespace {

// Runs fn(i) for i in [0, n), at most `width` at a time; the results in order.
template <typename Fn>
auto RunParallel(size_t n, size_t width, Fn fn) -> std::vector<decltype(fn(size_t{0}))> {
  std::vector<decltype(fn(size_t{0}))> out;
  out.reserve(n);
  for (size_t base = 0; base < n; base += width) {
    std::vector<std::future<decltype(fn(size_t{0}))>> batch;
    for (size_t i = base; i < std::min(n, base + width); ++i) {
      batch.push_back(std::async(i == base ? std::launch::deferred : std::launch::async, fn, i));
    }
    for (auto& f : batch) out.push_back(f.get());
  }
  return out;
}

}  // namespace

Result<size_t> NativeFile::Preadv(uint64_t offset, std::span<const std::span<uint8_t>> iov) {
  if (iov.size() == 1) return Pread(offset, iov[0]);
  std::vector<uint64_t> at(iov.size());
  for (size_t i = 0, o = 0; i < iov.size(); o += iov[i].size(), ++i) at[i] = offset + o;
  auto got = RunParallel(iov.size(), kMaxVectorParallel,
                         [&](size_t i) { return Pread(at[i], iov[i]); });
  size_t total = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!got[i].ok()) {
      if (total > 0) return total;
      return got[i].status();
    }
    total += *got[i];
    if (*got[i] < iov[i].size()) break;  // the end of the file
  }
  return total;
}

Result<size_t> NativeFile::Pwritev(uint64_t offset,
                                   std::span<const std::span<const uint8_t>> iov) {
  if (iov.size() == 1) return Pwrite(offset, iov[0]);
  size_t total_len = 0;
  for (const auto& v : iov) total_len += v.size();
  if (total_len == 0) return size_t{0};
  if (!writable()) return Status(Code::kBadF, "file not open for writing");
  if (flags_ & O_APPEND) offset = size_.load();
  if (offset > kMaxFileSize || total_len > kMaxFileSize - offset) {
    return Status(Code::kFBig, "write past the maximum file size");
  }
  // The whole range's components get their objects first, in one MDS request.
  if (std::shared_ptr<const proto::Layout> l = layout()) {
    STRIA_ASSIGN_OR_RETURN(
        std::optional<proto::Layout> newer,
        fs_->md_.LayoutForWrite(fs_->cred_, ino_, handle_, *l, offset, offset + total_len));
    if (newer) SetLayout(std::move(*newer));
  }
  std::vector<uint64_t> at(iov.size());
  for (size_t i = 0, o = 0; i < iov.size(); o += iov[i].size(), ++i) at[i] = offset + o;
  // Each piece at its own offset: O_APPEND was resolved above, once for the whole vector.
  auto got = RunParallel(iov.size(), kMaxVectorParallel,
                         [&](size_t i) { return WriteAt(at[i], iov[i]); });
  size_t total = 0;
  for (auto& r : got) {
    if (!r.ok()) return total > 0 ? Result<size_t>(total) : Result<size_t>(r.status());
    total += *r;
  }
  return total;
}

Status NativeFile::Report(bool close, bool sync) {
  std::lock_guard lock(mu_);
  if (closed_) return Status::Ok();
  const bool dirty = dirty_.exchange(false);
  const int64_t read_ns = atime_ns_.load();
  const bool atime_due = read_ns > 0 && relatime_due_;
  if (!close && !dirty && !sync) return Status::Ok();
  Metadata::CloseArgs a;
  a.ino = ino_;
  a.handle = close ? handle_ : 0;
  a.wrote = dirty;
  a.size = acked_end_.load();
  a.mtime_ns = mtime_ns_.load();
  a.atime_ns = close && atime_due ? read_ns : 0;
  a.sync = sync;
  Result<proto::AttrReply> r = fs_->md_.Close(fs_->cred_, a);
  if (close) {
    closed_ = true;
    if (fs_->session_ && handle_ != 0) fs_->session_->Closed(handle_);
  }
  if (!r.ok()) {
    if (dirty && !close) dirty_.store(true);  // report again at the next chance
    return r.status();
  }
  if (close && atime_due) relatime_due_ = false;
  return Status::Ok();
}

Status NativeFile::Fsync() {
  if (std::shared_ptr<const proto::Layout> l = layout()) {
    STRIA_RETURN_IF_ERROR(fs_->client_->SyncObjects(*l, capas_.get()));
  }
  if (writable() && acked_end_.load() > 0) dirty_.store(true);
  return Report(/*close=*/false, /*sync=*/true);
}

Status NativeFile::Truncate(uint64_t size) {
  if (!writable()) return Status(Code::kInval, "file not open for writing");
  if (size > kMaxFileSize) return Status(Code::kFBig, "size beyond the maximum file size");
  if (std::shared_ptr<const proto::Layout> l = layout(); l && HasObjects(*l)) {
    STRIA_RETURN_IF_ERROR(fs_->client_->TruncateObjects(*l, size, capas_.get()));
  }
  // Writes acknowledged before the truncate are reported first, so the MDS's max(size)
  // rule cannot undo the truncate at close.
  STRIA_RETURN_IF_ERROR(Report(/*close=*/false, /*sync=*/false));
  proto::SetattrRequest sr;
  sr.set_ino(ino_);
  sr.set_handle(handle_);
  sr.set_valid(proto::SETATTR_SIZE);
  sr.mutable_attr()->set_size(size);
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply r, fs_->md_.Setattr(fs_->cred_, std::move(sr)));
  {
    std::lock_guard lock(mu_);
    open_data_.reset();
  }
  size_.store(size);
  acked_end_.store(size);
  return Status::Ok();
}

Result<proto::Attr> NativeFile::Stat() {
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply r, fs_->md_.Getattr(fs_->cred_, ino_));
  proto::Attr a = r.attr();
  if (size_.load() > a.size()) a.set_size(size_.load());
  if (dirty_.load() && mtime_ns_.load() > a.mtime_ns()) a.set_mtime_ns(mtime_ns_.load());
  return a;
}

Status NativeFile::Close() { return Report(/*close=*/true, /*sync=*/false); }

}  // namespace stria::client
