// LeaseCache: the mount's side of the MDS's metadata leases (mds/leases.h,
// docs/consistency.md#leases), which let the kernel keep names and attributes for as long as
// the lease lasts instead of FsOptions' one second.
//
// The cache runs a small RPC server (the callback server) on the address this host reaches
// the MDS from, and registers its NID with the MDS. A LOOKUP, CREATE or GETATTR reply that
// carries a lease becomes a kernel timeout as long as the lease has left, and the name or
// inode is remembered. When the MDS revokes a lease (OP_CLIENT_LEASE_REVOKE, before another
// client's change is answered), every name cached in that directory, or the inode's
// attributes, is invalidated in the kernel (fuse_lowlevel_notify_inval_entry/_inode) and
// forgotten; then the revocation is answered.
//
// A reply whose request was in flight while any revocation arrived gets the short timeout:
// it may have been read before the change that was revoked. When the MDS says at a keepalive
// that the mount is not registered (it restarted, or dropped us after a revocation we did not
// answer), everything cached under leases is invalidated and the cache registers again.
//
// The kernel invalidations run on a thread of their own: the kernel takes the directory's
// lock for them, which a request of this mount in that directory may hold while it waits
// for the MDS, which may be waiting for this revocation. A revocation waits for them at most
// kInvalWait, then is answered anyway.
//
// Thread-safety: every method is thread-safe.
#pragma once

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
#endif
#include <fuse_lowlevel.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "client/client.h"
#include "common/status.h"
#include "lnet/auth.h"
#include "lnet/nid.h"

namespace stria::lnet {
class RpcServer;
}

namespace stria::client {

struct LeaseCacheOptions {
  double fallback_entry_s = 1.0;   // the kernel timeouts without a lease
  double fallback_attr_s = 1.0;
  size_t max_cached = 1'000'000;   // names plus inodes remembered; beyond, no long timeouts
  std::string fsname;
  std::shared_ptr<const lnet::KeyRing> keys;  // the cluster key, for the MDS's connections
};

class LeaseCache {
 public:
  using Clock = std::chrono::steady_clock;
  // A revocation answered later than this may have been given up by the MDS.
  static constexpr std::chrono::milliseconds kSlowAnswer{1000};

  LeaseCache(Client* client, LeaseCacheOptions options);
  ~LeaseCache();  // Stop()s
  LeaseCache(const LeaseCache&) = delete;
  LeaseCache& operator=(const LeaseCache&) = delete;

  // Starts the callback server on the local address that reaches `mds` and registers it.
  // On failure the mount runs without leases (short timeouts), which is logged. se null:
  // no kernel is told anything (a test of the bookkeeping).
  Status Start(fuse_session* se, const lnet::Nid& mds);
  void Stop();
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // What a revocation with flush_closes runs before its reply (StriaFs::FlushCloses).
  void set_flush_closes(std::function<void()> fn) {
    std::lock_guard lock(mu_);
    flush_closes_ = std::move(fn);
  }
  // What a revocation runs, before its reply, for the inodes whose attribute leases it
  // revokes (StriaFs: register the opens made under them, local_opens.h).
  void set_on_revoked_inodes(std::function<void(const std::vector<uint64_t>&)> fn) {
    std::lock_guard lock(mu_);
    on_revoked_inodes_ = std::move(fn);
  }
  // What a revocation runs, before its reply, for the directories whose entry leases it
  // revokes (all: the leases were lost; StriaFs: the write-back grants there end and the
  // unlinks answered under them reach the MDS first, unlink_writeback.h).
  void set_on_revoked_dirs(std::function<void(const std::vector<uint64_t>&, bool all)> fn) {
    std::lock_guard lock(mu_);
    on_revoked_dirs_ = std::move(fn);
  }
  // True when `name` in `dir` was named to the kernel under an entry lease on `dir` that
  // lasts at least `margin` more: the kernel's entry for it is the MDS's.
  bool HoldsName(uint64_t dir, std::string_view name, std::chrono::milliseconds margin);
  // Runs fn and returns true when the mount holds an attribute lease on `ino` for at least
  // `margin` more (and, with `since`, no revocation has come since that request began, so
  // the lease held is the one its reply brought); false, without running it, otherwise.
  // Under the lock a revocation takes first: what fn records is there for the revocation's
  // on_revoked_inodes.
  struct Stamp;
  bool WithAttrLease(uint64_t ino, std::chrono::milliseconds margin,
                     const std::function<void()>& fn, const Stamp* since = nullptr);
  // The callback server's NID, as registered with the MDS (after Start).
  const std::string& callback_nid() const { return callback_nid_; }

  // Taken before an MDS request whose reply may carry a lease.
  struct Stamp {
    uint64_t epoch = 0;
    Clock::time_point sent;
  };
  Stamp Begin() const;
  // Whether the lease of lease_ms that a reply to a request begun at `stamp` brought still
  // runs, with no revocation since the request began (a reply kept to be used later:
  // client/fuse/statahead.h). False without leases.
  bool Current(const Stamp& stamp, uint32_t lease_ms) const;
  // The MDS renewed the entry lease on `dir` (a write-back grant comes with one, mds/leases.h)
  // in the reply to a request begun at `stamp`: what the mount holds there stays valid longer.
  void EntryLeaseRenewed(uint64_t dir, uint32_t lease_ms, const Stamp& stamp);

