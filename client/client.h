// libstria's Client: one connection to a Stria filesystem, used by the FUSE client, lfs,
// lctl, the benchmarks and the tests.
//
// A Client knows the MGS/MDS NIDs, fetches the filesystem configuration (the OST table) from
// the MGS, and keeps one RpcClient per service: the MDS, and each OST's OSS. Namespace
// operations are MDS RPCs (MdsCall); data operations stripe over the OST objects of a
// layout (RAID-0 or composite, client/striped_io.h), sending the pieces of one call to all their OSTs in
// parallel on an internal I/O thread pool. The MDS is never on the data path.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/entry_batches.h"
#include "client/osc_stats.h"
#include "common/status.h"
#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "proto/stria.pb.h"

namespace stria::client {

class OpenCapas;
struct MirrorStats;
class LocalReads;

// What must happen before a request leaves for the MDS: a mount's unlinks answered before
// the MDS had them are sent first (client/fuse/unlink_writeback.h).
class MdsCallGate {
 public:
  virtual ~MdsCallGate() = default;
  virtual void BeforeMdsCall(uint16_t op) = 0;
  // A connection found the MDS restarted (it knows nothing of what it granted before). On
  // the connecting thread: must not block or call the MDS.
  virtual void MdsRestarted() {}
};

struct ClientConfig {
  std::vector<lnet::Nid> mgs_nids;    // the MGS (co-located with the MDS); first reachable wins
  std::string fsname;                 // must match the MGS's; empty = accept any
  lnet::ClientOptions rpc;            // timeouts and retry deadline for every peer
  int io_threads = 16;                // parallel stripe I/O
  // A mirror whose OSTs do not answer within this many milliseconds is given up for the
  // call: writes complete on the other mirrors (it is marked stale), reads move to another
  // (client/mirror_io.h). The mount option mirror_timeout=S.
  int mirror_timeout_ms = 5'000;
  // Connections to the MDS, opened as concurrent calls need them (each carries one call at
  // a time). A caller that finds them all busy waits for one to come back, a futex wake and
  // a thread switch per call: with 16 threads creating and 8 connections, that cost the
  // client 35% more CPU and made 15% fewer creates per second than 16 connections.
  int mds_connections = 16;
};

class Client {
 public:
  // Connects to the MGS and fetches the configuration. Fails with the MGS's error (or
  // kDisconnected/kTimeout) if it cannot be reached within rpc.retry_deadline_ms.
  static Result<std::unique_ptr<Client>> Connect(ClientConfig config);

  virtual ~Client() = default;

  // The filesystem configuration; refresh=true asks the MGS again (e.g. after an OST moved).
  virtual Result<proto::FsConfig> GetConfig(bool refresh = false) = 0;

  // One MDS/MGS RPC (opcodes OP_MGS_* and OP_MDS_*). retry_deadline_ms >= 0 bounds the
  // resends of this call (else ClientConfig::rpc.retry_deadline_ms).
  virtual Status MdsCallRaw(proto::Opcode op, std::string_view req, std::string* rep,
                            int retry_deadline_ms = -1) = 0;
  // Runs gate->BeforeMdsCall before every MDS/MGS request from now on (null: none). The
  // gate must outlive the Client's use.
  virtual void SetMdsCallGate(MdsCallGate* gate) = 0;
  template <typename Req, typename Rep>
  Status MdsCall(proto::Opcode op, const Req& req, Rep* rep) {
    std::string body, reply;
    req.SerializeToString(&body);
    STRIA_RETURN_IF_ERROR(MdsCallRaw(op, body, &reply));
    if (!rep->ParseFromString(reply)) return Status(Code::kProtocol, "bad MDS reply");
    return Status::Ok();
  }

  // The RpcClient for OST `ost_idx` (kNoOst if the MGS does not know it).
  virtual Result<lnet::RpcClient*> Ost(uint32_t ost_idx) = 0;

