#include "mds/leases.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "proto/stria.pb.h"

namespace stria::mds {

namespace {
thread_local MdChanges* g_capture = nullptr;
// A change is remembered this long after it happened, for the race check of reads that
// began before it (a read that takes longer gets no lease: see purge_floor_ below).
constexpr auto kChangeMemory = std::chrono::seconds(10);
}  // namespace

void MdChanges::Merge(const MdChanges& other) {
  dirs.insert(other.dirs.begin(), other.dirs.end());
  inos.insert(other.inos.begin(), other.inos.end());
}

ScopedChangeCapture::ScopedChangeCapture(MdChanges* sink) : prev_(g_capture) {
  g_capture = sink;
}
ScopedChangeCapture::~ScopedChangeCapture() { g_capture = prev_; }
MdChanges* ScopedChangeCapture::Active() { return g_capture; }

LeaseTable::LeaseTable(LeaseOptions options) : options_(std::move(options)) {
  revoker_ = std::thread([this] { RunRevoker(); });
}

LeaseTable::~LeaseTable() {
  {
    std::lock_guard lock(later_mu_);
    stop_ = true;
  }
  later_cv_.notify_all();
  revoker_.join();
}

Status LeaseTable::Register(const std::string& client, const std::string& callback_nid) {
  auto nid = lnet::Nid::Parse(callback_nid);
  if (!nid.ok()) {
    return Status(Code::kInval, "lease callback NID '" + callback_nid + "': " +
                                    nid.status().message());
  }
  lnet::ClientOptions o;
  o.client_uuid = "mds-leases";
  o.fsname = options_.fsname;
  o.role = "mds";
  o.keys = options_.keys;
  o.connect_timeout_ms = options_.revoke_timeout_ms;
  o.rpc_timeout_ms = options_.revoke_timeout_ms;
  o.retry_deadline_ms = options_.revoke_timeout_ms;
  o.max_connections = 2;
  auto rpc = std::make_shared<lnet::RpcClient>(*nid, std::move(o));
  // A callback address the MDS cannot reach (NAT, a firewall, another key) would hold up
  // every change the client's leases cover: refuse it now, and the mount runs without.
  proto::Ping ping, pong;
  if (Status st = rpc->Call(proto::OP_PING, ping, &pong); !st.ok()) {
    LOG_WARN("client {}: lease callback {} unreachable ({}); no leases for it", client,
             callback_nid, st.ToString());
    return Status(Code::kIO, "the MDS cannot reach lease callback " + callback_nid +
                                          ": " + st.message());
  }
  std::lock_guard lock(mu_);
  ForgetLocked(client);
  clients_[client] = ClientState{callback_nid, std::move(rpc), 0};
  LOG_INFO("client {}: metadata leases, revoked at {}", client, callback_nid);
  return Status::Ok();
}

bool LeaseTable::OthersRegistered(const std::string& client) const {
  std::lock_guard lock(mu_);
  return clients_.size() > (clients_.contains(client) ? 1u : 0u);
}

bool LeaseTable::Registered(const std::string& client) const {
  std::lock_guard lock(mu_);
  return clients_.count(client) != 0;
}

void LeaseTable::Forget(const std::string& client) {
  std::lock_guard lock(mu_);
  ForgetLocked(client);
}

void LeaseTable::ForgetLocked(const std::string& client) {
  auto c = clients_.find(client);
  if (c == clients_.end()) return;
  if (c->second.held != 0) {  // a write-back grant comes with an entry lease
    for (auto& [key, r] : resources_) {
      r.holders.erase(client);
      if (r.wb_client == client) EndWritebackLocked(r);
    }
  }
  clients_.erase(c);
}

uint64_t LeaseTable::Snapshot() const {
  std::lock_guard lock(mu_);
  return stamp_;
}

uint32_t LeaseTable::Grant(const std::string& client, Kind kind, uint64_t ino,
                           uint64_t snapshot) {
  if (options_.lease_ms <= 0 || ino == 0) return 0;
  std::lock_guard lock(mu_);
  auto c = clients_.find(client);
  if (c == clients_.end()) return 0;
  const Clock::time_point now = Now();
  Sweep(now);
  // None for a read that began before changes we no longer remember, nor past the limit.
  if (snapshot < purge_floor_ || c->second.held >= options_.max_per_client) {
    ++counters_.refused;
    return 0;
  }
  const Key key{kind, ino};
  // A resource made here gets its holder below: only a changed one can be refused.
  Resource& r = resources_[key];
  // While contended, only the client whose change it was (the one changing it now) gets
  // leases: its own changes revoke nothing.
  if ((r.changed_stamp > snapshot && r.changed_by != client) ||
      (now < r.contended_until && r.changed_by != client)) {
    ++counters_.refused;
    return 0;
  }
  // Nothing over a directory another client holds a write-back grant on (its names and
  // attributes are that client's until the grant is recalled).
  const Resource* entry = kind == Kind::kEntry ? &r : nullptr;
  if (entry == nullptr && wb_grants_.load(std::memory_order_relaxed) != 0) {
    if (auto e = resources_.find(Key{Kind::kEntry, ino}); e != resources_.end()) {
      entry = &e->second;
    }
  }
  if (entry != nullptr && OtherWriteback(*entry, client, now)) {
    ++counters_.refused;
    if (r.due == Clock::time_point::max()) Schedule(key, r, Forgettable(r));  // made just now
    return 0;
  }
  const Clock::time_point until = HoldLocked(c->second, client, r, now);
  // A renewal changes nothing there: the resource is due earlier, and is rescheduled then.
  Schedule(key, r, until);
  ++counters_.granted;
  return static_cast<uint32_t>(options_.lease_ms);
}

LeaseTable::Who LeaseTable::TakeHolders(const std::string& requester, const MdChanges& changes,
                                        bool contend) {
  Who who;
  std::lock_guard lock(mu_);
  if (clients_.empty()) return who;  // nobody can hold or be granted anything
  const Clock::time_point now = Now();
  const uint64_t stamp = ++stamp_;
  auto take = [&](Kind kind, uint64_t ino) {
    const Key key{kind, ino};
    Resource& r = resources_[key];
    r.changed_stamp = stamp;
    r.changed_by = requester;
    r.changed_at = now;
    bool revoked = false;
    for (auto it = r.holders.begin(); it != r.holders.end();) {
      if (it->first == requester) {
        ++it;
        continue;
      }
      if (it->second > now) {
        auto& lists = who[it->first];
        (kind == Kind::kEntry ? lists.first : lists.second).push_back(ino);
        revoked = true;
      }
      if (auto c = clients_.find(it->first); c != clients_.end() && c->second.held > 0) {
        --c->second.held;
      }
      it = r.holders.erase(it);
    }
    if (revoked || contend) {
      r.contended_until = now + std::chrono::milliseconds(options_.contended_ms);
    }
    // Another's change ends a write-back grant (its holder was revoked above with its entry
    // lease; a change is made only after RecallWriteback, so it had nothing left to send).
    if (kind == Kind::kEntry && !r.wb_client.empty() && r.wb_client != requester) {
      EndWritebackLocked(r);
    }
    Schedule(key, r, Forgettable(r));
  };
  for (uint64_t d : changes.dirs) take(Kind::kEntry, d);
  for (uint64_t i : changes.inos) take(Kind::kAttr, i);
  return who;
}

uint32_t LeaseTable::GrantWriteback(const std::string& client, uint64_t dir, uint64_t snapshot) {
  if (options_.lease_ms <= 0 || dir == 0) return 0;
  std::lock_guard lock(mu_);
  auto c = clients_.find(client);
  if (c == clients_.end()) return 0;
  const Clock::time_point now = Now();
  Sweep(now);
  if (snapshot < purge_floor_ || c->second.held >= options_.max_per_client) {
    ++counters_.refused;
    return 0;
  }
  auto others_hold = [&](const Resource& res) {
    for (const auto& [holder, until] : res.holders) {
      if (holder != client && until > now) return true;
    }
    return false;
  };
  const Key key{Kind::kEntry, dir};
  Resource& r = resources_[key];
  bool refuse = (r.changed_stamp > snapshot && r.changed_by != client) ||
                (now < r.contended_until && r.changed_by != client) || now < r.wb_refused_until ||
                r.wb_recalling || others_hold(r) || OtherWriteback(r, client, now);
  if (!refuse) {
    if (auto a = resources_.find(Key{Kind::kAttr, dir}); a != resources_.end()) {
      refuse = others_hold(a->second);
    }
  }
  if (refuse) {
    ++counters_.refused;
    if (r.due == Clock::time_point::max()) Schedule(key, r, Forgettable(r));  // made just now
    return 0;
  }
  const Clock::time_point until = HoldLocked(c->second, client, r, now);
  if (r.wb_client != client) {
    // Another client's grant, past its end but not swept yet (one being recalled was
    // refused above): ended first, so that the count per client follows.
    if (!r.wb_client.empty()) EndWritebackLocked(r);
    wb_grants_.fetch_add(1, std::memory_order_relaxed);
    ++wb_holders_[client];
  }
  r.wb_client = client;
  // Recalled, and other leases refused, a while past its end too: the holder stops using it
  // before the end, but what it queued just before may still be on its way.
  r.wb_until = until + std::chrono::milliseconds(std::max(options_.revoke_timeout_ms, 2000));
  Schedule(key, r, until);
  ++counters_.granted;
  ++counters_.writeback_granted;
  return static_cast<uint32_t>(options_.lease_ms);
}

bool LeaseTable::OthersHoldWriteback(const std::string& requester) const {
  if (wb_grants_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard lock(mu_);
  return wb_holders_.size() > 1 ||
         (wb_holders_.size() == 1 && wb_holders_.begin()->first != requester);
}

void LeaseTable::RecallWriteback(const std::string& requester,
                                 std::initializer_list<uint64_t> inos) {
  if (wb_grants_.load(std::memory_order_relaxed) == 0) return;
  Who who;
  std::vector<Key> recalling;
  {
    std::unique_lock lock(mu_);
    // A recall of one of them by another request is under way: it is not over before its
    // holder answered, so this request waits for it too.
    auto busy = [&] {
      for (uint64_t ino : inos) {
        auto it = resources_.find(Key{Kind::kEntry, ino});
        if (it != resources_.end() && it->second.wb_recalling &&
            it->second.wb_client != requester) {
          return true;
        }
      }
      return false;
    };
    recall_cv_.wait(lock, [&] { return !busy(); });
    const Clock::time_point now = Now();
    for (uint64_t ino : inos) {
      if (ino == 0) continue;
      const Key key{Kind::kEntry, ino};
      auto it = resources_.find(key);
      if (it == resources_.end()) continue;
      Resource& r = it->second;
      // (Being recalled here already: the same inode named twice.)
      if (r.wb_client.empty() || r.wb_client == requester || r.wb_recalling) continue;
      if (r.wb_until <= now) {
        EndWritebackLocked(r);
        continue;
      }
      who[r.wb_client].first.push_back(ino);
      // The revocation ends its entry lease too.
      if (r.holders.erase(r.wb_client) != 0) {
        if (auto c = clients_.find(r.wb_client); c != clients_.end() && c->second.held > 0) {
          --c->second.held;
        }
      }
      // Until the holder answered, nobody else gets a lease there (the grant stays), and
      // other requests naming it wait here.
      r.wb_recalling = true;
      r.wb_refused_until = now + std::chrono::milliseconds(options_.contended_ms);
      recalling.push_back(key);
      ++counters_.writeback_recalled;
    }
  }
  if (who.empty()) return;
  SendRevocations(who);
  std::lock_guard lock(mu_);
  const Clock::time_point end = Now();
  for (const Key& key : recalling) {
    auto it = resources_.find(key);
    if (it == resources_.end()) continue;
    it->second.wb_recalling = false;
    it->second.wb_refused_until = std::max(it->second.wb_refused_until,
                                           end + std::chrono::milliseconds(options_.contended_ms));
    EndWritebackLocked(it->second);
    Schedule(key, it->second, Forgettable(it->second));
  }
  recall_cv_.notify_all();
}

LeaseTable::Clock::time_point LeaseTable::HoldLocked(ClientState& state, const std::string& client,
                                                     Resource& r, Clock::time_point now) {
  const Clock::time_point until = now + std::chrono::milliseconds(options_.lease_ms);
  auto [it, inserted] = r.holders.try_emplace(client, until);
  if (inserted) {
    ++state.held;
  } else {
    it->second = until;
  }
  return until;
}

void LeaseTable::EndWritebackLocked(Resource& r) {
  if (r.wb_client.empty() || r.wb_recalling) return;  // the recall ends it
  if (auto h = wb_holders_.find(r.wb_client); h != wb_holders_.end() && --h->second == 0) {
    wb_holders_.erase(h);
  }
  r.wb_client.clear();
  wb_grants_.fetch_sub(1, std::memory_order_relaxed);
}

void LeaseTable::SendRevocations(const Who& who) {
  // One holder after the other: a dead one costs revoke_timeout_ms once, then holds nothing.
  for (const auto& [client, lists] : who) {
    std::shared_ptr<lnet::RpcClient> rpc;
    {
      std::lock_guard lock(mu_);
      auto c = clients_.find(client);
      if (c == clients_.end()) continue;  // forgotten meanwhile: holds nothing now
      rpc = c->second.rpc;
      ++counters_.revocations;
    }
    proto::LeaseRevokeRequest req;
    for (uint64_t d : lists.first) req.add_dirs(d);
    for (uint64_t i : lists.second) req.add_inos(i);
    proto::LeaseRevokeReply rep;
    Status st = rpc->Call(proto::OP_CLIENT_LEASE_REVOKE, req, &rep);
    if (!st.ok()) {
      LOG_WARN("client {}: lease revocation not answered ({}); dropping all its leases", client,
               st.ToString());
      std::lock_guard lock(mu_);
      ++counters_.revoke_failures;
      if (auto c = clients_.find(client); c != clients_.end() && c->second.rpc == rpc) {
        ForgetLocked(client);
      }
    }
  }
}

size_t LeaseTable::FlushCloses() {
  std::vector<std::string> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [client, c] : clients_) all.push_back(client);
  }
  return all.size() - FlushClosesOf(all).size();
}

