#include "oss/registration.h"

#include <chrono>

#include "common/log.h"
#include "proto/stria.pb.h"

namespace stria::oss {

Registrar::Registrar(RegistrationOptions options, FormatFn format, SpaceFn space)
    : options_(std::move(options)), format_(std::move(format)), space_(std::move(space)) {
  for (const lnet::Nid& nid : options_.mgs_nids) {
    lnet::ClientOptions co;
    co.connect_timeout_ms = std::min(1'000, options_.rpc_deadline_ms);
    co.rpc_timeout_ms = std::max(options_.rpc_deadline_ms, 1'000);
    co.retry_deadline_ms = options_.rpc_deadline_ms;
    co.max_connections = 1;
    co.keys = options_.keys;
    co.role = "oss";
    clients_.push_back(std::make_unique<lnet::RpcClient>(nid, co));
  }
}

Registrar::~Registrar() { Stop(); }

void Registrar::SetOst(uint32_t index, const std::string& uuid, const std::string& fsname) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Ost& o : osts_) {
    if (o.index == index) {
      o.uuid = uuid;
      o.fsname = fsname;
      return;
    }
  }
  osts_.push_back(Ost{index, uuid, fsname});
}

template <typename Req, typename Rep>
Status Registrar::CallMgs(uint16_t opcode, const Req& req, Rep* rep) {
  Status last(Code::kDisconnected, "no MGS NID configured");
  for (size_t k = 0; k < clients_.size(); ++k) {
    const size_t i = (preferred_ + k) % clients_.size();
    last = clients_[i]->Call(opcode, req, rep);
    if (last.ok()) {
      preferred_ = i;
      return last;
    }
    if (!last.retryable()) return last;  // the MGS answered with a refusal
  }
  return last;
}

Status Registrar::RegisterOne(Ost& ost) {
  if (ost.fsname.empty()) {
    // Not formatted: learn the filesystem's name from the MGS, then format.
    proto::GetConfigRequest creq;
    proto::FsConfig config;
    STRIA_RETURN_IF_ERROR(CallMgs(proto::OP_MGS_GET_CONFIG, creq, &config));
    if (!format_) return Status(Code::kInternal, "no way to format OST");
    STRIA_ASSIGN_OR_RETURN(OstMeta meta, format_(ost.index, config.fsname()));
    ost.fsname = meta.fsname;
    ost.uuid = meta.uuid;
    SetOst(ost.index, ost.uuid, ost.fsname);
  }
  proto::RegisterOstRequest req;
  req.set_fsname(ost.fsname);
  req.set_index(ost.index);
  req.set_nid(options_.nid);
  req.set_uuid(ost.uuid);
  uint64_t free_bytes = 0, total_bytes = 0;
  if (space_ && space_(ost.index, &free_bytes, &total_bytes)) {
    req.set_bytes_free(free_bytes);
    req.set_bytes_total(total_bytes);
  }
  proto::RegisterOstReply rep;
  STRIA_RETURN_IF_ERROR(CallMgs(proto::OP_MGS_REGISTER_OST, req, &rep));
  if (rep.fsname() != ost.fsname) {
    return Status(Code::kWrongFs, "the MGS serves filesystem '" + rep.fsname() + "' but OST " +
                                      std::to_string(ost.index) + " belongs to '" +
                                      ost.fsname + "'");
  }
  return Status::Ok();
}

Status Registrar::RegisterAll() {
  std::lock_guard<std::mutex> round(round_mu_);
  std::vector<Ost> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot = osts_;
  }
  Status overall;
  for (Ost& ost : snapshot) {
    Status st = RegisterOne(ost);
    bool was_registered = false;
    Code last_error = Code::kOk;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Ost& o : osts_) {
        if (o.index == ost.index) {
          was_registered = o.registered;
          last_error = o.last_error;
          o.registered = st.ok();
          o.last_error = st.code();
          if ((st.code() == Code::kWrongFs || st.code() == Code::kExist) && fatal_.ok()) {
            fatal_ = Status(st.code(), "OST " + std::to_string(ost.index) +
                                           " refused by the MGS: " + st.message());
          }
        }
      }
    }
    if (st.ok()) {
      if (!was_registered) {
        LOG_INFO("OST {} registered with the MGS (fsname '{}', nid {})", ost.index,
                 ost.fsname, options_.nid);
      }
    } else {
      // Logging every failure while the MGS is down would repeat every beat: log the
      // transition and refusals, the rest at debug.
      if (was_registered || (!st.retryable() && st.code() != last_error)) {
        LOG_WARN("OST {} registration failed: {}", ost.index, st.ToString());
      } else {
        LOG_DEBUG("OST {} registration failed: {}", ost.index, st.ToString());
      }
      if (overall.ok()) overall = st;
    }
  }
  return overall;
}

Status Registrar::fatal() {
  std::lock_guard<std::mutex> lock(mu_);
  return fatal_;
}

void Registrar::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Registrar::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Registrar::Loop() {
  bool first = true;
  for (;;) {
    Status st = RegisterAll();
    if (first && !st.ok() && st.retryable()) {
      LOG_WARN("MGS not reachable yet ({}); retrying every {} ms", st.ToString(),
               options_.interval_ms);
    }
    first = false;
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms),
                     [this] { return stop_; })) {
      return;
    }
  }
}

}  // namespace stria::oss
