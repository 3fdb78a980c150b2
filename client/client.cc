// ClientImpl: libstria's Client over lnet RpcClients (see client.h).
//
// Locking: mu_ guards the configuration cache and the OST peer table; it is never held
// across an RPC. RpcClients are never destroyed while the Client lives (an OST whose NID
// changed keeps its old RpcClient in retired_), so the raw pointers Ost() returns stay valid.
#include "client/client.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "client/entry_batches.h"
#include "client/internal/thread_pool.h"
#include "client/jobid.h"
#include "client/local_reads.h"
#include "client/mirror_io.h"
#include "client/striped_io.h"
#include "common/log.h"

namespace stria::client {

namespace {

using Clock = std::chrono::steady_clock;

// One attempt at an OST (RpcClient retries inside it) lasts at most this long before the
// Client asks the MGS whether the OST moved (a restarted OSS registers its new port at
// start; the heartbeat re-registers every 5 s). Slow replies are bounded by rpc_timeout_ms.
constexpr int kOstAttemptMs = 2'000;
// A config refresh triggered by OST trouble happens at most this often.
constexpr auto kMinRefreshInterval = std::chrono::milliseconds(500);

std::string RandomUuid() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(Clock::now().time_since_epoch().count()));
  const uint64_t a = gen(), b = gen();
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<uint32_t>(a >> 32),
                static_cast<uint32_t>(a >> 16) & 0xffff, static_cast<uint32_t>(a) & 0xffff,
                static_cast<uint32_t>(b >> 48) & 0xffff,
                static_cast<unsigned long long>(b & 0xffffffffffffull));
  return buf;
}

// What a kept MDS request must say when replayed (lnet::ClientOptions::keep_replays): a
// create names the inode number and layout it got, so the kernel's inode and any objects
// written under that layout stay valid; its open handle comes back by OP_MDS_REOPEN
// (client/session.h), so the replay does not open again. A close replays its size report
// without its handle.
void PatchReplay(uint16_t opcode, std::string* request, std::string_view reply) {
  if (opcode == proto::OP_MDS_CLOSE) {
    // Only the size and times it reported: the handle is gone, and its number may belong
    // to another open by the time of the replay.
    proto::CloseRequest req;
    if (!req.ParseFromString(*request)) return;
    req.set_handle(0);
    req.SerializeToString(request);
    return;
  }
  if (opcode != proto::OP_MDS_CREATE) return;
  proto::CreateRequest req;
  proto::EntryReply rep;
  if (!req.ParseFromString(*request) ||
      !rep.ParseFromArray(reply.data(), static_cast<int>(reply.size()))) {
    return;
  }
  PatchCreateReplay(&req, rep);
  req.SerializeToString(request);
}

class ClientImpl final : public Client, private OstTransport {
 public:
  explicit ClientImpl(ClientConfig config)
      : config_(std::move(config)),
        pool_(config_.io_threads),
        io_(this, &pool_, config_.rpc.limits.max_bulk),
        mirrored_(&io_, this, &pool_, config_.mirror_timeout_ms) {
    io_.set_local_reads(&local_reads_);
    if (config_.rpc.client_uuid.empty()) config_.rpc.client_uuid = RandomUuid();
    config_.rpc.fsname = config_.fsname;
    lnet::ClientOptions mds_opts = config_.rpc;
    // Namespace changes the MDS answered before committing are replayed if it loses them.
    mds_opts.keep_replays = true;
    mds_opts.replay_patch = &PatchReplay;
    mds_opts.max_connections = config_.mds_connections;
    mds_opts.on_restart = [this] {
      create_batches_.MdsRestarted();
      lookup_batches_.MdsRestarted();
      if (MdsCallGate* gate = mds_gate_.load(std::memory_order_acquire)) gate->MdsRestarted();
    };
    if (config_.mgs_nids.size() > 1) {
      // Leave time to try every failover NID within the overall deadline.
      mds_opts.retry_deadline_ms = std::max<int>(
          mds_opts.connect_timeout_ms,
          mds_opts.retry_deadline_ms / static_cast<int>(config_.mgs_nids.size()));
    }
    for (const lnet::Nid& nid : config_.mgs_nids) {
      mds_.push_back(std::make_unique<lnet::RpcClient>(nid, mds_opts));
    }
  }

