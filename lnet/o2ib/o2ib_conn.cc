#include "lnet/o2ib/o2ib_conn.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/log.h"

namespace stria::lnet::o2ib {
namespace {

// wr_id: the kind of work request in the top byte, a slot index below.
constexpr uint64_t kWrRecv = 1ull << 56;
constexpr uint64_t kWrSend = 2ull << 56;
constexpr uint64_t kWrRdma = 3ull << 56;
constexpr uint64_t kWrKindMask = 0xffull << 56;

constexpr int kMaxRdmaPerMsg = static_cast<int>(kMaxRemoteBufs);

int MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

uint8_t* AllocArea(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) return nullptr;
  return static_cast<uint8_t*>(p);
}

const char* WrKind(uint64_t wr_id) {
  switch (wr_id & kWrKindMask) {
    case kWrRecv:
      return "receive";
    case kWrSend:
      return "send";
    case kWrRdma:
      return "RDMA";
  }
  return "unknown";
}

}  // namespace

std::vector<RdmaOp> SplitOver(std::span<const RemoteBuf> remote, uint8_t* local, size_t len,
                              uint32_t lkey) {
  std::vector<RdmaOp> ops;
  size_t off = 0;
  for (const RemoteBuf& r : remote) {
    if (off >= len) break;
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(r.len, len - off));
    ops.push_back({reinterpret_cast<uint64_t>(local + off), lkey, r.addr, r.rkey, n});
    off += n;
  }
  return ops;
}

Conn::Conn(rdma_cm_id* id, Device* dev, const ConnParams& params, const MsgLimits& limits,
           bool poll, std::string peer)
    : id_(id),
      dev_(dev),
      posted_(params),
      params_(params),
      limits_(limits),
      poll_(poll),
      peer_(std::move(peer)) {}

Result<std::unique_ptr<Conn>> Conn::Create(rdma_cm_id* id, Device* dev, const ConnParams& params,
                                           const MsgLimits& limits, bool poll, std::string peer) {
  std::unique_ptr<Conn> c(new Conn(id, dev, params, limits, poll, std::move(peer)));
  if (Status st = c->Init(); !st.ok()) {
    // The caller keeps the id (it may have an event of it still to acknowledge).
    if (c->qp_created_) rdma_destroy_qp(id);
    c->qp_created_ = false;
    c->id_ = nullptr;
    return st;
  }
  return c;
}

Status Conn::Init() {
  nrx_ = posted_.queue_depth + posted_.reserved;
  ntx_ = posted_.queue_depth + posted_.reserved;
  channel_ = ibv_create_comp_channel(dev_->context());
  if (channel_ == nullptr) return ErrnoStatus("o2ib: ibv_create_comp_channel", errno);
  // The server waits on it through epoll and the client through poll(2): never block in
  // ibv_get_cq_event.
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  const int send_wr = static_cast<int>(ntx_) + 2 * kMaxRdmaPerMsg + 2;
  const int cqe = send_wr + static_cast<int>(nrx_);
  cq_ = ibv_create_cq(dev_->context(), cqe, this, channel_, 0);
  if (cq_ == nullptr) return ErrnoStatus("o2ib: ibv_create_cq", errno);

  ibv_qp_init_attr qa{};
  qa.send_cq = cq_;
  qa.recv_cq = cq_;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = static_cast<uint32_t>(send_wr);
  qa.cap.max_recv_wr = nrx_;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  qa.sq_sig_all = 0;
  if (rdma_create_qp(id_, dev_->pd(), &qa) != 0) return ErrnoStatus("o2ib: rdma_create_qp", errno);
  qp_created_ = true;

  const size_t size = posted_.msg_size;
  rx_.reset(AllocArea(size * nrx_));
  tx_.reset(AllocArea(size * ntx_));
  if (!rx_ || !tx_) return Status(Code::kNoMem, "o2ib: no memory for message buffers");
  rx_mr_ = ibv_reg_mr(dev_->pd(), rx_.get(), size * nrx_, IBV_ACCESS_LOCAL_WRITE);
  tx_mr_ = ibv_reg_mr(dev_->pd(), tx_.get(), size * ntx_, 0);
  if (rx_mr_ == nullptr || tx_mr_ == nullptr) {
    return ErrnoStatus("o2ib: registering message buffers", errno);
  }
  for (uint32_t i = 0; i < ntx_; ++i) tx_free_.push_back(i);
  slot_kind_.assign(nrx_, MsgKind::kNormal);
  for (uint32_t i = 0; i < nrx_; ++i) STRIA_RETURN_IF_ERROR(PostRecv(i));
  return Status::Ok();
}

