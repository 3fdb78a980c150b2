#include "client/fuse/lease_cache.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "lnet/rpc_server.h"
#include "proto/stria.pb.h"

namespace stria::client {

namespace {

// How long a revocation waits for the kernel to drop what it covers before answering.
constexpr auto kInvalWait = std::chrono::milliseconds(200);
// How long one registration may keep resending (a keepalive later tries again).
constexpr int kRegisterDeadlineMs = 5'000;
// A lease is trusted for this share of what the MDS granted, from when the request left:
// the MDS's clock started later, and the kernel's timeout must end before the lease does.
constexpr double kLeaseShare = 0.9;

// The local IPv4 address this host uses to reach `nid` (no packet is sent).
Result<std::string> LocalAddressTowards(const lnet::Nid& nid) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(nid.port);
  if (int rc = getaddrinfo(nid.addr.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return Status(Code::kInval, "cannot resolve " + nid.addr + ": " + gai_strerror(rc));
  }
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(res);
    return ErrnoStatus("socket", errno);
  }
  const int rc = connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  if (rc != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus("no route to " + nid.addr, err);
  }
  close(fd);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &local.sin_addr, buf, sizeof(buf));
  return std::string(buf);
}

}  // namespace

LeaseCache::LeaseCache(Client* client, LeaseCacheOptions options)
    : client_(client), options_(std::move(options)) {}

LeaseCache::~LeaseCache() { Stop(); }

Status LeaseCache::Start(fuse_session* se, const lnet::Nid& mds) {
  se_ = se;
  STRIA_ASSIGN_OR_RETURN(std::string local, LocalAddressTowards(mds));
  lnet::ServerOptions so;
  so.name = "stria-fuse-leases";
  so.fsname = options_.fsname;
  so.server_uuid = "client-" + client_->instance();
  so.worker_threads = 2;
  so.keys = options_.keys;
  so.role = "client";
  server_ = std::make_unique<lnet::RpcServer>(so);
  server_->Register<proto::LeaseRevokeRequest, proto::LeaseRevokeReply>(
      proto::OP_CLIENT_LEASE_REVOKE,
      [this](lnet::RpcContext&, const proto::LeaseRevokeRequest& req,
             proto::LeaseRevokeReply*) -> Status {
        if (req.flush_closes()) {
          std::function<void()> flush;
          {
            std::lock_guard lock(mu_);
            flush = flush_closes_;
          }
          if (flush) flush();
          if (req.dirs_size() == 0 && req.inos_size() == 0) return Status::Ok();
        }
        std::vector<uint64_t> dirs(req.dirs().begin(), req.dirs().end());
        std::vector<uint64_t> inos(req.inos().begin(), req.inos().end());
        uint64_t seq;
        std::function<void(const std::vector<uint64_t>&)> revoked;
        std::function<void(const std::vector<uint64_t>&, bool)> revoked_dirs;
        {
          std::lock_guard lock(mu_);
          ++counters_.revocations;
          seq = QueueLocked(dirs, inos, /*all=*/false);
          revoked = on_revoked_inodes_;
          revoked_dirs = on_revoked_dirs_;
        }
        const auto t0 = Clock::now();
        if (revoked_dirs && !dirs.empty()) revoked_dirs(dirs, /*all=*/false);
        if (revoked && !inos.empty()) revoked(inos);
        WaitInvalidated(seq, kInvalWait);
        // An answer this late may find the MDS gone on without it (--md-lease-revoke-ms,
        // 2 s by default): it then dropped every lease and write-back grant of this mount,
        // which hears of it only at its next keepalive. The grants end here now.
        if (revoked_dirs && Clock::now() - t0 > kSlowAnswer) revoked_dirs({}, /*all=*/true);
        return Status::Ok();
      });
  lnet::Nid listen{lnet::Lnd::kTcp, local, 0};
  STRIA_RETURN_IF_ERROR(server_->Start(listen));
  callback_nid_ = lnet::Nid{lnet::Lnd::kTcp, local, server_->port()}.ToString();
  inval_thread_ = std::thread([this] { RunInvalidations(); });
  return Register();
}