  Status Init() {
    STRIA_ASSIGN_OR_RETURN(proto::FsConfig cfg, GetConfig(true));
    if (!config_.fsname.empty() && cfg.fsname() != config_.fsname) {
      return Status(Code::kWrongFs, "the MGS serves filesystem '" + cfg.fsname() + "', not '" +
                                        config_.fsname + "'");
    }
    LOG_INFO("connected to filesystem '{}' ({} OSTs)", cfg.fsname(), cfg.osts_size());
    return Status::Ok();
  }

  Result<proto::FsConfig> GetConfig(bool refresh) override {
    if (!refresh) {
      std::lock_guard lock(mu_);
      if (have_config_) return config_cache_;
    }
    proto::FsConfig cfg;
    STRIA_RETURN_IF_ERROR(MdsCall(proto::OP_MGS_GET_CONFIG, proto::GetConfigRequest(), &cfg));
    std::lock_guard lock(mu_);
    for (const proto::OstInfo& info : cfg.osts()) {
      OstPeer& peer = osts_[info.index()];
      if (peer.nid != info.nid()) {
        if (peer.rpc) {
          LOG_INFO("OST{:04x} moved from {} to {}", info.index(), peer.nid, info.nid());
          retired_.push_back(std::move(peer.rpc));
        }
        peer.nid = info.nid();
      }
    }
    config_cache_ = cfg;
    have_config_ = true;
    tunables_.Apply(std::map<std::string, std::string>(cfg.params().begin(), cfg.params().end()));
    last_refresh_ = Clock::now();
    return cfg;
  }

  Status MdsCallRaw(proto::Opcode op, std::string_view req, std::string* rep,
                    int retry_deadline_ms = -1) override {
    return MdsCallBulk(static_cast<uint16_t>(op), req, rep, {}, retry_deadline_ms);
  }

  void SetMdsCallGate(MdsCallGate* gate) override {
    mds_gate_.store(gate, std::memory_order_release);
  }

  Status MdsCallBulk(uint16_t op, std::string_view req, std::string* rep,
                     const lnet::CallBulk& bulk, int retry_deadline_ms = -1) override {
    if (MdsCallGate* gate = mds_gate_.load(std::memory_order_acquire)) gate->BeforeMdsCall(op);
    const size_t n = mds_.size();
    size_t idx = mds_index_.load();
    Status st;
    for (size_t attempt = 0; attempt < n; ++attempt) {
      st = mds_[idx]->CallRaw(op, req, rep, bulk, retry_deadline_ms);
      if (st.ok() || !st.retryable()) {
        if (attempt > 0) mds_index_.store(idx);
        return st;
      }
      idx = (idx + 1) % n;
    }
    return st;
  }

  Result<lnet::RpcClient*> Ost(uint32_t ost_idx) override {
    {
      std::lock_guard lock(mu_);
      if (auto* rpc = PeerLocked(ost_idx)) return rpc;
    }
    // Unknown here: the OST may have registered after our last look.
    STRIA_RETURN_IF_ERROR(GetConfig(true).status());
    std::lock_guard lock(mu_);
    if (auto* rpc = PeerLocked(ost_idx)) return rpc;
    return Status(Code::kNoOst, "OST index " + std::to_string(ost_idx) +
                                    " is not known to the MGS");
  }

  Result<proto::EntryReply> ResolvePath(const proto::Credentials& cred,
                                        std::string_view path) override;

  Result<size_t> Read(const proto::Layout& layout, uint64_t file_size, uint64_t offset,
                      std::span<uint8_t> buf, bool* missing_object, OpenCapas* capas) override {
    return mirrored_.Read(layout, file_size, offset, buf, missing_object, capas);
  }
  Status Write(const proto::Layout& layout, uint64_t offset, std::span<const uint8_t> data,
               bool sync, OpenCapas* capas) override {
    return mirrored_.Write(layout, offset, data, sync, capas);
  }
  Status TruncateObjects(const proto::Layout& layout, uint64_t size, OpenCapas* capas) override {
    return mirrored_.TruncateObjects(layout, size, capas);
  }
  Status PunchObjects(const proto::Layout& layout, uint64_t offset, uint64_t end,
                      OpenCapas* capas) override {
    return mirrored_.PunchObjects(layout, offset, end, capas);
  }
  Status SyncObjects(const proto::Layout& layout, OpenCapas* capas) override {
    return mirrored_.SyncObjects(layout, capas);
  }
  Result<uint64_t> GlimpseSize(const proto::Layout& layout, OpenCapas* capas) override {
    return mirrored_.GlimpseSize(layout, capas);
  }
  const MirrorStats& mirror_stats() const override { return mirrored_.stats(); }
  const LocalReads& local_reads() const override { return local_reads_; }

