#include "lnet/rpc_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/crc32c.h"
#include "common/log.h"
#include "lnet/internal/server_core.h"
#include "lnet/lnd.h"
#include "lnet/reply_cache.h"
#include "lnet/socket.h"
#include "proto/stria.pb.h"
#ifdef STRIA_HAVE_O2IB
#include "lnet/o2ib/o2ib_server.h"
#endif

namespace stria::lnet {
namespace {

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr uint64_t kLocalListenId = 2;  // the local socket's listener
// The largest shared bulk arena a server maps for one client (address space only).
constexpr size_t kMaxSharedRegion = size_t{16} << 30;

// One accepted connection. Owned by the connection map; touched by one thread at a time:
// EPOLLONESHOT hands a readable connection to exactly one thread, which reads what has
// arrived and, when a frame is complete, handles it and replies before rearming.
struct Conn {
  uint64_t id = 0;
  int fd = -1;
  ServerSession session;
  std::atomic<bool> busy{false};  // a thread is handling its complete frame

  enum class Phase { kHeader, kBody, kBulk } phase = Phase::kHeader;
  uint8_t hdr_buf[kFrameHeaderSize];
  size_t got = 0;  // bytes of the current phase received
  FrameHeader hdr;
  std::string body;
  Buffer bulk;
  Clock::time_point frame_started;
  bool local = false;  // a local socket (lnet/socket.h)
  // The last reply's bulk when it went by reference (SpliceAll): its pages stay untouched
  // until the peer has read them, which it has once it sends its next request.
  Buffer spliced;

  void ResetFrame() {
    phase = Phase::kHeader;
    got = 0;
    body.clear();
    bulk = Buffer();
  }
  bool MidFrame() const { return phase != Phase::kHeader || got > 0; }
};

}  // namespace

static uint64_t RandomInstance() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                     static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  return v != 0 ? v : 1;
}

std::span<uint8_t> RpcContext::ReplyBulkRoom(size_t len) {
  if (len > 0 && bulk_out_shared.size() >= len) {
    bulk_out_shared_len = 0;  // in place; ReplyBulkFilled says how much
    return bulk_out_shared.first(len);
  }
  bulk_out = Buffer(len);
  return bulk_out.span();
}

void RpcContext::ReplyBulkFilled(size_t n, std::optional<uint32_t> crc) {
  if (bulk_out_shared_len) {
    bulk_out_shared_len = std::min(n, bulk_out_shared.size());
    return;
  }
  bulk_out.Shrink(n);
  bulk_out_crc = crc;
}

FrameHeader ReplyHeader(const FrameHeader& request, const Status& st, std::string* reply,
                        RpcContext* ctx) {
  Buffer* bulk_out = &ctx->bulk_out;
  FrameHeader h;
  h.last_committed = ctx->last_committed;
  if (st.ok()) h.transno = ctx->transno;
  h.opcode = request.opcode;
  h.xid = request.xid;
  h.flags = kFlagReply;
  h.status = static_cast<int32_t>(st.code());
  if (!st.ok()) {
    *reply = st.message();
    *bulk_out = Buffer();
    ctx->bulk_out_shared_len.reset();
  }
  h.body_len = static_cast<uint32_t>(reply->size());
  h.body_crc = Crc32c(reply->data(), reply->size());
  h.bulk_len = bulk_out->size();
  if (ctx->bulk_out_shared_len) {  // in the client's arena already (lnet/shared_bulk.h)
    *bulk_out = Buffer();
    h.flags |= kFlagBulkShared;
    h.bulk_len = *ctx->bulk_out_shared_len;
  } else if (h.bulk_len) {
    h.flags |= kFlagBulkCrc;
    h.bulk_crc = ctx->bulk_out_crc ? *ctx->bulk_out_crc
                                   : Crc32c(bulk_out->data(), bulk_out->size());
  }
  return h;
}

class RpcServer::Impl : public RequestHandler {
 public:
  explicit Impl(ServerOptions options)
      : options_(std::move(options)),
        cached_opcodes_(options_.reply_cache_opcodes.begin(), options_.reply_cache_opcodes.end()),
        instance_(options_.instance != 0 ? options_.instance : RandomInstance()) {
    KeepBulkBuffersOffMmap();
  }

  ~Impl() override { Stop(); }

