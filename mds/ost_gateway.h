// OstGateway: how the MDS talks to OSTs (destroying orphaned objects, statfs, the object
// I/O of a mirror resync, and object sizes).
//
// The seam between the namespace and the network: the MDS's real implementation
// (LnetOstGateway, mds/lnet_ost_gateway.h) sends RPCs with lnet::RpcClient; unit tests plug
// in a gateway that records calls and injects failures, while the namespace underneath stays
// real RocksDB. Calls must return within a short, bounded time (seconds): they are made from
// RPC handlers (statfs) and from the destroy-queue thread.
// Thread-safety: implementations must be thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::mds {

class OstGateway {
 public:
  virtual ~OstGateway() = default;

  // Destroys `req.objects` (all on OST `ost`). Destroying an object that does not exist is
  // success (replays after a crash are expected).
  virtual Status Destroy(const proto::OstInfo& ost, const proto::OstDestroyRequest& req) = 0;

  // The usage of OST `ost`.
  virtual Result<proto::OstStatfsReply> Statfs(const proto::OstInfo& ost) = 0;

  // Object I/O for the mirror resync (mds/mirror_resync.h), under the MDS's own capability.
  // A read returns up to buf.size() bytes at `offset` (fewer at the object's end; none for
  // an object that does not exist). A gateway without object I/O answers kNotSup.
  virtual Result<size_t> ReadObject(const proto::OstInfo& ost, const proto::ObjectId& object,
                                    uint64_t offset, std::span<uint8_t> buf);
  virtual Status WriteObject(const proto::OstInfo& ost, const proto::ObjectId& object,
                             uint64_t offset, std::span<const uint8_t> data);
  // Sets the object's size (creating it when missing).
  virtual Status TruncateObject(const proto::OstInfo& ost, const proto::ObjectId& object,
                                uint64_t size);
  // Makes the objects' data durable (fdatasync on the OST).
  virtual Status SyncObjects(const proto::OstInfo& ost,
                             const std::vector<proto::ObjectId>& objects);
  // The object's size (0 for one that does not exist): a glimpse, for a size whose writer
  // is gone before reporting it (mds/size_glimpse.h).
  virtual Result<uint64_t> ObjectSize(const proto::OstInfo& ost, const proto::ObjectId& object);
};

inline Result<size_t> OstGateway::ReadObject(const proto::OstInfo&, const proto::ObjectId&,
                                             uint64_t, std::span<uint8_t>) {
  return Status(Code::kNotSup, "this OST gateway does no object I/O");
}
inline Status OstGateway::WriteObject(const proto::OstInfo&, const proto::ObjectId&, uint64_t,
                                      std::span<const uint8_t>) {
  return Status(Code::kNotSup, "this OST gateway does no object I/O");
}
inline Status OstGateway::TruncateObject(const proto::OstInfo&, const proto::ObjectId&,
                                         uint64_t) {
  return Status(Code::kNotSup, "this OST gateway does no object I/O");
}
inline Status OstGateway::SyncObjects(const proto::OstInfo&,
                                      const std::vector<proto::ObjectId>&) {
  return Status(Code::kNotSup, "this OST gateway does no object I/O");
}

inline Result<uint64_t> OstGateway::ObjectSize(const proto::OstInfo&, const proto::ObjectId&) {
  return Status(Code::kNotSup, "this OST gateway does no object I/O");
}

}  // namespace stria::mds