  ClientTunables& tunables() override { return tunables_; }

  std::map<uint32_t, OscStats*> OscStatsByOst() override {
    std::lock_guard lock(mu_);
    std::map<uint32_t, OscStats*> out;
    for (auto& [idx, peer] : osts_) out[idx] = peer.stats.get();
    return out;
  }

  std::string instance() const override { return config_.rpc.client_uuid.substr(0, 8); }
  CreateBatches& create_batches() override { return create_batches_; }
  LookupBatches& lookup_batches() override { return lookup_batches_; }

  Result<std::vector<proto::OstStatfsReply>> OstStatfs(bool wait_all) override {
    STRIA_ASSIGN_OR_RETURN(proto::FsConfig cfg, GetConfig(false));
    std::vector<uint32_t> idxs;
    for (const auto& o : cfg.osts()) {
      if (!wait_all || o.active()) idxs.push_back(o.index());
    }
    std::sort(idxs.begin(), idxs.end());
    idxs.erase(std::unique(idxs.begin(), idxs.end()), idxs.end());
    std::vector<proto::OstStatfsReply> replies(idxs.size());
    std::vector<char> got(idxs.size(), 0);
    Status all = internal::ParallelFor(&pool_, idxs.size(), [&](size_t i) -> Status {
      auto rpc = Ost(idxs[i]);
      if (!rpc.ok()) return wait_all ? rpc.status() : Status::Ok();
      proto::OstStatfsRequest req;
      req.set_ost_idx(idxs[i]);
      Status st = (*rpc)->Call(proto::OP_OST_STATFS, req, &replies[i]);
      if (st.ok()) {
        got[i] = 1;
      } else {
        LOG_DEBUG("statfs of OST{:04x}: {}", idxs[i], st.ToString());
        if (wait_all) return st;
      }
      return Status::Ok();
    });
    if (wait_all) STRIA_RETURN_IF_ERROR(all);
    std::vector<proto::OstStatfsReply> out;
    for (size_t i = 0; i < idxs.size(); ++i) {
      if (got[i]) out.push_back(std::move(replies[i]));
    }
    return out;
  }

 private:
  struct OstPeer {
    std::string nid;                       // as registered with the MGS
    std::unique_ptr<lnet::RpcClient> rpc;  // created on first use
    // Never replaced, so the pointers OstCallRaw takes stay valid (entries are never erased).
    std::unique_ptr<OscStats> stats = std::make_unique<OscStats>();
    std::unique_ptr<InflightGate> gate = std::make_unique<InflightGate>();
  };

  // Counts a bulk RPC in (rpc_stats, max_rpcs_in_flight) and out again.
  class BulkRpc {
   public:
    BulkRpc(ClientImpl* c, uint32_t ost_idx, uint16_t opcode, const lnet::CallBulk& bulk) {
      if (opcode != proto::OP_OST_READ && opcode != proto::OP_OST_WRITE) return;
      {
        std::lock_guard lock(c->mu_);
        OstPeer& peer = c->osts_[ost_idx];
        stats_ = peer.stats.get();
        gate_ = peer.gate.get();
      }
      write_ = opcode == proto::OP_OST_WRITE;
      uint64_t bytes = 0;
      if (write_) {
        for (const iovec& v : bulk.out) bytes += v.iov_len;
      } else {
        bytes = bulk.in.size();
      }
      gate_->Enter(static_cast<int>(c->tunables_.Get("max_rpcs_in_flight")));
      const uint64_t pages = (bytes + kOscPageSize - 1) / kOscPageSize;
      auto& in_flight = write_ ? stats_->writes_in_flight : stats_->reads_in_flight;
      const int n = in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
      (write_ ? stats_->write_pages : stats_->read_pages).TallyLog2(pages);
      (write_ ? stats_->write_rif : stats_->read_rif).Tally(static_cast<uint64_t>(n));
    }
    ~BulkRpc() {
      if (gate_ == nullptr) return;
      (write_ ? stats_->writes_in_flight : stats_->reads_in_flight)
          .fetch_sub(1, std::memory_order_relaxed);
      gate_->Leave();
    }

