#include "lnet/o2ib/o2ib_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "lnet/lnd.h"
#include "lnet/o2ib/device.h"
#include "lnet/o2ib/o2ib_conn.h"
#include "lnet/socket.h"

namespace stria::lnet::o2ib {
namespace {

constexpr uint64_t kCmId = O2ibListener::kTag;  // the rdma_cm channel; connections are kTag|n

std::string PeerOf(rdma_cm_id* id) {
  const sockaddr* sa = rdma_get_peer_addr(id);
  if (sa == nullptr || sa->sa_family != AF_INET) return "?";
  const auto* sin = reinterpret_cast<const sockaddr_in*>(sa);
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(sin->sin_port));
}

}  // namespace

struct O2ibListener::ServerConn {
  uint64_t id = 0;
  std::unique_ptr<Conn> conn;
  ServerSession session;
  std::atomic<bool> disconnected{false};  // rdma_cm said so; set by the event thread
  // A reply body too large to send inline, which the client reads by RDMA READ: kept (and
  // registered) until the client's next message shows it has read it.
  std::string reply_body;
  LocalMr reply_body_mr;
};

O2ibListener::O2ibListener(RequestHandler* handler, const ServerOptions& options, int epoll_fd)
    : handler_(handler), options_(options), epoll_fd_(epoll_fd) {}

O2ibListener::~O2ibListener() { Stop(); }

Status O2ibListener::Listen(const Nid& nid) {
  STRIA_ASSIGN_OR_RETURN(sockaddr_in sa, ResolveAddress(nid));
  channel_ = rdma_create_event_channel();
  if (channel_ == nullptr) return ErrnoStatus("o2ib: rdma_create_event_channel", errno);
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  if (rdma_create_id(channel_, &listen_id_, this, RDMA_PS_TCP) != 0) {
    return ErrnoStatus("o2ib: rdma_create_id", errno);
  }
  if (rdma_bind_addr(listen_id_, reinterpret_cast<sockaddr*>(&sa)) != 0) {
    return ErrnoStatus("o2ib: rdma_bind_addr " + nid.ToString(), errno);
  }
  if (rdma_listen(listen_id_, 1024) != 0) {
    return ErrnoStatus("o2ib: rdma_listen " + nid.ToString(), errno);
  }
  port_ = ntohs(rdma_get_src_port(listen_id_));
  // Bound to one device (not the wildcard): register its I/O buffers now.
  if (listen_id_->verbs != nullptr) {
    if (Result<Device*> dev = Device::For(listen_id_->verbs); dev.ok()) (*dev)->Prewarm();
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.u64 = kCmId;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, channel_->fd, &ev) != 0) {
    return ErrnoStatus("o2ib: epoll_ctl", errno);
  }
  return Status::Ok();
}

void O2ibListener::Stop() {
  std::unordered_map<uint64_t, std::shared_ptr<ServerConn>> conns;
  {
    std::lock_guard lk(mu_);
    conns.swap(conns_);
  }
  for (auto& [id, sc] : conns) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, sc->conn->completion_fd(), nullptr);
    sc->conn->Fail(Status(Code::kShutdown, "server stopping"));
  }
  conns.clear();  // destroys QPs and ids
  if (listen_id_ != nullptr) {
    rdma_destroy_id(listen_id_);
    listen_id_ = nullptr;
  }
  if (channel_ != nullptr) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, channel_->fd, nullptr);
    rdma_destroy_event_channel(channel_);
    channel_ = nullptr;
  }
}

void O2ibListener::Rearm(int fd, uint64_t id) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.u64 = id;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
}

std::shared_ptr<O2ibListener::ServerConn> O2ibListener::Find(uint64_t conn_id) const {
  std::lock_guard lk(mu_);
  auto it = conns_.find(conn_id);
  return it == conns_.end() ? nullptr : it->second;
}

void O2ibListener::Drop(uint64_t conn_id, const std::string& why) {
  std::shared_ptr<ServerConn> sc;
  {
    std::lock_guard lk(mu_);
    auto it = conns_.find(conn_id);
    if (it == conns_.end()) return;
    sc = std::move(it->second);
    conns_.erase(it);
  }
  if (!why.empty()) {
    LOG_WARN("{}: dropping o2ib connection from {}: {}", options_.name, sc->session.peer, why);
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, sc->conn->completion_fd(), nullptr);
  // The last holder (this thread, or a worker still serving it) destroys the QP and id.
}

