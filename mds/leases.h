// Metadata leases: what lets a client answer lookups and stats from its own cache, as
// Lustre's LDLM inodebits locks (LOOKUP and UPDATE) do. docs/consistency.md#leases.
//
// A client that caches metadata (a FUSE mount) registers the NID of its callback server
// (OP_MDS_LEASE_REGISTER). The MDS then grants it, with LOOKUP, CREATE and GETATTR replies,
// leases of two kinds: an entry lease on a directory (every name the client caches in it,
// present or absent, stays as it was) and an attribute lease on an inode. Before a change
// made by one client is answered, every other client holding a lease over what it changed
// is told (OP_CLIENT_LEASE_REVOKE) and answers once it forgot what it cached; a client that
// does not answer within revoke_timeout_ms loses every lease it holds (and gets none until
// it registers again), so one dead client delays a change once, by that timeout.
//
// Races. A read that straddles a change could grant a lease over what it read before the
// change, after the change's revocation went out. Grant() therefore takes the stamp Snapshot()
// returned before the read and refuses a lease over anything another client changed since.
//
// Contention. Revoking a lease makes what it covered "contended" for contended_ms: no new
// leases over it but to the client that changed it last (whose own changes revoke nothing),
// so a directory many clients create in (a checkpoint directory) costs one revocation per
// holder, not one per create.
//
// Expiry. Ended leases, and changes too old for the race check, are forgotten by the sweep
// each grant runs first. It must not hold up grants and revocations on a big table, so it
// walks no table: an index by time (due_) says when each resource needs looking at next
// (its earliest lease's end, or when its change ages out), and a pass looks only at
// resources whose time came, at most kSweepBatch of them; the next grant goes on from there.
// The index keeps resources by tick (kTick), the tick their time falls in: a resource is
// looked at once its whole tick has passed, so never early and at most a tick late (which
// only keeps an ended lease or an old change a little longer). Keeping one ordered entry
// per resource instead cost a cold read of small files half the MDS's CPU: every grant,
// change and sweep moved a node of a tree of every resource, each step a cache miss.
//
// Write-back grants. A mount that unlinks files in a directory nobody else looks at (the
// checkpoint directory it rotates, the scratch files it cleans) may hold a write-back grant on
// it (GrantWriteback, with an unlink's reply): it then answers its unlinks there before the
// MDS has them, and sends them behind (client/fuse/unlink_writeback.h). A grant is exclusive:
// given only while no other client holds a lease over the directory, and while it lasts no
// other client gets one. Before any request of another client that names the directory (a
// lookup or a change in it, its readdir, its attributes) is served, the grant is recalled
// (RecallWriteback): the holder is sent a revocation of the directory, and answers it once
// every unlink it answered has reached the MDS. A recalled directory gets no grant for
// contended_ms. So every client sees the unlinks in the order they were answered.
//
// What a change touched comes from Txn::Commit: inside a ScopedChangeCapture (the MDS's
// request handlers) it is gathered for the handler to revoke before its reply; a commit
// outside one (background work) is revoked asynchronously through the listener.
//
// Thread-safety: every LeaseTable method is thread-safe (one mutex, never held across an RPC).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "lnet/auth.h"

namespace stria::lnet {
class RpcClient;
}

namespace stria::mds {

// What one or more commits changed: directories whose names changed and inodes whose
// attributes changed (or that went away).
struct MdChanges {
  std::set<uint64_t> dirs;
  std::set<uint64_t> inos;
  bool empty() const { return dirs.empty() && inos.empty(); }
  void Merge(const MdChanges& other);
};

// While alive, Txn::Commit on this thread adds what it changed to *sink.
class ScopedChangeCapture {
 public:
  explicit ScopedChangeCapture(MdChanges* sink);
  ~ScopedChangeCapture();
  ScopedChangeCapture(const ScopedChangeCapture&) = delete;
  ScopedChangeCapture& operator=(const ScopedChangeCapture&) = delete;
  // The innermost capture on this thread, or null.
  static MdChanges* Active();

 private:
  MdChanges* prev_;
};

struct LeaseOptions {
  int lease_ms = 30'000;           // the longest lease granted; 0: none (registering still works)
  int revoke_timeout_ms = 2'000;   // a holder that has not answered a revocation by then loses
                                   // all its leases
  int contended_ms = 5'000;        // no new leases over what was revoked, this long
  size_t max_per_client = 500'000; // leases one client may hold (then none more until some expire)
  std::shared_ptr<const lnet::KeyRing> keys;  // the cluster key, for the callback connections
  std::string fsname;
  // What the table reads the time from; null: steady_clock. Tests move a fake one.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

class LeaseTable {
 public:
  enum class Kind : uint8_t { kEntry, kAttr };
  using Clock = std::chrono::steady_clock;
  // The most resources one sweep looks at, under the table's lock.
  static constexpr size_t kSweepBatch = 1024;
  // The index's granularity: how late a sweep may look at a resource.
  static constexpr std::chrono::milliseconds kTick{32};

