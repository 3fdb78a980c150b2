#include "oss/internal/object_pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/log.h"

namespace stria::oss::internal {

namespace {

// The file's number when `name` is one of the pool's files.
bool ParseName(const char* name, uint64_t* n) {
  const char* end = name + strlen(name);
  if (name == end) return false;
  auto [p, ec] = std::from_chars(name, end, *n);
  return ec == std::errc() && p == end;
}

constexpr std::chrono::seconds kRetryAfterFailure{10};

}  // namespace

std::string ObjectPool::PathOf(uint64_t n) { return fmt::format("{}/{}", kDir, n); }

Result<std::unique_ptr<ObjectPool>> ObjectPool::Open(int root_fd,
                                                     const ObjectPoolOptions& options) {
  if (mkdirat(root_fd, kDir, 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(fmt::format("mkdir {}", kDir), errno);
  }
  const int dir_fd = openat(root_fd, kDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoStatus(fmt::format("open {}", kDir), errno);
  DIR* dir = fdopendir(dir_fd);
  if (dir == nullptr) {
    const int err = errno;
    close(dir_fd);
    return ErrnoStatus(fmt::format("opendir {}", kDir), err);
  }
  // Files left by an earlier run are emptied again before use: one may have been recycled
  // with its data just before a crash.
  std::vector<uint64_t> adopted;
  uint64_t next = 0;
  while (const dirent* e = readdir(dir)) {
    uint64_t n = 0;
    if (!ParseName(e->d_name, &n)) continue;
    next = std::max(next, n + 1);
    if (adopted.size() < options.max_files) {
      adopted.push_back(n);
    } else if (unlinkat(root_fd, PathOf(n).c_str(), 0) != 0 && errno != ENOENT) {
      const int err = errno;
      closedir(dir);
      return ErrnoStatus("unlink " + PathOf(n), err);
    }
  }
  closedir(dir);
  return std::unique_ptr<ObjectPool>(
      new ObjectPool(root_fd, options, {}, std::move(adopted), next));
}

ObjectPool::ObjectPool(int root_fd, const ObjectPoolOptions& options, std::vector<uint64_t> ready,
                       std::vector<uint64_t> dirty, uint64_t next)
    : root_fd_(root_fd),
      options_(options),
      ready_(std::move(ready)),
      dirty_(std::move(dirty)),
      next_(next),
      next_batch_(std::min<size_t>(8, std::max<size_t>(options.precreate, 1))),
      busy_(!dirty_.empty()) {
  thread_ = std::thread([this] { Run(); });
}

ObjectPool::~ObjectPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  stopping_.store(true, std::memory_order_relaxed);
  wake_.notify_all();
  thread_.join();
}

size_t ObjectPool::ready() const {
  std::lock_guard lock(mu_);
  return ready_.size();
}

size_t ObjectPool::dirty() const {
  std::lock_guard lock(mu_);
  return dirty_.size();
}

ObjectPoolStats ObjectPool::Stats() const {
  std::lock_guard lock(mu_);
  return ObjectPoolStats{.limit = options_.max_files,
                         .ready = ready_.size(),
                         .emptying = dirty_.size(),
                         .precreated = precreated_,
                         .placed = placed_,
                         .missed = missed_,
                         .kept = kept_};
}

void ObjectPool::ClearCounters() {
  std::lock_guard lock(mu_);
  precreated_ = placed_ = missed_ = kept_ = 0;
}

void ObjectPool::WaitIdle() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return !busy_ && dirty_.empty() && batch_ == 0; });
}

Result<bool> ObjectPool::Place(const std::string& rel) {
  for (;;) {
    uint64_t n = 0;
    {
      std::lock_guard lock(mu_);
      const size_t held = ready_.size() + dirty_.size() + in_hand_ + batch_;
      if (disabled_) return false;
      if (ready_.empty()) {
        ++missed_;
        // Running dry: ask for a batch, and a larger one each time this happens (not again
        // for a while after a batch failed: out of inodes or space, most likely).
        if (options_.precreate > 0 && batch_ == 0 && held < options_.max_files &&
            std::chrono::steady_clock::now() >= retry_after_) {
          batch_ = std::min(next_batch_, options_.max_files - held);
          next_batch_ = std::min(next_batch_ * 2, options_.precreate);
          wake_.notify_one();
        }
        return false;
      }
      n = ready_.back();
      ready_.pop_back();
      // Ask for the next batch before this one is used up.
      if (options_.precreate > 0 && batch_ == 0 && ready_.size() + in_hand_ < next_batch_ / 2 &&
          held - 1 < options_.max_files) {
        batch_ = std::min(next_batch_, options_.max_files - (held - 1));
        wake_.notify_one();
      }
    }
    const std::string src = PathOf(n);
    if (renameat2(root_fd_, src.c_str(), root_fd_, rel.c_str(), RENAME_NOREPLACE) == 0) {
      std::lock_guard lock(mu_);
      ++placed_;
      return true;
    }
    const int err = errno;
    if (err == ENOENT && faccessat(root_fd_, src.c_str(), F_OK, 0) != 0 && errno == ENOENT) {
      LOG_WARN("object pool: {} has gone; skipping it", src);
      continue;
    }
    if (err == EINVAL) {
      // The file system cannot rename without replacing: the pool stays unused.
      LOG_WARN(
          "object pool: renameat2(RENAME_NOREPLACE) is not supported here; objects are "
          "created one by one");
      std::lock_guard lock(mu_);
      ready_.push_back(n);
      disabled_ = true;
      return false;
    }
    {
      std::lock_guard lock(mu_);
      ready_.push_back(n);
    }
    if (err == EEXIST) return Status(Code::kExist, rel + " exists");
    if (err == ENOENT) return Status(Code::kNoEnt, "no directory for " + rel);
    return ErrnoStatus(fmt::format("rename {} to {}", src, rel), err);
  }
}