void O2ibListener::OnReady(uint64_t id) {
  if (id == kCmId) {
    OnCmEvents();
    Rearm(channel_->fd, kCmId);
    return;
  }
  std::shared_ptr<ServerConn> sc = Find(id & ~kTag);
  if (sc) Serve(sc);
}

void O2ibListener::OnCmEvents() {
  rdma_cm_event* ev = nullptr;
  while (rdma_get_cm_event(channel_, &ev) == 0) {
    const rdma_cm_event_type type = ev->event;
    rdma_cm_id* id = ev->id;
    const uint64_t conn_id = reinterpret_cast<uint64_t>(id->context);
    rdma_cm_id* reject = nullptr;
    std::shared_ptr<ServerConn> failed;  // destroyed (with its id) only after the ack
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      reject = Accept(ev, &failed) ? nullptr : id;
    }
    rdma_ack_cm_event(ev);  // before any rdma_destroy_id of its id
    failed.reset();
    switch (type) {
      case RDMA_CM_EVENT_CONNECT_REQUEST:
        if (reject != nullptr) rdma_destroy_id(reject);
        break;
      case RDMA_CM_EVENT_ESTABLISHED:
        LOG_DEBUG("{}: o2ib connection {} established", options_.name, conn_id);
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
      case RDMA_CM_EVENT_REJECTED:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
        if (std::shared_ptr<ServerConn> sc = Find(conn_id)) {
          sc->disconnected = true;
          rdma_disconnect(id);  // completes the handshake; flushes what is posted
          Drop(conn_id, type == RDMA_CM_EVENT_DISCONNECTED ? "" : rdma_event_str(type));
        }
        break;
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        LOG_ERROR("{}: o2ib: the RDMA device was removed", options_.name);
        if (std::shared_ptr<ServerConn> sc = Find(conn_id)) {
          sc->disconnected = true;
          Drop(conn_id, "device removed");
        }
        break;
      default:
        break;  // TIMEWAIT_EXIT, ADDR_CHANGE: nothing to do
    }
  }
}

bool O2ibListener::Accept(rdma_cm_event* ev, std::shared_ptr<ServerConn>* failed) {
  rdma_cm_id* id = ev->id;
  const std::string peer = PeerOf(id);
  Result<ConnParams> theirs =
      DecodeConnParams(ev->param.conn.private_data, ev->param.conn.private_data_len);
  Result<Device*> dev = theirs.ok() ? Device::For(id->verbs) : Result<Device*>(theirs.status());
  size_t open = 0;
  {
    std::lock_guard lk(mu_);
    open = conns_.size();
  }
  Status why = !dev.ok() ? dev.status() : Status::Ok();
  if (why.ok() && static_cast<int>(open) >= options_.max_connections) {
    why = Status(Code::kBusy, std::to_string(open) + " connections already");
  }
  if (!why.ok()) {
    LOG_WARN("{}: refusing o2ib connection from {}: {}", options_.name, peer, why.ToString());
    rdma_reject(id, nullptr, 0);
    return false;
  }
  (*dev)->Prewarm();
  const O2ibTunables& t = CurrentLndConfig().o2ib;
  const ConnParams run = Negotiate({t.queue_depth, t.reserved_credits, t.msg_size}, *theirs);
  MsgLimits limits;
  limits.max_bulk = options_.limits.max_bulk;
  limits.max_body = options_.limits.max_body;
  Result<std::unique_ptr<Conn>> conn = Conn::Create(id, *dev, run, limits, t.poll, peer);
  if (!conn.ok()) {
    LOG_WARN("{}: refusing o2ib connection from {}: {}", options_.name, peer,
             conn.status().ToString());
    rdma_reject(id, nullptr, 0);
    return false;
  }
  (*conn)->Start(run);
  auto sc = std::make_shared<ServerConn>();
  sc->conn = std::move(*conn);
  sc->session.peer = peer;
  sc->session.lnd = Lnd::kO2ib;
  {
    std::lock_guard lk(mu_);
    sc->id = next_id_++;
    conns_[sc->id] = sc;
  }
  id->context = reinterpret_cast<void*>(sc->id);

  uint8_t hello[kConnParamsSize];
  EncodeConnParams(run, hello);
  rdma_conn_param cp{};
  cp.private_data = hello;
  cp.private_data_len = sizeof hello;
  cp.responder_resources = static_cast<uint8_t>(
      std::min<int>(ev->param.conn.initiator_depth, (*dev)->attr().max_qp_rd_atom));
  cp.initiator_depth = static_cast<uint8_t>(
      std::min<int>(ev->param.conn.responder_resources, (*dev)->attr().max_qp_init_rd_atom));
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;
  Status st = sc->conn->PollAndArm();
  if (st.ok() && rdma_accept(id, &cp) != 0) st = ErrnoStatus("rdma_accept", errno);
  if (st.ok()) {
    epoll_event e{};
    e.events = EPOLLIN | EPOLLONESHOT;
    e.data.u64 = kTag | sc->id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sc->conn->completion_fd(), &e) != 0) {
      st = ErrnoStatus("epoll_ctl", errno);
    }
  }
  if (!st.ok()) {
    LOG_WARN("{}: o2ib connection from {}: {}", options_.name, peer, st.ToString());
    std::lock_guard lk(mu_);
    conns_.erase(sc->id);
    *failed = std::move(sc);
  }
  return true;
}