std::vector<std::string> LeaseTable::FlushClosesOf(const std::vector<std::string>& clients) {
  std::vector<std::pair<std::string, std::shared_ptr<lnet::RpcClient>>> asked;
  {
    std::lock_guard lock(mu_);
    for (const std::string& client : clients) {
      if (auto c = clients_.find(client); c != clients_.end()) {
        asked.emplace_back(client, c->second.rpc);
      }
    }
  }
  std::vector<std::string> failed;
  for (const auto& [client, rpc] : asked) {
    proto::LeaseRevokeRequest req;
    req.set_flush_closes(true);
    proto::LeaseRevokeReply rep;
    if (Status st = rpc->Call(proto::OP_CLIENT_LEASE_REVOKE, req, &rep); !st.ok()) {
      // As a revocation not answered: the client loses its leases (and registers again).
      LOG_WARN("client {}: asked to send its gathered closes: {}; dropping all its leases",
               client, st.ToString());
      failed.push_back(client);
      std::lock_guard lock(mu_);
      ++counters_.revoke_failures;
      if (auto c = clients_.find(client); c != clients_.end() && c->second.rpc == rpc) {
        ForgetLocked(client);
      }
    }
  }
  return failed;
}

void LeaseTable::Revoke(const std::string& requester, const MdChanges& changes) {
  if (changes.empty()) return;
  auto who = TakeHolders(requester, changes);
  if (!who.empty()) SendRevocations(who);
}

