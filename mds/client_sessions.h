// ClientSessions: what the MDS knows about each client (by the uuid of its CONNECT) that
// lives only in memory: its lease, its advisory locks and its open handles.
//
// Leases. Every request from a client renews its lease; idle clients send OP_MDS_KEEPALIVE
// (a quarter of the lease apart). A client silent for a whole lease is evicted: its locks
// are dropped (so other clients' waiters proceed) and its open handles are closed (so files
// it held unlinked are freed), as Lustre evicts a client that stops pinging.
//
// Recovery. Locks and handles do not survive an MDS restart, so the MDS starts with a
// recovery window one lease long: each client sees a new `instance` in its next keepalive
// reply and replays its opens (OP_MDS_REOPEN) and granted locks (OP_MDS_LOCK, replay=true).
// During the window new lock requests get kNotReady (clients resend them until the window
// ends), and only when it ends are files unlinked while open and not reopened removed.
//
// Thread-safety: every method is thread-safe (one mutex). Eviction closes handles through
// the namespace without holding that mutex.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/lock_table.h"
#include "common/status.h"
#include "mds/namespace.h"
#include "proto/stria.pb.h"

namespace stria::mds {

struct ClientSessionOptions {
  int lease_ms = 60'000;  // a client silent this long is evicted; also the recovery window
  // Called (without the sessions' lock) for each file an evicted client held open for
  // writing, before its handle is closed: the size it may not have reported is glimpsed
  // from the OSTs (mds/size_glimpse.h). Null: nothing.
  std::function<void(uint64_t ino)> writer_lost;
};

class ClientSessions {
 public:
  using Clock = std::chrono::steady_clock;

  ClientSessions(Namespace* ns, ClientSessionOptions options);
  ~ClientSessions();  // Stop()s
  ClientSessions(const ClientSessions&) = delete;
  ClientSessions& operator=(const ClientSessions&) = delete;

  // Starts the thread that evicts idle clients and ends the recovery window.
  void Start();
  void Stop();

  // Renews `client`'s lease (any request from it).
  void Touch(const std::string& client);

  // OP_MDS_LOCK for `client`: EAGAIN on a conflicting SET, kNotReady for a new lock during
  // recovery, EINVAL for a malformed request.
  Status Lock(const std::string& client, const proto::LockRequest& req, proto::LockReply* rep);

  void FillKeepalive(proto::KeepaliveReply* rep) const;

  // Bookkeeping of open handles per client, for eviction and capability renewal.
  // capa_ops: the CapaOps the open was granted (0: unknown, a handle reopened after a restart).
  // writer: opened for writing (the client may hold a size it has not reported yet).
  void Opened(const std::string& client, uint64_t handle, uint64_t ino, uint32_t capa_ops = 0,
              bool writer = false);
  void Closed(const std::string& client, uint64_t handle);
  // The clients other than `client` holding `ino` open for writing. A mount reports the
  // size of what it wrote with its gathered closes (close_batcher.h), so before another
  // client reads or changes the inode's attributes, these are asked to send them.
  std::vector<std::string> OtherWriters(uint64_t ino, const std::string& client) const;
  // The capa_ops of `client`'s open handle `handle` of `ino`; nullopt when it has no such
  // handle (OP_MDS_CAPA_RENEW).
  std::optional<uint32_t> HandleCapaOps(const std::string& client, uint64_t handle,
                                        uint64_t ino) const;

  bool Recovering() const;

  // One pass: evicts clients idle at `now`; the first pass at or after the end of the
  // recovery window ends recovery and reaps orphans. Returns how many clients were evicted. The thread calls it; tests too.
  size_t Tick(Clock::time_point now);

  size_t LockCount() const;

 private:
  struct Session {
    Clock::time_point last_seen;
    std::map<uint64_t, uint64_t> handles;  // handle -> ino
    std::map<uint64_t, uint32_t> capa_ops;  // handle -> CapaOps granted at open (if known)
    std::set<uint64_t> writer_handles;      // the handles opened for writing
  };
  // REQUIRES mu_. Forgets `handle` of `client` in writers_; false when it was no writer's.
  bool DropWriterLocked(const std::string& client, Session& s, uint64_t handle, uint64_t ino);

  void Run();

  Namespace* const ns_;
  const ClientSessionOptions options_;
  const uint64_t instance_;
  const Clock::time_point recovery_end_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, Session> sessions_;  // GUARDED_BY(mu_)
  // ino -> (client -> handles it holds open for writing on it)
  std::unordered_map<uint64_t, std::map<std::string, int>> writers_;  // GUARDED_BY(mu_)
  LockTable locks_;                                     // GUARDED_BY(mu_)
  bool recovered_ = false;                              // GUARDED_BY(mu_): window over
  bool stop_ = false;                                   // GUARDED_BY(mu_)
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace stria::mds
