// ObjectPool: empty files an OST keeps ready for the objects it will be asked to create.
//
// Allocating an inode is the costly part of a small object's first write on some file
// systems: ext4 without a journal scans every recently freed inode of the directory's block
// group before it picks one (docs/performance.md). The pool takes that off the write's path
// twice over:
//   - precreation, as Lustre's OSTs do: a background thread creates empty files in `P/`
//     under the OST root, in batches that grow while the pool keeps running dry (8 at first,
//     doubling up to `precreate`), at a lower CPU priority than the RPC workers;
//   - reuse: a destroyed object's file is renamed into `P/` and emptied (O_TRUNC) instead
//     of being unlinked. Deleting an old checkpoint and writing the next one then allocates
//     and frees no inodes at all.
// A new object is one rename(2) (RENAME_NOREPLACE) from `P/<n>` to its path.
//
// Only emptied files are handed out: a destroy empties the file before it returns (its
// space is free then, as after an unlink), and after a crash every file found in `P/` waits
// in the dirty list until the thread has emptied it again. The caller must make sure no
// write to a destroyed object is still in flight when it recycles the file
// (ObjectStore::Destroy holds the object's lock exclusively).
//
// Files in `P/` are named by a sequence number; the pool never holds a descriptor open.
// Thread-safety: all methods are thread-safe. Lock order: mu_ is a leaf lock; no system call
// runs under it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace stria::oss::internal {

// What a pool holds and has done since it opened (or since ClearCounters).
struct ObjectPoolStats {
  size_t limit = 0;         // ObjectPoolOptions::max_files
  size_t ready = 0;         // empty files ready for new objects
  size_t emptying = 0;      // files found at start, not yet emptied
  uint64_t precreated = 0;  // files the thread created
  uint64_t placed = 0;      // new objects that got a file from the pool
  uint64_t missed = 0;      // Place calls that found none ready (the caller created one)
  uint64_t kept = 0;        // destroyed objects' files emptied and kept
};

struct ObjectPoolOptions {
  // The most files kept, ready or waiting to be emptied (destroyed objects beyond it are
  // unlinked). 0: no pool (Place always answers false, Recycle never keeps).
  size_t max_files = 4096;
  // The most files the thread creates in one batch, when the pool has none ready.
  size_t precreate = 256;
};

class ObjectPool {
 public:
  // The pool of the OST whose root directory is open as root_fd (not owned; it must outlive
  // the pool). Creates `P/`, adopts the files left there (to be emptied before use) and
  // starts the thread.
  static Result<std::unique_ptr<ObjectPool>> Open(int root_fd, const ObjectPoolOptions& options);
  ~ObjectPool();  // stops the thread
  ObjectPool(const ObjectPool&) = delete;
  ObjectPool& operator=(const ObjectPool&) = delete;

  // Moves a ready, empty file to `rel` (relative to the root) without replacing anything.
  // true: `rel` is now that file. false: none was ready (the caller creates the file itself;
  // the thread is asked for a larger batch). kExist: `rel` exists. kNoEnt: `rel`'s directory
  // does not (the caller makes it and asks again).
  Result<bool> Place(const std::string& rel);

  // Moves the file at `rel` into the pool and empties it, to be handed out again. true: the
  // file is gone from `rel` (kept, or left unused in `P/` when it could not be emptied).
  // false: the pool is full (the caller unlinks the file). kNoEnt: no file at `rel`.
  Result<bool> Recycle(const std::string& rel);

  // What the pool holds, and its counters; ClearCounters zeroes the counters.
  ObjectPoolStats Stats() const;
  void ClearCounters();

  // Files ready to be handed out, and files found at start still to be emptied (for tests
  // and stats).
  size_t ready() const;
  size_t dirty() const;

  // Blocks until the thread has emptied the files found at start and has no batch to
  // create (for tests).
  void WaitIdle();

  static constexpr const char* kDir = "P";

 private:
  ObjectPool(int root_fd, const ObjectPoolOptions& options, std::vector<uint64_t> ready,
             std::vector<uint64_t> dirty, uint64_t next);

  static std::string PathOf(uint64_t n);
  void Run();
  // Empties the files numbered `dirty`; returns those it emptied. One that is not a plain
  // file (a link, a directory) or cannot be emptied is left where it is and not used.
  std::vector<uint64_t> Empty(const std::vector<uint64_t>& dirty);
  // Creates `batch` empty files; returns them (fewer when a create failed).
  std::vector<uint64_t> Create(size_t batch);

  const int root_fd_;
  const ObjectPoolOptions options_;

  mutable std::mutex mu_;
  std::condition_variable wake_;       // the thread waits for work
  std::condition_variable idle_;       // WaitIdle waits for the thread
  std::vector<uint64_t> ready_;        // GUARDED_BY(mu_): empty files in P/
  std::vector<uint64_t> dirty_;        // GUARDED_BY(mu_): files found at start, still to empty
  uint64_t next_ = 0;                  // GUARDED_BY(mu_): the next file name
  size_t batch_ = 0;                   // GUARDED_BY(mu_): files the thread should create next
  size_t next_batch_ = 8;              // GUARDED_BY(mu_): the size of the next batch asked for
  size_t in_hand_ = 0;                 // GUARDED_BY(mu_): files the thread is working on
  bool busy_ = false;                  // GUARDED_BY(mu_): the thread is between waits
  bool stop_ = false;                  // GUARDED_BY(mu_)
  std::atomic<bool> stopping_{false};  // stop_, for a batch under way to end early
  uint64_t precreated_ = 0;            // GUARDED_BY(mu_): ObjectPoolStats's counters
  uint64_t placed_ = 0;                // GUARDED_BY(mu_)
  uint64_t missed_ = 0;                // GUARDED_BY(mu_)
  uint64_t kept_ = 0;                  // GUARDED_BY(mu_)
  bool disabled_ = false;  // GUARDED_BY(mu_): the file system cannot rename as Place must
  // GUARDED_BY(mu_): no batch is asked for before this, after one that failed
  std::chrono::steady_clock::time_point retry_after_;
  std::thread thread_;
};

}  // namespace stria::oss::internal