  explicit LeaseTable(LeaseOptions options);
  ~LeaseTable();  // stops the asynchronous revoker
  LeaseTable(const LeaseTable&) = delete;
  LeaseTable& operator=(const LeaseTable&) = delete;

  const LeaseOptions& options() const { return options_; }

  // OP_MDS_LEASE_REGISTER: leases for `client`, revoked at `callback_nid`. Replaces an
  // earlier registration (and drops its leases). kInval for a NID that does not parse; an
  // error when the MDS cannot reach it (a ping, within revoke_timeout_ms).
  Status Register(const std::string& client, const std::string& callback_nid);
  bool Registered(const std::string& client) const;
  // Whether a client other than `client` is registered (could hold a lease).
  bool OthersRegistered(const std::string& client) const;
  // Drops every lease of `client` and its registration.
  void Forget(const std::string& client);

  // The change stamp to pass to Grant, taken before the read the lease will cover.
  uint64_t Snapshot() const;
  // A lease of `kind` over `ino` for `client`, in ms (0: none: the client is not registered,
  // another client changed it after `snapshot`, it is contended, or the client has too many).
  uint32_t Grant(const std::string& client, Kind kind, uint64_t ino, uint64_t snapshot);

  // Revokes every lease over `changes` held by a client other than `requester`, and waits
  // until each holder answered or timed out. requester "" is nobody (background work).
  void Revoke(const std::string& requester, const MdChanges& changes);
  // The same without waiting, from the revoker thread (for commits outside a capture).
  void RevokeLater(MdChanges changes);
  // A write-back grant on directory `dir` for `client` (with an entry lease over it), in ms;
  // 0 when another client holds a lease over the directory or its attributes, it was
  // recalled or changed by another client within contended_ms (or since `snapshot`), or
  // the client is not registered.
  uint32_t GrantWriteback(const std::string& client, uint64_t dir, uint64_t snapshot);
  // Before a request of `requester` that names these inodes is served: recalls the
  // write-back grants on them held by other clients, and waits until each holder answered
  // (its unlinks there reached us) or timed out. Costs one atomic load while no grant is held.
  void RecallWriteback(const std::string& requester, std::initializer_list<uint64_t> inos);
  // Whether any write-back grant may be held now (one atomic load).
  bool AnyWriteback() const { return wb_grants_.load(std::memory_order_relaxed) != 0; }
  // Whether a client other than `requester` holds one (RecallWriteback would recall
  // something): a mount that made the files it now looks up holds grants, and its lookups
  // need not read what they name twice to find directories to recall.
  bool OthersHoldWriteback(const std::string& requester) const;

  // Revoke, before a change is made rather than after: what `changes` names is contended
  // from now on even where nobody held a lease, so no other client gets one between this
  // call and the change. An unlink or a rename that may drop a file's last link calls it
  // for the file: a mount that opened the file under its attribute lease without telling
  // the MDS (client/fuse/local_opens.h) registers the open before it answers.
  void RevokeBeforeChange(const std::string& requester, const MdChanges& changes);

  // Asks every registered client to send the closes it is gathering (OP_MDS_CLOSE_BATCH)
  // and waits for each to answer, or to time out. For an operation that a file open for
  // writing refuses: a handle closed a few milliseconds ago may not have reached us yet.
  // Returns how many clients answered.
  size_t FlushCloses();
  // The same for the registered clients among `clients` only (a file they hold open for
  // writing: the size of what they wrote goes with those closes). Returns the registered
  // clients that did not answer (they lose their leases, as for a revocation); unregistered
  // ones gather nothing and are skipped.
  std::vector<std::string> FlushClosesOf(const std::vector<std::string>& clients);

  struct Counters {
    uint64_t granted = 0;
    uint64_t refused = 0;           // asked for and not granted (race, contention, limit)
    uint64_t revocations = 0;       // OP_CLIENT_LEASE_REVOKE sent
    uint64_t revoke_failures = 0;   // ... that were not answered in time
    uint64_t writeback_granted = 0;   // write-back grants given (mds/leases.h)
    uint64_t writeback_recalled = 0;  // ... recalled before another client's request
    uint64_t swept = 0;             // resources sweeps looked at (a lease there ended, or
                                    // its change aged out)
    size_t held = 0;                // leases held now (expired ones included until swept)
    size_t resources = 0;           // directories and inodes with leases or recent changes
    size_t clients = 0;             // registered clients
  };
  Counters counters() const;

