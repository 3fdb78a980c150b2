// Device: one RDMA device as the o2ib LND uses it: its protection domain and its memory
// registration cache.
//
// librdmacm opens every device once per process; a connection's rdma_cm_id names its device
// by ibv_context, and Device::For returns the one Device for it (created on first use, never
// destroyed: registrations may outlive any one connection). All of a device's queue pairs
// and memory regions share its protection domain, so a buffer registered once serves every
// connection on that device.
//
// Memory: Register() takes a registration from the cache when the memory is BufferPool
// memory (lnet/buffer.h), which tells the cache before it frees a block; any other memory
// (a caller's std::vector, a protobuf string) is registered for the one transfer and
// deregistered after it, since nothing would tell the cache when it is freed.
// Thread-safety: thread-safe.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "lnet/o2ib/reg_cache.h"

namespace stria::lnet::o2ib {

// "" when at least one RDMA device is present; otherwise "no RDMA device found (...)" with
// what ibv_get_device_list answered.
std::string ProbeDevices();

// A registration held for one transfer. Movable; releases (or deregisters) on destruction.
class LocalMr {
 public:
  LocalMr() = default;
  LocalMr(LocalMr&&) noexcept = default;
  LocalMr& operator=(LocalMr&&) noexcept = default;
  ~LocalMr();

  uint32_t lkey() const { return pin_.valid() ? pin_.lkey() : mr_->lkey; }
  uint32_t rkey() const { return pin_.valid() ? pin_.rkey() : mr_->rkey; }
  bool cached() const { return pin_.valid(); }

 private:
  friend class Device;
  RegCache::Pin pin_;
  struct Dereg {
    void operator()(ibv_mr* mr) const;
  };
  std::unique_ptr<ibv_mr, Dereg> mr_;
};

class Device {
 public:
  // The Device of `ctx` (an rdma_cm_id's verbs), with its protection domain.
  static Result<Device*> For(ibv_context* ctx);

  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  const ibv_device_attr& attr() const { return attr_; }
  RegCache& cache() { return *cache_; }

  // A registration covering [addr, addr+len) for local writes and remote reads and writes.
  Result<LocalMr> Register(const void* addr, size_t len);

  // Registers BufferPool blocks for the usual bulk sizes once, so a server's first requests
  // find their I/O buffers registered (the pre-registered pool). Best effort.
  void Prewarm();

  // Drops registrations of [p, p+len) on every device (the BufferPool release hook).
  static void InvalidateAll(const void* p, size_t len);

 private:
  explicit Device(ibv_context* ctx);
  class Registrar;

  ibv_context* const ctx_;
  ibv_pd* pd_ = nullptr;
  ibv_device_attr attr_{};
  std::unique_ptr<Registrar> registrar_;
  std::unique_ptr<RegCache> cache_;
  bool prewarmed_ = false;
};

}  // namespace stria::lnet::o2ib