void LeaseTable::RevokeBeforeChange(const std::string& requester, const MdChanges& changes) {
  if (changes.empty()) return;
  auto who = TakeHolders(requester, changes, /*contend=*/true);
  if (!who.empty()) SendRevocations(who);
}

void LeaseTable::RevokeLater(MdChanges changes) {
  if (changes.empty()) return;
  auto who = TakeHolders("", changes);  // stamps now, so no grant races the change
  if (who.empty()) return;
  {
    std::lock_guard lock(later_mu_);
    later_who_.push_back(std::move(who));
  }
  later_cv_.notify_one();
}

void LeaseTable::RunRevoker() {
  std::unique_lock lock(later_mu_);
  while (true) {
    later_cv_.wait(lock, [this] { return stop_ || !later_who_.empty(); });
    if (stop_) return;
    auto who = std::move(later_who_.front());
    later_who_.pop_front();
    lock.unlock();
    SendRevocations(who);
    lock.lock();
  }
}

LeaseTable::Clock::time_point LeaseTable::Now() const {
  return options_.clock ? options_.clock() : Clock::now();
}

int64_t LeaseTable::TickOf(Clock::time_point t) {
  const auto since = t.time_since_epoch();
  const int64_t whole = since / kTick;
  return whole + (since > whole * kTick ? 1 : 0);
}