 private:
  struct Key {
    Kind kind;
    uint64_t ino;
    bool operator==(const Key& o) const { return kind == o.kind && ino == o.ino; }
    bool operator<(const Key& o) const { return std::tie(ino, kind) < std::tie(o.ino, o.kind); }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.ino * 2 + static_cast<uint64_t>(k.kind));
    }
  };
  struct Resource {
    std::unordered_map<std::string, Clock::time_point> holders;  // client -> expiry
    uint64_t changed_stamp = 0;       // Stamp of the last change, by changed_by
    std::string changed_by;
    Clock::time_point changed_at{};
    Clock::time_point contended_until{};
    // kEntry only: the client holding a write-back grant on the directory, until when (no
    // later than its entry lease), and until when no grant is given after a recall.
    std::string wb_client;
    Clock::time_point wb_until{};
    Clock::time_point wb_refused_until{};
    bool wb_recalling = false;  // a recall waits for the holder's answer
    // When the sweep looks at it next, listed in due_ under TickOf(due): no later than its
    // earliest holder's expiry, or, without holders, than Forgettable(). max(): not listed.
    Clock::time_point due = Clock::time_point::max();
  };
  // Per client: the directories and inodes to revoke there.
  using Who = std::map<std::string, std::pair<std::vector<uint64_t>, std::vector<uint64_t>>>;
  struct ClientState {
    std::string nid;
    std::shared_ptr<lnet::RpcClient> rpc;
    size_t held = 0;
  };

  // Takes the holders to revoke (grouped by client) and marks the resources changed.
  // contend: mark contended even when nobody held a lease (RevokeBeforeChange).
  Who TakeHolders(const std::string& requester, const MdChanges& changes, bool contend = false);
  void SendRevocations(const Who& who);
  Clock::time_point Now() const;
  // Makes `r` due no later than `when`. REQUIRES mu_
  void Schedule(const Key& key, Resource& r, Clock::time_point when);
  // When `r`, holding no lease, may be forgotten: neither contended nor needed for the race
  // check any more.
  static Clock::time_point Forgettable(const Resource& r);
  // The tick `t` falls in, rounded up: its resources are due once now >= tick * kTick.
  static int64_t TickOf(Clock::time_point t);
  // Looks at up to kSweepBatch resources that are due. REQUIRES mu_
  void Sweep(Clock::time_point now);
  void ForgetLocked(const std::string& client);
  // Makes `client` a holder of r (or renews it) for lease_ms from now: until when.
  // REQUIRES mu_
  Clock::time_point HoldLocked(ClientState& state, const std::string& client, Resource& r,
                               Clock::time_point now);
  // Ends r's write-back grant, if any (unless being recalled: the recall ends it).
  // REQUIRES mu_
  void EndWritebackLocked(Resource& r);
  // Whether a client other than `client` holds a live write-back grant on `r`. REQUIRES mu_
  static bool OtherWriteback(const Resource& r, const std::string& client, Clock::time_point now) {
    return !r.wb_client.empty() && r.wb_client != client && r.wb_until > now;
  }
  void RunRevoker();

  const LeaseOptions options_;
  mutable std::mutex mu_;
  uint64_t stamp_ = 0;                                          // GUARDED_BY(mu_)
  std::unordered_map<Key, Resource, KeyHash> resources_;        // GUARDED_BY(mu_)
  std::unordered_map<std::string, ClientState> clients_;        // GUARDED_BY(mu_)
  // Every resource by the tick it is due in (TickOf(Resource::due)). A resource scheduled
  // earlier leaves its entry under the later tick behind; an entry whose resource is due in
  // another tick, or is gone, is skipped there (stale).
  std::map<int64_t, std::vector<Key>> due_;  // GUARDED_BY(mu_)
  // The newest stamp of a change forgotten by Sweep: a read that began before it gets no lease.
  uint64_t purge_floor_ = 0;                                    // GUARDED_BY(mu_)
  Counters counters_;                                           // GUARDED_BY(mu_)
  // Resources with a write-back grant (live or not yet swept): RecallWriteback's fast path.
  std::atomic<size_t> wb_grants_{0};
  std::unordered_map<std::string, size_t> wb_holders_;  // GUARDED_BY(mu_): grants per client
  std::condition_variable recall_cv_;  // with mu_: a recall ended

  std::mutex later_mu_;
  std::condition_variable later_cv_;
  std::deque<Who> later_who_;                                   // GUARDED_BY(later_mu_)
  bool stop_ = false;                                           // GUARDED_BY(later_mu_)
  std::thread revoker_;
};

}  // namespace stria::mds
