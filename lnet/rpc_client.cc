#include "lnet/rpc_client.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "common/crc32c.h"
#include "common/log.h"
#include "lnet/buffer.h"
#include "lnet/busy_poll.h"
#include "lnet/internal/client_conn.h"
#include "lnet/lnd.h"
#include "lnet/shared_bulk.h"
#include "lnet/socket.h"
#include "proto/stria.pb.h"
#ifdef STRIA_HAVE_O2IB
#include "lnet/o2ib/o2ib_client.h"
#endif

namespace stria::lnet {
namespace {

std::string RandomUuid() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ getpid());
  char buf[40];
  snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(gen()),
           static_cast<unsigned long long>(gen()));
  return buf;
}

}  // namespace

FrameHeader RequestHeader(const ExchangeArgs& a, std::optional<uint64_t> bulk_in_arena) {
  FrameHeader h;
  h.opcode = a.opcode;
  h.xid = a.xid;
  h.body_len = static_cast<uint32_t>(a.request.size());
  h.body_crc = Crc32c(a.request.data(), a.request.size());
  if (a.replay) {
    h.flags |= kFlagReplay;
    h.transno = a.replay_transno;
  }
  if (a.resend) h.flags |= kFlagResend;
  uint32_t crc = 0;
  const bool sum = a.bulk->checksum && !bulk_in_arena;  // nothing crosses a wire
  for (const iovec& v : a.bulk->out) {
    if (v.iov_len == 0) continue;
    h.bulk_len += v.iov_len;
    if (sum) crc = Crc32c(v.iov_base, v.iov_len, crc);
  }
  if (h.bulk_len && bulk_in_arena) {
    h.flags |= kFlagRequestBulkShared;
    h.last_committed = *bulk_in_arena;
  } else if (h.bulk_len && a.bulk->checksum) {
    h.flags |= kFlagBulkCrc;
    h.bulk_crc = crc;
  } else if (h.bulk_len) {
    h.flags |= kFlagBulkNoCrc;
  }
  return h;
}

Attempt CheckReplyHeader(const FrameHeader& rh, const ExchangeArgs& a) {
  if (!(rh.flags & kFlagReply) || rh.xid != a.xid || rh.opcode != a.opcode) {
    return {Status(Code::kProtocol, "reply does not match request xid " + std::to_string(a.xid)),
            false};
  }
  if (rh.bulk_len > a.bulk->in.size()) {
    return {Status(Code::kProtocol, "reply bulk of " + std::to_string(rh.bulk_len) +
                                        " bytes exceeds the caller's buffer"),
            false};
  }
  return {Status::Ok(), true};
}

Attempt FinishReply(const FrameHeader& rh, const ExchangeArgs& a) {
  if (rh.bulk_len && a.bulk->checksum && (rh.flags & kFlagBulkCrc) &&
      Crc32c(a.bulk->in.data(), rh.bulk_len) != rh.bulk_crc) {
    LOG_WARN("{}: reply bulk checksum mismatch (xid {}); resending", a.peer->ToString(), a.xid);
    return {Status(Code::kChecksum, "reply bulk checksum mismatch"), true};
  }
  if (a.bulk->in_len) *a.bulk->in_len = rh.bulk_len;
  if (a.reply_transno) *a.reply_transno = rh.transno;
  if (a.reply_committed) *a.reply_committed = rh.last_committed;
  if (rh.status != 0) {
    const Code code = static_cast<Code>(rh.status);
    if (CodeName(code) == "Unknown") {
      return {Status(Code::kIO, "peer answered unknown status " + std::to_string(rh.status) +
                                    ": " + *a.reply),
              true};
    }
    return {Status(code, std::move(*a.reply)), true};
  }
  return {Status::Ok(), true};
}