  // Resolves an absolute path inside the filesystem ("/shards/a"; "/" is the root) by
  // lookups from the root; symlinks in the last component are not followed.
  virtual Result<proto::EntryReply> ResolvePath(const proto::Credentials& cred,
                                                std::string_view path) = 0;

  // ---- data, striped over a file's layout ----
  // A mirrored layout (proto/layout_mirrors.h) is read from one mirror and written to all,
  // failing over and marking mirrors stale as client/mirror_io.h says.

  // Reads [offset, offset+buf.size()) of a file of `file_size` bytes into buf: returns the
  // bytes read (short only at end of file); holes read as zeros.
  // *missing_object: see StripedIo::Read.
  // capas: the open's OSS capabilities (client/capa.h; without a key it carries only the
  // open's credentials and handle, for the mirror code's stale marks), or null;
  // the same for every data call below.
  virtual Result<size_t> Read(const proto::Layout& layout, uint64_t file_size, uint64_t offset,
                              std::span<uint8_t> buf, bool* missing_object = nullptr,
                              OpenCapas* capas = nullptr) = 0;

  // Writes data at offset; every touched object is written in parallel. sync=true makes the
  // OSTs fdatasync before replying.
  virtual Status Write(const proto::Layout& layout, uint64_t offset,
                       std::span<const uint8_t> data, bool sync = false,
                       OpenCapas* capas = nullptr) = 0;

  // Sets every object's size to match a file of `size` bytes (truncate on the OSTs).
  virtual Status TruncateObjects(const proto::Layout& layout, uint64_t size,
                                 OpenCapas* capas = nullptr) = 0;

  // Frees file range [offset, end) in every object (the range then reads as zeros).
  virtual Status PunchObjects(const proto::Layout& layout, uint64_t offset, uint64_t end,
                              OpenCapas* capas = nullptr) = 0;

  // Makes every object's data durable (fsync on each OST). capas names the open for the
  // stale mark of a mirror that cannot be synced.
  virtual Status SyncObjects(const proto::Layout& layout, OpenCapas* capas = nullptr) = 0;

  // The file size implied by the objects' sizes (a glimpse of the OSTs).
  virtual Result<uint64_t> GlimpseSize(const proto::Layout& layout,
                                       OpenCapas* capas = nullptr) = 0;

  // What the mirror code counted (failovers, damaged reads, stale marks).
  virtual const MirrorStats& mirror_stats() const = 0;
  // Object reads served from an OST's files on this host, and those handed back to the OSS
  // (client/local_reads.h).
  virtual const LocalReads& local_reads() const = 0;

  // Per-OST usage (lfs df), in OST index order; an unreachable OST is skipped. With
  // `wait_all` (a nolazystatfs mount) only active OSTs are asked, each is resent to until it
  // answers or the retry deadline passes, and the first error is returned instead.
  virtual Result<std::vector<proto::OstStatfsReply>> OstStatfs(bool wait_all = false) = 0;

  // ---- statistics and tunables (client/osc_stats.h) ----

  // This client's tunables: applied from the MGS's params at every configuration fetch.
  virtual ClientTunables& tunables() = 0;
  // The rpc_stats of every OST this client has talked to, by OST index.
  virtual std::map<uint32_t, OscStats*> OscStatsByOst() = 0;
  // Creates and lookups of one directory by several threads at once, sent in batches
  // (client/entry_batches.h); Metadata::Create and Metadata::Lookup go through them.
  virtual CreateBatches& create_batches() = 0;
  virtual LookupBatches& lookup_batches() = 0;
  // This client's instance in osc and llite parameter names (Lustre's "ffff8881..."): the
  // first 8 hex digits of its uuid.
  virtual std::string instance() const = 0;
};

// Credentials of the calling process (its uid, gid and supplementary groups).
proto::Credentials ProcessCredentials();

}  // namespace stria::client