Status LeaseCache::Register() {
  proto::LeaseRegisterRequest req;
  req.set_callback_nid(callback_nid_);
  std::string body, reply;
  req.SerializeToString(&body);
  // Bounded: the keepalive thread registers again after a loss, and must never hold up an
  // unmount (or the next keepalive) for a whole retry deadline while the MDS is away.
  STRIA_RETURN_IF_ERROR(client_->MdsCallRaw(proto::OP_MDS_LEASE_REGISTER, body, &reply,
                                            kRegisterDeadlineMs));
  proto::LeaseRegisterReply rep;
  if (!rep.ParseFromString(reply)) return Status(Code::kProtocol, "bad lease register reply");
  enabled_.store(rep.lease_ms() > 0);
  if (rep.lease_ms() > 0) wanted_.store(true);
  LOG_INFO("metadata leases: {} (callbacks at {})",
           rep.lease_ms() > 0 ? "up to " + std::to_string(rep.lease_ms()) + " ms"
                              : std::string("none granted by the MDS"),
           callback_nid_);
  return Status::Ok();
}

void LeaseCache::Stop() {
  if (server_) server_->Stop();
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (inval_thread_.joinable()) inval_thread_.join();
  enabled_.store(false);
}

LeaseCache::Stamp LeaseCache::Begin() const {
  std::lock_guard lock(mu_);
  return Stamp{epoch_, Clock::now()};
}

bool LeaseCache::Current(const Stamp& stamp, uint32_t lease_ms) const {
  if (lease_ms == 0 || !enabled()) return false;
  std::lock_guard lock(mu_);
  return epoch_ == stamp.epoch && Until(lease_ms, stamp) > Clock::now();
}

LeaseCache::Clock::time_point LeaseCache::Until(uint32_t lease_ms, const Stamp& stamp) const {
  return stamp.sent +
         std::chrono::microseconds(static_cast<int64_t>(lease_ms * 1000.0 * kLeaseShare));
}

double LeaseCache::Remaining(uint32_t lease_ms, const Stamp& stamp, double fallback) const {
  const double left =
      std::chrono::duration<double>(Until(lease_ms, stamp) - Clock::now()).count();
  return std::max(left, fallback);
}

void LeaseCache::DirCreated(uint64_t dir, uint32_t dir_lease_ms, const Stamp& stamp) {
  if (dir_lease_ms == 0 || !enabled()) return;
  std::lock_guard lock(mu_);
  if (epoch_ != stamp.epoch) return;
  DropCompleteLocked(dir);
  complete_[dir].until = Until(dir_lease_ms, stamp);
}

void LeaseCache::NameAdded(uint64_t dir, std::string_view name, uint32_t entry_lease_ms,
                           const Stamp& stamp) {
  std::lock_guard lock(mu_);
  auto it = complete_.find(dir);
  if (it == complete_.end()) return;
  if (complete_names_ + cached_ >= options_.max_cached) {
    DropCompleteLocked(dir);
    return;
  }
  if (it->second.names.emplace(name).second) ++complete_names_;
  // The reply renewed the entry lease on the directory (unless a revocation came meanwhile,
  // which for this directory would have ended its completeness already).
  if (entry_lease_ms != 0 && epoch_ == stamp.epoch) {
    it->second.until = std::max(it->second.until, Until(entry_lease_ms, stamp));
  }
}

void LeaseCache::NameRemoved(uint64_t dir, std::string_view name) {
  std::lock_guard lock(mu_);
  auto it = complete_.find(dir);
  if (it == complete_.end()) return;
  if (it->second.names.erase(std::string(name)) != 0) --complete_names_;
}

void LeaseCache::DirUnsure(uint64_t dir) {
  std::lock_guard lock(mu_);
  DropCompleteLocked(dir);
}

