#include "mds/client_sessions.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "common/log.h"
#include "mds/ops/ops.h"

namespace stria::mds {

namespace {

uint64_t RandomInstance() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ 1;  // never 0: 0 means "unknown"
}

Status ToHeldLock(const std::string& client, const proto::LockRequest& req, HeldLock* out) {
  if (!proto::LockCmd_IsValid(req.cmd()) || !proto::LockType_IsValid(req.type()) ||
      !proto::LockKindProto_IsValid(req.kind())) {
    return Status(Code::kInval, "unknown lock command, type or kind");
  }
  out->owner = LockOwner{client, req.owner()};
  out->kind = req.kind() == proto::LOCKKIND_FLOCK ? LockKind::kFlock : LockKind::kPosix;
  out->mode = req.type() == proto::LOCKTYPE_WRITE  ? LockMode::kWrite
              : req.type() == proto::LOCKTYPE_READ ? LockMode::kRead
                                               : LockMode::kUnlock;
  out->pid = req.pid();
  if (out->kind == LockKind::kFlock) {
    out->start = 0;
    out->end = kLockEof;
  } else {
    if (req.start() > req.end()) return Status(Code::kInval, "lock range ends before it starts");
    out->start = req.start();
    out->end = req.end();
  }
  return Status::Ok();
}

proto::LockType ToProto(LockMode m) {
  switch (m) {
    case LockMode::kRead: return proto::LOCKTYPE_READ;
    case LockMode::kWrite: return proto::LOCKTYPE_WRITE;
    case LockMode::kUnlock: break;
  }
  return proto::LOCKTYPE_UNLOCK;
}

void FillConflict(const HeldLock& l, proto::LockReply* rep) {
  rep->set_type(ToProto(l.mode));
  rep->set_start(l.start);
  rep->set_end(l.end);
  rep->set_pid(l.pid);
}

}  // namespace

ClientSessions::ClientSessions(Namespace* ns, ClientSessionOptions options)
    : ns_(ns),
      options_(options),
      instance_(RandomInstance()),
      recovery_end_(Clock::now() + std::chrono::milliseconds(options.lease_ms)) {}

ClientSessions::~ClientSessions() { Stop(); }

void ClientSessions::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ClientSessions::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ClientSessions::Run() {
  const auto period = std::chrono::milliseconds(std::clamp(options_.lease_ms / 4, 50, 1000));
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    Tick(Clock::now());
    lock.lock();
  }
}

void ClientSessions::Touch(const std::string& client) {
  std::lock_guard lock(mu_);
  sessions_[client].last_seen = Clock::now();
}

Status ClientSessions::Lock(const std::string& client, const proto::LockRequest& req,
                            proto::LockReply* rep) {
  HeldLock want;
  STRIA_RETURN_IF_ERROR(ToHeldLock(client, req, &want));
  std::lock_guard lock(mu_);
  sessions_[client].last_seen = Clock::now();
  const bool new_lock = req.cmd() == proto::LOCKCMD_TEST ||
                        (req.cmd() == proto::LOCKCMD_SET && want.mode != LockMode::kUnlock);
  if (new_lock && !req.replay() && !recovered_) {
    return Status(Code::kNotReady, "MDS in recovery: clients are replaying their locks");
  }
  switch (req.cmd()) {
    case proto::LOCKCMD_SET:
      if (auto conflict = locks_.Set(req.ino(), want)) {
        if (req.replay()) {
          LOG_WARN("client {}: replayed lock on inode {} conflicts with pid {}; dropped", client,
                   req.ino(), conflict->pid);
        }
        FillConflict(*conflict, rep);
        return Status(Code::kAgain, "conflicts with a lock held by pid " +
                                        std::to_string(conflict->pid));
      }
      break;
    case proto::LOCKCMD_TEST:
      if (auto conflict = locks_.FindConflict(req.ino(), want)) {
        FillConflict(*conflict, rep);
      } else {
        rep->set_type(proto::LOCKTYPE_UNLOCK);
      }
      break;
    case proto::LOCKCMD_RELEASE_OWNER:
      locks_.ReleaseOwner(req.ino(), want.owner, want.kind);
      break;
    default:
      return Status(Code::kInval, "unknown lock command");
  }
  return Status::Ok();
}

void ClientSessions::FillKeepalive(proto::KeepaliveReply* rep) const {
  rep->set_instance(instance_);
  rep->set_lease_ms(static_cast<uint32_t>(options_.lease_ms));
  rep->set_recovering(Recovering());
}

