// LocalOpens: read-only opens that the MDS has not heard of yet.
//
// A mount that holds an attribute lease on a file (client/fuse/lease_cache.h) knows its
// attributes and layout as the MDS has them, and nobody else can change them without
// revoking the lease first; so it opens the file for reading without an MDS request
// (StriaFs::OpenHandle). The MDS needs to hear of an open for one thing only: to keep a file
// unlinked while open as an orphan until its last close (and to replay the handle after an
// MDS restart). Here each such open waits `delay` to be registered (OP_MDS_OPEN, done by
// `register_open`); a release before then withdraws it, and the open costs the MDS nothing
// (a cold read of a small file: lookup, open, read and close in a millisecond or two).
//
// What keeps the orphan rule: an unlink or a rename that may drop the last link of a file
// revokes the other mounts' leases on it before it changes anything (mds_service.cc,
// RevokeVictimFirst), and the revocation registers the file's pending opens here before it
// answers (RegisterInodes); an unlink or rename from this mount registers all of them first
// (RegisterAll). What is left is the case of a mount that loses its leases (it did not
// answer a revocation within the MDS's timeout, or the MDS restarted): an open made in the
// `delay` before may miss a concurrent unlink by another mount, as a Lustre client evicted
// loses its opens.
//
// Off by default (open_register_ms=0), experimental: a review found races this does not
// close yet. (1) This mount's own unlink registers what is pending before it asks the MDS,
// and keeps its own lease on the victim: an open made by another thread between the two, or
// through /proc/PID/fd until the lease ends, is never registered before the file goes.
// (2) The MDS reads the victim's name before it takes its lock: a rename over that name in
// between changes the victim without a revocation. (3) A revocation answers only after the
// mount's OP_MDS_OPENs, which need free MDS workers: many unlinks at once can time the
// revocations out, and the MDS then goes on without the opens. (4) The attributes an open
// goes by are read before the lease check. The fix for (3) is to carry the pending opens in
// the revocation's reply and have the MDS register them.
//
// Thread-safety: thread-safe. register_open runs on the worker thread or on the thread of
// RegisterInodes/RegisterAll, never under the lock, one at a time per handle.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace stria::client::fuse {

struct FileHandle;

class LocalOpens {
 public:
  using Clock = std::chrono::steady_clock;
  // Registers fh's open at the MDS and sets fh->mds_handle (leaves it 0 on failure).
  using RegisterFn = std::function<void(FileHandle*)>;

  LocalOpens(std::chrono::milliseconds delay, RegisterFn register_open);
  ~LocalOpens();  // Stop()s
  LocalOpens(const LocalOpens&) = delete;
  LocalOpens& operator=(const LocalOpens&) = delete;

  // Ends the worker (after a registration in progress); pending opens are dropped.
  void Stop();

  // fh was opened without the MDS: register it in `delay` unless Withdraw()n first.
  void Add(FileHandle* fh, uint64_t ino);
  // At fh's release: true when its open was never registered (nor will be: the MDS never
  // heard of it); false when it was, after waiting for a registration in progress.
  bool Withdraw(FileHandle* fh);
  // Registers the pending opens of these inodes now, and waits for theirs in progress.
  void RegisterInodes(const std::vector<uint64_t>& inos);
  // Registers every pending open now, and waits for those in progress.
  void RegisterAll();

  struct Counters {
    uint64_t opened = 0;      // opens made without the MDS
    uint64_t withdrawn = 0;   // ... closed before being registered
    uint64_t registered = 0;  // ... registered at the MDS later
    size_t pending = 0;       // waiting to be registered now
  };
  Counters counters() const;

 private:
  struct Pending {
    FileHandle* fh;
    uint64_t ino;
    Clock::time_point due;
  };
  using List = std::list<Pending>;

  // Takes the pending entries that `pick` selects, registers them, and waits until no
  // registration of an inode in `wait_for` (every inode when null) is in progress.
  void RegisterWhere(const std::function<bool(const Pending&)>& pick,
                     const std::unordered_set<uint64_t>* wait_for);
  void RegisterTaken(std::vector<Pending> taken);
  void Run();

  const std::chrono::milliseconds delay_;
  const RegisterFn register_open_;

  mutable std::mutex mu_;
  std::condition_variable cv_;       // the worker: a new entry, or stop
  std::condition_variable done_cv_;  // a registration finished
  List pending_;                                            // GUARDED_BY(mu_), by due
  std::unordered_map<FileHandle*, List::iterator> index_;   // GUARDED_BY(mu_)
  std::unordered_map<FileHandle*, uint64_t> in_progress_;   // GUARDED_BY(mu_): fh -> ino
  Counters counters_;                                       // GUARDED_BY(mu_)
  bool stop_ = false;                                       // GUARDED_BY(mu_)
  std::thread worker_;
};

}  // namespace stria::client::fuse