Conn::~Conn() {
  if (qp_created_) rdma_destroy_qp(id_);
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
  if (rx_mr_ != nullptr) ibv_dereg_mr(rx_mr_);
  if (tx_mr_ != nullptr) ibv_dereg_mr(tx_mr_);
  if (id_ != nullptr) rdma_destroy_id(id_);
}

void Conn::Start(const ConnParams& negotiated) {
  params_ = Negotiate(posted_, negotiated);
  CreditParams cp;
  cp.queue_depth = params_.queue_depth;
  cp.reserved = params_.reserved;
  cp.noop_threshold = static_cast<uint16_t>(std::max(1, params_.queue_depth / 2));
  credits_.emplace(cp);
}

void Conn::Watch(int fd, std::function<Status()> on_ready) {
  watch_fd_ = fd;
  on_watch_ = std::move(on_ready);
}

void Conn::Fail(Status why) {
  if (failed()) return;
  failure_ = std::move(why);
  if (failure_.code() == Code::kShutdown) {
    LOG_DEBUG("o2ib: closing the connection with {}: {}", peer_, failure_.message());
  } else {
    LOG_WARN("o2ib: connection with {} failed: {}", peer_, failure_.ToString());
  }
  // Moves the QP to the error state: everything posted is flushed back with an error.
  rdma_disconnect(id_);
}

size_t Conn::MaxPayload(size_t nbufs) const {
  const size_t head = MsgSize(nbufs, 0);
  return params_.msg_size > head ? params_.msg_size - head : 0;
}

Status Conn::PostRecv(uint32_t slot) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uint64_t>(rx_.get() + size_t{slot} * posted_.msg_size);
  sge.length = posted_.msg_size;
  sge.lkey = rx_mr_->lkey;
  ibv_recv_wr wr{};
  wr.wr_id = kWrRecv | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(id_->qp, &wr, &bad); rc != 0) {
    Status st(Code::kDisconnected, std::string("o2ib: ibv_post_recv: ") + std::strerror(rc));
    Fail(st);
    return st;
  }
  return Status::Ok();
}

Result<int> Conn::PollOnce() {
  ibv_wc wc[16];
  const int n = ibv_poll_cq(cq_, 16, wc);
  if (n < 0) {
    Fail(Status(Code::kDisconnected, "o2ib: ibv_poll_cq failed"));
    return failure_;
  }
  for (int i = 0; i < n; ++i) HandleCompletion(wc[i]);
  return n;
}

void Conn::HandleCompletion(const ibv_wc& wc) {
  const uint64_t kind = wc.wr_id & kWrKindMask;
  const uint32_t slot = static_cast<uint32_t>(wc.wr_id & ~kWrKindMask);
  if (kind == kWrSend) tx_free_.push_back(slot);
  if (kind == kWrRdma && rdma_outstanding_ > 0) --rdma_outstanding_;
  if (wc.status != IBV_WC_SUCCESS) {
    // After a failure every outstanding request comes back flushed: only the first counts.
    Fail(Status(Code::kDisconnected, std::string("o2ib: ") + WrKind(wc.wr_id) +
                                         " work request failed: " + ibv_wc_status_str(wc.status)));
    return;
  }
  if (kind != kWrRecv || failed()) return;
  const uint8_t* buf = rx_.get() + size_t{slot} * posted_.msg_size;
  Result<DecodedMsg> m = DecodeMsg(buf, wc.byte_len, limits_);
  if (!m.ok()) {
    Fail(m.status());
    return;
  }
  const MsgKind mk = m->header.type == MsgType::kNoop ? MsgKind::kNoop : MsgKind::kNormal;
  if (!credits_) {
    Fail(Status(Code::kProtocol, "o2ib: a message arrived before the connection was set up"));
    return;
  }
  Status st = credits_->OnReceive(mk, m->header.credits);
  if (!st.ok()) {
    Fail(st);  // a peer that overruns its credits is disconnected
    return;
  }
  slot_kind_[slot] = mk;
  if (mk == MsgKind::kNoop) {
    (void)Repost(slot);  // nothing to consume; a failure is recorded
    return;
  }
  frames_.push_back({std::move(*m), slot});
}