void LeaseCache::SweepLocked(Clock::time_point now) {
  if (now < next_sweep_) return;
  next_sweep_ = now + std::chrono::seconds(5);
  for (auto it = names_.begin(); it != names_.end();) {
    if (it->second.until <= now) {
      cached_ -= it->second.names.size();
      it = names_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = attrs_.begin(); it != attrs_.end();) {
    if (it->second <= now) {
      --cached_;
      it = attrs_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = complete_.begin(); it != complete_.end();) {
    if (it->second.until <= now) {
      complete_names_ -= it->second.names.size();
      it = complete_.erase(it);
    } else {
      ++it;
    }
  }
}

void LeaseCache::DropCompleteLocked(uint64_t dir) {
  auto it = complete_.find(dir);
  if (it == complete_.end()) return;
  complete_names_ -= it->second.names.size();
  complete_.erase(it);
}

bool LeaseCache::KnownAbsent(uint64_t dir, std::string_view name, double* timeout) {
  if (!enabled()) return false;
  std::lock_guard lock(mu_);
  auto it = complete_.find(dir);
  if (it == complete_.end()) return false;
  const Clock::time_point now = Clock::now();
  if (now >= it->second.until) {
    DropCompleteLocked(dir);
    return false;
  }
  if (it->second.names.count(std::string(name)) != 0) return false;
  Named& n = names_[dir];
  if (n.names.emplace(name).second) ++cached_;
  n.until = std::max(n.until, it->second.until);
  ++counters_.local_negatives;
  *timeout = std::chrono::duration<double>(it->second.until - now).count();
  return true;
}

double LeaseCache::EntryTimeout(uint64_t parent, std::string_view name, uint32_t lease_ms,
                                const Stamp& stamp) {
  if (lease_ms == 0 && enabled()) {
    // Named without a lease: whatever an earlier lease said of it is no longer ours to
    // trust (HoldsName).
    std::lock_guard lock(mu_);
    if (auto it = names_.find(parent);
        it != names_.end() && it->second.names.erase(std::string(name)) != 0) {
      --cached_;
    }
  }
  if (lease_ms == 0 || !enabled()) return options_.fallback_entry_s;
  std::lock_guard lock(mu_);
  // A revocation came while the request was out: what it read may predate the change.
  SweepLocked(Clock::now());
  if (epoch_ != stamp.epoch || cached_ >= options_.max_cached) return options_.fallback_entry_s;
  Named& n = names_[parent];
  if (n.names.emplace(name).second) ++cached_;
  n.until = std::max(n.until, Until(lease_ms, stamp));
  ++counters_.long_timeouts;
  return Remaining(lease_ms, stamp, options_.fallback_entry_s);
}

double LeaseCache::AttrTimeout(uint64_t ino, uint32_t lease_ms, const Stamp& stamp) {
  if (lease_ms == 0 || !enabled()) return options_.fallback_attr_s;
  std::lock_guard lock(mu_);
  SweepLocked(Clock::now());
  if (epoch_ != stamp.epoch || cached_ >= options_.max_cached) return options_.fallback_attr_s;
  auto [it, inserted] = attrs_.try_emplace(ino, Until(lease_ms, stamp));
  if (inserted) {
    ++cached_;
  } else {
    it->second = std::max(it->second, Until(lease_ms, stamp));
  }
  ++counters_.long_timeouts;
  return Remaining(lease_ms, stamp, options_.fallback_attr_s);
}

void LeaseCache::EntryLeaseRenewed(uint64_t dir, uint32_t lease_ms, const Stamp& stamp) {
  if (lease_ms == 0 || !enabled()) return;
  std::lock_guard lock(mu_);
  if (epoch_ != stamp.epoch) return;  // a revocation came while the request was out
  // Only a lease still running: names kept past its end may have changed since.
  if (auto it = names_.find(dir); it != names_.end() && it->second.until > Clock::now()) {
    it->second.until = std::max(it->second.until, Until(lease_ms, stamp));
  }
}

bool LeaseCache::HoldsName(uint64_t dir, std::string_view name, std::chrono::milliseconds margin) {
  if (!enabled()) return false;
  std::lock_guard lock(mu_);
  auto it = names_.find(dir);
  return it != names_.end() && it->second.until >= Clock::now() + margin &&
         it->second.names.contains(std::string(name));
}

bool LeaseCache::WithAttrLease(uint64_t ino, std::chrono::milliseconds margin,
                               const std::function<void()>& fn, const Stamp* since) {
  if (!enabled()) return false;
  std::lock_guard lock(mu_);
  if (since != nullptr && since->epoch != epoch_) return false;
  auto it = attrs_.find(ino);
  if (it == attrs_.end() || it->second < Clock::now() + margin) return false;
  fn();
  return true;
}

uint64_t LeaseCache::QueueLocked(const std::vector<uint64_t>& dirs,
                                 const std::vector<uint64_t>& inos, bool all) {
  ++epoch_;
  auto queue_dir = [this](uint64_t dir, Named& named) {
    for (const std::string& n : named.names) queue_.push_back(Inval{dir, n, 0});
    queued_seq_ += named.names.size();
    cached_ -= named.names.size();
  };
  if (all) {
    complete_.clear();
    complete_names_ = 0;
    for (auto& [dir, names] : names_) queue_dir(dir, names);
    names_.clear();
    for (const auto& [ino, until] : attrs_) queue_.push_back(Inval{0, "", ino});
    queued_seq_ += attrs_.size();
    cached_ -= attrs_.size();
    attrs_.clear();
  } else {
    for (uint64_t d : dirs) {
      DropCompleteLocked(d);
      auto it = names_.find(d);
      if (it == names_.end()) continue;
      queue_dir(d, it->second);
      names_.erase(it);
    }
    for (uint64_t ino : inos) {
      if (attrs_.erase(ino) == 0) continue;
      queue_.push_back(Inval{0, "", ino});
      ++queued_seq_;
      --cached_;
    }
  }
  cv_.notify_all();
  return queued_seq_;
}

void LeaseCache::WaitInvalidated(uint64_t seq, std::chrono::milliseconds at_most) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, at_most, [&] { return done_seq_ >= seq || stop_; })) {
    LOG_DEBUG("lease revocation answered before the kernel dropped its entries (busy directory)");
  }
}

