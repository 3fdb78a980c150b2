// OssServer: a whole object storage server — its OSTs, the RPC server and the registration
// heartbeat — as one object, so main.cc and tests start it the same way.
//
// Start() checks every OST directory (a formatted one must carry this index and the same
// fsname as the others; anything else refuses to start with the reason), opens the formatted
// ones, starts the RPC server on the listen NID and the registration thread. An unformatted
// OST directory is formatted once the MGS can be asked for its fsname (Registrar), and is
// served from then on; until then its requests get kNotReady.
//
// Thread-safety: Start/Stop from one thread; the rest is internal.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "lnet/nid.h"
#include "lnet/rpc_server.h"
#include "oss/object_store.h"
#include "oss/oss_service.h"
#include "oss/registration.h"

namespace stria::oss {

struct OstSpec {
  uint32_t index = 0;
  std::string dir;
};

struct OssOptions {
  std::vector<lnet::Nid> mgs_nids;  // where to register (at least one)
  std::vector<OstSpec> osts;        // at least one; distinct indexes and directories
  lnet::Nid listen{lnet::Lnd::kTcp, "127.0.0.1", 0};
  int threads = 8;                  // RPC worker threads (each with its own io_uring)
  ObjectStoreOptions store;         // per OST
  int heartbeat_ms = 5'000;         // registration period
  int mgs_rpc_deadline_ms = 2'000;  // one registration's retry deadline
  // The cluster key ring (lnet/auth.h): peers must prove it and the MGS is made to prove
  // it. Null: no authentication.
  std::shared_ptr<const lnet::KeyRing> keys;
  // The OSS capability keys (lnet/capa.h): with a cluster key, every object request must
  // carry a capability the MDS signed with one of them. Null with keys: derived from keys
  // (lnet::DeriveCapaKeys); from --capa-key-file otherwise. Ignored without keys.
  std::shared_ptr<const lnet::KeyRing> capa_keys;
};

// Parses "INDEX:DIR" (INDEX decimal, 0..kMaxOstIndex; DIR not empty).
Result<OstSpec> ParseOstSpec(std::string_view text);

class OssServer {
 public:
  static Result<std::unique_ptr<OssServer>> Start(OssOptions options);
  ~OssServer();  // Stop()s
  OssServer(const OssServer&) = delete;
  OssServer& operator=(const OssServer&) = delete;

  uint16_t port() const;
  // The NID registered with the MGS (listen address, or this host's if it is 0.0.0.0, and the
  // bound port).
  const std::string& nid() const { return nid_; }
  OssService& service() { return service_; }
  // The /metrics page: every OST's statistics, space and objects, and the RPC server's load.
  std::string MetricsPage() const;
  // Not OK once the MGS refused one of the OSTs for good (Registrar::fatal).
  Status fatal() const { return registrar_ ? registrar_->fatal() : Status::Ok(); }

  void Stop();

 private:
  explicit OssServer(OssOptions options);
  Status Init();
  Result<OstMeta> FormatPending(uint32_t index, const std::string& mgs_fsname);

  OssOptions options_;
  OssService service_;
  std::unique_ptr<lnet::RpcServer> server_;
  std::unique_ptr<Registrar> registrar_;
  std::string nid_;

  // OSTs waiting to be formatted, by index (touched by Init and then the registrar thread).
  std::mutex mu_;
  std::unordered_map<uint32_t, std::pair<std::string, std::string>> pending_;  // dir, uuid
};

}  // namespace stria::oss