   private:
    OscStats* stats_ = nullptr;
    InflightGate* gate_ = nullptr;
    bool write_ = false;
  };

  // REQUIRES: mu_ held. The peer's RpcClient (created now if needed), or null if unknown.
  lnet::RpcClient* PeerLocked(uint32_t ost_idx) {
    auto it = osts_.find(ost_idx);
    if (it == osts_.end() || it->second.nid.empty()) return nullptr;
    OstPeer& peer = it->second;
    if (!peer.rpc) {
      auto nid = lnet::Nid::Parse(peer.nid);
      if (!nid.ok()) {
        LOG_WARN("OST{:04x} has a bad NID '{}' in the MGS config: {}", ost_idx, peer.nid,
                 nid.status().ToString());
        return nullptr;
      }
      lnet::ClientOptions opts = config_.rpc;
      opts.retry_deadline_ms = std::min(opts.retry_deadline_ms, kOstAttemptMs);
      peer.rpc = std::make_unique<lnet::RpcClient>(*nid, opts);
    }
    return peer.rpc.get();
  }

  // OstTransport: one OST RPC; on transport failure (or an OST the table lost) the OST
  // table is refreshed from the MGS, since a restarted OSS may listen on a new port, and the
  // call is resent until rpc.retry_deadline_ms has passed.
  Status OstCallRaw(uint32_t ost_idx, uint16_t opcode, std::string_view request,
                    std::string* reply, const lnet::CallBulk& in_bulk,
                    int deadline_ms) override {
    BulkRpc counted(this, ost_idx, opcode, in_bulk);
    lnet::CallBulk bulk = in_bulk;
    bulk.checksum = tunables_.Get("checksums") != 0;
    const bool bounded = deadline_ms >= 0;
    const auto deadline = Clock::now() + std::chrono::milliseconds(
                                             bounded ? deadline_ms : config_.rpc.retry_deadline_ms);
    auto left_ms = [&] {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      return std::max<int>(1, static_cast<int>(left.count()));
    };
    for (int attempt = 0;; ++attempt) {
      auto rpc = Ost(ost_idx);
      if (!rpc.ok()) return rpc.status();
      lnet::RpcClient* peer = *rpc;
      reply->clear();
      // A bounded call (a mirror's) gives each attempt only what is left of its deadline.
      Status st = bounded ? peer->CallRaw(opcode, request, reply, bulk,
                                          std::min(left_ms(), kOstAttemptMs), left_ms())
                          : peer->CallRaw(opcode, request, reply, bulk);
      if (st.ok()) return st;
      const bool again = st.code() == Code::kDisconnected || st.code() == Code::kNoOst ||
                         st.retryable();
      if (!again || Clock::now() >= deadline) return st;
      LOG_INFO("OST{:04x} at {}: {}; asking the MGS for its address", ost_idx,
               peer->peer().ToString(), st.ToString());
      RefreshAfterFailure();
      auto next = Ost(ost_idx);
      if (next.ok() && *next == peer) {
        // Same address: the OSS is down or restarting; pause before the next attempt.
        const int pause = std::min(1000, 100 << std::min(attempt, 3));
        if (bounded && Clock::now() + std::chrono::milliseconds(pause) >= deadline) return st;
        std::this_thread::sleep_for(std::chrono::milliseconds(pause));
      }
    }
  }

  void RefreshAfterFailure() {
    {
      std::lock_guard lock(mu_);
      if (Clock::now() - last_refresh_ < kMinRefreshInterval) return;
      last_refresh_ = Clock::now();
    }
    auto st = GetConfig(true);
    if (!st.ok()) LOG_WARN("config refresh from the MGS failed: {}", st.status().ToString());
  }

  ClientConfig config_;
  std::vector<std::unique_ptr<lnet::RpcClient>> mds_;  // one per MGS NID; fixed after ctor
  std::atomic<size_t> mds_index_{0};                    // the NID in use
  std::atomic<MdsCallGate*> mds_gate_{nullptr};         // SetMdsCallGate

