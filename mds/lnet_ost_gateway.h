// LnetOstGateway: the MDS's OstGateway over lnet RPC (OP_OST_DESTROY, OP_OST_STATFS, and
// OP_OST_READ/WRITE/TRUNCATE/SYNC for the mirror resync).
//
// Keeps one lnet::RpcClient per OST NID (created on first use, replaced when an OST moves),
// each with a short retry deadline so a dead OST costs a bounded few seconds; the destroy
// queue retries later anyway. Thread-safety: thread-safe (clients map under mu_; calls run
// outside it).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "lnet/capa.h"
#include "lnet/rpc_client.h"
#include "mds/ost_gateway.h"

namespace stria::mds {

class LnetOstGateway : public OstGateway {
 public:
  // timeout_ms bounds each call (connect, reply wait and retries).
  // keys: the cluster key the MDS proves to OSSes (null: none). capa: signs the MDS's own
  // capability (CAPA_DESTROY | CAPA_ANY_OBJECT) for each destroy (null: none sent).
  explicit LnetOstGateway(std::string fsname,
                          std::shared_ptr<const lnet::KeyRing> keys = nullptr,
                          int timeout_ms = 3000,
                          std::shared_ptr<const lnet::CapaSigner> capa = nullptr);

  Status Destroy(const proto::OstInfo& ost, const proto::OstDestroyRequest& req) override;
  Result<proto::OstStatfsReply> Statfs(const proto::OstInfo& ost) override;
  Result<size_t> ReadObject(const proto::OstInfo& ost, const proto::ObjectId& object,
                            uint64_t offset, std::span<uint8_t> buf) override;
  Status WriteObject(const proto::OstInfo& ost, const proto::ObjectId& object, uint64_t offset,
                     std::span<const uint8_t> data) override;
  Status TruncateObject(const proto::OstInfo& ost, const proto::ObjectId& object,
                        uint64_t size) override;
  Status SyncObjects(const proto::OstInfo& ost,
                     const std::vector<proto::ObjectId>& objects) override;
  Result<uint64_t> ObjectSize(const proto::OstInfo& ost, const proto::ObjectId& object) override;

 private:
  Result<std::shared_ptr<lnet::RpcClient>> ClientFor(const proto::OstInfo& ost);
  // The MDS's capability for `ops` on any object, when it signs (null: none sent).
  void Sign(uint32_t ops, proto::Capability* capa) const;

  const std::string fsname_;
  const std::shared_ptr<const lnet::KeyRing> keys_;
  const int timeout_ms_;
  const std::shared_ptr<const lnet::CapaSigner> capa_;
  const std::string uuid_;  // this MDS's client uuid at the OSSes: the capability names it
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<lnet::RpcClient>> clients_;  // GUARDED_BY(mu_), by NID
};

}  // namespace stria::mds
