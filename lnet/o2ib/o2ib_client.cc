#include "lnet/o2ib/o2ib_client.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "lnet/buffer.h"
#include "lnet/lnd.h"
#include "lnet/o2ib/device.h"
#include "lnet/o2ib/o2ib_conn.h"
#include "lnet/socket.h"

namespace stria::lnet::o2ib {
namespace {

int MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

struct ChannelDeleter {
  void operator()(rdma_event_channel* ch) const {
    if (ch != nullptr) rdma_destroy_event_channel(ch);
  }
};
using ChannelPtr = std::unique_ptr<rdma_event_channel, ChannelDeleter>;

// Waits for the next rdma_cm event on ch; it must be `want`. The event is acked unless
// `keep` is given, which then receives it (the caller acks).
Status WaitCmEvent(rdma_event_channel* ch, rdma_cm_event_type want, Clock::time_point deadline,
                   const std::string& what, rdma_cm_event** keep = nullptr) {
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(ch, &ev) == 0) {
      const rdma_cm_event_type got = ev->event;
      const int status = ev->status;
      if (got == want) {
        if (keep != nullptr) {
          *keep = ev;
        } else {
          rdma_ack_cm_event(ev);
        }
        return Status::Ok();
      }
      rdma_ack_cm_event(ev);
      std::string why = std::string(rdma_event_str(got));
      if (status != 0) why += " (status " + std::to_string(status) + ")";
      return Status(Code::kDisconnected, "o2ib " + what + ": " + why);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return ErrnoStatus("o2ib " + what + ": rdma_get_cm_event", errno);
    }
    pollfd p{ch->fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, MsLeft(deadline));
    if (rc == 0) return Status(Code::kDisconnected, "o2ib " + what + ": timed out");
  }
}

class O2ibClientConn : public ClientConn {
 public:
  O2ibClientConn(ChannelPtr channel, std::unique_ptr<Conn> conn)
      : channel_(std::move(channel)), conn_(std::move(conn)) {
    // A disconnect or device event while we wait fails the exchange at once.
    rdma_event_channel* ch = channel_.get();
    conn_->Watch(ch->fd, [ch]() -> Status {
      rdma_cm_event* ev = nullptr;
      Status st;
      while (rdma_get_cm_event(ch, &ev) == 0) {
        if (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
          st = Status(Code::kDisconnected,
                      std::string("o2ib: ") + rdma_event_str(ev->event) + " from the peer");
        }
        rdma_ack_cm_event(ev);
      }
      return st;
    });
  }
  ~O2ibClientConn() override {
    conn_->Fail(Status(Code::kShutdown, "closing"));  // rdma_disconnect; quiet on a live link
    conn_.reset();                                    // QP, CQ, buffers and the id
  }

  Lnd lnd() const override { return Lnd::kO2ib; }

  Attempt Exchange(const ExchangeArgs& a) override {
    if (conn_->failed()) return {conn_->failure(), false};
    Attempt r = DoExchange(a);
    if (!r.conn_ok && !conn_->failed()) {
      // Nothing may still read or write the caller's buffers once we return.
      conn_->Fail(r.status);
    }
    return r;
  }

