#include "mds/lnet_ost_gateway.h"

#include <sys/uio.h>
#include <unistd.h>

#include <utility>

#include "lnet/nid.h"

namespace stria::mds {

LnetOstGateway::LnetOstGateway(std::string fsname, std::shared_ptr<const lnet::KeyRing> keys,
                               int timeout_ms, std::shared_ptr<const lnet::CapaSigner> capa)
    : fsname_(std::move(fsname)),
      keys_(std::move(keys)),
      timeout_ms_(timeout_ms),
      capa_(std::move(capa)),
      uuid_(fsname_ + "-MDT0000-osc-" + std::to_string(getpid())) {}

Result<std::shared_ptr<lnet::RpcClient>> LnetOstGateway::ClientFor(const proto::OstInfo& ost) {
  std::lock_guard lock(mu_);
  auto it = clients_.find(ost.nid());
  if (it != clients_.end()) return it->second;
  STRIA_ASSIGN_OR_RETURN(lnet::Nid nid, lnet::Nid::Parse(ost.nid()));
  lnet::ClientOptions opts;
  opts.fsname = fsname_;
  opts.connect_timeout_ms = timeout_ms_;
  opts.rpc_timeout_ms = timeout_ms_;
  opts.retry_deadline_ms = timeout_ms_;
  opts.max_connections = 2;
  opts.keys = keys_;
  opts.role = "mds";
  opts.client_uuid = uuid_;
  auto client = std::make_shared<lnet::RpcClient>(std::move(nid), std::move(opts));
  clients_[ost.nid()] = client;
  return client;
}

Status LnetOstGateway::Destroy(const proto::OstInfo& ost, const proto::OstDestroyRequest& req) {
  STRIA_ASSIGN_OR_RETURN(auto client, ClientFor(ost));
  proto::OstIoReply rep;
  Status st;
  if (capa_) {
    proto::OstDestroyRequest signed_req = req;
    *signed_req.mutable_capa() = capa_->Authority(uuid_, proto::CAPA_DESTROY);
    st = client->Call(proto::OP_OST_DESTROY, signed_req, &rep);
  } else {
    st = client->Call(proto::OP_OST_DESTROY, req, &rep);
  }
  if (st.code() == Code::kNoEnt) return Status::Ok();  // already gone
  return st;
}

Result<proto::OstStatfsReply> LnetOstGateway::Statfs(const proto::OstInfo& ost) {
  STRIA_ASSIGN_OR_RETURN(auto client, ClientFor(ost));
  proto::OstStatfsRequest req;
  req.set_ost_idx(ost.index());
  proto::OstStatfsReply rep;
  STRIA_RETURN_IF_ERROR(client->Call(proto::OP_OST_STATFS, req, &rep));
  return rep;
}

void LnetOstGateway::Sign(uint32_t ops, proto::Capability* capa) const {
  if (capa_) *capa = capa_->Authority(uuid_, ops);
}

Result<size_t> LnetOstGateway::ReadObject(const proto::OstInfo& ost, const proto::ObjectId& object,
                                          uint64_t offset, std::span<uint8_t> buf) {
  STRIA_ASSIGN_OR_RETURN(auto client, ClientFor(ost));
  proto::OstIoRequest req;
  *req.mutable_object() = object;
  req.set_offset(offset);
  req.set_length(buf.size());
  if (capa_) Sign(proto::CAPA_READ, req.mutable_capa());
  proto::OstIoReply rep;
  size_t got = 0;
  lnet::CallBulk bulk;
  bulk.in = buf;
  bulk.in_len = &got;
  Status st = client->Call(proto::OP_OST_READ, req, &rep, bulk);
  if (st.code() == Code::kNoEnt) return size_t{0};  // never written: all hole
  STRIA_RETURN_IF_ERROR(st);
  if (got > buf.size()) return Status(Code::kProtocol, "OST returned more bytes than asked");
  return got;
}

Status LnetOstGateway::WriteObject(const proto::OstInfo& ost, const proto::ObjectId& object,
                                   uint64_t offset, std::span<const uint8_t> data) {
  STRIA_ASSIGN_OR_RETURN(auto client, ClientFor(ost));
  proto::OstIoRequest req;
  *req.mutable_object() = object;
  req.set_offset(offset);
  req.set_length(data.size());
  if (capa_) Sign(proto::CAPA_WRITE, req.mutable_capa());
  iovec iov{const_cast<uint8_t*>(data.data()), data.size()};
  lnet::CallBulk bulk;
  bulk.out = std::span<const iovec>(&iov, 1);
  proto::OstIoReply rep;
  STRIA_RETURN_IF_ERROR(client->Call(proto::OP_OST_WRITE, req, &rep, bulk));
  if (rep.length() != data.size()) return Status(Code::kIO, "short write on OST " + ost.uuid());
  return Status::Ok();
}

Status LnetOstGateway::TruncateObject(const proto::OstInfo& ost, const proto::ObjectId& object,
                                      uint64_t size) {
  STRIA_ASSIGN_OR_RETURN(auto client, ClientFor(ost));
  proto::OstTruncateRequest req;
  *req.mutable_object() = object;
  req.set_size(size);
  if (capa_) Sign(proto::CAPA_WRITE, req.mutable_capa());
  proto::OstIoReply rep;
  return client->Call(proto::OP_OST_TRUNCATE, req, &rep);
}

Status LnetOstGateway::SyncObjects(const proto::OstInfo& ost,
                                   const std::vector<proto::ObjectId>& objects) {
  STRIA_ASSIGN_OR_RETURN(auto client, ClientFor(ost));
  proto::OstSyncRequest req;
  req.set_ost_idx(ost.index());
  for (const proto::ObjectId& o : objects) *req.add_objects() = o;
  proto::OstIoReply rep;
  return client->Call(proto::OP_OST_SYNC, req, &rep);
}

Result<uint64_t> LnetOstGateway::ObjectSize(const proto::OstInfo& ost,
                                            const proto::ObjectId& object) {
  STRIA_ASSIGN_OR_RETURN(auto client, ClientFor(ost));
  proto::OstGetattrRequest req;
  *req.mutable_object() = object;
  if (capa_) Sign(proto::CAPA_READ, req.mutable_capa());
  proto::OstGetattrReply rep;
  Status st = client->Call(proto::OP_OST_GETATTR, req, &rep);
  if (st.code() == Code::kNoEnt) return uint64_t{0};
  STRIA_RETURN_IF_ERROR(st);
  return rep.exists() ? rep.size() : 0;
}

}  // namespace stria::mds
