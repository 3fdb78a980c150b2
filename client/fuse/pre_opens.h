// PreOpens: opens the MDS made with the lookup that found a file (LookupRequest.open, the
// open intent of Lustre's lookups), held until the kernel's OPEN of the file takes them.
//
// The kernel sends a cold open(2) of a path to the mount as two requests, LOOKUP of the name
// and then OPEN of the inode, and each took an MDS round trip. Where a directory's lookups
// are followed by read-only opens of what they found (a DataLoader reading its samples, cat,
// cp, tar c), the mount asks the MDS to open the file with the lookup: one round trip for
// both. The open is an ordinary one: the MDS checks access, counts it, keeps the file as an
// orphan if it is unlinked meanwhile, and a restarted MDS gets it replayed. The kernel's OPEN
// takes it when it comes from the same user, read-only, within `keep`; one not taken by
// then is closed unused (with the gathered closes, StriaFs::ClosePreOpen).
//
// What keeps close-to-open: a pre-open is set on its inode only under the attribute lease
// that came with the lookup, lasting at least `keep` more (StriaFs::KeepPreOpen). Another
// client's change of the file, its open for writing included, revokes that lease first, and
// the revocation closes the pre-open before it is answered (StriaFs::AttrLeasesRevoked);
// so does this mount's own setattr, and the loss of all leases (DiscardAll). An OPEN that
// finds none asks the MDS.
//
// Which lookups carry the intent: a score per directory (0 to kMaxScore), one up when a
// read-only open follows a lookup there without intent, one down for each lookup sent with
// the intent (back up if it brought no open) and two up when its pre-open is taken, kWasteCost down
// in all when it goes unused (stat, ls -l, a lookup on the way to another name). The lookups of a
// directory carry the intent while its score is at least kWantScore. So a stat-only scan of a
// directory whose files were being read wastes at most kMaxScore - kWantScore + 1 opens, and then
// asks plainly.
//
// Thread-safety: thread-safe. `close` runs on the worker thread, in Stop, or in Drop's
// caller; never under the lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "proto/stria.pb.h"

namespace stria::client::fuse {

struct PreOpen {
  uint64_t parent = 0;  // the directory the lookup was in
  uint64_t ino = 0;
  proto::Credentials cred;           // the lookup's: the kernel's OPEN must come from the same user
  proto::OpenReply reply;            // the MDS's open
  std::atomic<bool> claimed{false};  // taken by an OPEN, or closed: by one party only
};

// LocalChanges: which files this mount changed where the MDS revokes none of its own
// leases (a writer starting or ending, a size report answered, a setattr), so that a lookup
// in flight across such a change of its file keeps no open (StriaFs::KeepPreOpen). A lookup
// notes Now() when it is sent and asks ChangedSince with the inode its reply names; the
// inode is not known before, and may be made by that very reply. The last kLog changes are
// remembered: a lookup that more happened across counts its file as changed. So a mount
// that writes some files while it reads others (a checkpoint saved during training) keeps
// the opens of the files it only reads.
//
// Thread-safety: thread-safe. Note's change is seen by every ChangedSince that begins after
// Note returns (the ordering StriaFs::KeepPreOpen's check after setting relies on).
class LocalChanges {
 public:
  static constexpr uint64_t kLog = 256;

  // The count of changes so far.
  uint64_t Now() const { return count_.load(); }
  // This mount changes `ino`.
  void Note(uint64_t ino);
  // Whether `ino` changed after Now() was `since` (or too much changed since to tell).
  bool ChangedSince(uint64_t since, uint64_t ino) const;

 private:
  mutable std::mutex mu_;
  std::atomic<uint64_t> count_{0};  // written under mu_
  uint64_t log_[kLog] = {};         // GUARDED_BY(mu_): the ino of change n at n % kLog
};

class PreOpens {
 public:
  using Clock = std::chrono::steady_clock;
  using CloseFn = std::function<void(const PreOpen&)>;
  static constexpr int kWantScore = 2;
  static constexpr int kMaxScore = 8;
  static constexpr int kWasteCost = 4;
  static constexpr size_t kMaxDirs = 4096;  // scores kept; beyond, they start again

  // keep 0: off (Want is always false).
  PreOpens(std::chrono::milliseconds keep, CloseFn close);
  ~PreOpens();  // Stop()s
  PreOpens(const PreOpens&) = delete;
  PreOpens& operator=(const PreOpens&) = delete;

  // Ends the worker and closes every pre-open still held. Later Holds are closed at once.
  void Stop();

  // Whether a lookup in `dir` should carry the open intent. Yes takes the point that a
  // pre-open held there costs at once, so that lookups of one directory in flight together
  // (FUSE_PARALLEL_DIROPS) are counted as they are asked, not as their replies come; a
  // lookup asked with the intent whose reply brings no open gives it back (NotHeld).
  bool Want(uint64_t dir);
  void NotHeld(uint64_t dir);
  // Whether lookups in `dir` carry the intent now, taking nothing: for lookups asked ahead
  // of the kernel's (statahead.h), whose unused opens cost kWasteCost each all the same.
  bool Wants(uint64_t dir) const;
  // A read-only open followed a lookup without intent of the same file in `dir`.
  void OpenedAfterLookup(uint64_t dir);

  // A pre-open the MDS made: held `keep` for Take, then closed unless taken (in sweeps,
  // up to a tenth of `keep` later, 10-100 ms).
  void Hold(std::shared_ptr<PreOpen> p);
  // The kernel's OPEN takes p (it is the caller's handle now): false when it was taken or
  // closed already.
  bool Take(PreOpen& p);
  // p cannot serve an OPEN (another user, write access, a change since): closed now, unless
  // taken or closed already (false then).
  bool Drop(PreOpen& p);
  // The same for one that a change made useless (statahead.h): closed, not counted
  // against its directory's score.
  bool Withdraw(PreOpen& p);
  // Closes every pre-open held and not claimed (the mount lost its leases).
  void DiscardAll();

  struct Counters {
    uint64_t held = 0;    // opens made with a lookup
    uint64_t used = 0;    // ... taken by the kernel's OPEN
    uint64_t wasted = 0;  // ... closed unused
    size_t pending = 0;   // held now, neither taken nor closed
  };
  Counters counters() const;

 private:
  struct Entry {
    std::shared_ptr<PreOpen> p;
    Clock::time_point due;
  };
  void Score(uint64_t dir, int delta);  // REQUIRES mu_
  // Closes p unless taken or closed already, moving its directory's score by `score`.
  bool CloseUnused(PreOpen& p, int score);
  bool ClaimLocked(PreOpen& p);         // REQUIRES mu_: p is this caller's alone
  void Run();

  const std::chrono::milliseconds keep_;
  const CloseFn close_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> held_;                    // GUARDED_BY(mu_), by due
  std::unordered_map<uint64_t, int> scores_;  // GUARDED_BY(mu_)
  Counters counters_;                         // GUARDED_BY(mu_)
  bool stop_ = false;                         // GUARDED_BY(mu_)
  std::thread worker_;
};

}  // namespace stria::client::fuse
