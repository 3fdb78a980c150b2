// Statahead: the lookups a directory's readers are about to make, asked before they come
// (Lustre's statahead, in the form Lustre 2.16 gives it for names that follow a pattern).
//
// A training job's samples are files with numbered names (img_000123.jpg, shard-00042.tar),
// read in order, often by several DataLoader workers at once. After the kernel forgets them
// (memory pressure, drop_caches, the first pass of a job), each read costs a LOOKUP that
// goes to the MDS: one round trip, its wake-ups on both ends, per file. Here the mount
// watches each directory's lookups: once kMinRun of them in a row name the same pattern
// (a prefix, a number, a suffix; the numbers within kJitter of the highest seen, as
// workers reading in turn ask them slightly out of order, while a worker that lags up to
// kBehind neither adds to the run nor ends it), it asks the MDS for the next
// names of the pattern, a window of them, in one batched lookup (LookupRequest.more_names, with the
// open intent where the directory's reads follow their lookups: pre_opens.h), from a
// thread of its own, and keeps the replies. The kernel's LOOKUP of such a name takes its
// reply here, or waits for the request already carrying it. Asking again when the readers
// are half a window from its end keeps the replies ahead of them: a directory read in
// order costs one MDS request per half window instead of one per file. The window starts
// at kFirstWindow and doubles each time a window's worth is used, up to `window` (as
// readahead grows), and halves at each reply not used.
//
// What a reply kept here may be used for is decided by the caller (StriaFs::DoLookup): the
// same rule as for a reply that just arrived. It came with the MDS's metadata leases, no
// revocation has come since its request began, the same user asks, and this mount changed
// nothing of the file since. Every revocation also drops all that is kept (Clear), and
// this mount's own changes of a directory's names drop that directory's (DropDir). A
// reply not taken within `keep` is dropped. A name whose reply is not kept (it does not
// exist, an error, a reply without leases) is looked up as usual.
//
// What it costs when the guess is wrong: names that nobody looks up (the readers stopped,
// or the kernel still had them) are looked up, and with the intent opened and closed,
// unused. Each directory has a credit of lookups asked ahead that went unused; one used
// earns one back; when it runs out, the directory asks nothing ahead until a new run
// begins. Names that do not follow a pattern (shuffled reads) never start a run.
//
// Thread-safety: thread-safe. `fetch` runs on the worker thread, `drop` on the caller's or
// the worker's, neither under the lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client/fuse/lease_cache.h"
#include "client/fuse/pre_opens.h"
#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client::fuse {

// A reply kept for a name asked ahead.
struct AheadEntry {
  proto::EntryReply rep;              // the MDS's reply for the name, its open taken out
  std::shared_ptr<PreOpen> pre_open;  // that open, held in PreOpens; null: none
  LeaseCache::Stamp stamp;            // taken before the request was sent
  uint64_t changes_before = 0;        // LocalChanges::Now() before the request
  proto::Credentials cred;            // the request's
};

// A name split around its last run of digits: prefix, number, suffix. width: the digits'
// count when they begin with a 0 (zero-padded names keep it), else 0.
struct NamePattern {
  std::string prefix, suffix;
  int width = 0;
  bool operator==(const NamePattern&) const = default;
};
// False when the name has no digits, or more than 18 in its last run.
bool SplitName(std::string_view name, NamePattern* pattern, uint64_t* number);
std::string JoinName(const NamePattern& pattern, uint64_t number);

class Statahead {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kMinRun = 4;        // lookups in a run before any is asked ahead
  static constexpr int kMaxWindow = 128;   // statahead_max's upper bound
  static constexpr int kFirstWindow = 8;   // how far a run asks ahead at first
  static constexpr uint64_t kJitter = 64;  // how far from the highest a run's numbers stray
  // How far behind the highest a reader of the run may lag (workers drift apart): its
  // lookups neither extend the run nor end it.
  static constexpr uint64_t kBehind = 1024;
  static constexpr size_t kMaxDirs = 256;  // runs followed at once; beyond, they start again
  static constexpr std::chrono::seconds kMaxWait{2};  // a LOOKUP's wait for a request ahead

  struct Job {
    uint64_t dir = 0;
    proto::Credentials cred;
    std::vector<std::string> names;
    bool open = false;  // with the open intent (O_RDONLY)
  };
  // Looks up job's names at the MDS: one result per name, in order (an error: not kept).
  using FetchFn = std::function<std::vector<Result<AheadEntry>>(const Job&)>;
  // An entry that goes unused (its pre-open closed): not asked for in time (kUnused: it
  // counts against the directory's open intents, pre_opens.h), or dropped for a change.
  enum class Why { kUnused, kChanged };
  using DropFn = std::function<void(AheadEntry&, Why)>;
  // Whether a lookup in `dir` would carry the open intent now (PreOpens' score).
  using WantOpenFn = std::function<bool(uint64_t dir)>;