void LeaseTable::Schedule(const Key& key, Resource& r, Clock::time_point when) {
  if (when >= r.due) return;
  const int64_t tick = TickOf(when);
  const bool listed = r.due != Clock::time_point::max() && TickOf(r.due) == tick;
  r.due = when;
  if (!listed) due_[tick].push_back(key);
}

LeaseTable::Clock::time_point LeaseTable::Forgettable(const Resource& r) {
  return std::max({r.contended_until, r.changed_at + kChangeMemory, r.wb_refused_until});
}

void LeaseTable::Sweep(Clock::time_point now) {
  // Ticks that ended by now: every resource listed there is due.
  const int64_t last = now.time_since_epoch() / kTick;
  // Stale entries cost a lookup each: bounded too, though not counted as swept.
  size_t looked = 0, stale = 0;
  while (looked < kSweepBatch && stale < 4 * kSweepBatch && !due_.empty() &&
         due_.begin()->first <= last) {
    auto bucket = due_.begin();
    if (bucket->second.empty()) {
      due_.erase(bucket);
      continue;
    }
    const int64_t tick = bucket->first;
    const Key key = bucket->second.back();
    bucket->second.pop_back();
    auto it = resources_.find(key);
    if (it == resources_.end() || it->second.due == Clock::time_point::max() ||
        TickOf(it->second.due) != tick) {
      ++stale;  // forgotten, or due in another tick: listed there
      continue;
    }
    ++looked;
    ++counters_.swept;
    Resource& r = it->second;
    r.due = Clock::time_point::max();
    if (!r.wb_client.empty() && r.wb_until <= now) EndWritebackLocked(r);
    Clock::time_point next = Clock::time_point::max();
    for (auto h = r.holders.begin(); h != r.holders.end();) {
      if (h->second <= now) {
        if (auto c = clients_.find(h->first); c != clients_.end() && c->second.held > 0) {
          --c->second.held;
        }
        h = r.holders.erase(h);
      } else {
        next = std::min(next, h->second);
        ++h;
      }
    }
    if (r.holders.empty()) {
      const Clock::time_point forget = Forgettable(r);
      if (forget <= now && r.wb_client.empty() && !r.wb_recalling) {
        purge_floor_ = std::max(purge_floor_, r.changed_stamp);
        resources_.erase(it);
        continue;
      }
      // Not before then; or, kept only by a write-back grant, when that ends (below).
      if (forget > now) next = forget;
    }
    // (A grant that ended was ended above, but for one being recalled.)
    if (!r.wb_client.empty()) next = std::min(next, r.wb_until);
    if (r.wb_recalling) next = std::max(next, now + std::chrono::seconds(1));  // the recall ends it
    // Later than now (a holder that ended was dropped, a recall adds a second), so in a
    // tick still to come: never looked at twice in one pass.
    Schedule(key, r, std::max(next, now + Clock::duration(1)));
  }
}

LeaseTable::Counters LeaseTable::counters() const {
  std::lock_guard lock(mu_);
  Counters c = counters_;
  c.clients = clients_.size();
  c.resources = resources_.size();
  for (const auto& [client, st] : clients_) c.held += st.held;
  return c;
}

}  // namespace stria::mds