 private:
  Attempt DoExchange(const ExchangeArgs& a) {
    Device* dev = conn_->device();
    const FrameHeader h = RequestHeader(a);
    uint8_t hdr[kFrameHeaderSize];
    EncodeHeader(h, hdr);

    std::vector<RemoteBuf> bufs;
    std::vector<LocalMr> mrs;  // held until the reply is in
    auto name = [&](const void* p, size_t len, BufRole role) -> Status {
      STRIA_ASSIGN_OR_RETURN(LocalMr mr, dev->Register(p, len));
      bufs.push_back({reinterpret_cast<uint64_t>(p), mr.rkey(), static_cast<uint32_t>(len), role});
      mrs.push_back(std::move(mr));
      return Status::Ok();
    };
    // Where the reply's bulk goes.
    if (!a.bulk->in.empty()) {
      const size_t len = std::min<size_t>(a.bulk->in.size(), a.limits->max_bulk);
      Status st = name(a.bulk->in.data(), len, BufRole::kBulkSink);
      if (!st.ok()) return {st, false};
    }
    std::vector<std::span<const uint8_t>> pieces;
    pieces.emplace_back(hdr, sizeof hdr);
    uint16_t flags = 0;
    const auto* body = reinterpret_cast<const uint8_t*>(a.request.data());
    Buffer gathered;  // request bulk in too many pieces, copied into one
    if (kFrameHeaderSize + a.request.size() + h.bulk_len <= conn_->MaxPayload(bufs.size())) {
      // Everything fits one message: no registration, no RDMA.
      pieces.emplace_back(body, a.request.size());
      for (const iovec& v : a.bulk->out) {
        if (v.iov_len) pieces.emplace_back(static_cast<const uint8_t*>(v.iov_base), v.iov_len);
      }
      if (h.bulk_len) flags |= kMsgInlineBulk;
    } else {
      size_t pieces_out = 0;
      for (const iovec& v : a.bulk->out) pieces_out += v.iov_len ? 1 : 0;
      if (pieces_out + bufs.size() + 1 > kMaxRemoteBufs) {
        gathered = Buffer(h.bulk_len);
        size_t off = 0;
        for (const iovec& v : a.bulk->out) {
          std::memcpy(gathered.data() + off, v.iov_base, v.iov_len);
          off += v.iov_len;
        }
        Status st = name(gathered.data(), gathered.size(), BufRole::kBulkSource);
        if (!st.ok()) return {st, false};
      } else {
        for (const iovec& v : a.bulk->out) {
          if (v.iov_len == 0) continue;
          Status st = name(v.iov_base, v.iov_len, BufRole::kBulkSource);
          if (!st.ok()) return {st, false};
        }
      }
      if (kFrameHeaderSize + a.request.size() <= conn_->MaxPayload(bufs.size())) {
        pieces.emplace_back(body, a.request.size());
      } else if (!a.request.empty()) {
        Status st = name(body, a.request.size(), BufRole::kBody);
        if (!st.ok()) return {st, false};
      }
    }
    Status st = conn_->SendFrame(bufs, flags, pieces, a.deadline);
    if (!st.ok()) return {st, false};

    Result<Conn::Incoming> in = conn_->WaitFrame(a.deadline);
    if (!in.ok()) return {in.status(), false};
    Attempt r = ReadReply(a, in->msg);
    Status rp = conn_->Repost(in->slot);
    if (!rp.ok() && r.status.ok()) return {rp, false};
    if (!r.status.ok() || !r.conn_ok) return r;
    return FinishReply(reply_header_, a);
  }

  // Takes the reply frame out of its message: header, body (inline or by RDMA READ), bulk
  // (inline, or already written into the caller's buffer by the server).
  Attempt ReadReply(const ExchangeArgs& a, const DecodedMsg& m) {
    if (m.payload.size() < kFrameHeaderSize) {
      return {Status(Code::kProtocol, "o2ib reply carries no frame header"), false};
    }
    Result<FrameHeader> rh = DecodeHeader(m.payload.data(), *a.limits);
    if (!rh.ok()) return {rh.status(), false};
    reply_header_ = *rh;
    Attempt check = CheckReplyHeader(*rh, a);
    if (!check.status.ok()) return check;
    if (m.source_bytes > 0 || m.sink_bytes > 0) {
      return {Status(Code::kProtocol, "o2ib reply names bulk buffers"), false};
    }
    size_t off = kFrameHeaderSize;
    if (m.body_index >= 0) {
      const RemoteBuf& b = m.bufs[m.body_index];
      if (b.len != rh->body_len) {
        return {Status(Code::kProtocol, "o2ib reply body descriptor does not match its header"),
                false};
      }
      a.reply->resize(b.len);
      Result<LocalMr> mr = conn_->device()->Register(a.reply->data(), a.reply->size());
      if (!mr.ok()) return {mr.status(), false};
      const RdmaOp op{reinterpret_cast<uint64_t>(a.reply->data()), mr->lkey(), b.addr, b.rkey,
                      b.len};
      Status st = conn_->RdmaRead({&op, 1}, a.deadline);
      if (!st.ok()) return {st, false};
    } else {
      if (m.payload.size() < off + rh->body_len) {
        return {Status(Code::kProtocol, "o2ib reply shorter than its body"), false};
      }
      a.reply->assign(reinterpret_cast<const char*>(m.payload.data()) + off, rh->body_len);
      off += rh->body_len;
    }
    Status st = VerifyBody(*rh, *a.reply);
    if (!st.ok()) return {st, false};
    if (m.header.flags & kMsgInlineBulk) {
      if (m.payload.size() - off != rh->bulk_len) {
        return {Status(Code::kProtocol, "o2ib reply's inline bulk does not match its header"),
                false};
      }
      if (rh->bulk_len) std::memcpy(a.bulk->in.data(), m.payload.data() + off, rh->bulk_len);
    } else if (m.payload.size() != off) {
      return {Status(Code::kProtocol, "o2ib reply has trailing bytes"), false};
    }
    return {Status::Ok(), true};
  }

