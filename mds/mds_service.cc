#include "mds/mds_service.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <concepts>
#include <string>
#include <type_traits>
#include <vector>

#include "common/log.h"
#include "lnet/lnd.h"
#include "lnet/stats_service.h"
#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/mirror_resync.h"
#include "mds/ops/ops.h"
#include "mds/reply_journal.h"
#include "mds/size_glimpse.h"

namespace stria::mds {

namespace {

// The request as the operation sees it: with root squashed when configured.
template <typename Req>
const Req& Squashed(const Req& req, const MdsServiceOptions& o, const lnet::RpcContext& ctx,
                    Req* storage) {
  if constexpr (requires { req.cred(); }) {
    if (o.squash.root_squash && req.cred().uid() == 0) {
      proto::Credentials cred = req.cred();
      if (SquashRoot(o.squash, ctx.peer, lnet::LndName(ctx.lnd), &cred)) {
        *storage = req;
        *storage->mutable_cred() = std::move(cred);
        return *storage;
      }
    }
  }
  return req;
}

// The CapaOps an open with these open(2) flags is granted: what OP_MDS_OPEN checked.
uint32_t CapaOpsForOpen(uint32_t flags) {
  const uint32_t acc = flags & O_ACCMODE;
  uint32_t ops = 0;
  if (acc == O_RDONLY || acc == O_RDWR) ops |= proto::CAPA_READ;
  if (acc == O_WRONLY || acc == O_RDWR || (flags & O_TRUNC)) ops |= proto::CAPA_WRITE;
  return ops;
}

// Capabilities for the reply of a successful open (OPEN, CREATE with open, MIGRATE BEGIN),
// and the CapaOps granted (0: none). Regular files only.
template <typename Req, typename Rep>
uint32_t GrantCapabilities(const lnet::CapaSigner& signer, Namespace& ns,
                           const lnet::RpcContext& ctx, const Req& req, Rep* rep) {
  constexpr uint32_t kRw = proto::CAPA_READ | proto::CAPA_WRITE;
  if constexpr (std::is_same_v<Req, proto::OpenRequest>) {
    if (!S_ISREG(rep->attr().mode())) return 0;
    const uint32_t ops = CapaOpsForOpen(req.flags());
    signer.Grant(ctx.client_uuid, req.ino(), ops, rep->layout(), rep->mutable_capa());
    return ops;
  } else if constexpr (std::is_same_v<Req, proto::CreateRequest>) {
    if (!req.open()) return 0;
    signer.Grant(ctx.client_uuid, rep->attr().ino(), kRw, rep->layout(), rep->mutable_capa());
    return kRw;
  } else if constexpr (std::is_same_v<Req, proto::MigrateRequest>) {
    if (req.step() != proto::MIGRATE_BEGIN) return 0;
    // The copy reads the old objects and writes the new ones.
    signer.Grant(ctx.client_uuid, req.ino(), kRw, rep->layout(), rep->mutable_capa());
    if (auto rec = ns.GetInode(req.ino()); rec.ok()) {
      signer.AddObjects(ctx.client_uuid, rec->layout, rep->mutable_capa());
    }
    return kRw;
  } else {
    return 0;
  }
}

// A file a client closed a moment ago may still be open here for writing: clients gather
// closes that report nothing for a few milliseconds (OP_MDS_CLOSE_BATCH). Before an
// operation that a writer refuses (lfs migrate, mirror split) gives up with EBUSY, every
// client sends what it gathered; then the caller tries once more.
bool FlushedClosesAfterBusy(LeaseTable* leases, const Status& st) {
  return leases != nullptr && st.code() == Code::kBusy && leases->FlushCloses() > 0;
}

// Sizes that writers have not reported yet. A mount reports what it wrote with the closes
// it gathers (client/fuse/close_batcher.h), a few milliseconds after close(2) returned, or
// when the MDS asks for them: so before another client reads or changes the attributes of
// `ino`, every other client holding it open for writing is asked to send them (Lustre asks
// the holders of a file's extent locks for its size the same way). True when there were
// such writers: the inode may have changed since the caller read it.
// A writer that does not answer (dead, cut off) loses its leases, and the size comes from
// the OSTs instead (mds/size_glimpse.h). So it does for one client lease after a restart
// (the recovery window): the MDS does not know yet which mounts hold sizes they have not
// reported, and a mount's gathered closes reach it only with their next retry.
bool SettleWriters(ClientSessions* sessions, LeaseTable* leases, Namespace& ns,
                   OstGateway* gateway, uint64_t ino, const std::string& client) {
  if (sessions == nullptr || leases == nullptr || ino == 0) return false;
  const std::vector<std::string> others = sessions->OtherWriters(ino, client);
  if (others.empty()) {
    if (gateway == nullptr || ns.FormattedAtOpen() || !sessions->Recovering()) {
      return false;
    }
    if (auto size = RaiseSizeToObjects(ns, *gateway, ino);
        !size.ok() && size.status().code() != Code::kNoEnt) {
      LOG_WARN("inode {}: size not glimpsed in recovery: {}", ino, size.status().ToString());
    }
    return true;
  }
  if (!leases->FlushClosesOf(others).empty() && gateway != nullptr) {
    if (auto size = RaiseSizeToObjects(ns, *gateway, ino); !size.ok()) {
      LOG_WARN("inode {}: its writer did not report its size, and the OSTs could not be "
               "asked: {}", ino, size.status().ToString());
    }
  }
  return true;
}

// A mount may open a file it holds an attribute lease on without asking the MDS
// (client/fuse/local_opens.h), and registers that open when the lease is revoked. So before
// an unlink or a rename that may drop a regular file's last link, the other mounts' leases
// on that file are revoked: a mount holding it open has registered the open when the change
// is made, and the file stays, an orphan, until that open is closed.
template <typename Req>
void RevokeVictimFirst(LeaseTable& leases, const Namespace& ns, const std::string& client,
                       const Req& req) {
  // Nobody else can hold a lease (a single mount's unlinks cost nothing here).
  if (!leases.OthersRegistered(client)) return;
  MdChanges victims;
  auto victim = [&](uint64_t parent, std::string_view name) {
    auto entry = ns.GetDirent(parent, name);
    if (entry.ok() && entry->has_value() && (*entry)->second == proto::FT_REG) {
      victims.inos.insert((*entry)->first);
    }
  };
  if constexpr (std::is_same_v<Req, proto::UnlinkRequest>) {
    if (req.is_dir() || req.more_names_size() >= kMaxUnlinkBatch) return;  // refused anyway
    victim(req.parent(), req.name());
    for (const std::string& name : req.more_names()) victim(req.parent(), name);
  } else {
    if (req.flags() & 2) return;  // RENAME_EXCHANGE (RenameRequest.flags): both names stay
    victim(req.new_parent(), req.new_name());
  }
  if (!victims.empty()) leases.RevokeBeforeChange(client, victims);
}

// Another client's write-back grant over a directory this request names (its parent, the
// directory it reads or changes) is recalled first: the unlinks that client answered reach
// the MDS before this request reads or changes anything there (mds/leases.h).
template <typename Req>
void RecallWritebackFor(LeaseTable& leases, const Namespace& ns, const std::string& client,
                        const Req& req) {
  if (!leases.OthersHoldWriteback(client)) return;  // RecallWriteback would recall nothing
  // A directory named by a lookup, an rmdir or a rename (its emptiness, its times, what
  // replaces it) counts as named too. (A batch's more_names are files: a directory among
  // them is refused, EISDIR, and changes nothing.)
  auto child_dir = [&](uint64_t parent, const std::string& name) -> uint64_t {
    auto entry = ns.GetDirent(parent, name);
    return entry.ok() && entry->has_value() && (*entry)->second == proto::FT_DIR ? (*entry)->first
                                                                                 : 0;
  };
  if constexpr (std::is_same_v<Req, proto::LookupRequest> ||
                std::is_same_v<Req, proto::UnlinkRequest>) {
    if (const uint64_t d = child_dir(req.parent(), req.name()); d != 0) {
      leases.RecallWriteback(client, {d});
    }
  }
  if constexpr (std::is_same_v<Req, proto::LookupRequest>) {
    if (req.more_names_size() >= kMaxLookupBatch) return;  // refused (EINVAL), no recalls
    for (const std::string& name : req.more_names()) {  // a batch's other names
      if (const uint64_t d = child_dir(req.parent(), name); d != 0) {
        leases.RecallWriteback(client, {d});
      }
    }
  } else if constexpr (std::is_same_v<Req, proto::RenameRequest>) {
    const uint64_t d1 = child_dir(req.old_parent(), req.old_name());
    const uint64_t d2 = child_dir(req.new_parent(), req.new_name());
    if ((d1 | d2) != 0) leases.RecallWriteback(client, {d1, d2});
  }
  uint64_t a = 0, b = 0, c = 0;
  if constexpr (requires {
                  { req.parent() } -> std::convertible_to<uint64_t>;
                })
    a = req.parent();
  if constexpr (requires {
                  { req.old_parent() } -> std::convertible_to<uint64_t>;
                }) {
    a = req.old_parent();
  }
  if constexpr (requires {
                  { req.new_parent() } -> std::convertible_to<uint64_t>;
                }) {
    b = req.new_parent();
  }
  if constexpr (requires {
                  { req.ino() } -> std::convertible_to<uint64_t>;
                })
    c = req.ino();
  if (b == a) b = 0;  // a rename within one directory
  if ((a | b | c) != 0) leases.RecallWriteback(client, {a, b, c});
}

// The attributes of `attr`'s inode read again (after SettleWriters).
void RereadAttr(const Namespace& ns, proto::Attr* attr) {
  if (auto rec = ns.GetInode(attr->ino()); rec.ok()) FillReply(*rec, attr, nullptr);
}

// SettleWriters for the inode of each of `attrs` (a lookup batch's replies, a readdirplus's
// entries), then, once any was settled, every one read again: a writer asked for its
// closes sends all it gathers, the sizes of later inodes included, so a later one has
// nothing left to settle and would keep the attributes read before.
void SettleThenReread(ClientSessions* sessions, LeaseTable* leases, Namespace& ns,
                      OstGateway* gateway, const std::string& client,
                      const std::vector<proto::Attr*>& attrs) {
  bool settled = false;
  for (const proto::Attr* a : attrs) {
    settled |= SettleWriters(sessions, leases, ns, gateway, a->ino(), client);
  }
  if (!settled) return;
  for (proto::Attr* a : attrs) {
    if (a->ino() != 0) RereadAttr(ns, a);
  }
}

// Requests that read or change an inode's attributes, named by ino: settled first. A close
// changes nothing another writer's size report could contradict (sizes only grow there).
template <typename Req>
constexpr bool kSettlesFirst = requires(const Req& r) { r.ino(); } &&
                               !std::is_same_v<Req, proto::CloseRequest>;

// Metadata leases for the reply of a successful LOOKUP, CREATE or GETATTR (mds/leases.h):
// an entry lease on the directory the name is in, an attribute lease on the inode named.
// No attribute lease while another client holds the inode open for writing: its size
// changes at that client's close without the MDS hearing of it at once (SettleWriters).
// And a write-back grant on the parent for a file's unlink that asks for one, unless root
// is squashed here: the mount decides its write-back unlinks by the kernel's permission
// check, which does not know of the squash.
template <typename Req, typename Rep>
void GrantLeases(LeaseTable& leases, const ClientSessions* sessions, const std::string& client,
                 uint64_t snapshot, bool writeback_ok, const Req& req, Rep* rep) {
  using Kind = LeaseTable::Kind;
  auto attr_lease = [&](uint64_t ino) -> uint32_t {
    if (sessions != nullptr && !sessions->OtherWriters(ino, client).empty()) return 0;
    return leases.Grant(client, Kind::kAttr, ino, snapshot);
  };
  if constexpr (std::is_same_v<Req, proto::LookupRequest>) {
    // Each lookup of a batch (EntryReply.codes) that succeeded, as a single lookup.
    auto found = [&](const std::string& name, proto::EntryReply* r) {
      if (name != "." && name != "..") {
        r->set_entry_lease_ms(leases.Grant(client, Kind::kEntry, req.parent(), snapshot));
      }
      if (r->attr().ino() != 0) r->set_attr_lease_ms(attr_lease(r->attr().ino()));
    };
    if (rep->codes_size() == 0 || rep->codes(0) == 0) found(req.name(), rep);
    for (int i = 0; i < rep->more_size() && i + 1 < rep->codes_size() && i < req.more_names_size();
         ++i) {
      if (rep->codes(i + 1) == 0) found(req.more_names(i), rep->mutable_more(i));
    }
  } else if constexpr (std::is_same_v<Req, proto::CreateRequest>) {
    // Each create of a batch (EntryReply.codes) that succeeded, as a single create.
    auto created = [&](proto::EntryReply* r) {
      r->set_entry_lease_ms(leases.Grant(client, Kind::kEntry, req.parent(), snapshot));
      r->set_attr_lease_ms(attr_lease(r->attr().ino()));
      if (S_ISDIR(r->attr().mode())) {
        r->set_dir_lease_ms(leases.Grant(client, Kind::kEntry, r->attr().ino(), snapshot));
      }
    };
    if (rep->codes_size() == 0 || rep->codes(0) == 0) created(rep);
    for (int i = 0; i < rep->more_size() && i + 1 < rep->codes_size(); ++i) {
      if (rep->codes(i + 1) == 0) created(rep->mutable_more(i));
    }
  } else if constexpr (std::is_same_v<Req, proto::GetattrRequest>) {
    rep->set_attr_lease_ms(attr_lease(req.ino()));
  } else if constexpr (std::is_same_v<Req, proto::UnlinkRequest>) {
    if (writeback_ok && req.want_writeback() && !req.is_dir()) {
      rep->set_writeback_ms(leases.GrantWriteback(client, req.parent(), snapshot));
    }
  }
}

// LOOKUP with open (LookupRequest.open, checked read-only by the op): each regular file found
// (the batch's names too, client/entry_batches.h) is opened as OP_MDS_OPEN opens it, and
// counted as one; its reply goes in that name's EntryReply.open. An open refused (the mode
// bits, a file unlinked since the lookup read it) leaves the lookup's answer without one:
// the kernel's open then asks on its own and gets the error. Not while another client has
// the file open for writing: its size changes at that client's close, so a mount could not
// keep the open under an attribute lease, which it needs to (client/fuse/pre_opens.h), and
// would only close it again.
void OpenWithLookup(Namespace& ns, const MdsServiceOptions& options, ClientSessions* sessions,
                    MdStats* md, const lnet::RpcContext& ctx, const proto::LookupRequest& req,
                    proto::EntryReply* rep) {
  if (!req.open()) return;
  auto open_one = [&](proto::EntryReply* r) {
    if (r->attr().ino() == 0 || !S_ISREG(r->attr().mode())) return;
    if (sessions != nullptr && !sessions->OtherWriters(r->attr().ino(), ctx.client_uuid).empty()) {
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    proto::OpenRequest open;
    *open.mutable_cred() = req.cred();
    open.set_ino(r->attr().ino());
    open.set_flags(req.open_flags());
    proto::OpenReply* opened = r->mutable_open();
    Status st = Open(ns, open, opened);
    CountMdRequest(md, proto::OP_MDS_OPEN, open, JobOf(open), UsecsSince(t0));
    if (!st.ok()) {
      r->clear_open();
      return;
    }
    const uint32_t capa_ops =
        options.capa ? GrantCapabilities(*options.capa, ns, ctx, open, opened) : 0;
    if (sessions) {
      sessions->Opened(ctx.client_uuid, opened->handle(), open.ino(), capa_ops, /*writer=*/false);
    }
  };
  if (rep->codes_size() == 0 || rep->codes(0) == 0) open_one(rep);
  for (int i = 0; i < rep->more_size() && i + 1 < rep->codes_size(); ++i) {
    if (rep->codes(i + 1) == 0) open_one(rep->mutable_more(i));
  }
}

}  // namespace

template <typename Req, typename Rep>
void MdsService::Add(lnet::RpcServer* server, proto::Opcode op,
                     Status (*fn)(Namespace&, const Req&, Rep*), bool kick) {
  Namespace* ns = ns_;
  DestroyQueue* queue = kick ? queue_ : nullptr;
  const bool journaled = Journaled(op);
  // Namespace changes (the journaled operations) may be answered before their WAL sync:
  // the reply carries their transno and the client keeps them until it is committed, to
  // replay them if the MDS loses them (docs/durability.md).
  const bool lazy = options_.commit_interval_ms > 0 && journaled;
  const MdsServiceOptions options = options_;
  ClientSessions* sessions = sessions_;
  std::shared_ptr<MdStats> md = stats_;
  LeaseTable* leases = options_.leases.get();
  OstGateway* gateway = options_.gateway;
  server->Register<Req, Rep>(
      static_cast<uint16_t>(op),
      [ns, queue, fn, op, journaled, lazy, options, sessions, md, leases, gateway](
          lnet::RpcContext& ctx, const Req& wire_req, Rep* rep) -> Status {
        const auto t0 = std::chrono::steady_clock::now();
        struct Counted {  // counts the request however the handler returns
          MdStats* md;
          proto::Opcode op;
          const Req& req;
          std::chrono::steady_clock::time_point t0;
          ~Counted() { CountMdRequest(md, op, req, JobOf(req), UsecsSince(t0)); }
        } counted{md.get(), op, wire_req, t0};
        if (sessions) sessions->Touch(ctx.client_uuid);
        if constexpr (std::is_same_v<Req, proto::CreateRequest>) {
          bool replay_ino = wire_req.replay_ino() != 0;
          for (const proto::CreateRequest& item : wire_req.more()) {
            replay_ino |= item.replay_ino() != 0;
          }
          if (replay_ino && !ctx.replay) {
            return Status(Code::kInval, "replay_ino is for replayed creates only");
          }
        }
        if (leases) RecallWritebackFor(*leases, *ns, ctx.client_uuid, wire_req);
        if constexpr (kSettlesFirst<Req>) {
          SettleWriters(sessions, leases, *ns, gateway, wire_req.ino(), ctx.client_uuid);
        }
        if constexpr (std::is_same_v<Req, proto::UnlinkRequest> ||
                      std::is_same_v<Req, proto::RenameRequest>) {
          if (leases) RevokeVictimFirst(*leases, *ns, ctx.client_uuid, wire_req);
        }
        Req storage;
        const Req& req = Squashed(wire_req, options, ctx, &storage);
        Status st;
        // Metadata leases: the stamp before the read a granted lease covers, and what this
        // request's commits change (mds/leases.h).
        const uint64_t lease_snapshot = leases ? leases->Snapshot() : 0;
        MdChanges changes;
        ScopedChangeCapture capture(&changes);
        // Group commit: the change is made durable after the namespace mutex is released.
        DeferredSync durable(ns);
        if (journaled) {
          // A resend of a request done before a restart: answer what was answered then. Only
          // a resend or a replay can have been done before (a lookup in RocksDB per change
          // otherwise, 4-5% of the MDS's CPU under creates).
          auto old = ctx.resent || ctx.replay
                         ? FindPersistedReply(*ns, ctx.client_uuid, ctx.xid)
                         : Result<std::optional<std::string>>(std::nullopt);
          if (old.ok() && old->has_value() && rep->ParseFromString(**old)) {
            LOG_INFO("{} from {}: resend of xid {} answered from the reply journal",
                     proto::Opcode_Name(op), ctx.client_uuid, ctx.xid);
            // The original may still be waiting for its WAL sync: never answer before it.
            durable.Note(ns->db()->GetLatestSequenceNumber());
            st = durable.Wait();
            ctx.last_committed = ns->LastCommitted();
            return st;
          }
          if (ctx.replay && ctx.replay_transno != 0 &&
              ctx.replay_transno <= ns->RecoveredTransno()) {
            // Committed before the restart (its journal record trimmed since): done already.
            ctx.last_committed = ns->LastCommitted();
            return Status::Ok();
          }
          if (ctx.replay) {
            LOG_INFO("{} from {}: replaying transno {} lost in the restart",
                     proto::Opcode_Name(op), ctx.client_uuid, ctx.replay_transno);
          }
          ReplyJournal journal{ctx.client_uuid, ctx.xid, rep};
          ScopedReplyJournal scope(&journal);
          st = fn(*ns, req, rep);
        } else {
          st = fn(*ns, req, rep);
          if (op == proto::OP_MDS_MIGRATE && FlushedClosesAfterBusy(leases, st)) {
            rep->Clear();
            st = fn(*ns, req, rep);
          }
        }
        if constexpr (std::is_same_v<Req, proto::OpenRequest>) {
          // Another client's cached size would go stale at this writer's close, which the
          // MDS may hear of only later (SettleWriters): it forgets its copy now.
          if (st.ok() && (CapaOpsForOpen(req.flags()) & proto::CAPA_WRITE)) {
            changes.inos.insert(req.ino());
          }
        } else if constexpr (std::is_same_v<Req, proto::LookupRequest>) {
          if (st.ok()) {  // each name of a batch too (a failed or negative one has ino 0)
            std::vector<proto::Attr*> attrs{rep->mutable_attr()};
            for (proto::EntryReply& r : *rep->mutable_more()) attrs.push_back(r.mutable_attr());
            SettleThenReread(sessions, leases, *ns, gateway, ctx.client_uuid, attrs);
          }
        } else if constexpr (std::is_same_v<Req, proto::ReaddirRequest>) {
          if (st.ok()) {
            std::vector<proto::Attr*> attrs;
            for (proto::DirEntry& e : *rep->mutable_entries()) {
              if (e.has_attr()) attrs.push_back(e.mutable_attr());
            }
            SettleThenReread(sessions, leases, *ns, gateway, ctx.client_uuid, attrs);
          }
        }
        // Before anyone learns of the change, no other client still trusts a cached copy.
        if (leases && !changes.empty()) leases->Revoke(ctx.client_uuid, changes);
        if (st.ok()) {
          bool sync_asked = false;
          if constexpr (requires { req.sync(); }) sync_asked = req.sync();
          // fsync: everything written before, this request's changes or not, goes to disk.
          if (sync_asked) durable.Note(ns->db()->GetLatestSequenceNumber());
          // The transno: what this request wrote. Synced before the reply, the client
          // forgets it at once; answered before, it keeps it to replay (CLOSE's size
          // report and the journaled namespace changes).
          ctx.transno = durable.written();
          // Otherwise a lazy change is in the WAL now and on disk within the commit interval.
          st = durable.Done(/*wait=*/sync_asked || !lazy);
        }
        ctx.last_committed = ns->LastCommitted();
        if (!st.ok()) {
          LOG_DEBUG("{} from {}: {}", proto::Opcode_Name(op), ctx.peer, st.ToString());
          return st;
        }
        if (queue) queue->Kick();
        if (leases) {
          GrantLeases(*leases, sessions, ctx.client_uuid, lease_snapshot,
                      !options.squash.root_squash, req, rep);
        }
        const uint32_t capa_ops =
            options.capa ? GrantCapabilities(*options.capa, *ns, ctx, req, rep) : 0;
        if constexpr (std::is_same_v<Req, proto::LookupRequest>) {
          OpenWithLookup(*ns, options, sessions, md.get(), ctx, req, rep);
        }
        if (sessions) {
          if constexpr (std::is_same_v<Req, proto::OpenRequest>) {
            sessions->Opened(ctx.client_uuid, rep->handle(), req.ino(), capa_ops,
                             (CapaOpsForOpen(req.flags()) & proto::CAPA_WRITE) != 0);
          } else if constexpr (std::is_same_v<Req, proto::CreateRequest>) {
            if (req.open()) {
              sessions->Opened(ctx.client_uuid, rep->handle(), rep->attr().ino(), capa_ops,
                               S_ISREG(rep->attr().mode()));
            }
          } else if constexpr (std::is_same_v<Req, proto::CloseRequest>) {
            sessions->Closed(ctx.client_uuid, req.handle());
          } else if constexpr (std::is_same_v<Req, proto::CloseBatchRequest>) {
            for (const proto::CloseRequest& c : req.closes()) {
              sessions->Closed(ctx.client_uuid, c.handle());
            }
          }
        }
        return st;
      });
}

std::vector<uint16_t> MdsService::ReplyCacheOpcodes() {
  using namespace proto;  // NOLINT
  // OP_MDS_MIRROR is cached in memory only (it is not journaled): a resent extend, whose
  // copy may outlast the client's wait, is answered rather than run twice.
  return {OP_MDS_CREATE,   OP_MDS_UNLINK,   OP_MDS_RENAME,      OP_MDS_LINK,
          OP_MDS_SETXATTR, OP_MDS_SETATTR, OP_MDS_REMOVEXATTR, OP_MDS_MIRROR};
}

bool MdsService::Journaled(proto::Opcode op) const {
  if (op == proto::OP_MDS_MIRROR) return false;
  const auto ops = ReplyCacheOpcodes();
  return std::find(ops.begin(), ops.end(), static_cast<uint16_t>(op)) != ops.end();
}

void MdsService::RegisterSessionOps(lnet::RpcServer* server) {
  using namespace proto;  // NOLINT: opcode and message names
  ClientSessions* sessions = sessions_;
  Namespace* ns = ns_;
  server->Register<LockRequest, LockReply>(
      OP_MDS_LOCK, [sessions](lnet::RpcContext& ctx, const LockRequest& req, LockReply* rep) {
        return sessions->Lock(ctx.client_uuid, req, rep);
      });
  LeaseTable* leases = options_.leases.get();
  server->Register<KeepaliveRequest, KeepaliveReply>(
      OP_MDS_KEEPALIVE, [sessions, ns, leases](lnet::RpcContext& ctx, const KeepaliveRequest&,
                                               KeepaliveReply* rep) {
        sessions->Touch(ctx.client_uuid);
        sessions->FillKeepalive(rep);
        rep->set_config_generation(ns->ConfigGeneration());
        rep->set_leases_registered(leases != nullptr && leases->Registered(ctx.client_uuid));
        return Status::Ok();
      });
  server->Register<LeaseRegisterRequest, LeaseRegisterReply>(
      OP_MDS_LEASE_REGISTER, [sessions, leases](lnet::RpcContext& ctx,
                                                const LeaseRegisterRequest& req,
                                                LeaseRegisterReply* rep) {
        sessions->Touch(ctx.client_uuid);
        if (leases == nullptr) return Status::Ok();  // lease_ms 0: this MDS grants none
        STRIA_RETURN_IF_ERROR(leases->Register(ctx.client_uuid, req.callback_nid()));
        rep->set_lease_ms(static_cast<uint32_t>(leases->options().lease_ms));
        return Status::Ok();
      });
  server->Register<ReopenRequest, ReopenReply>(
      OP_MDS_REOPEN,
      [sessions, ns](lnet::RpcContext& ctx, const ReopenRequest& req, ReopenReply* rep) {
        STRIA_RETURN_IF_ERROR(Reopen(*ns, req, rep));
        sessions->Opened(ctx.client_uuid, req.handle(), req.ino(), 0, req.writer());
        return Status::Ok();
      });
}

void MdsService::Register(lnet::RpcServer* server) {
  if (sessions_) RegisterSessionOps(server);
  const std::string mdt = "mdt." + ns_->fsname() + "-MDT0000";
  MdStats* md = stats_.get();
  registry_->Add(mdt + ".md_stats", [md] { return md->stats.Format(); },
                 [md] { md->stats.Clear(); });
  registry_->Add(mdt + ".job_stats", [md] { return md->jobs.Format(); },
                 [md] { md->jobs.Clear(); });
  // Stria's own: the inode cache (mds/inode_cache.h), lctl get_param mdt.*.inode_cache.
  const Namespace* ns = ns_;
  registry_->Add(
      mdt + ".inode_cache",
      [ns] {
        const InodeCache::Counters c = ns->InodeCacheCounters();
        return fmt::format("entries_max: {}\nrecord_bytes_max: {}\nhits: {}\nmisses: {}\n",
                           Namespace::kInodeCacheEntries, Namespace::kInodeCacheMaxRecordBytes,
                           c.hits, c.misses);
      },
      [] {});
  if (LeaseTable* leases = options_.leases.get()) {
    // Stria's own: the metadata leases (docs/consistency.md#leases), lctl get_param
    // mdt.*.md_leases.
    registry_->Add(
        mdt + ".md_leases",
        [leases] {
          const LeaseTable::Counters c = leases->counters();
          return fmt::format(
              "lease_ms: {}\nclients: {}\nheld: {}\ngranted: {}\nrefused: {}\n"
              "revocations: {}\nrevoke_failures: {}\nwriteback_granted: {}\n"
              "writeback_recalled: {}\nresources: {}\nswept: {}\n",
              leases->options().lease_ms, c.clients, c.held, c.granted, c.refused, c.revocations,
              c.revoke_failures, c.writeback_granted, c.writeback_recalled, c.resources, c.swept);
        },
        [] {});
  }
  lnet::RegisterStatsService(server, registry_.get());
  using namespace proto;  // NOLINT: opcode and message names
  Add(server, OP_MGS_REGISTER_OST, &RegisterOst);
  Add(server, OP_MGS_GET_CONFIG, &GetConfig);
  Add(server, OP_MGS_SET_PARAM, &SetParam);
  Add(server, OP_MGS_GET_PARAM, &GetParam);
  Add(server, OP_MGS_POOL, &PoolOp);

  Add(server, OP_MDS_LOOKUP, &Lookup);
  Add(server, OP_MDS_GETATTR, &Getattr);
  Add(server, OP_MDS_SETATTR, &Setattr);
  Add(server, OP_MDS_CREATE, &Create);
  Add(server, OP_MDS_UNLINK, &Unlink, /*kick=*/true);
  Add(server, OP_MDS_RENAME, &Rename, /*kick=*/true);
  Add(server, OP_MDS_LINK, &Link);
  Add(server, OP_MDS_READLINK, &Readlink);
  Add(server, OP_MDS_READDIR, &Readdir);
  Add(server, OP_MDS_STATFS, &Statfs);
  Add(server, OP_MDS_GETXATTR, &Getxattr);
  Add(server, OP_MDS_SETXATTR, &Setxattr);
  Add(server, OP_MDS_LISTXATTR, &Listxattr);
  Add(server, OP_MDS_REMOVEXATTR, &Removexattr);
  Add(server, OP_MDS_OPEN, &Open);
  Add(server, OP_MDS_CLOSE, &Close);
  Add(server, OP_MDS_CLOSE_BATCH, &CloseBatch);
  Add(server, OP_MDS_SET_DEFAULT_LAYOUT, &SetDefaultLayout);
  Add(server, OP_MDS_GET_DEFAULT_LAYOUT, &GetDefaultLayout);
  Add(server, OP_MDS_SYNC, &Sync);
  Add(server, OP_MDS_LAYOUT_INTENT, &LayoutIntent);
  Add(server, OP_MDS_FID2PATH, &Fid2Path);
  Add(server, OP_MDS_MIGRATE, &Migrate, /*kick=*/true);
  RegisterDomOps(server);
  RegisterCapaRenew(server);
  RegisterMirror(server);
}

void MdsService::RegisterMirror(lnet::RpcServer* server) {
  using namespace proto;  // NOLINT: opcode and message names
  Namespace* ns = ns_;
  ClientSessions* sessions = sessions_;
  const MdsServiceOptions options = options_;
  if (options.resync != nullptr) {
    MirrorResync* resync = options.resync;
    registry_->Add("mdt." + ns_->fsname() + "-MDT0000.mirror_resync",
                   [resync] { return resync->Format(); }, nullptr);
  }
  server->Register<MirrorRequest, MirrorReply>(
      OP_MDS_MIRROR,
      [ns, sessions, options](lnet::RpcContext& ctx, const MirrorRequest& wire_req,
                              MirrorReply* rep) -> Status {
        if (sessions) sessions->Touch(ctx.client_uuid);
        MirrorRequest storage;
        const MirrorRequest& req = Squashed(wire_req, options, ctx, &storage);
        Status st = Mirror(*ns, options.resync, req, rep);
        if (FlushedClosesAfterBusy(options.leases.get(), st)) {
          rep->Clear();
          st = Mirror(*ns, options.resync, req, rep);
        }
        ctx.last_committed = ns->LastCommitted();
        if (!st.ok()) LOG_DEBUG("OP_MDS_MIRROR from {}: {}", ctx.peer, st.ToString());
        return st;
      });
}

void MdsService::RegisterCapaRenew(lnet::RpcServer* server) {
  using namespace proto;  // NOLINT: opcode and message names
  Namespace* ns = ns_;
  ClientSessions* sessions = sessions_;
  const MdsServiceOptions options = options_;
  server->Register<CapaRenewRequest, CapaRenewReply>(
      OP_MDS_CAPA_RENEW,
      [ns, sessions, options](lnet::RpcContext& ctx, const CapaRenewRequest& wire_req,
                              CapaRenewReply* rep) -> Status {
        if (!options.capa) {
          return Status(Code::kNotSup, "this MDS has no cluster key: it grants no capabilities");
        }
        if (sessions) sessions->Touch(ctx.client_uuid);
        CapaRenewRequest storage;
        const CapaRenewRequest& req = Squashed(wire_req, options, ctx, &storage);
        const Status not_open(Code::kBadF, "handle " + std::to_string(req.handle()) +
                                               " is not this client's open handle of inode " +
                                               std::to_string(req.ino()));
        {
          std::lock_guard open_lock(ns->open_mutex());
          if (!ns->HandleOpenLocked(req.handle(), req.ino())) return not_open;
        }
        uint32_t ops = 0;
        if (sessions) {
          std::optional<uint32_t> known =
              sessions->HandleCapaOps(ctx.client_uuid, req.handle(), req.ino());
          if (!known) return not_open;
          ops = *known;
        }
        STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns->GetInode(req.ino()));
        if (!rec.is_reg()) return Status(Code::kInval, "capabilities are for regular files");
        if (ops == 0) {
          // The MDS does not know what this handle was granted (it was reopened after a
          // restart): check again as an open with the same flags would.
          ops = CapaOpsForOpen(req.flags());
          int mask = 0;
          if (ops & CAPA_READ) mask |= kMayRead;
          if (ops & CAPA_WRITE) mask |= kMayWrite;
          STRIA_RETURN_IF_ERROR(CheckAccess(rec.attr, req.cred(), mask));
          if (sessions) {
            sessions->Opened(ctx.client_uuid, req.handle(), req.ino(), ops,
                             (ops & CAPA_WRITE) != 0);
          }
        }
        options.capa->Grant(ctx.client_uuid, req.ino(), ops, rec.layout, rep->mutable_capa());
        return Status::Ok();
      });
}

void MdsService::RegisterDomOps(lnet::RpcServer* server) {
  using namespace proto;  // NOLINT: opcode and message names
  Namespace* ns = ns_;
  ClientSessions* sessions = sessions_;
  std::shared_ptr<MdStats> md = stats_;
  server->Register<DomIoRequest, DomIoReply>(
      OP_MDS_DOM_READ,
      [ns, sessions, md](lnet::RpcContext& ctx, const DomIoRequest& req, DomIoReply* rep) {
        const auto t0 = std::chrono::steady_clock::now();
        if (sessions) sessions->Touch(ctx.client_uuid);
        Status st = DomRead(*ns, req, &ctx.bulk_out, rep);
        md->Count("", kMdRead, UsecsSince(t0));
        if (st.ok()) md->Count("", kMdReadBytes, ctx.bulk_out.size());
        return st;
      });
  server->Register<DomIoRequest, DomIoReply>(
      OP_MDS_DOM_WRITE,
      [ns, sessions, md](lnet::RpcContext& ctx, const DomIoRequest& req, DomIoReply* rep) {
        const auto t0 = std::chrono::steady_clock::now();
        if (sessions) sessions->Touch(ctx.client_uuid);
        Status st = DomWrite(*ns, req, ctx.bulk_in, rep);
        md->Count("", kMdWrite, UsecsSince(t0));
        if (st.ok()) md->Count("", kMdWriteBytes, ctx.bulk_in.size());
        return st;
      });
}

}  // namespace stria::mds