void LeaseCache::RunInvalidations() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Inval item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (se_ == nullptr) {
      // No kernel to tell (tests of the bookkeeping alone).
    } else if (item.ino != 0) {
      fuse_lowlevel_notify_inval_inode(se_, item.ino, -1, 0);  // attributes only
    } else {
      fuse_lowlevel_notify_inval_entry(se_, item.parent, item.name.data(), item.name.size());
    }
    lock.lock();
    ++done_seq_;
    ++counters_.invalidated;
    cv_.notify_all();
  }
}

void LeaseCache::CheckRegistered(bool registered) {
  if (registered || !wanted_.load()) return;
  uint64_t seq;
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    seq = QueueLocked({}, {}, /*all=*/true);
  }
  enabled_.store(false);
  LOG_WARN("metadata leases lost (the MDS restarted or missed us): dropping the cache, "
           "registering again");
  std::function<void(const std::vector<uint64_t>&, bool)> revoked_dirs;
  {
    std::lock_guard lock(mu_);
    revoked_dirs = on_revoked_dirs_;
  }
  if (revoked_dirs) revoked_dirs({}, /*all=*/true);
  WaitInvalidated(seq, std::chrono::milliseconds(1000));
  if (Status st = Register(); !st.ok()) {
    LOG_WARN("metadata leases: registering again failed: {}", st.ToString());
  }
}

LeaseCache::Counters LeaseCache::counters() const {
  std::lock_guard lock(mu_);
  Counters c = counters_;
  c.cached = cached_;
  return c;
}

}  // namespace stria::client