  void Register(uint16_t opcode, RawHandler h) { handlers_[opcode] = std::move(h); }
  void HandlerVerifiesBulk(uint16_t opcode) { self_verified_.insert(opcode); }
  void ReadsBulkInPlace(uint16_t opcode) { in_place_.insert(opcode); }

  Status Start(const Nid& listen) {
    STRIA_ASSIGN_OR_RETURN(lnd_, ResolveLnd(listen));
    listen_ = listen;
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) return ErrnoStatus("epoll/eventfd", errno);
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (lnd_ == Lnd::kTcp) {
      STRIA_ASSIGN_OR_RETURN(listen_fd_, TcpListen(listen));
      port_ = LocalPort(listen_fd_);
      ev.data.u64 = kListenId;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
      Result<int> local = LocalListen(listen_fd_);
      if (!local.ok()) {
        LOG_WARN("{}: no local socket ({}): local peers come over TCP", options_.name,
                 local.status().ToString());
      } else if (*local >= 0) {
        local_fd_ = *local;
        ev.data.u64 = kLocalListenId;
        epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, local_fd_, &ev);
      }
    } else {
#ifdef STRIA_HAVE_O2IB
      o2ib_ = std::make_unique<o2ib::O2ibListener>(this, options_, epoll_fd_);
      STRIA_RETURN_IF_ERROR(o2ib_->Listen(listen));
      port_ = o2ib_->port();
#endif
    }
    listen_.port = port_;
    ev.data.u64 = kWakeId;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
    running_ = true;
    for (int i = 0; i < std::max(1, options_.worker_threads); ++i) {
      workers_.emplace_back([this] { Loop(); });
    }
    LOG_INFO("{}: listening on {}@{}:{} ({} LND{})", options_.name, listen.addr,
             LndName(listen.lnd), port_, LndName(lnd_),
             local_fd_ >= 0 ? ", and on a local socket for peers on this host" : "");
    return Status::Ok();
  }

  uint16_t port() const { return port_; }
  RpcServer::Load load() const {
    return {active_.load(std::memory_order_relaxed),
            requests_.load(std::memory_order_relaxed),
            options_.worker_threads,
            bulk_checked_.load(std::memory_order_relaxed),
            bulk_unchecked_.load(std::memory_order_relaxed),
            bulk_spliced_.load(std::memory_order_relaxed),
            bulk_shared_.load(std::memory_order_relaxed),
            bulk_in_shared_.load(std::memory_order_relaxed)};
  }

  void Stop() {
    if (!running_.exchange(false)) return;
    // The eventfd stays readable (level-triggered, never read): every thread wakes and stops.
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
    for (auto& w : workers_) w.join();
    workers_.clear();
#ifdef STRIA_HAVE_O2IB
    if (o2ib_) o2ib_->Stop();
#endif
    std::lock_guard lk(conns_mu_);
    for (auto& [id, c] : conns_) close(c->fd);
    conns_.clear();
    if (listen_fd_ >= 0) close(listen_fd_);
    if (local_fd_ >= 0) close(local_fd_);
    close(epoll_fd_);
    close(wake_fd_);
  }

 private:
  // Every server thread runs this loop on the shared epoll set: it takes one ready
  // connection (EPOLLONESHOT gives it to this thread alone), reads what arrived and, once a
  // frame is complete, runs its handler and replies on the spot. No hand-off between a
  // reading thread and a handling one: a request costs one wakeup, and bulk is received by
  // as many threads as there are connections sending it.
  void Loop() {
    epoll_event ev;
    while (running_) {
      const int n = epoll_wait(epoll_fd_, &ev, 1, 1000);
      if (n == 1) {
        const uint64_t id = ev.data.u64;
        if (id == kListenId || id == kLocalListenId) {
          Accept(id == kListenId ? listen_fd_ : local_fd_);
#ifdef STRIA_HAVE_O2IB
        } else if (id & o2ib::O2ibListener::kTag) {
          o2ib_->OnReady(id);
#endif
        } else if (id != kWakeId) {
          std::shared_ptr<Conn> c = Find(id);
          if (c) ReadSome(c);
        }
      }
      MaybeSweep();
    }
  }

  // At most once a second, by whichever thread comes by first.
  void MaybeSweep() {
    const int64_t now = Clock::now().time_since_epoch().count();
    int64_t last = last_sweep_.load(std::memory_order_relaxed);
    if (now - last < std::chrono::nanoseconds(std::chrono::seconds(1)).count()) return;
    if (!last_sweep_.compare_exchange_strong(last, now)) return;
    SweepStalled();
  }

  std::shared_ptr<Conn> Find(uint64_t id) {
    std::lock_guard lk(conns_mu_);
    auto it = conns_.find(id);
    return it == conns_.end() ? nullptr : it->second;
  }

  void Accept(int listen_fd) {
    for (;;) {
      const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          LOG_WARN("{}: accept: {}", options_.name, strerror(errno));
        }
        return;
      }
      if (listen_fd == local_fd_) {
        TuneLocalSocket(fd);
      } else {
        TuneSocket(fd);
      }
      auto c = std::make_shared<Conn>();
      c->fd = fd;
      c->local = listen_fd == local_fd_;
      c->session.local = c->local;
      c->session.peer = PeerName(fd);
      {
        std::lock_guard lk(conns_mu_);
        if (static_cast<int>(conns_.size()) >= options_.max_connections) {
          LOG_WARN("{}: refusing {}: {} connections already", options_.name, c->session.peer,
                   conns_.size());
          close(fd);
          continue;
        }
        c->id = next_id_++;
        conns_[c->id] = c;
      }
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
      ev.data.u64 = c->id;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    }
  }

  void Rearm(const Conn& c) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.u64 = c.id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void Drop(const std::shared_ptr<Conn>& c, std::string_view why) {
    if (!why.empty()) {
      LOG_WARN("{}: dropping connection from {}: {}", options_.name, c->session.peer, why);
    }
    std::lock_guard lk(conns_mu_);
    if (conns_.erase(c->id)) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
      if (c->spliced.size() > 0 && UnreadBytes(c->fd) > 0) {
        // The peer may still read the reply after the close: its pages wait a stall timeout
        // before the pool may hand them out again.
        std::lock_guard lg(linger_mu_);
        lingering_.emplace_back(Clock::now() + std::chrono::milliseconds(options_.stall_timeout_ms),
                                std::move(c->spliced));
      }
      close(c->fd);
    }
  }

  // Receives what is available; dispatches a complete frame or rearms for more.
  void ReadSome(const std::shared_ptr<Conn>& c) {
    for (;;) {
      uint8_t* dst = nullptr;
      size_t want = 0;
      switch (c->phase) {
        case Conn::Phase::kHeader:
          dst = c->hdr_buf + c->got;
          want = kFrameHeaderSize - c->got;
          break;
        case Conn::Phase::kBody:
          dst = reinterpret_cast<uint8_t*>(c->body.data()) + c->got;
          want = c->body.size() - c->got;
          break;
        case Conn::Phase::kBulk:
          dst = c->bulk.data() + c->got;
          want = c->bulk.size() - c->got;
          break;
      }
      if (want > 0) {
        // A local peer may pass its shared bulk arena with a frame (OP_LNET_SHARE_BULK).
        const ssize_t n = c->local ? RecvPassingFd(c->fd, dst, want, &c->session.passed_fd)
                                   : recv(c->fd, dst, want, 0);
        if (n == 0) {
          Drop(c, c->MidFrame() ? "peer closed mid-frame" : "");
          return;
        }
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) {
            Rearm(*c);
            return;
          }
          Drop(c, std::string("recv: ") + strerror(errno));
          return;
        }
        if (c->got == 0 && c->phase == Conn::Phase::kHeader) {
          c->frame_started = Clock::now();
          c->spliced = Buffer();  // the peer read the last reply before sending this
        }
        c->got += static_cast<size_t>(n);
        if (static_cast<size_t>(n) < want) {
          // The socket is drained for now: wait for epoll rather than paying for a recv
          // that would only say EAGAIN (one per chunk of every bulk frame otherwise).
          Rearm(*c);
          return;
        }
      }
      // The current phase is complete.
      if (c->phase == Conn::Phase::kHeader) {
        Result<FrameHeader> h = DecodeHeader(c->hdr_buf, options_.limits);
        if (!h.ok()) {
          Drop(c, h.status().ToString());
          return;
        }
        if (h->flags & kFlagReply) {
          Drop(c, "a reply frame where a request was expected");
          return;
        }
        c->hdr = *h;
        c->body.resize(c->hdr.body_len);
        c->phase = Conn::Phase::kBody;
        c->got = 0;
      } else if (c->phase == Conn::Phase::kBody) {
        Status st = VerifyBody(c->hdr, c->body);
        if (!st.ok()) {
          Drop(c, st.ToString());
          return;
        }
        // Request bulk in the client's shared arena: none follows in the stream.
        const bool in_stream = !(c->hdr.flags & kFlagRequestBulkShared);
        c->bulk = Buffer(in_stream ? c->hdr.bulk_len : 0);
        c->phase = Conn::Phase::kBulk;
        c->got = 0;
      } else {
        c->busy.store(true, std::memory_order_release);
        Handle(c);  // replies, then rearms the connection
        return;
      }
    }
  }

  void SweepStalled() {
    std::vector<std::shared_ptr<Conn>> stalled;
    const auto limit = std::chrono::milliseconds(options_.stall_timeout_ms);
    const auto now = Clock::now();
    {
      std::lock_guard lk(conns_mu_);
      for (auto& [id, c] : conns_) {
        if (!c->busy.load(std::memory_order_acquire) && c->MidFrame() &&
            now - c->frame_started > limit) {
          stalled.push_back(c);
        }
      }
    }
    for (auto& c : stalled) Drop(c, "peer stalled mid-frame");
    std::lock_guard lg(linger_mu_);
    std::erase_if(lingering_, [&](const auto& l) { return l.first < now; });
  }

  // RequestHandler: the one path from a request to its reply, for every LND.
  Status HandleRequest(ServerSession& s, const FrameHeader& h, std::string_view body,
                       std::span<const uint8_t> bulk, RpcContext* ctx,
                       std::string* reply) override {
    s.requests.fetch_add(1, std::memory_order_relaxed);
    requests_.fetch_add(1, std::memory_order_relaxed);
    // A request whose bulk the client sent without a checksum (osc.*.checksums=0) has no
    // kFlagBulkCrc; the header itself is always checksummed, so the flag is trustworthy.
    if (h.bulk_len > 0 && !(h.flags & kFlagRequestBulkShared)) {  // those: bulk_in_shared_
      ((h.flags & kFlagBulkCrc) ? bulk_checked_ : bulk_unchecked_)
          .fetch_add(1, std::memory_order_relaxed);
    }
    // Request bulk in a local client's shared arena (lnet/shared_bulk.h): read in place by
    // the handlers that take it so, copied out first for every other.
    Buffer copied;
    if (h.flags & kFlagRequestBulkShared) {
      if (s.shared == nullptr) {
        return Status(Code::kProtocol, "request bulk in a shared arena from " + s.peer +
                                           ", which shared none on this connection");
      }
      STRIA_ASSIGN_OR_RETURN(std::span<uint8_t> region,
                             UnpackSharedBulk(h.last_committed, s.shared->base(), s.shared->size()));
      if (region.size() < h.bulk_len) {
        return Status(Code::kProtocol, "request bulk of " + std::to_string(h.bulk_len) +
                                           " bytes beyond its shared descriptor of " +
                                           std::to_string(region.size()));
      }
      bulk = region.first(h.bulk_len);
      bulk_in_shared_.fetch_add(1, std::memory_order_relaxed);
      if (in_place_.count(h.opcode) == 0) {
        copied = Buffer(bulk.size());
        std::memcpy(copied.data(), bulk.data(), bulk.size());
        bulk = copied.span();
      }
    }
    if (h.bulk_len > 0 && (h.flags & kFlagBulkCrc)) {
      if (self_verified_.count(h.opcode) > 0) {
        ctx->bulk_in_crc = h.bulk_crc;  // the handler checks it (HandlerVerifiesBulk)
      } else if (Crc32c(bulk.data(), bulk.size()) != h.bulk_crc) {
        Status st(Code::kChecksum, "request bulk checksum mismatch from " + s.peer);
        LOG_WARN("{}: {}", options_.name, st.message());
        return st;
      }
    }
    ctx->peer = s.peer;
    ctx->lnd = s.lnd;
    ctx->local_peer = s.local;
    ctx->client_uuid = s.client_uuid;
    ctx->xid = h.xid;
    ctx->opcode = h.opcode;
    ctx->bulk_in = bulk;
    ctx->replay = (h.flags & kFlagReplay) != 0;
    ctx->replay_transno = ctx->replay ? h.transno : 0;
    ctx->resent = (h.flags & kFlagResend) != 0;
    if ((h.flags & kFlagBulkShared) && !(h.flags & kFlagRequestBulkShared) &&
        s.shared != nullptr) {
      STRIA_ASSIGN_OR_RETURN(
          ctx->bulk_out_shared,
          UnpackSharedBulk(h.last_committed, s.shared->base(), s.shared->size()));
    }
    active_.fetch_add(1, std::memory_order_relaxed);
    Status st = Dispatch(s, h, body, *ctx, reply);
    active_.fetch_sub(1, std::memory_order_relaxed);
    size_t out = 0;
    if (st.ok()) out = ctx->bulk_out_shared_len ? *ctx->bulk_out_shared_len : ctx->bulk_out.size();
    if (st.ok() && ctx->bulk_out_shared_len) bulk_shared_.fetch_add(1, std::memory_order_relaxed);
    s.bulk_bytes.fetch_add(bulk.size() + out, std::memory_order_relaxed);
    return st;
  }

  Status Dispatch(ServerSession& s, const FrameHeader& h, std::string_view body, RpcContext& ctx,
                  std::string* reply) {
    if (h.opcode == proto::OP_CONNECT) return HandleConnect(s, body, reply);
    if (h.opcode == proto::OP_AUTH) return HandleAuth(s, body, reply);
    if (!s.connected) {
      return Status(Code::kProtocol, "the first request on a connection must be CONNECT");
    }
    if (h.opcode == proto::OP_PING) {
      *reply = body;  // echoes the Ping message
      return Status::Ok();
    }
    if (h.opcode == proto::OP_LNET_PEERS) return ListPeers(reply);
    if (h.opcode == proto::OP_LNET_SHARE_BULK) return ShareBulk(s, body, reply);
    auto it = handlers_.find(h.opcode);
    if (it == handlers_.end()) {
      return Status(Code::kBadOpcode, options_.name + " does not serve opcode " +
                                          std::to_string(h.opcode));
    }
    const bool cached = cached_opcodes_.count(h.opcode) > 0 && !s.client_uuid.empty();
    if (cached) {
      if (std::optional<CachedReply> old = reply_cache_.Begin(s.client_uuid, h.xid)) {
        LOG_INFO("{}: resent xid {} from {} answered from the reply cache", options_.name,
                 h.xid, s.client_uuid);
        *reply = std::move(old->body);
        // Still uncommitted, the client must keep it for replay as it would have.
        ctx.transno = old->transno;
        return old->status;
      }
    }
    Status st;
    try {
      st = it->second(ctx, body, reply);
    } catch (const std::exception& e) {
      st = Status(Code::kInternal, std::string("handler failed: ") + e.what());
    }
    if (cached) {
      reply_cache_.Complete(s.client_uuid, h.xid, {st, st.ok() ? *reply : "", ctx.transno});
    }
    return st;
  }

  Status HandleConnect(ServerSession& s, std::string_view body, std::string* reply) {
    proto::ConnectRequest req;
    if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      return Status(Code::kProtocol, "bad CONNECT body");
    }
    if (req.version() != kWireVersion) {
      return Status(Code::kProtocol, "wire version " + std::to_string(req.version()) +
                                         " not supported (this server speaks " +
                                         std::to_string(kWireVersion) + ")");
    }
    if (!req.fsname().empty() && !options_.fsname.empty() && req.fsname() != options_.fsname) {
      return Status(Code::kWrongFs, "this server belongs to filesystem '" + options_.fsname +
                                        "', not '" + req.fsname() + "'");
    }
    s.client_uuid = req.client_uuid();
    s.SetListedUuid(s.client_uuid);
    proto::ConnectReply rep;
    rep.set_version(kWireVersion);
    rep.set_server_uuid(options_.server_uuid);
    rep.set_instance(instance_);
    rep.set_generation(options_.generation);
    rep.set_fsname(options_.fsname);
    rep.set_role(options_.role);
    if (options_.keys) {
      s.connected = false;
      s.client_role = req.role();
      if (req.auth_nonce().size() != kNonceSize) {
        return Refuse(s, req.auth_nonce().empty() ? "the client presented no cluster key"
                                                  : "malformed nonce");
      }
      s.client_nonce = req.auth_nonce();
      s.server_nonce = RandomNonce();
      s.auth_pending = true;
      rep.set_auth_nonce(s.server_nonce);
    } else {
      s.connected = true;
    }
    rep.SerializeToString(reply);
    return Status::Ok();
  }

  // OP_AUTH: the client's proof over the handshake; ours back with the key that matched.
  Status HandleAuth(ServerSession& s, std::string_view body, std::string* reply) {
    if (!options_.keys) {
      return Status(Code::kBadOpcode, options_.name + " has no cluster key: OP_AUTH not served");
    }
    if (!s.auth_pending) return Status(Code::kProtocol, "OP_AUTH without CONNECT");
    s.auth_pending = false;
    proto::AuthRequest req;
    if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      return Refuse(s, "bad OP_AUTH body");
    }
    const HandshakeIds ids{s.client_nonce,      s.server_nonce,        s.client_role,
                           s.client_uuid,       options_.role,         options_.server_uuid,
                           options_.fsname};
    const std::string& p = req.proof();
    std::optional<size_t> key = options_.keys->Match(
        Transcript("client", ids), std::span(reinterpret_cast<const uint8_t*>(p.data()), p.size()));
    if (!key) return Refuse(s, "wrong cluster key (the client's proof does not match)");
    s.connected = true;
    const Mac proof = Hmac(options_.keys->keys()[*key], Transcript("server", ids));
    proto::AuthReply rep;
    rep.set_proof(proof.data(), proof.size());
    rep.SerializeToString(reply);
    return Status::Ok();
  }

  // One log line, and the error the client sees; the connection is dropped after the reply.
  Status Refuse(ServerSession& s, std::string_view why) {
    s.connected = false;
    s.auth_pending = false;
    LOG_WARN("{}: refused {} (uuid {}, role {}): authentication failed: {}", options_.name,
             s.peer, s.client_uuid.empty() ? "-" : s.client_uuid,
             s.client_role.empty() ? "-" : s.client_role, why);
    return AuthFailed(options_.name + " refused the connection: " + std::string(why));
  }

  // OP_LNET_SHARE_BULK: maps the arena a local client passed with this frame, so that
  // replies to it may put their bulk there, and says whether requests may leave theirs
  // there (lnet/shared_bulk.h).
  Status ShareBulk(ServerSession& s, std::string_view body, std::string* reply) {
    const int fd = std::exchange(s.passed_fd, -1);
    if (fd < 0) {
      return Status(Code::kInval, "OP_LNET_SHARE_BULK without a memfd (local sockets only)");
    }
    if (!LocalSharedBulkEnabled()) {
      close(fd);
      return Status(Code::kInval, options_.name +
                                      " does not map shared bulk arenas "
                                      "(STRIA_LNET_SHARED=0)");
    }
    proto::ShareBulkRequest req;
    if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      close(fd);
      return Status(Code::kProtocol, "bad OP_LNET_SHARE_BULK body");
    }
    Result<std::shared_ptr<SharedRegion>> r = SharedRegion::Map(fd, kMaxSharedRegion);
    if (!r.ok()) {
      LOG_WARN("{}: {} shared no bulk arena: {}", options_.name, s.peer, r.status().ToString());
      return r.status();
    }
    s.shared = std::move(*r);
    proto::ShareBulkReply rep;
    rep.set_request_bulk(!in_place_.empty() && LocalSharedWritesEnabled());
    rep.SerializeToString(reply);
    return Status::Ok();
  }

  // OP_LNET_PEERS: every open connection and the LND carrying it.
  Status ListPeers(std::string* reply) {
    proto::PeersReply rep;
    rep.set_listen_nid(listen_.ToString());
    rep.set_lnd(std::string(LndName(lnd_)));
    {
      std::lock_guard lk(conns_mu_);
      for (const auto& [id, c] : conns_) {
        proto::PeerConnection* p = rep.add_connections();
        p->set_address(c->session.peer);
        p->set_lnd("tcp");
        p->set_client_uuid(c->session.ListedUuid());
        p->set_requests(c->session.requests.load(std::memory_order_relaxed));
        p->set_bulk_bytes(c->session.bulk_bytes.load(std::memory_order_relaxed));
      }
    }
#ifdef STRIA_HAVE_O2IB
    if (o2ib_) o2ib_->ListConnections(&rep);
#endif
    rep.SerializeToString(reply);
    return Status::Ok();
  }

  void Handle(const std::shared_ptr<Conn>& c) {
    RpcContext ctx;
    std::string reply;
    Status st = HandleRequest(c->session, c->hdr, c->body, c->bulk.span(), &ctx, &reply);
    FrameHeader h = ReplyHeader(c->hdr, st, &reply, &ctx);
    uint8_t hdr[kFrameHeaderSize];
    EncodeHeader(h, hdr);
    iovec iov[3] = {{hdr, sizeof hdr},
                    {reply.data(), reply.size()},
                    {ctx.bulk_out.data(), ctx.bulk_out.size()}};
    c->ResetFrame();
    const auto deadline = Clock::now() + std::chrono::milliseconds(options_.stall_timeout_ms);
    Status sent;
    // To a local peer a checksummed reply bulk goes by reference (lnet/socket.h), kept in
    // the connection until the peer has read it. A client that does not verify the crc
    // (osc.*.checksums=0) still reads the bytes intact, unless the connection is dropped
    // and the pages lingered past a stall timeout before it read them.
    if (c->local && h.bulk_len >= kSpliceMinBytes && (h.flags & kFlagBulkCrc) &&
        LocalZeroCopyEnabled()) {
      bulk_spliced_.fetch_add(1, std::memory_order_relaxed);
      sent = SendAll(c->fd, iov, 2, deadline);
      if (sent.ok()) sent = SpliceAll(c->fd, &iov[2], 1, deadline);
      c->spliced = std::move(ctx.bulk_out);
    } else {
      const bool in_stream = h.bulk_len > 0 && !(h.flags & kFlagBulkShared);
      sent = SendAll(c->fd, iov, in_stream ? 3 : 2, deadline);
    }
    if (!sent.ok()) {
      Drop(c, "sending reply: " + sent.ToString());
      return;
    }
    if (DropAfterReply(c->session, st)) {
      // A refused authentication was logged once already.
      Drop(c, st.code() == Code::kAccess ? "" : st.message());
      return;
    }
    c->busy.store(false, std::memory_order_release);
    Rearm(*c);
  }

  const ServerOptions options_;
  std::unordered_map<uint16_t, RawHandler> handlers_;  // written only before Start()
  std::unordered_set<uint16_t> self_verified_;         // written only before Start()
  std::unordered_set<uint16_t> in_place_;              // written only before Start()
  const std::unordered_set<uint16_t> cached_opcodes_;
  const uint64_t instance_;
  ReplyCache reply_cache_;

  Nid listen_;
  Lnd lnd_ = Lnd::kTcp;  // the LND carrying listen_ here
  int listen_fd_ = -1;   // TCP
