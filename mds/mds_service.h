// MdsService: binds the MDS and MGS operations (mds/ops/ops.h) to their opcodes on an
// lnet::RpcServer — every OP_MDS_* and OP_MGS_* of proto/stria.proto.
//
// Handlers run on the server's worker threads (the MDS concurrency model is described in
// mds/namespace.h). Operations that may orphan objects (unlink, rename) kick the destroy
// queue after they commit. Non-idempotent operations (ReplyCacheOpcodes) are answered once
// per (client uuid, xid): the server's in-memory reply cache covers resends while it runs
// (set ServerOptions::reply_cache_opcodes = ReplyCacheOpcodes()), and the reply journal
// (mds/reply_journal.h) persists each reply with its change so resends after a restart are
// answered from RocksDB. With ClientSessions, every request renews its client's lease and
// opens/closes are recorded per client; OP_MDS_LOCK, OP_MDS_KEEPALIVE and OP_MDS_REOPEN are
// served from them (mds/client_sessions.h). Thread-safety: Register before the server starts; the handlers are
// thread-safe.
#pragma once

#include <memory>

#include "common/prom_text.h"
#include "common/stats_registry.h"
#include "mds/md_stats.h"

#include <cstdint>
#include <vector>

#include "lnet/capa.h"
#include "lnet/rpc_server.h"
#include "mds/client_sessions.h"
#include "mds/destroy_queue.h"
#include "mds/leases.h"
#include "mds/namespace.h"
#include "mds/squash.h"

namespace stria::mds {

class MirrorResync;
class OstGateway;

struct MdsServiceOptions {
  // Root squash: requests from uid 0 run as squash_uid:squash_gid (no supplementary groups),
  // unless they come from a NID in nosquash_nids (mds/squash.h).
  SquashOptions squash;
  // 0 (the default): every namespace change is durable (WAL synced, shared by concurrent
  // changes) before its reply. N > 0: namespace changes are answered once they are in the
  // WAL (a crash of the MDS process keeps them) and made durable by the committer within N
  // milliseconds, as a local file system's journal commit; fsync/O_SYNC (OP_MDS_CLOSE with
  // sync), fsync of a directory (OP_MDS_SYNC) and changes that reserve id ranges still wait
  // for the sync. A power loss of the MDS then loses at most the last N ms of changes
  // nobody fsync'ed (clients do not replay them). MGS changes are always synced.
  int commit_interval_ms = 0;
  // OSS capabilities (lnet/capa.h, docs/security.md): with a signer, OPEN, CREATE with open
  // and MIGRATE BEGIN replies carry capabilities for the file's objects, and
  // OP_MDS_CAPA_RENEW is served. Null (no cluster key): none are made.
  std::shared_ptr<const lnet::CapaSigner> capa;
  // The mirror resync (mds/mirror_resync.h): OP_MDS_MIRROR's RESYNC and EXTEND copy through
  // it, and lctl get_param mdt.FS-MDT0000.mirror_resync shows it. Null: no resync.
  MirrorResync* resync = nullptr;
  // How the MDS reaches OSTs for object sizes (mds/size_glimpse.h): a file's writer that
  // does not answer when asked for the size it holds is glimpsed. Null: never glimpsed.
  OstGateway* gateway = nullptr;
  // Metadata leases (mds/leases.h): granted with LOOKUP, CREATE and GETATTR replies to
  // registered clients, and revoked before every change is answered. Null: none.
  std::shared_ptr<LeaseTable> leases;
};

class MdsService {
 public:
  // ns must outlive the server; queue may be null; sessions may be null (then no leases,
  // advisory locks or reopens are served).
  MdsService(Namespace* ns, DestroyQueue* queue, MdsServiceOptions options = {},
             ClientSessions* sessions = nullptr)
      : ns_(ns), queue_(queue), options_(options), sessions_(sessions) {}

  void Register(lnet::RpcServer* server);

  // mdt.FS-MDT0000.md_stats and job_stats (mds/md_stats.h), served by OP_STATS_GET.
  StatsRegistry& registry() { return *registry_; }
  // The MDT's counters, job counters, inode count and the OST table's space, for /metrics.
  void AddMetrics(PromText* page) const;

  // The opcodes whose replies must not be recomputed on a resend.
  static std::vector<uint16_t> ReplyCacheOpcodes();

 private:
  template <typename Req, typename Rep>
  void Add(lnet::RpcServer* server, proto::Opcode op,
           Status (*fn)(Namespace&, const Req&, Rep*), bool kick = false);
  bool Journaled(proto::Opcode op) const;
  void RegisterSessionOps(lnet::RpcServer* server);
  // Data-on-MDT reads and writes: they carry bulk, so they take the RpcContext.
  void RegisterDomOps(lnet::RpcServer* server);
  // OP_MDS_CAPA_RENEW: it needs the connection's client and its open handles.
  void RegisterCapaRenew(lnet::RpcServer* server);
  void RegisterMirror(lnet::RpcServer* server);

  Namespace* ns_;
  DestroyQueue* queue_;
  MdsServiceOptions options_;
  ClientSessions* sessions_;
  // Shared with the handlers, which may outlive a moved-from service object.
  std::shared_ptr<MdStats> stats_ = std::make_shared<MdStats>();
  std::shared_ptr<StatsRegistry> registry_ = std::make_shared<StatsRegistry>();
};

}  // namespace stria::mds