namespace {

// How much of a reply's body the first read takes along with its header.
constexpr size_t kFirstReadBody = 448;

// A TCP connection (the socklnd): the request is gathered straight from the caller's
// buffers into one sendmsg, the reply read straight into them.
class TcpConn : public ClientConn {
 public:
  explicit TcpConn(int fd) : fd_(fd), local_(IsLocalSocket(fd)) {}
  ~TcpConn() override { close(fd_); }
  Lnd lnd() const override { return Lnd::kTcp; }
  bool local() const { return local_; }
  // The server mapped this process's shared bulk arena (OP_LNET_SHARE_BULK), and takes
  // request bulk from it in place when request_bulk.
  void set_shared(BulkArena* arena, bool request_bulk) {
    arena_ = arena;
    request_bulk_ = request_bulk;
  }

  Attempt Exchange(const ExchangeArgs& a) override {
    // Request bulk in arena memory stays there: the server reads it in place.
    if (const std::optional<InArena> out = SharedRequestBulk(a)) {
      const FrameHeader h = RequestHeader(a, PackSharedBulk(out->offset, out->pages));
      bool sent = false;
      Attempt r = Send(a, h, /*shared=*/false, /*with_bulk=*/false, &sent);
      // Sent whole and unanswered, the request may still be read, late: its bytes must
      // stay as they are. A frame not sent whole is never served.
      if (sent && !r.conn_ok) arena_->Retire(out->data, out->pages);
      return r;
    }
    FrameHeader h = RequestHeader(a);
    // Reply bulk bound for arena memory is asked to go there (lnet/shared_bulk.h).
    std::optional<uint64_t> shared_at;
    if (arena_ != nullptr && !a.bulk->in.empty()) {
      shared_at = arena_->Offset(a.bulk->in.data(), a.bulk->in.size());
      if (shared_at) {
        h.flags |= kFlagBulkShared;
        h.last_committed = PackSharedBulk(*shared_at, a.bulk->in.size());
      }
    }
    Attempt r = Send(a, h, shared_at.has_value(), /*with_bulk=*/true);
    // Unanswered, the request may still be served, late: its bulk must not land in memory
    // that the caller reuses.
    if (shared_at && !r.conn_ok) arena_->Detach(a.bulk->in.data(), a.bulk->in.size());
    return r;
  }

 private:
  static size_t PageRound(size_t n) {
    return (n + kSharedBulkPage - 1) & ~(kSharedBulkPage - 1);
  }

  struct InArena {
    void* data;        // the bulk's first byte
    size_t pages;      // its length rounded up to whole pages
    uint64_t offset;   // where data is in the arena
  };
  // Where the request's bulk is when the server may read it in place: one buffer, starting
  // on a page, whose pages lie in the shared arena (the end rounded up to a page: arena
  // blocks are whole pages), and no reply bulk (the descriptor field holds one or the
  // other). nullopt otherwise.
  std::optional<InArena> SharedRequestBulk(const ExchangeArgs& a) const {
    if (!request_bulk_ || arena_ == nullptr || !a.bulk->in.empty()) return std::nullopt;
    const iovec* one = nullptr;
    for (const iovec& v : a.bulk->out) {
      if (v.iov_len == 0) continue;
      if (one != nullptr) return std::nullopt;
      one = &v;
    }
    if (one == nullptr) return std::nullopt;
    const size_t pages = PageRound(one->iov_len);
    const std::optional<uint64_t> off = arena_->Offset(one->iov_base, pages);
    if (!off) return std::nullopt;
    return InArena{one->iov_base, pages, *off};
  }

