#include "oss/oss_server.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <charconv>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "common/log.h"
#include "lnet/stats_service.h"

namespace stria::oss {
namespace {

// The first non-loopback IPv4 address of this host, or 127.0.0.1.
std::string HostAddress() {
  ifaddrs* list = nullptr;
  std::string out = "127.0.0.1";
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if ((ntohl(sin->sin_addr.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)) != nullptr) {
      out = buf;
      break;
    }
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

Result<OstSpec> ParseOstSpec(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return Status(Code::kInval, "--ost '" + std::string(text) + "' is not INDEX:DIR");
  }
  OstSpec spec;
  const std::string_view idx = text.substr(0, colon);
  auto [p, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), spec.index);
  if (ec != std::errc() || p != idx.data() + idx.size() || spec.index > kMaxOstIndex) {
    return Status(Code::kInval, fmt::format("--ost '{}': index must be 0..{}", text,
                                            kMaxOstIndex));
  }
  spec.dir = std::string(text.substr(colon + 1));
  return spec;
}

OssServer::OssServer(OssOptions options) : options_(std::move(options)) {}

OssServer::~OssServer() { Stop(); }

Result<std::unique_ptr<OssServer>> OssServer::Start(OssOptions options) {
  std::unique_ptr<OssServer> oss(new OssServer(std::move(options)));
  STRIA_RETURN_IF_ERROR(oss->Init());
  return oss;
}

Status OssServer::Init() {
  if (options_.osts.empty()) return Status(Code::kInval, "no --ost given");
  if (options_.mgs_nids.empty()) return Status(Code::kInval, "no --mgs NID given");
  std::set<uint32_t> indexes;
  std::set<std::string> dirs;
  for (const OstSpec& s : options_.osts) {
    if (!indexes.insert(s.index).second) {
      return Status(Code::kInval, fmt::format("OST index {} given twice", s.index));
    }
    if (!dirs.insert(s.dir).second) {
      return Status(Code::kInval, "OST directory " + s.dir + " given twice");
    }
  }

  // Check every directory before serving any.
  std::string fsname;
  std::vector<OstMeta> metas(options_.osts.size());
  std::vector<bool> formatted(options_.osts.size(), false);
  for (size_t i = 0; i < options_.osts.size(); ++i) {
    const OstSpec& s = options_.osts[i];
    Result<OstMeta> meta = ReadOstMeta(s.dir);
    if (!meta.ok()) {
      if (meta.status().code() != Code::kNoEnt) return meta.status();
      // Unformatted: only an empty directory (a fresh file system's lost+found aside) is
      // formatted; anything else is a damaged OST (ost.meta lost) or not an OST at all.
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(s.dir, ec)) {
        if (e.path().filename() == "lost+found") continue;
        return Status(Code::kCorrupt, s.dir + " is not empty but has no " +
                                          std::string(kOstMetaFile) +
                                          ": a damaged OST directory, or not one; refusing to "
                                          "format it");
      }
      continue;
    }
    STRIA_RETURN_IF_ERROR(CheckOstMeta(s.dir, *meta, s.index, {}));
    if (!fsname.empty() && meta->fsname != fsname) {
      return Status(Code::kWrongFs, fmt::format("OST directories of two filesystems ('{}' and "
                                                "'{}') given to one OSS", fsname,
                                                meta->fsname));
    }
    fsname = meta->fsname;
    metas[i] = *meta;
    formatted[i] = true;
  }

  RegistrationOptions ropts;
  ropts.mgs_nids = options_.mgs_nids;
  ropts.interval_ms = options_.heartbeat_ms;
  ropts.rpc_deadline_ms = options_.mgs_rpc_deadline_ms;
  ropts.keys = options_.keys;