namespace stria::mds {

void MdsService::AddMetrics(PromText* page) const {
  const std::string fs = ns_->fsname();
  const PromLabels mdt = {{"fs", fs}, {"mdt", "MDT0000"}};
  page->AddStats("stria_mdt", stats_->stats, mdt);
  stats_->jobs.ForEach([&](const std::string& job, const StatsSet& set) {
    PromLabels l = mdt;
    l.emplace_back("job", job);
    page->AddStats("stria_mdt_job", set, l);
  });
  // The OSTs as the MGS knows them: their space at their last heartbeat.
  for (const proto::OstInfo& o : ns_->OstTable()) {
    char ost[16];
    std::snprintf(ost, sizeof(ost), "OST%04x", o.index());
    page->Add("stria_mgs_ost_space_bytes", "gauge",
              "OST space at its last registration with the MGS (bytes)",
              {{"fs", fs}, {"ost", ost}, {"kind", "total"}}, static_cast<double>(o.bytes_total()));
    page->Add("stria_mgs_ost_space_bytes", "gauge", "", {{"fs", fs}, {"ost", ost}, {"kind", "free"}},
              static_cast<double>(o.bytes_free()));
    page->Add("stria_mgs_ost_active", "gauge", "1 when the OST is registered and active",
              {{"fs", fs}, {"ost", ost}}, o.active() ? 1 : 0);
  }
}

}  // namespace stria::mds
