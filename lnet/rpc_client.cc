#include "lnet/rpc_client.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/crc32c.h"
#include "common/log.h"
#include "lnet/buffer.h"
#include "lnet/socket.h"
#include "proto/stria.pb.h"

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

// The outcome of one attempt: the status, and whether the connection is still usable.
struct Attempt {
  Status status;
  bool conn_ok = false;
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
    NoteRdmaFallback(peer_);
  }

  ~Impl() {
    std::lock_guard lk(mu_);
    for (int fd : idle_) close(fd);
  }

  const Nid& peer() const { return peer_; }
  void set_retry_deadline_ms(int ms) { retry_deadline_ms_ = ms; }

  Status Call(uint16_t opcode, std::string_view request, std::string* reply,
              const CallBulk& bulk, int retry_deadline_ms) {
    const uint64_t xid = next_xid_.fetch_add(1);
    const int deadline_ms = retry_deadline_ms >= 0 ? retry_deadline_ms : retry_deadline_ms_.load();
    const auto give_up = Clock::now() + std::chrono::milliseconds(deadline_ms);
    auto backoff = std::chrono::milliseconds(20);
    int attempts = 0;
    for (;;) {
      ++attempts;
      Attempt a;
      Result<int> fd = Acquire();
      if (!fd.ok()) {
        a.status = fd.status();
      } else {
        a = Exchange(*fd, opcode, xid, request, reply, bulk);
        Release(*fd, a.conn_ok);
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

 private:
  // Borrows an idle connection, or opens one (waiting while max_connections are busy).
  Result<int> Acquire() {
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return !idle_.empty() || open_ < options_.max_connections; });
      if (!idle_.empty()) {
        const int fd = idle_.back();
        idle_.pop_back();
        return fd;
      }
      ++open_;
    }
    Result<int> fd = Connect();
    if (!fd.ok()) {
      std::lock_guard lk(mu_);
      --open_;
      cv_.notify_one();
    }
    return fd;
  }

  void Release(int fd, bool reusable) {
    std::lock_guard lk(mu_);
    if (reusable) {
      idle_.push_back(fd);
    } else {
      close(fd);
      --open_;
    }
    cv_.notify_one();
  }

  Result<int> Connect() {
    STRIA_ASSIGN_OR_RETURN(int fd, TcpConnect(peer_, options_.connect_timeout_ms));
    proto::ConnectRequest req;
    req.set_version(kWireVersion);
    req.set_client_uuid(options_.client_uuid);
    req.set_fsname(options_.fsname);
    std::string body, reply;
    req.SerializeToString(&body);
    Attempt a = Exchange(fd, proto::OP_CONNECT, next_xid_.fetch_add(1), body, &reply, {});
    if (!a.status.ok()) {
      close(fd);
      return a.status;
    }
    return fd;
  }

  Attempt Exchange(int fd, uint16_t opcode, uint64_t xid, std::string_view request,
                   std::string* reply, const CallBulk& bulk) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(options_.rpc_timeout_ms);
    FrameHeader h;
    h.opcode = opcode;
    h.xid = xid;
    h.body_len = static_cast<uint32_t>(request.size());
    h.body_crc = Crc32c(request.data(), request.size());
    std::vector<iovec> iov;
    iov.reserve(2 + bulk.out.size());
    uint8_t hdr[kFrameHeaderSize];
    iov.push_back({hdr, sizeof hdr});
    iov.push_back({const_cast<char*>(request.data()), request.size()});
    uint32_t crc = 0;
    for (const iovec& v : bulk.out) {
      if (v.iov_len == 0) continue;
      h.bulk_len += v.iov_len;
      crc = Crc32c(v.iov_base, v.iov_len, crc);
      iov.push_back(v);
    }
    if (h.bulk_len) {
      h.flags |= kFlagBulkCrc;
      h.bulk_crc = crc;
    }
    EncodeHeader(h, hdr);
    Status st = SendAll(fd, iov.data(), static_cast<int>(iov.size()), deadline);
    if (!st.ok()) return {st, false};

    uint8_t rhdr[kFrameHeaderSize];
    st = RecvAll(fd, rhdr, sizeof rhdr, deadline);
    if (!st.ok()) return {st, false};
    Result<FrameHeader> rh = DecodeHeader(rhdr, options_.limits);
    if (!rh.ok()) return {rh.status(), false};
    if (!(rh->flags & kFlagReply) || rh->xid != xid || rh->opcode != opcode) {
      return {Status(Code::kProtocol, "reply does not match request xid " + std::to_string(xid)),
              false};
    }
    reply->resize(rh->body_len);
    st = RecvAll(fd, reply->data(), reply->size(), deadline);
    if (!st.ok()) return {st, false};
    st = VerifyBody(*rh, *reply);
    if (!st.ok()) return {st, false};
    if (rh->bulk_len > bulk.in.size()) {
      return {Status(Code::kProtocol, "reply bulk of " + std::to_string(rh->bulk_len) +
                                          " bytes exceeds the caller's buffer"),
              false};
    }
    if (rh->bulk_len) {
      st = RecvAll(fd, bulk.in.data(), rh->bulk_len, deadline);
      if (!st.ok()) return {st, false};
      if (Crc32c(bulk.in.data(), rh->bulk_len) != rh->bulk_crc) {
        LOG_WARN("{}: reply bulk checksum mismatch (xid {}); resending", peer_.ToString(), xid);
        return {Status(Code::kChecksum, "reply bulk checksum mismatch"), true};
      }
    }
    if (bulk.in_len) *bulk.in_len = rh->bulk_len;
    if (rh->status != 0) {
      const Code code = static_cast<Code>(rh->status);
      if (CodeName(code) == "Unknown") {
        return {Status(Code::kIO, "peer answered unknown status " + std::to_string(rh->status) +
                                      ": " + *reply),
                true};
      }
      return {Status(code, std::move(*reply)), true};
    }
    return {Status::Ok(), true};
  }

  const Nid peer_;
  ClientOptions options_;
  std::atomic<int> retry_deadline_ms_;
  std::atomic<uint64_t> next_xid_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> idle_;  // GUARDED_BY(mu_)
  int open_ = 0;           // GUARDED_BY(mu_): idle + borrowed connections
};

RpcClient::RpcClient(Nid peer, ClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(peer), std::move(options))) {}
RpcClient::~RpcClient() = default;
const Nid& RpcClient::peer() const { return impl_->peer(); }
Status RpcClient::CallRaw(uint16_t opcode, std::string_view request, std::string* reply,
                          const CallBulk& bulk, int retry_deadline_ms) {
  return impl_->Call(opcode, request, reply, bulk, retry_deadline_ms);
}
void RpcClient::set_retry_deadline_ms(int ms) { impl_->set_retry_deadline_ms(ms); }

}  // namespace stria::lnet