  // window 0: off (Lookup asks nothing ahead, and returns nothing) until set_window.
  Statahead(int window, std::chrono::milliseconds keep, FetchFn fetch, DropFn drop,
            WantOpenFn want_open);
  ~Statahead();  // Stop()s
  Statahead(const Statahead&) = delete;
  Statahead& operator=(const Statahead&) = delete;

  // Ends the worker and drops everything kept. Later Lookups return nothing.
  void Stop();
  // How far ahead a run may ask (llite.*.statahead_max), 0 to 128; 0 stops asking.
  void set_window(int window);
  int window() const { return window_.load(std::memory_order_relaxed); }

  // The kernel's LOOKUP of `name` in `dir` by `cred`: notes it in the directory's run,
  // queues the names ahead when the run calls for it, and returns the reply kept for this
  // name, after waiting (at most kMaxWait) for a request ahead that carries it. nullopt:
  // none; ask the MDS. The caller says what came of a reply: Used or Unused.
  std::optional<AheadEntry> Lookup(uint64_t dir, std::string_view name,
                                   const proto::Credentials& cred);
  // The kernel was answered with the reply (a hit: the run asks further ahead).
  void Used(uint64_t dir);
  // The reply could not be used (a miss).
  void Unused(uint64_t dir);
  // Drops everything kept and in flight (a revocation).
  void Clear();
  // Drops what is kept and in flight for `dir` (this mount changed its names).
  void DropDir(uint64_t dir);
  // Drops what is kept for which `pred` is true, and everything in flight (this mount
  // changed files that may be kept under other names: hard links).
  void DropIf(const std::function<bool(const proto::EntryReply&)>& pred);

  // In Lustre's words (llite.*.statahead_stats).
  struct Counters {
    uint64_t runs = 0;      // "statahead total": runs that began asking ahead
    uint64_t wrong = 0;     // "statahead wrong": runs stopped for names asked in vain
    uint64_t requests = 0;  // MDS requests sent ahead
    uint64_t asked = 0;     // names in them
    uint64_t unkept = 0;    // ... whose reply was not kept (no such name, no lease, an error)
    uint64_t hits = 0;      // kernel lookups answered with a reply kept here
    uint64_t waits = 0;     // lookups that waited for the request carrying their name
    uint64_t misses = 0;    // replies kept and never used
    uint64_t kept = 0;      // replies kept now
  };
  Counters counters() const;

 private:
  struct DirRun {
    NamePattern pattern;
    uint64_t highest = 0;    // the highest number looked up
    uint64_t asked = 0;      // the highest number asked ahead
    int length = 0;          // lookups in the run so far
    int credit = 0;          // names it may still ask in vain
    int window = 0;          // how far ahead it asks now: kFirstWindow, doubling up to window_
    int used_in_window = 0;  // replies used since the window last grew
    bool asking = false;     // it has asked ahead
    Clock::time_point used;
  };
  struct Slot {
    uint64_t id = 0;  // which request asked it (a name dropped and asked again: another)
    bool pending = true;
    std::optional<AheadEntry> entry;  // once done: the reply, or none
    Clock::time_point due;            // once done: dropped unused after
  };
  using Key = std::pair<uint64_t, std::string>;
  struct Queued {
    Job job;
    std::vector<uint64_t> ids;  // each name's Slot::id
  };

  // Notes the lookup in dir's run, with `max` the window allowed now (> 0); returns the
  // job to queue, if any. REQUIRES mu_.
  std::optional<Queued> ObserveLocked(uint64_t dir, std::string_view name,
                                      const proto::Credentials& cred, bool want_open, int max);
  // Erases the slots matching `pred` (done or in flight) and drops their entries.
  void DropSlots(const std::function<bool(const Key&, const Slot&)>& pred);
  // Moves the entries of slots matching `pred` to `out` and erases the slots. REQUIRES mu_.
  void TakeSlotsLocked(const std::function<bool(const Key&, const Slot&)>& pred,
                       std::vector<AheadEntry>* out);
  // `n` names of dir's run asked in vain: its credit goes down by n, and with `shrink`
  // (replies kept and not used) its window halves. REQUIRES mu_.
  void Charge(uint64_t dir, int n, bool shrink);
  void Run();

  std::atomic<int> window_;
  const std::chrono::milliseconds keep_;
  const FetchFn fetch_;
  const DropFn drop_;
  const WantOpenFn want_open_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;            // a job queued, or stop
  std::condition_variable done_cv_;            // a slot done
  std::unordered_map<uint64_t, DirRun> runs_;  // GUARDED_BY(mu_)
  std::map<Key, Slot> slots_;                  // GUARDED_BY(mu_)
  std::vector<Queued> jobs_;                   // GUARDED_BY(mu_)
  uint64_t next_id_ = 0;                       // GUARDED_BY(mu_)
  Counters counters_;                          // GUARDED_BY(mu_)
  bool stop_ = false;                          // GUARDED_BY(mu_)
  std::thread worker_;
};

}  // namespace stria::client::fuse