  // The kernel timeout (seconds) for name `name` in `parent` (entry_lease_ms) and for the
  // attributes of `ino` (attr_lease_ms) from a reply to a request begun at `stamp`; what a
  // long timeout was given for is remembered, to be invalidated when the lease is revoked.
  double EntryTimeout(uint64_t parent, std::string_view name, uint32_t lease_ms,
                      const Stamp& stamp);
  double AttrTimeout(uint64_t ino, uint32_t lease_ms, const Stamp& stamp);

  // Complete directories: one this mount created (empty, and under an entry lease from its
  // mkdir reply) and that only this mount changed since is known name by name, so a lookup
  // of a name not in it is answered here, without the MDS (a create's lookup, mostly). The
  // mount reports each of its own changes; a revocation or anything it cannot follow (a
  // change that failed) ends the completeness.
  void DirCreated(uint64_t dir, uint32_t dir_lease_ms, const Stamp& stamp);
  void NameAdded(uint64_t dir, std::string_view name, uint32_t entry_lease_ms,
                 const Stamp& stamp);
  void NameRemoved(uint64_t dir, std::string_view name);
  void DirUnsure(uint64_t dir);
  // True when `dir` is complete and has no `name`; *timeout is then how long the kernel may
  // keep the absence (which is remembered, to be revoked with the lease).
  bool KnownAbsent(uint64_t dir, std::string_view name, double* timeout);

  // The keepalive's answer (ClientSession::set_lease_check): not registered while leases are
  // on means they were lost: invalidate everything, register again.
  void CheckRegistered(bool registered);

  struct Counters {
    uint64_t revocations = 0;     // OP_CLIENT_LEASE_REVOKE served
    uint64_t invalidated = 0;     // kernel entries and inodes invalidated
    uint64_t long_timeouts = 0;   // replies given a lease-long timeout
    uint64_t local_negatives = 0; // lookups answered from a complete directory
    size_t cached = 0;            // names and inodes remembered now
  };
  Counters counters() const;

 private:
  struct Inval {
    uint64_t parent = 0;  // an entry: parent + name; else inode `ino`'s attributes
    std::string name;
    uint64_t ino = 0;
  };

  Status Register();
  // Moves everything cached under the given leases (all: everything) to the invalidation
  // queue and returns the queue position that covers them. REQUIRES mu_.
  uint64_t QueueLocked(const std::vector<uint64_t>& dirs, const std::vector<uint64_t>& inos,
                       bool all);
  void WaitInvalidated(uint64_t seq, std::chrono::milliseconds at_most);
  double Remaining(uint32_t lease_ms, const Stamp& stamp, double fallback) const;
  Clock::time_point Until(uint32_t lease_ms, const Stamp& stamp) const;
  void DropCompleteLocked(uint64_t dir);
  // Forgets what expired leases covered (the kernel's timeouts ended with them).
  void SweepLocked(Clock::time_point now);
  void RunInvalidations();

  Client* const client_;
  const LeaseCacheOptions options_;
  fuse_session* se_ = nullptr;
  std::string callback_nid_;
  std::unique_ptr<lnet::RpcServer> server_;
  std::atomic<bool> enabled_{false};  // leases granted now: long timeouts may be given
  std::atomic<bool> wanted_{false};   // the MDS granted leases once: keep registering

  mutable std::mutex mu_;
  std::function<void()> flush_closes_;  // GUARDED_BY(mu_)
  std::function<void(const std::vector<uint64_t>&)> on_revoked_inodes_;  // GUARDED_BY(mu_)
  std::function<void(const std::vector<uint64_t>&, bool)> on_revoked_dirs_;  // GUARDED_BY(mu_)
  std::condition_variable cv_;
  uint64_t epoch_ = 0;                                                  // GUARDED_BY(mu_)
  // What the kernel was given lease-long timeouts for, until when (the latest of them): a
  // directory's names, and inodes' attributes. Swept once their leases ended.
  struct Named {
    std::unordered_set<std::string> names;
    Clock::time_point until;
  };
  std::unordered_map<uint64_t, Named> names_;                           // GUARDED_BY(mu_)
  std::unordered_map<uint64_t, Clock::time_point> attrs_;               // GUARDED_BY(mu_)
  Clock::time_point next_sweep_{};                                      // GUARDED_BY(mu_)
  struct Complete {
    std::unordered_set<std::string> names;
    Clock::time_point until;  // the entry lease's end, as far as this mount may trust it
  };
  std::unordered_map<uint64_t, Complete> complete_;                    // GUARDED_BY(mu_)
  size_t complete_names_ = 0;                                           // GUARDED_BY(mu_)
  size_t cached_ = 0;                                                   // GUARDED_BY(mu_)
  std::deque<Inval> queue_;                                             // GUARDED_BY(mu_)
  uint64_t queued_seq_ = 0;    // invalidations queued so far              GUARDED_BY(mu_)
  uint64_t done_seq_ = 0;      // ... and applied                          GUARDED_BY(mu_)
  bool stop_ = false;                                                   // GUARDED_BY(mu_)
  Counters counters_;                                                   // GUARDED_BY(mu_)
  std::thread inval_thread_;
};

}  // namespace stria::client