void O2ibListener::Serve(const std::shared_ptr<ServerConn>& sc) {
  Conn& c = *sc->conn;
  Status st;
  for (;;) {
    st = c.PollAndArm();
    if (!st.ok()) break;
    std::optional<Conn::Incoming> in = c.TakeFrame();
    if (!in) break;
    // Anything that arrived while this one was served is taken on the next turn.
    st = ServeOne(*sc, in->slot, in->msg);
    if (!st.ok()) break;
  }
  if (!st.ok() || sc->disconnected) {
    Drop(sc->id, sc->disconnected || st.code() == Code::kShutdown ? "" : st.ToString());
    return;
  }
  Rearm(c.completion_fd(), kTag | sc->id);
}

Status O2ibListener::ServeOne(ServerConn& sc, uint32_t slot, const DecodedMsg& m) {
  Conn& c = *sc.conn;
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.stall_timeout_ms);
  // The client sends again only once it has read the last reply's body.
  sc.reply_body_mr = LocalMr();
  sc.reply_body.clear();

  if (m.payload.size() < kFrameHeaderSize) {
    return Status(Code::kProtocol, "o2ib request carries no frame header");
  }
  STRIA_ASSIGN_OR_RETURN(FrameHeader h, DecodeHeader(m.payload.data(), options_.limits));
  if (h.flags & kFlagReply) return Status(Code::kProtocol, "a reply where a request was expected");

  // The body: inline after the header, or read from the client.
  std::string body;
  size_t off = kFrameHeaderSize;
  if (m.body_index >= 0) {
    const RemoteBuf& b = m.bufs[m.body_index];
    if (b.len != h.body_len) return Status(Code::kProtocol, "o2ib body descriptor mismatch");
    body.resize(b.len);
    STRIA_ASSIGN_OR_RETURN(LocalMr mr, c.device()->Register(body.data(), body.size()));
    const RdmaOp op{reinterpret_cast<uint64_t>(body.data()), mr.lkey(), b.addr, b.rkey, b.len};
    STRIA_RETURN_IF_ERROR(c.RdmaRead({&op, 1}, deadline));
  } else {
    if (m.payload.size() < off + h.body_len) {
      return Status(Code::kProtocol, "o2ib request shorter than its body");
    }
    body.assign(reinterpret_cast<const char*>(m.payload.data()) + off, h.body_len);
    off += h.body_len;
  }
  STRIA_RETURN_IF_ERROR(VerifyBody(h, body));

  // The bulk: inline, or RDMA READ from the client's buffers into a registered I/O buffer.
  Buffer bulk_buf;
  std::span<const uint8_t> bulk;
  if (m.header.flags & kMsgInlineBulk) {
    if (m.payload.size() - off != h.bulk_len) {
      return Status(Code::kProtocol, "o2ib inline bulk does not match its header");
    }
    bulk = m.payload.subspan(off);
  } else if (m.payload.size() != off) {
    return Status(Code::kProtocol, "o2ib request has trailing bytes");
  } else if (h.bulk_len > 0) {
    if (m.source_bytes != h.bulk_len) {
      return Status(Code::kProtocol, "o2ib request names " + std::to_string(m.source_bytes) +
                                         " bytes of bulk, its header " +
                                         std::to_string(h.bulk_len));
    }
    bulk_buf = Buffer(h.bulk_len);
    STRIA_ASSIGN_OR_RETURN(LocalMr mr, c.device()->Register(bulk_buf.data(), bulk_buf.size()));
    std::vector<RemoteBuf> sources;
    for (const RemoteBuf& b : m.bufs) {
      if (b.role == BufRole::kBulkSource) sources.push_back(b);
    }
    std::vector<RdmaOp> ops = SplitOver(sources, bulk_buf.data(), bulk_buf.size(), mr.lkey());
    STRIA_RETURN_IF_ERROR(c.RdmaRead(ops, deadline));
    bulk = bulk_buf.span();
  }
  std::vector<RemoteBuf> sinks;
  for (const RemoteBuf& b : m.bufs) {
    if (b.role == BufRole::kBulkSink) sinks.push_back(b);
  }

  RpcContext ctx;
  std::string reply;
  Status st = handler_->HandleRequest(sc.session, h, body, bulk, &ctx, &reply);
  // The request's buffer (and any inline bulk in it) is done with: give the credit back, so
  // the reply carries it.
  STRIA_RETURN_IF_ERROR(c.Repost(slot));

  // Reply bulk: inline when it fits, else RDMA WRITE into the client's sink.
  if (ctx.bulk_out.size() > 0 && st.ok() &&
      kFrameHeaderSize + reply.size() + ctx.bulk_out.size() > c.MaxPayload(0)) {
    if (m.sink_bytes < ctx.bulk_out.size()) {
      st = Status(Code::kProtocol, "reply bulk of " + std::to_string(ctx.bulk_out.size()) +
                                       " bytes does not fit the client's buffer");
    } else {
      STRIA_ASSIGN_OR_RETURN(LocalMr mr,
                             c.device()->Register(ctx.bulk_out.data(), ctx.bulk_out.size()));
      std::vector<RdmaOp> ops =
          SplitOver(sinks, ctx.bulk_out.data(), ctx.bulk_out.size(), mr.lkey());
      // Completed before the reply is sent: the client sees the data when it sees the reply
      // (and RC ordering would give that anyway).
      STRIA_RETURN_IF_ERROR(c.RdmaWrite(ops, deadline));
    }
  }
  const FrameHeader rh = ReplyHeader(h, st, &reply, &ctx);
  const bool bulk_inline =
      rh.bulk_len > 0 && kFrameHeaderSize + reply.size() + rh.bulk_len <= c.MaxPayload(0);
  uint8_t hdr[kFrameHeaderSize];
  EncodeHeader(rh, hdr);
  std::vector<std::span<const uint8_t>> pieces;
  pieces.emplace_back(hdr, sizeof hdr);
  std::vector<RemoteBuf> bufs;
  uint16_t flags = 0;
  if (kFrameHeaderSize + reply.size() + (bulk_inline ? rh.bulk_len : 0) <= c.MaxPayload(0)) {
    pieces.emplace_back(reinterpret_cast<const uint8_t*>(reply.data()), reply.size());
    if (bulk_inline) {
      pieces.emplace_back(ctx.bulk_out.data(), ctx.bulk_out.size());
      flags |= kMsgInlineBulk;
    }
  } else {
    // A large reply body (a readdir page, the config): the client reads it by RDMA.
    sc.reply_body = std::move(reply);
    STRIA_ASSIGN_OR_RETURN(sc.reply_body_mr,
                           c.device()->Register(sc.reply_body.data(), sc.reply_body.size()));
    bufs.push_back({reinterpret_cast<uint64_t>(sc.reply_body.data()), sc.reply_body_mr.rkey(),
                    static_cast<uint32_t>(sc.reply_body.size()), BufRole::kBody});
    // (Its bulk, if any, went by RDMA WRITE: bulk_inline implies the first branch.)
  }
  STRIA_RETURN_IF_ERROR(c.SendFrame(bufs, flags, pieces, deadline));
  if (DropAfterReply(sc.session, st)) return st;
  return Status::Ok();
}

void O2ibListener::ListConnections(proto::PeersReply* out) const {
  std::lock_guard lk(mu_);
  for (const auto& [id, sc] : conns_) {
    proto::PeerConnection* p = out->add_connections();
    p->set_address(sc->session.peer);
    p->set_lnd("o2ib");
    p->set_client_uuid(sc->session.ListedUuid());
    p->set_requests(sc->session.requests.load(std::memory_order_relaxed));
    p->set_bulk_bytes(sc->session.bulk_bytes.load(std::memory_order_relaxed));
  }
}

}  // namespace stria::lnet::o2ib