  std::mutex mu_;
  bool have_config_ = false;                           // guarded by mu_
  proto::FsConfig config_cache_;                       // guarded by mu_
  Clock::time_point last_refresh_{};                   // guarded by mu_
  std::unordered_map<uint32_t, OstPeer> osts_;         // guarded by mu_
  std::vector<std::unique_ptr<lnet::RpcClient>> retired_;  // guarded by mu_

  ClientTunables tunables_;
  internal::ThreadPool pool_;
  LocalReads local_reads_{this, &tunables_};
  StripedIo io_;
  MirroredIo mirrored_;  // over io_: mirrored layouts (client/mirror_io.h)
  CreateBatches create_batches_{this};
  LookupBatches lookup_batches_{this};
};

Result<proto::EntryReply> ClientImpl::ResolvePath(const proto::Credentials& cred,
                                                  std::string_view path) {
  constexpr uint64_t kRootIno = 1;
  constexpr int kMaxSymlinks = 40;  // as Linux's ELOOP limit
  if (path.empty() || path.front() != '/') {
    return Status(Code::kInval, "path '" + std::string(path) + "' is not absolute");
  }
  proto::EntryReply root;
  {
    proto::GetattrRequest req;
    *req.mutable_cred() = cred;
    req.set_ino(kRootIno);
    proto::AttrReply rep;
    STRIA_RETURN_IF_ERROR(MdsCall(proto::OP_MDS_GETATTR, req, &rep));
    *root.mutable_attr() = rep.attr();
    *root.mutable_layout() = rep.layout();
  }
  std::vector<proto::EntryReply> stack{root};  // entries from the root down
  std::string rest(path);
  size_t pos = 0;
  int links = 0;
  while (pos < rest.size()) {
    while (pos < rest.size() && rest[pos] == '/') ++pos;
    if (pos >= rest.size()) break;
    size_t end = rest.find('/', pos);
    if (end == std::string::npos) end = rest.size();
    const std::string name = rest.substr(pos, end - pos);
    pos = end;
    if (name == ".") continue;
    if (name == "..") {
      if (stack.size() > 1) stack.pop_back();
      continue;
    }
    proto::LookupRequest req;
    *req.mutable_cred() = cred;
    req.set_parent(stack.back().attr().ino());
    req.set_name(name);
    STRIA_ASSIGN_OR_RETURN(proto::EntryReply rep, lookup_batches_.Send(req));
    const bool more = rest.find_first_not_of('/', pos) != std::string::npos;
    const uint32_t type = rep.attr().mode() & S_IFMT;
    if (more && type == S_IFLNK) {
      // A symlink inside the path is followed: relative to its directory, or to the
      // filesystem root when absolute (the mount point is unknown here).
      if (++links > kMaxSymlinks) return Status(Code::kLoop, "too many symlinks in " + rest);
      proto::ReadlinkRequest rl;
      *rl.mutable_cred() = cred;
      rl.set_ino(rep.attr().ino());
      proto::ReadlinkReply target;
      STRIA_RETURN_IF_ERROR(MdsCall(proto::OP_MDS_READLINK, rl, &target));
      if (!target.target().empty() && target.target().front() == '/') stack.resize(1);
      rest = target.target() + rest.substr(pos);
      pos = 0;
      continue;
    }
    if (more && type != S_IFDIR) {
      return Status(Code::kNotDir, "'" + name + "' in '" + std::string(path) +
                                       "' is not a directory");
    }
    stack.push_back(std::move(rep));
  }
  return stack.back();
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(ClientConfig config) {
  if (config.mgs_nids.empty()) return Status(Code::kInval, "no MGS NID given");
  auto impl = std::make_unique<ClientImpl>(std::move(config));
  STRIA_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Client>(std::move(impl));
}

proto::Credentials ProcessCredentials() {
  proto::Credentials cred;
  cred.set_uid(geteuid());
  cred.set_gid(getegid());
  cred.set_pid(static_cast<uint32_t>(getpid()));
  cred.set_jobid(ProcessJobId());
  const int n = getgroups(0, nullptr);
  if (n > 0) {
    std::vector<gid_t> groups(n);
    const int got = getgroups(n, groups.data());
    for (int i = 0; i < got; ++i) cred.add_groups(groups[i]);
  }
  return cred;
}

}  // namespace stria::client