  // Sends the request with header h (its bulk too when with_bulk) and reads the reply;
  // shared: the reply's bulk may come in the arena. *sent (when given): the whole frame
  // went out (a server may serve it, whatever came back).
  Attempt Send(const ExchangeArgs& a, const FrameHeader& h, bool shared, bool with_bulk,
               bool* sent = nullptr) {
    std::vector<iovec> iov;
    iov.reserve(2 + a.bulk->out.size());
    uint8_t hdr[kFrameHeaderSize];
    iov.push_back({hdr, sizeof hdr});
    iov.push_back({const_cast<char*>(a.request.data()), a.request.size()});
    for (const iovec& v : a.bulk->out) {
      if (with_bulk && v.iov_len != 0) iov.push_back(v);
    }
    EncodeHeader(h, hdr);
    // To a local peer a checksummed bulk goes by reference (lnet/socket.h, SpliceAll): the
    // caller keeps it unchanged until this exchange returns, by which time the server has
    // read the whole request.
    const bool splice = local_ && (h.flags & kFlagBulkCrc) && h.bulk_len >= kSpliceMinBytes &&
                        LocalZeroCopyEnabled();
    const int pass_fd = local_ ? a.pass_fd : -1;
    Status st = splice
                    ? SendAll(fd_, iov.data(), 2, a.deadline, pass_fd)
                    : SendAll(fd_, iov.data(), static_cast<int>(iov.size()), a.deadline, pass_fd);
    if (st.ok() && splice) {
      st = SpliceAll(fd_, iov.data() + 2, static_cast<int>(iov.size() - 2), a.deadline);
    }
    if (!st.ok()) return {st, false};
    if (sent != nullptr) *sent = true;

    // A small exchange's reply comes within microseconds: spin for it rather than let
    // this CPU go idle (lnet/busy_poll.h).
    size_t out_bytes = a.request.size();
    for (const iovec& v : a.bulk->out) out_bytes += v.iov_len;
    const bool small = out_bytes <= kSpinBytes && a.bulk->in.size() <= kSpinBytes;
    ReplyWaitScope waiting;
    const bool ready = small && poller_.SpinForFd(fd_, POLLIN);
    // The header and a small body usually arrive together: one read takes both (and the
    // start of any bulk, copied to its place below); larger bodies and bulk are read
    // straight into their buffers.
    uint8_t first[kFrameHeaderSize + kFirstReadBody];
    Result<size_t> got = RecvAtLeast(fd_, first, kFrameHeaderSize, sizeof first, a.deadline,
                                     /*wait_first=*/!ready);
    if (!got.ok()) return {got.status(), false};
    Result<FrameHeader> rh = DecodeHeader(first, *a.limits);
    if (!rh.ok()) return {rh.status(), false};
    const bool shared_reply = (rh->flags & kFlagBulkShared) != 0;
    if (shared_reply && !shared) {
      return {Status(Code::kProtocol, "reply bulk in a shared arena that was not offered"), false};
    }
    const uint64_t bulk_in_stream = shared_reply ? 0 : rh->bulk_len;
    std::span<const uint8_t> extra(first + kFrameHeaderSize, *got - kFrameHeaderSize);
    if (extra.size() > rh->body_len + bulk_in_stream) {
      return {Status(Code::kProtocol, "bytes beyond the reply's frame"), false};
    }
    a.reply->resize(rh->body_len);
    const size_t body_part = std::min<size_t>(extra.size(), rh->body_len);
    std::memcpy(a.reply->data(), extra.data(), body_part);
    st = RecvAll(fd_, a.reply->data() + body_part, a.reply->size() - body_part, a.deadline);
    if (!st.ok()) return {st, false};
    st = VerifyBody(*rh, *a.reply);
    if (!st.ok()) return {st, false};
    Attempt check = CheckReplyHeader(*rh, a);
    if (!check.status.ok()) return check;
    if (bulk_in_stream) {
      const size_t bulk_part = extra.size() - body_part;
      std::memcpy(a.bulk->in.data(), extra.data() + body_part, bulk_part);
      st = RecvAll(fd_, a.bulk->in.data() + bulk_part, rh->bulk_len - bulk_part, a.deadline);
      if (!st.ok()) return {st, false};
    }
    return FinishReply(*rh, a);
  }

 private:
  // Exchanges with more bulk than this take longer than a spin: they wait asleep.
  static constexpr size_t kSpinBytes = 64 << 10;

  const int fd_;
  const bool local_;  // a local socket (lnet/socket.h)
  BulkArena* arena_ = nullptr;  // shared with the server (lnet/shared_bulk.h)
  bool request_bulk_ = false;   // ... which reads request bulk from it in place
  BusyPoller poller_;
};

}  // namespace