void ClientSessions::Opened(const std::string& client, uint64_t handle, uint64_t ino,
                            uint32_t capa_ops, bool writer) {
  std::lock_guard lock(mu_);
  Session& s = sessions_[client];
  s.last_seen = Clock::now();
  if (auto old = s.handles.find(handle); old != s.handles.end()) {
    DropWriterLocked(client, s, handle, old->second);
  }
  s.handles[handle] = ino;
  if (capa_ops != 0) {
    s.capa_ops[handle] = capa_ops;
  } else {
    s.capa_ops.erase(handle);
  }
  if (writer) {
    s.writer_handles.insert(handle);
    ++writers_[ino][client];
  }
}

void ClientSessions::Closed(const std::string& client, uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(client);
  if (it == sessions_.end()) return;
  if (auto h = it->second.handles.find(handle); h != it->second.handles.end()) {
    DropWriterLocked(client, it->second, handle, h->second);
  }
  it->second.handles.erase(handle);
  it->second.capa_ops.erase(handle);
}

bool ClientSessions::DropWriterLocked(const std::string& client, Session& s, uint64_t handle,
                                      uint64_t ino) {
  if (s.writer_handles.erase(handle) == 0) return false;
  auto w = writers_.find(ino);
  if (w == writers_.end()) return true;
  auto c = w->second.find(client);
  if (c != w->second.end() && --c->second <= 0) w->second.erase(c);
  if (w->second.empty()) writers_.erase(w);
  return true;
}

std::vector<std::string> ClientSessions::OtherWriters(uint64_t ino,
                                                      const std::string& client) const {
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  if (writers_.empty()) return out;
  auto w = writers_.find(ino);
  if (w == writers_.end()) return out;
  for (const auto& [holder, n] : w->second) {
    if (holder != client) out.push_back(holder);
  }
  return out;
}

std::optional<uint32_t> ClientSessions::HandleCapaOps(const std::string& client,
                                                      uint64_t handle, uint64_t ino) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(client);
  if (it == sessions_.end()) return std::nullopt;
  auto h = it->second.handles.find(handle);
  if (h == it->second.handles.end() || h->second != ino) return std::nullopt;
  auto ops = it->second.capa_ops.find(handle);
  return ops == it->second.capa_ops.end() ? 0u : ops->second;
}

bool ClientSessions::Recovering() const {
  std::lock_guard lock(mu_);
  return !recovered_;
}

size_t ClientSessions::Tick(Clock::time_point now) {
  std::vector<std::pair<uint64_t, uint64_t>> to_close;  // (handle, ino)
  std::vector<uint64_t> lost_writers;                   // inos held open for writing
  size_t evicted = 0;
  bool reap = false;
  {
    std::lock_guard lock(mu_);
    const auto lease = std::chrono::milliseconds(options_.lease_ms);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (now - it->second.last_seen < lease) {
        ++it;
        continue;
      }
      const size_t dropped = locks_.ReleaseClient(it->first);
      if (dropped > 0 || !it->second.handles.empty()) {
        LOG_WARN("evicting client {}: silent for {} ms; {} locks dropped, {} handles closed",
                 it->first, options_.lease_ms, dropped, it->second.handles.size());
      }
      for (const auto& [handle, ino] : it->second.handles) {
        to_close.emplace_back(handle, ino);
        if (DropWriterLocked(it->first, it->second, handle, ino)) lost_writers.push_back(ino);
      }
      it = sessions_.erase(it);
      ++evicted;
    }
    if (!recovered_ && now >= recovery_end_) recovered_ = reap = true;
  }
  if (options_.writer_lost) {
    for (uint64_t ino : lost_writers) options_.writer_lost(ino);
  }
  for (const auto& [handle, ino] : to_close) {
    proto::CloseRequest req;
    req.set_ino(ino);
    req.set_handle(handle);
    proto::AttrReply rep;
    if (Status st = Close(*ns_, req, &rep); !st.ok() && st.code() != Code::kNoEnt) {
      LOG_WARN("closing handle {} of inode {} of an evicted client: {}", handle, ino,
               st.ToString());
    }
  }
  if (reap) {
    if (Status st = ns_->ReapOrphans(); !st.ok()) {
      LOG_ERROR("removing orphans after recovery: {}", st.ToString());
    }
  }
  return evicted;
}

size_t ClientSessions::LockCount() const {
  std::lock_guard lock(mu_);
  return locks_.size();
}

}  // namespace stria::mds