  std::vector<std::pair<uint32_t, OstMeta>> announce;
  for (size_t i = 0; i < options_.osts.size(); ++i) {
    const OstSpec& s = options_.osts[i];
    if (formatted[i]) {
      STRIA_ASSIGN_OR_RETURN(auto store, ObjectStore::Open(s.dir, s.index, fsname,
                                                           options_.store));
      STRIA_RETURN_IF_ERROR(service_.AddOst(std::move(store)));
      LOG_INFO("OST {} ({}) at {}: filesystem '{}'", s.index, metas[i].uuid, s.dir,
               metas[i].fsname);
      announce.emplace_back(s.index, metas[i]);
    } else {
      OstMeta m;
      m.index = s.index;
      m.uuid = NewUuid();
      service_.ExpectOst(s.index);
      {
        std::lock_guard<std::mutex> lock(mu_);
        pending_[s.index] = {s.dir, m.uuid};
      }
      LOG_INFO("OST {} at {} is not formatted: formatting once the MGS answers", s.index,
               s.dir);
      announce.emplace_back(s.index, m);
    }
  }

  lnet::ServerOptions sopts;
  sopts.name = "stria-oss";
  sopts.fsname = fsname;
  sopts.worker_threads = options_.threads;
  sopts.keys = options_.keys;
  sopts.role = "oss";
  server_ = std::make_unique<lnet::RpcServer>(sopts);
  if (options_.keys) {
    service_.RequireCapabilities(options_.capa_keys ? options_.capa_keys
                                                    : lnet::DeriveCapaKeys(*options_.keys));
  }
  service_.Register(server_.get());
  STRIA_RETURN_IF_ERROR(server_->Start(options_.listen));

  lnet::Nid self = options_.listen;
  self.port = server_->port();
  if (self.addr == "0.0.0.0" || self.addr.empty()) self.addr = HostAddress();
  nid_ = self.ToString();
  ropts.nid = nid_;
  LOG_INFO("serving {} OST(s) at {}", options_.osts.size(), nid_);

  registrar_ = std::make_unique<Registrar>(
      ropts, [this](uint32_t index, const std::string& mgs_fsname) {
        return FormatPending(index, mgs_fsname);
      },
      [this](uint32_t index, uint64_t* free_bytes, uint64_t* total_bytes) {
        auto store = service_.Find(index);
        if (!store.ok()) return false;
        auto sf = (*store)->Statfs();
        if (!sf.ok()) return false;
        *free_bytes = sf->bavail * sf->bsize;
        *total_bytes = sf->blocks * sf->bsize;
        return true;
      });
  for (const auto& [index, meta] : announce) registrar_->SetOst(index, meta.uuid, meta.fsname);
  registrar_->Start();
  return Status::Ok();
}

Result<OstMeta> OssServer::FormatPending(uint32_t index, const std::string& mgs_fsname) {
  std::string dir, uuid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(index);
    if (it == pending_.end()) {
      return Status(Code::kInternal, fmt::format("OST {} is not waiting to be formatted",
                                                 index));
    }
    dir = it->second.first;
    uuid = it->second.second;
  }
  Status st = FormatOst(dir, OstMeta{mgs_fsname, index, uuid});
  if (!st.ok()) {
    LOG_ERROR("cannot format OST {} at {} for filesystem '{}': {}", index, dir, mgs_fsname,
              st.ToString());
    return st;
  }
  STRIA_ASSIGN_OR_RETURN(auto store, ObjectStore::Open(dir, index, mgs_fsname, options_.store));
  OstMeta meta = store->meta();
  STRIA_RETURN_IF_ERROR(service_.AddOst(std::move(store)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(index);
  }
  LOG_INFO("OST {} formatted at {} for filesystem '{}' (uuid {}); serving", index, dir,
           meta.fsname, meta.uuid);
  return meta;
}

std::string OssServer::MetricsPage() const {
  PromText page;
  service_.AddMetrics(&page);
  if (server_) lnet::AddRpcServerMetrics(*server_, "ost", &page);
  return page.str();
}

uint16_t OssServer::port() const { return server_ ? server_->port() : 0; }

void OssServer::Stop() {
  if (registrar_) registrar_->Stop();
  if (server_) server_->Stop();
}

}  // namespace stria::oss
