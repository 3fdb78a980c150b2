#include "client/session.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"

namespace stria::client {

namespace {

HeldLock MirrorLock(const proto::LockRequest& req) {
  HeldLock l;
  l.owner = LockOwner{"", req.owner()};
  l.kind = req.kind() == proto::LOCKKIND_FLOCK ? LockKind::kFlock : LockKind::kPosix;
  l.mode = req.type() == proto::LOCKTYPE_WRITE  ? LockMode::kWrite
           : req.type() == proto::LOCKTYPE_READ ? LockMode::kRead
                                                : LockMode::kUnlock;
  l.start = l.kind == LockKind::kFlock ? 0 : req.start();
  l.end = l.kind == LockKind::kFlock ? kLockEof : req.end();
  l.pid = req.pid();
  return l;
}

proto::LockRequest ReplayRequest(uint64_t ino, const HeldLock& l) {
  proto::LockRequest req;
  req.set_ino(ino);
  req.set_owner(l.owner.owner);
  req.set_cmd(proto::LOCKCMD_SET);
  req.set_kind(l.kind == LockKind::kFlock ? proto::LOCKKIND_FLOCK : proto::LOCKKIND_POSIX);
  req.set_type(l.mode == LockMode::kWrite ? proto::LOCKTYPE_WRITE : proto::LOCKTYPE_READ);
  req.set_start(l.start);
  req.set_end(l.end);
  req.set_pid(l.pid);
  req.set_replay(true);
  return req;
}

}  // namespace

ClientSession::~ClientSession() { Stop(); }

void ClientSession::Start() {
  if (Status st = KeepaliveOnce(); !st.ok()) {
    LOG_WARN("first keepalive to the MDS failed: {}", st.ToString());
  }
  thread_ = std::thread([this] { Run(); });
}

void ClientSession::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ClientSession::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    const auto period = std::chrono::milliseconds(period_ms_);
    cv_.wait_for(lock, period, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    if (Status st = KeepaliveOnce(); !st.ok()) {
      LOG_WARN("keepalive to the MDS failed: {}", st.ToString());
    }
    lock.lock();
  }
}

Status ClientSession::KeepaliveOnce() {
  int period_ms = 0;
  {
    std::lock_guard lock(mu_);
    period_ms = period_ms_;
  }
  proto::KeepaliveReply rep;
  std::string body, reply;
  proto::KeepaliveRequest().SerializeToString(&body);
  // Never block longer than a period: the next keepalive (or Stop) comes then.
  STRIA_RETURN_IF_ERROR(client_->MdsCallRaw(proto::OP_MDS_KEEPALIVE, body, &reply, period_ms));
  if (!rep.ParseFromString(reply)) return Status(Code::kProtocol, "bad keepalive reply");
  bool restarted = false, reconfigure = false;
  {
    std::lock_guard lock(mu_);
    restarted = instance_ != 0 && rep.instance() != instance_;
    instance_ = rep.instance();
    // A param, OST or pool change on the MGS: fetch the config, which applies the tunables.
    reconfigure = rep.config_generation() != 0 && rep.config_generation() != config_gen_;
    config_gen_ = rep.config_generation();
    period_ms_ = std::clamp<int>(static_cast<int>(rep.lease_ms() / 4), 100, 15'000);
  }
  if (restarted) Replay();
  std::function<void(bool)> lease_check;
  {
    std::lock_guard lock(mu_);
    lease_check = lease_check_;
  }
  if (lease_check) lease_check(rep.leases_registered());
  if (reconfigure) {
    if (auto cfg = client_->GetConfig(/*refresh=*/true); !cfg.ok()) {
      LOG_WARN("config refresh after a change on the MGS: {}", cfg.status().ToString());
      std::lock_guard lock(mu_);
      config_gen_ = 0;  // try again at the next keepalive
    }
  }
  return Status::Ok();
}

void ClientSession::Replay() {
  std::map<uint64_t, uint64_t> handles;
  std::set<uint64_t> writers;
  std::vector<std::pair<uint64_t, HeldLock>> locks;
  {
    std::lock_guard lock(mu_);
    handles = handles_;
    writers = writer_handles_;
    locks = locks_.All();
  }
  LOG_INFO("the MDS restarted: replaying {} open files and {} locks", handles.size(),
           locks.size());
  for (const auto& [handle, ino] : handles) {
    proto::ReopenRequest req;
    req.set_ino(ino);
    req.set_handle(handle);
    req.set_writer(writers.count(handle) != 0);
    proto::ReopenReply rep;
    if (Status st = client_->MdsCall(proto::OP_MDS_REOPEN, req, &rep); !st.ok()) {
      LOG_WARN("reopen of inode {} after the MDS restart: {}", ino, st.ToString());
    }
  }
  for (const auto& [ino, l] : locks) {
    proto::LockReply rep;
    if (Status st = client_->MdsCall(proto::OP_MDS_LOCK, ReplayRequest(ino, l), &rep); !st.ok()) {
      LOG_ERROR("lock on inode {} (pid {}) lost in the MDS restart: {}", ino, l.pid,
                st.ToString());
    }
  }
}

Status ClientSession::Lock(const proto::LockRequest& req, proto::LockReply* rep) {
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_LOCK, req, rep));
  std::lock_guard lock(mu_);
  if (req.cmd() == proto::LOCKCMD_SET) {
    // Granted by the MDS: recorded even where another owner's release, granted first, is
    // not applied here yet (Set would refuse it, and the lock would never be released).
    locks_.Apply(req.ino(), MirrorLock(req));
  } else if (req.cmd() == proto::LOCKCMD_RELEASE_OWNER) {
    const HeldLock l = MirrorLock(req);
    locks_.ReleaseOwner(req.ino(), l.owner, l.kind);
  }
  return Status::Ok();
}

bool ClientSession::Holds(uint64_t ino, uint64_t owner, LockKind kind) const {
  std::lock_guard lock(mu_);
  return locks_.Holds(ino, LockOwner{"", owner}, kind);
}

void ClientSession::Opened(uint64_t handle, uint64_t ino, bool writer) {
  std::lock_guard lock(mu_);
  handles_[handle] = ino;
  if (writer) {
    writer_handles_.insert(handle);
  } else {
    writer_handles_.erase(handle);
  }
}

void ClientSession::Closed(uint64_t handle) {
  std::lock_guard lock(mu_);
  handles_.erase(handle);
  writer_handles_.erase(handle);
}

}  // namespace stria::client