Status Conn::Progress(Clock::time_point deadline) {
  for (;;) {
    if (failed()) return failure_;
    STRIA_ASSIGN_OR_RETURN(int n, PollOnce());
    if (n > 0) return failed() ? failure_ : Status::Ok();
    if (poll_) {
      if (Clock::now() >= deadline)
        return Status(Code::kTimeout, "o2ib peer did not answer in time");
      if (watch_fd_ >= 0) {
        pollfd w{watch_fd_, POLLIN, 0};
        if (::poll(&w, 1, 0) > 0) {
          Status st = on_watch_();
          if (!st.ok()) Fail(st);
        }
      }
      continue;
    }
    if (!armed_) {
      // Arm, then look again: a completion that landed before the arm raises no event.
      if (ibv_req_notify_cq(cq_, 0) != 0) {
        Fail(Status(Code::kDisconnected, "o2ib: ibv_req_notify_cq failed"));
        return failure_;
      }
      armed_ = true;
      continue;
    }
    pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {watch_fd_, POLLIN, 0}};
    const int rc = ::poll(fds, watch_fd_ >= 0 ? 2 : 1, MsLeft(deadline));
    if (rc == 0) return Status(Code::kTimeout, "o2ib peer did not answer in time");
    if (rc < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("poll", errno);
    }
    if (watch_fd_ >= 0 && (fds[1].revents & POLLIN)) {
      Status st = on_watch_();
      if (!st.ok()) Fail(st);
    }
    if (fds[0].revents & POLLIN) {
      ibv_cq* cq = nullptr;
      void* ctx = nullptr;
      if (ibv_get_cq_event(channel_, &cq, &ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
        armed_ = false;
      }
    }
  }
}

Status Conn::PollAndArm() {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) {
    ibv_ack_cq_events(cq, 1);
    armed_ = false;
  }
  for (;;) {
    if (failed()) return failure_;
    STRIA_ASSIGN_OR_RETURN(int n, PollOnce());
    if (n > 0) continue;
    if (armed_) return Status::Ok();
    if (ibv_req_notify_cq(cq_, 0) != 0) {
      Fail(Status(Code::kDisconnected, "o2ib: ibv_req_notify_cq failed"));
      return failure_;
    }
    armed_ = true;
  }
}

Status Conn::PostMsg(MsgType type, std::span<const RemoteBuf> bufs, uint16_t flags,
                     std::span<const std::span<const uint8_t>> pieces, Clock::time_point deadline) {
  size_t payload = 0;
  for (const auto& p : pieces) payload += p.size();
  if (MsgSize(bufs.size(), payload) > params_.msg_size || bufs.size() > kMaxRemoteBufs) {
    return Status(Code::kTooLarge, "o2ib: message of " + std::to_string(payload) +
                                       " bytes does not fit a " + std::to_string(params_.msg_size) +
                                       "-byte buffer");
  }
  while (tx_free_.empty()) STRIA_RETURN_IF_ERROR(Progress(deadline));
  const uint32_t slot = tx_free_.back();
  tx_free_.pop_back();
  uint8_t* out = tx_.get() + size_t{slot} * posted_.msg_size;
  MsgHeader h;
  h.type = type;
  h.flags = flags;
  h.credits = credits_->Consume(type == MsgType::kNoop ? MsgKind::kNoop : MsgKind::kNormal);
  h.payload_len = static_cast<uint32_t>(payload);
  size_t off = EncodeMsgHead(h, bufs, out);
  for (const auto& p : pieces) {
    if (!p.empty()) std::memcpy(out + off, p.data(), p.size());
    off += p.size();
  }
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uint64_t>(out);
  sge.length = static_cast<uint32_t>(off);
  sge.lkey = tx_mr_->lkey;
  ibv_send_wr wr{};
  wr.wr_id = kWrSend | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, &wr, &bad); rc != 0) {
    tx_free_.push_back(slot);
    Fail(Status(Code::kDisconnected, std::string("o2ib: ibv_post_send: ") + std::strerror(rc)));
    return failure_;
  }
  return Status::Ok();
}

