// Conn: one o2ib connection's verbs resources and message engine, shared by the client and
// server sides of the RDMA LND.
//
// A Conn owns an RC queue pair on an rdma_cm_id, one completion queue for its sends and
// receives, the completion channel that wakes a waiter (its fd is what the server's epoll
// set watches), and two registered areas: queue_depth + reserved receive buffers, all posted,
// and as many send buffers. Messages (lnet/o2ib/o2ib_msg.h) are SENDs into the peer's posted
// buffers under credit-based flow control (lnet/o2ib/credits.h); bulk moves by RDMA READ and
// WRITE between registered memory (lnet/o2ib/device.h) and the peer's.
//
// Waiting: by default a waiter sleeps on the completion channel (ibv_req_notify_cq, then
// poll(2) on its fd), so an idle connection costs no CPU; with `poll` it spins on the
// completion queue instead (lower latency, a core per waiter).
//
// Failure: a completion with an error status, a message that fails its checks, a peer that
// overruns its credits, or a disconnect reported by rdma_cm (Fail) marks the connection
// failed: its queue pair is moved to the error state (rdma_disconnect) so every posted work
// request is flushed, and every later call returns the failure (kDisconnected or
// kProtocol). The owner then destroys it; the RPC layer resends with the same xid.
//
// Thread-safety: none; one thread at a time (a connection is borrowed by one RPC, or
// handed to one server worker by EPOLLONESHOT).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "lnet/o2ib/credits.h"
#include "lnet/o2ib/device.h"
#include "lnet/o2ib/o2ib_msg.h"

namespace stria::lnet::o2ib {

using Clock = std::chrono::steady_clock;

// One RDMA READ or WRITE between local registered memory and a peer's RemoteBuf.
struct RdmaOp {
  uint64_t local_addr = 0;
  uint32_t lkey = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t len = 0;
};

// Splits `local` (registered as lkey) over the peer's buffers in order: the ops that move
// min(local.size(), their total) bytes.
std::vector<RdmaOp> SplitOver(std::span<const RemoteBuf> remote, uint8_t* local, size_t len,
                              uint32_t lkey);

class Conn {
 public:
  // A received kFrame message; its payload stays valid until Repost(slot).
  struct Incoming {
    DecodedMsg msg;
    uint32_t slot = 0;
  };

  // Creates the channel, CQ and RC QP on `id` (whose device is `dev`) and posts every
  // receive buffer. `params` are what this side posts; Start() adopts the negotiated ones.
  // On success the Conn owns `id` (rdma_destroy_id at destruction); on failure the caller
  // still does.
  static Result<std::unique_ptr<Conn>> Create(rdma_cm_id* id, Device* dev, const ConnParams& params,
                                              const MsgLimits& limits, bool poll, std::string peer);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Sets the parameters both sides agreed (no more than Create's): credits start here.
  void Start(const ConnParams& negotiated);

  rdma_cm_id* id() const { return id_; }
  Device* device() const { return dev_; }
  const std::string& peer() const { return peer_; }
  int completion_fd() const { return channel_->fd; }
  bool failed() const { return !failure_.ok(); }
  const Status& failure() const { return failure_; }

  // Also wait on `fd` (the client's rdma_cm channel); when it is readable, `on_ready` runs
  // and a non-OK return fails the connection.
  void Watch(int fd, std::function<Status()> on_ready);

  // Marks the connection failed with `why` (the first reason sticks) and disconnects. A
  // kShutdown reason is an orderly close and is not logged as a failure.
  void Fail(Status why);

  // Payload bytes a kFrame message with `nbufs` descriptors may carry.
  size_t MaxPayload(size_t nbufs) const;

  // Sends a kFrame: waits for a credit, copies the pieces after the header and descriptors.
  Status SendFrame(std::span<const RemoteBuf> bufs, uint16_t flags,
                   std::span<const std::span<const uint8_t>> pieces, Clock::time_point deadline);

  // Posts the ops and waits until all have completed.
  Status RdmaRead(std::span<const RdmaOp> ops, Clock::time_point deadline);
  Status RdmaWrite(std::span<const RdmaOp> ops, Clock::time_point deadline);

  // The next received kFrame, waiting until the deadline (kTimeout).
  Result<Incoming> WaitFrame(Clock::time_point deadline);
  // A kFrame already received, if any; never waits.
  std::optional<Incoming> TakeFrame();
  // Gives a frame's receive buffer back to the peer (and maybe sends a credit message).
  Status Repost(uint32_t slot);

  // Processes what completed, without waiting, and arms the completion channel so its fd
  // turns readable at the next completion (the server does this before rearming epoll).
  Status PollAndArm();

  uint64_t rdma_bytes() const { return rdma_bytes_; }

 private:
  Conn(rdma_cm_id* id, Device* dev, const ConnParams& params, const MsgLimits& limits, bool poll,
       std::string peer);
  Status Init();
  // Waits for and processes at least one completion, or a watched event; kTimeout.
  Status Progress(Clock::time_point deadline);
  // Processes up to one batch of completions; returns how many.
  Result<int> PollOnce();
  void HandleCompletion(const ibv_wc& wc);
  Status PostRecv(uint32_t slot);
  Status PostMsg(MsgType type, std::span<const RemoteBuf> bufs, uint16_t flags,
                 std::span<const std::span<const uint8_t>> pieces, Clock::time_point deadline);
  Status PostRdma(ibv_wr_opcode opcode, std::span<const RdmaOp> ops, Clock::time_point deadline);
  Status MaybeSendNoop();

  rdma_cm_id* id_;  // owned
  Device* const dev_;
  const ConnParams posted_;  // what was posted at Create
  ConnParams params_;        // what runs (Start)
  const MsgLimits limits_;
  const bool poll_;
  const std::string peer_;

  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  bool qp_created_ = false;
  bool armed_ = false;
  uint32_t nrx_ = 0;
  uint32_t ntx_ = 0;
  std::unique_ptr<uint8_t, void (*)(void*)> rx_{nullptr, &free};
  std::unique_ptr<uint8_t, void (*)(void*)> tx_{nullptr, &free};
  ibv_mr* rx_mr_ = nullptr;
  ibv_mr* tx_mr_ = nullptr;
  std::vector<uint32_t> tx_free_;
  std::optional<Credits> credits_;
  std::deque<Incoming> frames_;
  std::vector<MsgKind> slot_kind_;  // per receive buffer: the kind of message it holds
  uint32_t rdma_outstanding_ = 0;
  uint64_t rdma_bytes_ = 0;
  Status failure_;
  int watch_fd_ = -1;
  std::function<Status()> on_watch_;
};

}  // namespace stria::lnet::o2ib
