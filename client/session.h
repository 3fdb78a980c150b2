// ClientSession: the state a client holds at the MDS beyond single requests: its lease, its
// advisory locks and its open handles (see mds/client_sessions.h for the MDS side).
//
// A keepalive thread pings the MDS a quarter of the lease apart, so the MDS never evicts a
// live client. When a keepalive reply names a new MDS instance (the MDS restarted), the
// session replays every open handle (OP_MDS_REOPEN) and every lock it was granted
// (OP_MDS_LOCK, replay=true) inside the MDS's recovery window, as Lustre clients replay
// their opens and locks. To know what to replay, the session mirrors this client's granted
// locks in a LockTable and its open handles in a map.
//
// Thread-safety: every method is thread-safe. The keepalive thread makes MDS calls without
// holding the session's mutex.
#pragma once

#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include "client/client.h"
#include "common/lock_table.h"
#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client {

class ClientSession {
 public:
  explicit ClientSession(Client* client) : client_(client) {}
  ~ClientSession();  // Stop()s
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // Starts the keepalive thread (one keepalive first, synchronously, to learn the instance).
  void Start();
  void Stop();

  // OP_MDS_LOCK; a granted SET or a RELEASE_OWNER updates the mirror. EAGAIN on a conflict.
  Status Lock(const proto::LockRequest& req, proto::LockReply* rep);

  // Whether this client holds a lock of `kind` for `owner` on `ino` (no RPC).
  bool Holds(uint64_t ino, uint64_t owner, LockKind kind) const;

  // writer: opened for writing (said again in the handle's REOPEN after an MDS restart).
  void Opened(uint64_t handle, uint64_t ino, bool writer = false);
  void Closed(uint64_t handle);

  // Called after every keepalive with whether the MDS has this client registered for
  // metadata leases (client/fuse/lease_cache.h re-registers when it lost them).
  void set_lease_check(std::function<void(bool registered)> fn) {
    std::lock_guard lock(mu_);
    lease_check_ = std::move(fn);
  }

  // One keepalive; replays opens and locks when the MDS instance changed. The thread calls
  // it; tests too.
  Status KeepaliveOnce();

 private:
  void Run();
  void Replay();

  Client* const client_;
  mutable std::mutex mu_;
  LockTable locks_;                        // GUARDED_BY(mu_): owner.client is ""
  std::map<uint64_t, uint64_t> handles_;   // GUARDED_BY(mu_): handle -> ino
  std::set<uint64_t> writer_handles_;      // GUARDED_BY(mu_): those opened for writing
  uint64_t instance_ = 0;                  // GUARDED_BY(mu_): 0 until the first keepalive
  std::function<void(bool)> lease_check_;  // GUARDED_BY(mu_)
  uint64_t config_gen_ = 0;                // GUARDED_BY(mu_): the MGS's, at the last look
  int period_ms_ = 1000;                   // GUARDED_BY(mu_)
  bool stop_ = false;                      // GUARDED_BY(mu_)
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace stria::client