class RpcClient::Impl {
 public:
  Impl(Nid peer, ClientOptions options) : peer_(std::move(peer)), options_(std::move(options)) {
    KeepBulkBuffersOffMmap();  // the caller's bulk buffers too
    if (options_.client_uuid.empty()) options_.client_uuid = RandomUuid();
    if (options_.max_connections < 1) options_.max_connections = 1;
    retry_deadline_ms_ = options_.retry_deadline_ms;
    std::random_device rd;
    next_xid_ = (static_cast<uint64_t>(rd()) << 20) | 1;
  }

  const Nid& peer() const { return peer_; }
  void set_retry_deadline_ms(int ms) { retry_deadline_ms_ = ms; }

  Status Call(uint16_t opcode, std::string_view request, std::string* reply,
              const CallBulk& bulk, int retry_deadline_ms, int attempt_timeout_ms) {
    const uint64_t xid = next_xid_.fetch_add(1);
    const int deadline_ms = retry_deadline_ms >= 0 ? retry_deadline_ms : retry_deadline_ms_.load();
    const auto give_up = Clock::now() + std::chrono::milliseconds(deadline_ms);
    auto backoff = std::chrono::milliseconds(20);
    int attempts = 0;
    for (;;) {
      ++attempts;
      Attempt a;
      Result<std::unique_ptr<ClientConn>> conn = Acquire(attempt_timeout_ms);
      if (!conn.ok()) {
        a.status = conn.status();
      } else {
        uint64_t transno = 0, committed = 0;
        ExchangeArgs args = Args(opcode, xid, request, reply, bulk);
        args.resend = attempts > 1;
        if (attempt_timeout_ms >= 0 && attempt_timeout_ms < options_.rpc_timeout_ms) {
          args.deadline = Clock::now() + std::chrono::milliseconds(attempt_timeout_ms);
        }
        args.reply_transno = &transno;
        args.reply_committed = &committed;
        a = (*conn)->Exchange(args);
        const uint64_t instance = (*conn)->instance;
        Release(std::move(*conn), a.conn_ok);
        if (a.status.ok() && options_.keep_replays) {
          Keep(opcode, xid, request, *reply, transno, committed, instance);
        }
      }
      if (a.status.ok() || !a.status.retryable()) return a.status;
      if (Clock::now() + backoff > give_up) {
        return Status(a.status.code(), a.status.message() + " (" + peer_.ToString() + ", " +
                                           std::to_string(attempts) + " attempts)");
      }
      LOG_DEBUG("{} op {} xid {}: {}; resending", peer_.ToString(), opcode, xid,
                a.status.ToString());
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
  }

  size_t pending_replays() {
    std::lock_guard lk(replay_mu_);
    return replays_.size() + unreplayed_.size();
  }
  uint64_t replays_sent() const { return replays_sent_.load(); }

 private:
  // Borrows an idle connection, or opens one (waiting while max_connections are busy);
  // connect_timeout_ms >= 0 bounds the opening below the option's.
  Result<std::unique_ptr<ClientConn>> Acquire(int connect_timeout_ms = -1) {
    std::vector<std::unique_ptr<ClientConn>> stale;  // closed outside the lock
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return !idle_.empty() || open_ < options_.max_connections; });
      // A connection to an instance since found replaced would send a request to it ahead
      // of the replays (or fail, one attempt and a backoff each): closed instead.
      const uint64_t current = instance_.load(std::memory_order_acquire);
      while (!idle_.empty() && current != 0 && idle_.back()->instance != 0 &&
             idle_.back()->instance != current) {
        stale.push_back(std::move(idle_.back()));
        idle_.pop_back();
        --open_;
      }
      if (!stale.empty()) cv_.notify_all();  // room for the other waiters to connect
      if (!idle_.empty()) {
        std::unique_ptr<ClientConn> c = std::move(idle_.back());
        idle_.pop_back();
        lk.unlock();
        stale.clear();
        if (unreplayed_waiting_.load(std::memory_order_acquire)) {
          Status st = ReplayTheRest(*c);
          if (!st.ok()) {
            Release(std::move(c), /*reusable=*/false);
            return st;
          }
        }
        return c;
      }
      ++open_;
    }
    Result<std::unique_ptr<ClientConn>> c = Connect(connect_timeout_ms);
    if (!c.ok()) {
      std::lock_guard lk(mu_);
      --open_;
      cv_.notify_one();
    }
    return c;
  }

  struct Kept {
    uint16_t opcode = 0;
    uint64_t xid = 0;
    std::string body;
    std::string reply;     // for options_.replay_patch, which runs before the first replay
    bool patched = false;  // a replay done again after another restart is not patched twice
  };

  // After a successful call: keeps the request while its transno is not committed, and
  // forgets the ones the reply says are. `instance` answered it.
  void Keep(uint16_t opcode, uint64_t xid, std::string_view request, std::string_view reply,
            uint64_t transno, uint64_t committed, uint64_t instance) {
    // Most replies (lookups, committed changes) neither add nor trim: no lock for them.
    if (transno <= committed && committed <= trimmed_.load(std::memory_order_relaxed)) return;
    std::lock_guard lk(replay_mu_);
    if (instance != instance_ && instance != 0) {
      // A late reply from an instance another thread has since found replaced: its numbers
      // are not instance_'s, so it trims nothing, and a change it had not committed waits
      // for replay without a number (only the new instance's reply journal can say whether
      // it was recovered). The next connection borrowed replays it.
      if (transno > committed) {
        unreplayed_.emplace_back(0, Kept{opcode, xid, std::string(request),
                                         options_.replay_patch ? std::string(reply) : ""});
        unreplayed_waiting_.store(true, std::memory_order_release);
      }
      return;
    }
    // A reply that raced a later one may report an older last_committed than we trimmed to.
    if (transno > committed && transno > trimmed_.load(std::memory_order_relaxed)) {
      Kept k{opcode, xid, std::string(request),
             options_.replay_patch ? std::string(reply) : std::string()};
      replays_[transno] = std::move(k);
    }
    Committed(committed);
  }

  // REQUIRES: replay_mu_.
  void Committed(uint64_t committed) {
    if (committed <= trimmed_.load(std::memory_order_relaxed)) return;
    replays_.erase(replays_.begin(), replays_.upper_bound(committed));
    trimmed_.store(committed, std::memory_order_relaxed);
  }

  // On a new connection: when the server is another instance than the one that answered the
  // kept requests, replays them on `c` before the connection is used for anything else.
  // Other threads connecting meanwhile wait here, so no request overtakes a replay.
  //
  // A transno means something only to the instance after the one that gave it: the new
  // instance's RocksDB numbers on from what it recovered, so it reuses the numbers of what
  // was lost, and it takes a replay whose number it recovered for done. A replay cut short
  // (the connection lost, the server not ready) therefore leaves two kinds of request:
  // those done again, kept in replays_ under the new instance's numbers, and those not yet
  // sent to it, in unreplayed_ under the old ones. The next connection to the same instance
  // goes on with the second kind; one to yet another instance replays both, the first kind
  // first (done in that order), and the second kind without a number, so that only its
  // reply journal says whether it was done. So do all of them when the server's start count
  // (`generation`, 0 where it keeps none) says an instance came and went unseen (or went
  // back: a server restored from a backup). An instance seen before and since replaced,
  // answering late, is refused.
  Status ReplayIfRestarted(ClientConn& c, uint64_t instance, uint64_t generation) {
    std::lock_guard lk(replay_mu_);
    if (instance == 0 || (instance == instance_ && unreplayed_.empty())) return Status::Ok();
    if (instance != instance_) {
      if (std::find(replaced_.begin(), replaced_.end(), instance) != replaced_.end()) {
        // A CONNECT answered late by an instance already replaced: not a restart. This
        // connection is dropped and the call goes on.
        return Status(Code::kDisconnected, "answered by an instance that was replaced");
      }
      if (instance_ != 0) {
        if (options_.on_restart) options_.on_restart();
        if (replaced_.size() == kReplacedKept) replaced_.erase(replaced_.begin());
        replaced_.push_back(instance_);
      }
      const bool missed_one = generation != 0 && generation_ != 0 && generation != generation_ + 1;
      instance_.store(instance, std::memory_order_release);
      generation_ = generation;
      for (auto& [transno, k] : unreplayed_) transno = 0;  // numbered two instances back
      std::vector<std::pair<uint64_t, Kept>> all;
      all.reserve(replays_.size() + unreplayed_.size());
      for (auto& [transno, k] : replays_) all.emplace_back(missed_one ? 0 : transno, std::move(k));
      std::move(unreplayed_.begin(), unreplayed_.end(), std::back_inserter(all));
      unreplayed_ = std::move(all);
      replays_.clear();
      trimmed_.store(0, std::memory_order_relaxed);  // the new instance numbers anew
      if (unreplayed_.empty()) return Status::Ok();
      LOG_INFO("{} restarted: replaying {} requests it had not committed", peer_.ToString(),
               unreplayed_.size());
    }
    return ReplayLocked(c);
  }

  // Before a borrowed connection is used, when a late reply or a replay cut short left
  // requests to replay: replays them on that connection, if it is to the instance last seen
  // (Acquire closes the others; one the server replaced meanwhile fails, and the call's
  // retry connects anew, which replays).
  Status ReplayTheRest(ClientConn& c) {
    std::lock_guard lk(replay_mu_);
    if (unreplayed_.empty()) unreplayed_waiting_.store(false, std::memory_order_release);
    if (c.instance != instance_ || unreplayed_.empty()) return Status::Ok();
    return ReplayLocked(c);
  }

  // Sends unreplayed_ on `c`, in order. REQUIRES: replay_mu_.
  Status ReplayLocked(ClientConn& c) {
    uint64_t committed = 0;
    for (size_t i = 0; i < unreplayed_.size(); ++i) {
      auto& [first_transno, k] = unreplayed_[i];
      if (options_.replay_patch && !k.patched) {
        options_.replay_patch(k.opcode, &k.body, k.reply);
        k.patched = true;
        std::string().swap(k.reply);
      }
      std::string reply;
      uint64_t transno = 0;
      const CallBulk none;
      ExchangeArgs args = Args(k.opcode, k.xid, k.body, &reply, none);
      args.replay = true;
      args.replay_transno = first_transno;
      args.reply_transno = &transno;
      args.reply_committed = &committed;
      Attempt a = c.Exchange(args);
      if (!a.conn_ok || a.status.retryable()) {
        // Lost the connection, or the server is not ready: the rest (this one too) waits
        // for the next connection, new or borrowed (ReplayTheRest).
        unreplayed_.erase(unreplayed_.begin(), unreplayed_.begin() + static_cast<ptrdiff_t>(i));
        unreplayed_waiting_.store(true, std::memory_order_release);
        Committed(committed);
        return a.status.ok() ? Status(Code::kDisconnected, "connection lost while replaying")
                             : a.status;
      }
      replays_sent_.fetch_add(1);
      if (!a.status.ok()) {
        LOG_ERROR("{}: replay of opcode {} (xid {}, transno {}) refused: {}", peer_.ToString(),
                  k.opcode, k.xid, first_transno, a.status.ToString());
      } else if (transno > committed) {
        replays_[transno] = std::move(k);  // done again: kept until this run commits it
      }
    }
    unreplayed_.clear();
    unreplayed_waiting_.store(false, std::memory_order_release);
    Committed(committed);
    return Status::Ok();
  }

  void Release(std::unique_ptr<ClientConn> c, bool reusable) {
    if (!reusable) c.reset();  // closed outside the lock
    std::lock_guard lk(mu_);
    if (reusable) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
    }
    cv_.notify_one();
  }

  // Opens a connection on the LND that carries peer_ here (lnet/lnd.h), and says CONNECT.
  Result<std::unique_ptr<ClientConn>> Connect(int connect_timeout_ms = -1) {
    STRIA_ASSIGN_OR_RETURN(Lnd lnd, ResolveLnd(peer_));
    std::unique_ptr<ClientConn> c;
    if (lnd == Lnd::kTcp) {
      const int timeout = connect_timeout_ms >= 0
                              ? std::min(connect_timeout_ms, options_.connect_timeout_ms)
                              : options_.connect_timeout_ms;
      STRIA_ASSIGN_OR_RETURN(int fd, TcpConnect(peer_, std::max(timeout, 1)));
      c = std::make_unique<TcpConn>(fd);
    } else {
#ifdef STRIA_HAVE_O2IB
      STRIA_ASSIGN_OR_RETURN(c, o2ib::O2ibConnect(peer_, options_));
#else
      return Status(Code::kNoDev, "o2ib: not built");  // ResolveLnd never answers kO2ib here
#endif
    }
    proto::ConnectRequest req;
    req.set_version(kWireVersion);
    req.set_client_uuid(options_.client_uuid);
    req.set_fsname(options_.fsname);
    req.set_role(options_.role);
    if (options_.keys) req.set_auth_nonce(RandomNonce());
    std::string body, reply;
    req.SerializeToString(&body);
    Attempt a = Exchange(*c, proto::OP_CONNECT, next_xid_.fetch_add(1), body, &reply, {});
    if (!a.status.ok()) return a.status;
    proto::ConnectReply rep;
    if (!rep.ParseFromString(reply)) return Status(Code::kProtocol, "bad CONNECT reply");
    if (options_.keys) STRIA_RETURN_IF_ERROR(Authenticate(*c, req, rep));
    c->instance = rep.instance();
    if (options_.keep_replays)
      STRIA_RETURN_IF_ERROR(ReplayIfRestarted(*c, rep.instance(), rep.generation()));
    if (auto* tcp = dynamic_cast<TcpConn*>(c.get()); tcp != nullptr && tcp->local()) {
      STRIA_RETURN_IF_ERROR(ShareArena(*tcp));
    }
    return c;
  }

  // Passes this process's shared bulk arena to a local server (lnet/shared_bulk.h). A
  // server that will not map it (an older one, or one with shared bulk off) is served
  // over the socket as before; only a lost connection fails.
  Status ShareArena(TcpConn& c) {
    BulkArena* arena = BulkArena::Get();
    if (arena == nullptr || !LocalSharedBulkEnabled()) return Status::Ok();
    proto::ShareBulkRequest req;
    req.set_size(arena->size());
    std::string body, reply;
    req.SerializeToString(&body);
    const CallBulk none;
    ExchangeArgs args = Args(proto::OP_LNET_SHARE_BULK, next_xid_.fetch_add(1), body, &reply, none);
    args.pass_fd = arena->fd();
    Attempt a = c.Exchange(args);
    if (!a.conn_ok) return a.status;
    if (!a.status.ok()) {
      LOG_DEBUG("{}: bulk over the socket: {}", peer_.ToString(), a.status.ToString());
      return Status::Ok();
    }
    // A server from before replies with an empty body: it takes no request bulk in place.
    proto::ShareBulkReply rep;
    const bool request_bulk = rep.ParseFromString(reply) && rep.request_bulk() &&
                              LocalSharedWritesEnabled();
    if (request_bulk) arena->NoteRequestBulkTaken();
    c.set_shared(arena, request_bulk);
    return Status::Ok();
  }

  // The second half of the handshake (lnet/auth.h): our proof over both nonces and both
  // identities, then the server's, checked against every key we hold.
  Status Authenticate(ClientConn& c, const proto::ConnectRequest& req,
                      const proto::ConnectReply& rep) {
    if (rep.auth_nonce().size() != kNonceSize) {
      return AuthFailed(peer_.ToString() +
                        " offered no challenge: it has no cluster key, so it cannot prove "
                        "it is part of this cluster");
    }
    const HandshakeIds ids{req.auth_nonce(), rep.auth_nonce(), options_.role,
                           options_.client_uuid, rep.role(), rep.server_uuid(), rep.fsname()};
    const Mac proof = Hmac(options_.keys->primary(), Transcript("client", ids));
    proto::AuthRequest areq;
    areq.set_proof(proof.data(), proof.size());
    std::string body, reply;
    areq.SerializeToString(&body);
    Attempt a = Exchange(c, proto::OP_AUTH, next_xid_.fetch_add(1), body, &reply, {});
    if (!a.status.ok()) {
      if (a.status.code() == Code::kBadOpcode || a.status.code() == Code::kProtocol) {
        return AuthFailed(peer_.ToString() + " does not authenticate: " + a.status.message());
      }
      return a.status;  // the server's "authentication failed: ..." or a transport error
    }
    proto::AuthReply arep;
    const std::string& sp = arep.ParseFromString(reply) ? arep.proof() : std::string();
    if (!options_.keys->Match(Transcript("server", ids),
                              std::span(reinterpret_cast<const uint8_t*>(sp.data()), sp.size()))) {
      LOG_WARN("{}: authentication failed: the server could not prove the cluster key",
               peer_.ToString());
      return AuthFailed(peer_.ToString() + " could not prove the cluster key (wrong key there?)");
    }
    return Status::Ok();
  }

  Attempt Exchange(ClientConn& c, uint16_t opcode, uint64_t xid, std::string_view request,
                   std::string* reply, const CallBulk& bulk) {
    return c.Exchange(Args(opcode, xid, request, reply, bulk));
  }

  ExchangeArgs Args(uint16_t opcode, uint64_t xid, std::string_view request, std::string* reply,
                    const CallBulk& bulk) {
    ExchangeArgs a;
    a.opcode = opcode;
    a.xid = xid;
    a.request = request;
    a.reply = reply;
    a.bulk = &bulk;
    a.deadline = Clock::now() + std::chrono::milliseconds(options_.rpc_timeout_ms);
    a.limits = &options_.limits;
    a.peer = &peer_;
    return a;
  }

  const Nid peer_;
  ClientOptions options_;
  std::atomic<int> retry_deadline_ms_;
  std::atomic<uint64_t> next_xid_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<ClientConn>> idle_;  // GUARDED_BY(mu_)
  int open_ = 0;  // GUARDED_BY(mu_): idle + borrowed connections

  std::mutex replay_mu_;             // held while replaying
  std::map<uint64_t, Kept> replays_;  // GUARDED_BY(replay_mu_): by instance_'s transno
  // GUARDED_BY(replay_mu_): kept requests not yet replayed to instance_, in order, with the
  // transno the instance before it gave (0: unknown, ReplayIfRestarted).
  std::vector<std::pair<uint64_t, Kept>> unreplayed_;
  // Set while unreplayed_ may hold requests that connections already open must replay
  // before anything else: left by a late reply (Keep) or a replay cut short.
  std::atomic<bool> unreplayed_waiting_{false};
  // The server's instance, when last seen (written under replay_mu_; Acquire reads it
  // without).
  std::atomic<uint64_t> instance_{0};
  // GUARDED_BY(replay_mu_): the last instances found replaced, oldest first.
  static constexpr size_t kReplacedKept = 16;
  std::vector<uint64_t> replaced_;
  uint64_t generation_ = 0;  // GUARDED_BY(replay_mu_): its start count then (0: none kept)
  // The highest last_committed replays_ was trimmed to (written under replay_mu_).
  std::atomic<uint64_t> trimmed_{0};
  std::atomic<uint64_t> replays_sent_{0};
};

RpcClient::RpcClient(Nid peer, ClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(peer), std::move(options))) {}
RpcClient::~RpcClient() = default;
const Nid& RpcClient::peer() const { return impl_->peer(); }
Status RpcClient::CallRaw(uint16_t opcode, std::string_view request, std::string* reply,
                          const CallBulk& bulk, int retry_deadline_ms,
                          int attempt_timeout_ms) {
  return impl_->Call(opcode, request, reply, bulk, retry_deadline_ms, attempt_timeout_ms);
}
void RpcClient::set_retry_deadline_ms(int ms) { impl_->set_retry_deadline_ms(ms); }
size_t RpcClient::pending_replays() const { return impl_->pending_replays(); }
uint64_t RpcClient::replays_sent() const { return impl_->replays_sent(); }

}  // namespace stria::lnet