#ifdef STRIA_HAVE_O2IB
  std::unique_ptr<o2ib::O2ibListener> o2ib_;
#endif
  int epoll_fd_ = -1;
  int local_fd_ = -1;  // the local socket's listener (LocalListen), if any
  std::mutex linger_mu_;
  // Spliced reply bulk of dropped connections, and when the pool may have it back.
  std::vector<std::pair<Clock::time_point, Buffer>> lingering_;  // GUARDED_BY(linger_mu_)
  int wake_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> running_{false};
  std::atomic<int64_t> active_{0};     // handlers running now (RpcServer::Load)
  std::atomic<uint64_t> requests_{0};  // requests received since start
  std::atomic<uint64_t> bulk_checked_{0}, bulk_unchecked_{0};  // request bulks (Load)
  std::atomic<uint64_t> bulk_spliced_{0}, bulk_shared_{0};     // reply bulks (Load)
  std::atomic<uint64_t> bulk_in_shared_{0};  // request bulks read from a client's arena (Load)
  std::atomic<int64_t> last_sweep_{0};  // steady-clock ticks of the last stall sweep
  std::vector<std::thread> workers_;

  std::mutex conns_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Conn>> conns_;  // GUARDED_BY(conns_mu_)
  uint64_t next_id_ = 3;                                       // GUARDED_BY(conns_mu_)
};

RpcServer::RpcServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
RpcServer::~RpcServer() = default;
void RpcServer::RegisterRaw(uint16_t opcode, RawHandler handler) {
  impl_->Register(opcode, std::move(handler));
}
void RpcServer::HandlerVerifiesBulk(uint16_t opcode) { impl_->HandlerVerifiesBulk(opcode); }
void RpcServer::ReadsBulkInPlace(uint16_t opcode) { impl_->ReadsBulkInPlace(opcode); }
Status RpcServer::Start(const Nid& listen) { return impl_->Start(listen); }
uint16_t RpcServer::port() const { return impl_->port(); }

RpcServer::Load RpcServer::load() const { return impl_->load(); }
void RpcServer::Stop() { impl_->Stop(); }

}  // namespace stria::lnet