  ChannelPtr channel_;
  std::unique_ptr<Conn> conn_;
  FrameHeader reply_header_;
};

}  // namespace

Result<std::unique_ptr<ClientConn>> O2ibConnect(const Nid& peer, const ClientOptions& options) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(options.connect_timeout_ms);
  const std::string what = "connect " + peer.ToString();
  STRIA_ASSIGN_OR_RETURN(sockaddr_in dst, ResolveAddress(peer));
  ChannelPtr ch(rdma_create_event_channel());
  if (!ch) return ErrnoStatus("o2ib: rdma_create_event_channel", errno);
  fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(ch.get(), &id, nullptr, RDMA_PS_TCP) != 0) {
    return ErrnoStatus("o2ib: rdma_create_id", errno);
  }
  // Until a Conn owns the id, destroy it on every failure.
  auto destroy_id = [&id] {
    if (id != nullptr) rdma_destroy_id(id);
    id = nullptr;
  };
  const int timeout_ms = std::max(1, MsLeft(deadline));
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), timeout_ms) != 0) {
    Status st = ErrnoStatus("o2ib " + what + ": rdma_resolve_addr", errno);
    destroy_id();
    return Status(Code::kDisconnected, st.message());
  }
  Status st = WaitCmEvent(ch.get(), RDMA_CM_EVENT_ADDR_RESOLVED, deadline, what);
  if (st.ok() && rdma_resolve_route(id, std::max(1, MsLeft(deadline))) != 0) {
    st = Status(Code::kDisconnected, "o2ib " + what + ": rdma_resolve_route: " + strerror(errno));
  }
  if (st.ok()) st = WaitCmEvent(ch.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, what);
  if (!st.ok()) {
    destroy_id();
    return st;
  }
  Result<Device*> dev = Device::For(id->verbs);
  if (!dev.ok()) {
    destroy_id();
    return dev.status();
  }
  const O2ibTunables& t = CurrentLndConfig().o2ib;
  const ConnParams mine{t.queue_depth, t.reserved_credits, t.msg_size};
  MsgLimits limits;
  limits.max_bulk = options.limits.max_bulk;
  limits.max_body = options.limits.max_body;
  Result<std::unique_ptr<Conn>> conn =
      Conn::Create(id, *dev, mine, limits, t.poll, peer.ToString());
  if (!conn.ok()) {
    destroy_id();
    return conn.status();
  }
  rdma_cm_id* owned = id;
  id = nullptr;  // the Conn owns it from here

  uint8_t hello[kConnParamsSize];
  EncodeConnParams(mine, hello);
  rdma_conn_param cp{};
  cp.private_data = hello;
  cp.private_data_len = sizeof hello;
  cp.responder_resources = static_cast<uint8_t>(std::min((*dev)->attr().max_qp_rd_atom, 16));
  cp.initiator_depth = static_cast<uint8_t>(std::min((*dev)->attr().max_qp_init_rd_atom, 16));
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;  // credits keep receivers posted; RNR only as a last resort
  if (rdma_connect(owned, &cp) != 0) {
    return Status(Code::kDisconnected, "o2ib " + what + ": rdma_connect: " + strerror(errno));
  }
  rdma_cm_event* ev = nullptr;
  STRIA_RETURN_IF_ERROR(WaitCmEvent(ch.get(), RDMA_CM_EVENT_ESTABLISHED, deadline, what, &ev));
  Result<ConnParams> theirs =
      DecodeConnParams(ev->param.conn.private_data, ev->param.conn.private_data_len);
  rdma_ack_cm_event(ev);
  if (!theirs.ok()) return theirs.status();
  (*conn)->Start(*theirs);
  LOG_DEBUG("o2ib: connected to {} (queue depth {}, {}-byte messages)", peer.ToString(),
            theirs->queue_depth, theirs->msg_size);
  return std::unique_ptr<ClientConn>(
      std::make_unique<O2ibClientConn>(std::move(ch), std::move(*conn)));
}

}  // namespace stria::lnet::o2ib
