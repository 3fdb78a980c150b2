#include "mds/internal/power_loss_fs.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace stria::mds::internal {
namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

// A file written through PowerLossFs: writes reach the real file until the power is cut,
// and the file system learns what was written and what was synced.
class TrackedFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  TrackedFile(std::unique_ptr<rocksdb::FSWritableFile> f, PowerLossFs* fs, std::string name,
              uint64_t size)
      : FSWritableFileOwnerWrapper(std::move(f)), fs_(fs), name_(std::move(name)), size_(size) {}

  IOStatus Append(const Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    if (fs_->power_cut()) return IOStatus::OK();
    IOStatus st = target()->Append(data, o, dbg);
    if (st.ok()) Wrote(size_ + data.size());
    return st;
  }
  IOStatus Append(const Slice& data, const IOOptions& o,
                  const rocksdb::DataVerificationInfo& v, IODebugContext* dbg) override {
    if (fs_->power_cut()) return IOStatus::OK();
    IOStatus st = target()->Append(data, o, v, dbg);
    if (st.ok()) Wrote(size_ + data.size());
    return st;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t off, const IOOptions& o,
                            IODebugContext* dbg) override {
    if (fs_->power_cut()) return IOStatus::OK();
    IOStatus st = target()->PositionedAppend(data, off, o, dbg);
    if (st.ok()) Wrote(std::max(size_, off + data.size()));
    return st;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t off, const IOOptions& o,
                            const rocksdb::DataVerificationInfo& v,
                            IODebugContext* dbg) override {
    if (fs_->power_cut()) return IOStatus::OK();
    IOStatus st = target()->PositionedAppend(data, off, o, v, dbg);
    if (st.ok()) Wrote(std::max(size_, off + data.size()));
    return st;
  }
  IOStatus Truncate(uint64_t size, const IOOptions& o, IODebugContext* dbg) override {
    if (fs_->power_cut()) return IOStatus::OK();
    IOStatus st = target()->Truncate(size, o, dbg);
    if (st.ok()) {
      size_ = size;
      fs_->NoteTruncate(name_, size);
    }
    return st;
  }
  IOStatus Flush(const IOOptions& o, IODebugContext* dbg) override {
    if (fs_->power_cut()) return IOStatus::OK();
    return target()->Flush(o, dbg);
  }
  IOStatus Sync(const IOOptions& o, IODebugContext* dbg) override {
    if (fs_->power_cut()) return IOStatus::OK();
    IOStatus st = target()->Sync(o, dbg);
    if (st.ok()) fs_->NoteSync(name_);
    return st;
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    if (fs_->power_cut()) return IOStatus::OK();
    IOStatus st = target()->Fsync(o, dbg);
    if (st.ok()) fs_->NoteSync(name_);
    return st;
  }
  // A range sync is not a sync of the file: nothing is marked durable.
  IOStatus RangeSync(uint64_t off, uint64_t n, const IOOptions& o, IODebugContext* dbg) override {
    if (fs_->power_cut()) return IOStatus::OK();
    return target()->RangeSync(off, n, o, dbg);
  }

 private:
  void Wrote(uint64_t end) {
    size_ = end;
    fs_->NoteWrite(name_, end);
  }

  PowerLossFs* const fs_;
  const std::string name_;
  uint64_t size_;
};

}  // namespace

std::unique_ptr<rocksdb::Env> PowerLossFs::NewEnv(std::shared_ptr<PowerLossFs>* fs) {
  *fs = std::make_shared<PowerLossFs>(rocksdb::FileSystem::Default());
  return rocksdb::NewCompositeEnv(*fs);
}

IOStatus PowerLossFs::Track(const std::string& f, uint64_t initial_size, IOStatus st,
                            std::unique_ptr<rocksdb::FSWritableFile>* r) {
  if (!st.ok()) return st;
  {
    std::lock_guard lock(mu_);
    FileState& s = files_[f];
    s.size = initial_size;
    s.synced = std::min(s.synced, initial_size);
    if (cut_.load()) s.after_cut = true;
  }
  *r = std::make_unique<TrackedFile>(std::move(*r), this, f, initial_size);
  return st;
}

IOStatus PowerLossFs::NewWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      IODebugContext* dbg) {
  {
    std::lock_guard lock(mu_);
    files_[f].synced = 0;  // created empty (or truncated): nothing of it is durable yet
  }
  return Track(f, 0, target()->NewWritableFile(f, opts, r, dbg), r);
}

IOStatus PowerLossFs::ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                         std::unique_ptr<rocksdb::FSWritableFile>* r,
                                         IODebugContext* dbg) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(f, ec);
  const uint64_t existing = ec ? 0 : size;
  {
    std::lock_guard lock(mu_);
    auto [it, fresh] = files_.try_emplace(f);
    if (fresh) it->second.synced = existing;  // written before we were watching: durable
  }
  return Track(f, existing, target()->ReopenWritableFile(f, opts, r, dbg), r);
}

IOStatus PowerLossFs::ReuseWritableFile(const std::string& f, const std::string& old,
                                        const rocksdb::FileOptions& opts,
                                        std::unique_ptr<rocksdb::FSWritableFile>* r,
                                        IODebugContext* dbg) {
  {
    std::lock_guard lock(mu_);
    files_.erase(old);
    files_[f].synced = 0;  // overwritten from the start: its old bytes do not count
  }
  return Track(f, 0, target()->ReuseWritableFile(f, old, opts, r, dbg), r);
}

IOStatus PowerLossFs::RenameFile(const std::string& s, const std::string& t,
                                 const IOOptions& opts, IODebugContext* dbg) {
  if (cut_.load()) return IOStatus::OK();
  IOStatus st = target()->RenameFile(s, t, opts, dbg);
  if (st.ok()) {
    std::lock_guard lock(mu_);
    auto it = files_.find(s);
    if (it != files_.end()) {
      files_[t] = it->second;
      files_.erase(s);
    }
  }
  return st;
}

IOStatus PowerLossFs::DeleteFile(const std::string& f, const IOOptions& opts,
                                 IODebugContext* dbg) {
  if (cut_.load()) return IOStatus::OK();
  IOStatus st = target()->DeleteFile(f, opts, dbg);
  if (st.ok()) {
    std::lock_guard lock(mu_);
    files_.erase(f);
  }
  return st;
}

void PowerLossFs::NoteWrite(const std::string& f, uint64_t end) {
  std::lock_guard lock(mu_);
  files_[f].size = end;
}

void PowerLossFs::NoteTruncate(const std::string& f, uint64_t size) {
  std::lock_guard lock(mu_);
  FileState& s = files_[f];
  s.size = size;
  s.synced = std::min(s.synced, size);
}

void PowerLossFs::NoteSync(const std::string& f) {
  std::lock_guard lock(mu_);
  FileState& s = files_[f];
  s.synced = s.size;
}

uint64_t PowerLossFs::DropUnsynced() {
  std::lock_guard lock(mu_);
  uint64_t dropped = 0;
  for (const auto& [name, s] : files_) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(name, ec);
    if (ec) continue;  // removed before the cut
    if (s.after_cut) {
      dropped += size;
      std::filesystem::remove(name, ec);
    } else if (size > s.synced) {
      dropped += size - s.synced;
      std::filesystem::resize_file(name, s.synced, ec);
    }
  }
  files_.clear();
  return dropped;
}

}  // namespace stria::mds::internal