Result<bool> ObjectPool::Recycle(const std::string& rel) {
  uint64_t n = 0;
  {
    std::lock_guard lock(mu_);
    if (disabled_ || ready_.size() + dirty_.size() + in_hand_ >= options_.max_files) {
      return false;
    }
    n = next_++;
    ++in_hand_;
  }
  // The object goes first, at once; then its blocks, here rather than later in the thread,
  // so that space freed by a destroy is free when the destroy is answered, as with unlink.
  const std::string dst = PathOf(n);
  const int rc = renameat(root_fd_, rel.c_str(), root_fd_, dst.c_str());
  const int err = errno;
  const bool emptied = rc == 0 && !Empty({n}).empty();
  std::lock_guard lock(mu_);
  --in_hand_;
  if (rc != 0) {
    if (err == ENOENT) return Status(Code::kNoEnt, rel + " does not exist");
    return ErrnoStatus(fmt::format("rename {} to {}", rel, dst), err);
  }
  if (emptied) {
    ready_.push_back(n);
    ++kept_;
  }
  return true;
}

std::vector<uint64_t> ObjectPool::Empty(const std::vector<uint64_t>& dirty) {
  std::vector<uint64_t> emptied;
  emptied.reserve(dirty.size());
  for (uint64_t n : dirty) {
    const std::string path = PathOf(n);
    // Never through a link, and nothing but a plain file: what else sits in P/ (put there
    // by hand) is left alone and not used.
    const int fd =
        openat(root_fd_, path.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      const int err = fd < 0 ? errno : EINVAL;
      if (fd >= 0) close(fd);
      LOG_WARN("object pool: {} is not an empty file it can use: {}", path,
               ErrnoStatus("open", err).message());
      continue;
    }
    if (ftruncate(fd, 0) != 0) {
      LOG_WARN("object pool: cannot empty {}: {}", path, ErrnoStatus("ftruncate", errno).message());
      close(fd);
      continue;
    }
    close(fd);
    emptied.push_back(n);
  }
  return emptied;
}

std::vector<uint64_t> ObjectPool::Create(size_t batch) {
  uint64_t first = 0;
  {
    std::lock_guard lock(mu_);
    first = next_;
    next_ += batch;
  }
  std::vector<uint64_t> made;
  made.reserve(batch);
  for (uint64_t n = first; n < first + batch; ++n) {
    if (stopping_.load(std::memory_order_relaxed)) break;
    const std::string path = PathOf(n);
    const int fd = openat(root_fd_, path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      // Out of inodes or space, most likely: the objects' own creates will say so.
      LOG_WARN("object pool: cannot precreate {}: {}", path,
               ErrnoStatus("create", errno).message());
      break;
    }
    close(fd);
    made.push_back(n);
  }
  return made;
}

void ObjectPool::Run() {
  // Below the RPC workers: precreating and emptying are never more urgent than a request.
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
  std::unique_lock lock(mu_);
  for (;;) {
    busy_ = false;
    idle_.notify_all();
    wake_.wait(lock, [&] { return stop_ || !dirty_.empty() || batch_ > 0; });
    if (stop_) return;
    busy_ = true;
    std::vector<uint64_t> dirty;
    dirty.swap(dirty_);
    const size_t batch = batch_;
    batch_ = 0;
    in_hand_ += dirty.size() + batch;
    lock.unlock();
    std::vector<uint64_t> ready = Empty(dirty);
    std::vector<uint64_t> made = Create(batch);
    lock.lock();
    in_hand_ -= dirty.size() + batch;
    ready_.insert(ready_.end(), ready.begin(), ready.end());
    ready_.insert(ready_.end(), made.begin(), made.end());
    precreated_ += made.size();
    if (made.size() < batch && !stop_)
      retry_after_ = std::chrono::steady_clock::now() + kRetryAfterFailure;
  }
}

}  // namespace stria::oss::internal