Status Conn::SendFrame(std::span<const RemoteBuf> bufs, uint16_t flags,
                       std::span<const std::span<const uint8_t>> pieces,
                       Clock::time_point deadline) {
  if (failed()) return failure_;
  while (!credits_->CanSend(MsgKind::kNormal)) {
    // Out of credits: the peer's messages (or its credit messages) bring them back.
    STRIA_RETURN_IF_ERROR(Progress(deadline));
  }
  return PostMsg(MsgType::kFrame, bufs, flags, pieces, deadline);
}

Status Conn::MaybeSendNoop() {
  if (!credits_ || !credits_->NeedNoop(/*normal_queued=*/false) || tx_free_.empty()) {
    return Status::Ok();
  }
  return PostMsg(MsgType::kNoop, {}, 0, {}, Clock::now());
}

Status Conn::Repost(uint32_t slot) {
  if (failed()) return failure_;
  STRIA_RETURN_IF_ERROR(PostRecv(slot));
  credits_->OnRepost(slot_kind_[slot]);
  return MaybeSendNoop();
}

Status Conn::PostRdma(ibv_wr_opcode opcode, std::span<const RdmaOp> ops,
                      Clock::time_point deadline) {
  if (failed()) return failure_;
  if (ops.size() > static_cast<size_t>(kMaxRdmaPerMsg) * 2) {
    return Status(Code::kTooLarge, "o2ib: too many RDMA pieces");
  }
  std::vector<ibv_sge> sges(ops.size());
  std::vector<ibv_send_wr> wrs(ops.size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    sges[i] = {ops[i].local_addr, ops[i].len, ops[i].lkey};
    ibv_send_wr& wr = wrs[i];
    wr = {};
    wr.wr_id = kWrRdma | i;
    wr.sg_list = &sges[i];
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = ops[i].remote_addr;
    wr.wr.rdma.rkey = ops[i].rkey;
    wr.next = i + 1 < ops.size() ? &wrs[i + 1] : nullptr;
    bytes += ops[i].len;
  }
  if (ops.empty()) return Status::Ok();
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, wrs.data(), &bad); rc != 0) {
    // Those before `bad` were posted and will complete (or flush).
    rdma_outstanding_ += static_cast<uint32_t>(bad - wrs.data());
    Fail(Status(Code::kDisconnected, std::string("o2ib: posting RDMA: ") + std::strerror(rc)));
  } else {
    rdma_outstanding_ += static_cast<uint32_t>(ops.size());
  }
  Status st = failure_;
  while (st.ok() && rdma_outstanding_ > 0) st = Progress(deadline);
  if (!st.ok()) {
    // The local memory must not be touched by the device once we return: fail the queue
    // pair and let the flushed completions come back (bounded: a dead device never answers).
    Fail(st);
    const auto drain_until = Clock::now() + std::chrono::seconds(2);
    while (rdma_outstanding_ > 0 && Clock::now() < drain_until) {
      Result<int> n = PollOnce();
      if (!n.ok() || *n == 0) {
        pollfd p{channel_->fd, POLLIN, 0};
        ::poll(&p, 1, 10);
      }
    }
    return st;
  }
  rdma_bytes_ += bytes;
  return Status::Ok();
}

Status Conn::RdmaRead(std::span<const RdmaOp> ops, Clock::time_point deadline) {
  return PostRdma(IBV_WR_RDMA_READ, ops, deadline);
}

Status Conn::RdmaWrite(std::span<const RdmaOp> ops, Clock::time_point deadline) {
  return PostRdma(IBV_WR_RDMA_WRITE, ops, deadline);
}

Result<Conn::Incoming> Conn::WaitFrame(Clock::time_point deadline) {
  while (frames_.empty()) STRIA_RETURN_IF_ERROR(Progress(deadline));
  Incoming in = std::move(frames_.front());
  frames_.pop_front();
  return in;
}

std::optional<Conn::Incoming> Conn::TakeFrame() {
  if (frames_.empty()) return std::nullopt;
  Incoming in = std::move(frames_.front());
  frames_.pop_front();
  return in;
}

}  // namespace stria::lnet::o2ib
