// O2ibListener: the server side of the o2ib LND, living on an RpcServer's event loop.
//
// It listens with librdmacm (rdma_bind_addr, rdma_listen) and puts the rdma_cm event
// channel's fd and, for each accepted connection, its completion channel's fd into the
// server's epoll set (ids tagged kTag, EPOLLONESHOT, as the TCP connections are). A worker
// that takes a ready id calls OnReady: connection requests are accepted (queue pair created,
// receives posted, rdma_accept with the negotiated parameters), disconnects tear their
// connection down; on a completion channel the worker takes every request that arrived and
// serves each itself: it RDMA READs the request bulk from the client's buffers into a
// registered I/O buffer (BufferPool, lnet/o2ib/device.h), runs the RequestHandler (the same
// path as TCP: CONNECT, PING, handlers, reply cache, bulk crc), RDMA WRITEs the reply bulk
// into the client's buffer and SENDs the reply. A connection whose queue pair fails, whose
// peer breaks the protocol or whose peer disconnects is dropped; the client resends.
//
// Thread-safety: OnReady from any worker (EPOLLONESHOT gives one id to one worker at a
// time); Listen and Stop from the thread that starts and stops the RpcServer.
#pragma once

#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "common/status.h"
#include "lnet/internal/server_core.h"
#include "lnet/nid.h"
#include "lnet/o2ib/o2ib_msg.h"
#include "lnet/rpc_server.h"
#include "proto/stria.pb.h"

namespace stria::lnet::o2ib {

class O2ibListener {
 public:
  static constexpr uint64_t kTag = 1ull << 63;

  O2ibListener(RequestHandler* handler, const ServerOptions& options, int epoll_fd);
  ~O2ibListener();
  O2ibListener(const O2ibListener&) = delete;
  O2ibListener& operator=(const O2ibListener&) = delete;

  Status Listen(const Nid& nid);
  uint16_t port() const { return port_; }

  // The fd with epoll id `id` (kTag set) is ready.
  void OnReady(uint64_t id);

  // Destroys every connection and the listener. REQUIRES: no OnReady running or to come.
  void Stop();

  // Appends one entry per connection.
  void ListConnections(proto::PeersReply* out) const;

 private:
  struct ServerConn;
  void OnCmEvents();
  // A connection request: true when accepted or handed to *failed (to destroy after the
  // event's ack); false when rejected (the caller destroys the id after the ack).
  bool Accept(rdma_cm_event* ev, std::shared_ptr<ServerConn>* failed);
  void Serve(const std::shared_ptr<ServerConn>& sc);
  Status ServeOne(ServerConn& sc, uint32_t slot, const DecodedMsg& msg);
  void Drop(uint64_t conn_id, const std::string& why);
  void Rearm(int fd, uint64_t id);
  std::shared_ptr<ServerConn> Find(uint64_t conn_id) const;

  RequestHandler* const handler_;
  const ServerOptions options_;
  const int epoll_fd_;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* listen_id_ = nullptr;
  uint16_t port_ = 0;

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<ServerConn>> conns_;  // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;                                             // GUARDED_BY(mu_)
};

}  // namespace stria::lnet::o2ib
