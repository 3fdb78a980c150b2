#include "lnet/o2ib/device.h"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/log.h"
#include "lnet/buffer.h"
#include "lnet/lnd.h"

namespace stria::lnet::o2ib {
namespace {

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

std::mutex devices_mu;
std::vector<Device*>& Devices() {  // GUARDED_BY(devices_mu); never destroyed
  static auto* devices = new std::vector<Device*>;
  return *devices;
}

}  // namespace

std::string ProbeDevices() {
  int n = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) {
    const int err = errno;
    return std::string("no RDMA device found (ibv_get_device_list: ") +
           (err != 0 ? std::strerror(err) : "failed") + ")";
  }
  ibv_free_device_list(list);
  if (n == 0) return "no RDMA device found (ibv_get_device_list returned 0 devices)";
  return "";
}

void LocalMr::Dereg::operator()(ibv_mr* mr) const {
  if (mr != nullptr) ibv_dereg_mr(mr);
}

LocalMr::~LocalMr() = default;

// ibv_reg_mr / ibv_dereg_mr on the device's protection domain, for the cache.
class Device::Registrar : public o2ib::Registrar {
 public:
  explicit Registrar(ibv_pd* pd) : pd_(pd) {}
  Result<MemoryRegion> Register(uintptr_t addr, size_t len) override {
    ibv_mr* mr = ibv_reg_mr(pd_, reinterpret_cast<void*>(addr), len, kAccess);
    if (mr == nullptr) return ErrnoStatus("ibv_reg_mr of " + std::to_string(len) + " bytes", errno);
    return MemoryRegion{addr, len, mr->lkey, mr->rkey, mr};
  }
  void Deregister(const MemoryRegion& mr) override {
    if (int rc = ibv_dereg_mr(static_cast<ibv_mr*>(mr.handle)); rc != 0) {
      LOG_WARN("o2ib: ibv_dereg_mr: {}", std::strerror(rc));
    }
  }

 private:
  ibv_pd* const pd_;
};

Device::Device(ibv_context* ctx) : ctx_(ctx) {}

Result<Device*> Device::For(ibv_context* ctx) {
  if (ctx == nullptr) return Status(Code::kNoDev, "o2ib: the connection has no RDMA device");
  std::lock_guard lk(devices_mu);
  for (Device* d : Devices()) {
    if (d->ctx_ == ctx) return d;
  }
  auto d = std::unique_ptr<Device>(new Device(ctx));
  if (ibv_query_device(ctx, &d->attr_) != 0) {
    return ErrnoStatus("o2ib: ibv_query_device", errno);
  }
  d->pd_ = ibv_alloc_pd(ctx);
  if (d->pd_ == nullptr) return ErrnoStatus("o2ib: ibv_alloc_pd", errno);
  d->registrar_ = std::make_unique<Registrar>(d->pd_);
  RegCacheOptions ro;
  ro.max_bytes = CurrentLndConfig().o2ib.reg_cache_bytes;
  d->cache_ = std::make_unique<RegCache>(d->registrar_.get(), ro);
  if (Devices().empty()) BufferPool::AddReleaseHook(&Device::InvalidateAll);
  LOG_INFO("o2ib: using RDMA device {} (max {} QPs, {} MRs)", ibv_get_device_name(ctx->device),
           d->attr_.max_qp, d->attr_.max_mr);
  Devices().push_back(d.get());
  return d.release();
}

void Device::InvalidateAll(const void* p, size_t len) {
  std::vector<Device*> devices;
  {
    std::lock_guard lk(devices_mu);
    devices = Devices();
  }
  for (Device* d : devices) d->cache_->Invalidate(p, len);
}

Result<LocalMr> Device::Register(const void* addr, size_t len) {
  LocalMr out;
  if (BufferPool::Owns(addr, len)) {
    STRIA_ASSIGN_OR_RETURN(out.pin_, cache_->Acquire(addr, len));
    return out;
  }
  ibv_mr* mr = ibv_reg_mr(pd_, const_cast<void*>(addr), len, kAccess);
  if (mr == nullptr) return ErrnoStatus("ibv_reg_mr of " + std::to_string(len) + " bytes", errno);
  out.mr_.reset(mr);
  return out;
}

void Device::Prewarm() {
  {
    std::lock_guard lk(devices_mu);
    if (prewarmed_) return;
    prewarmed_ = true;
  }
  // What an OSS serves most: 1 MiB and 4 MiB pieces. The blocks go back to the pool (under
  // its cap) and keep their registrations there.
  std::vector<Buffer> blocks;
  for (size_t size : {size_t{1} << 20, size_t{4} << 20}) {
    for (int i = 0; i < 4; ++i) blocks.emplace_back(size);
  }
  for (Buffer& b : blocks) {
    Result<RegCache::Pin> pin = cache_->Acquire(b.data(), b.size());
    if (!pin.ok()) {
      LOG_WARN("o2ib: pre-registering I/O buffers: {}", pin.status().ToString());
      return;
    }
  }
}

}  // namespace stria::lnet::o2ib
