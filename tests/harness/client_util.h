// libstria helpers for tests that look beneath a mount: connect a Client to a test Cluster,
// resolve paths, set a directory's default layout (what `lfs setstripe DIR` does), and read
// OST objects directly (OP_OST_GETATTR, OP_OST_READ) to check where the bytes landed.
// Header-only; link stria::client. Thread-safety: free functions.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/status.h"
#include "lnet/nid.h"
#include "proto/stria.pb.h"
#include "tests/harness/cluster.h"

namespace stria::testing {

inline Result<std::unique_ptr<client::Client>> ConnectClient(const Cluster& c) {
  client::ClientConfig cfg;
  STRIA_ASSIGN_OR_RETURN(auto nids, lnet::ParseNidList(c.mgs_nid()));
  cfg.mgs_nids = nids;
  cfg.fsname = c.options().fsname;
  cfg.rpc.connect_timeout_ms = 2'000;
  cfg.rpc.retry_deadline_ms = 60'000;
  cfg.io_threads = 4;
  if (c.options().cluster_key) {
    STRIA_ASSIGN_OR_RETURN(cfg.rpc.keys, lnet::LoadKeyRing({c.key_file()}));
  }
  return client::Client::Connect(cfg);
}

// Starts a Cluster with `options` and connects a Client to it: the first steps of most
// cluster tests. On failure, *cluster still owns what was started (its destructor stops it).
inline Status StartWithClient(ClusterOptions options, std::unique_ptr<Cluster>* cluster,
                              std::unique_ptr<client::Client>* client) {
  *cluster = std::make_unique<Cluster>(std::move(options));
  STRIA_RETURN_IF_ERROR((*cluster)->Start());
  STRIA_ASSIGN_OR_RETURN(*client, ConnectClient(**cluster));
  return Status::Ok();
}

inline proto::Credentials RootCred() {
  proto::Credentials c;
  c.set_uid(0);
  c.set_gid(0);
  return c;
}

// A RAID-0 layout request (no objects): count stripes of size bytes, MDS-chosen start.
inline proto::Layout Raid0(int count, uint64_t stripe_size, int offset = -1) {
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  l.set_stripe_count(count);
  l.set_stripe_size(stripe_size);
  l.set_stripe_offset(offset);
  return l;
}

// The inode number and layout of an absolute path inside the filesystem.
inline Result<proto::EntryReply> Resolve(client::Client& cl, const std::string& fs_path) {
  return cl.ResolvePath(RootCred(), fs_path);
}

// Sets the default layout of directory `fs_path` (as lfs setstripe DIR).
inline Status SetDirLayout(client::Client& cl, const std::string& fs_path,
                           const proto::Layout& layout) {
  STRIA_ASSIGN_OR_RETURN(auto e, Resolve(cl, fs_path));
  proto::SetDefaultLayoutRequest req;
  *req.mutable_cred() = RootCred();
  req.set_ino(e.attr().ino());
  *req.mutable_layout() = layout;
  proto::SetDefaultLayoutReply rep;
  return cl.MdsCall(proto::OP_MDS_SET_DEFAULT_LAYOUT, req, &rep);
}

inline proto::ObjectId ObjectOf(const proto::StripeObject& o) {
  proto::ObjectId id;
  id.set_ost_idx(o.ost_idx());
  id.set_object_id(o.object_id());
  id.set_group(o.group());
  return id;
}

// OP_OST_GETATTR of one stripe object.
inline Result<proto::OstGetattrReply> ObjectAttr(client::Client& cl,
                                                 const proto::StripeObject& o) {
  STRIA_ASSIGN_OR_RETURN(lnet::RpcClient * ost, cl.Ost(o.ost_idx()));
  proto::OstGetattrRequest req;
  *req.mutable_object() = ObjectOf(o);
  proto::OstGetattrReply rep;
  STRIA_RETURN_IF_ERROR(ost->Call(proto::OP_OST_GETATTR, req, &rep));
  return rep;
}

// The whole content of one stripe object (empty when it does not exist), by OP_OST_READ.
inline Result<std::vector<uint8_t>> ReadObject(client::Client& cl,
                                               const proto::StripeObject& o) {
  STRIA_ASSIGN_OR_RETURN(auto attr, ObjectAttr(cl, o));
  std::vector<uint8_t> data(attr.size());
  if (data.empty()) return data;
  STRIA_ASSIGN_OR_RETURN(lnet::RpcClient * ost, cl.Ost(o.ost_idx()));
  size_t got = 0;
  while (got < data.size()) {
    size_t n = std::min<size_t>(data.size() - got, 16u << 20);
    proto::OstIoRequest req;
    *req.mutable_object() = ObjectOf(o);
    req.set_offset(got);
    req.set_length(n);
    proto::OstIoReply rep;
    size_t in_len = 0;
    lnet::CallBulk bulk;
    bulk.in = std::span<uint8_t>(data.data() + got, n);
    bulk.in_len = &in_len;
    STRIA_RETURN_IF_ERROR(ost->Call(proto::OP_OST_READ, req, &rep, bulk));
    if (in_len == 0) return Status(Code::kIO, "OST read returned no bytes before the end");
    got += in_len;
  }
  return data;
}

}  // namespace stria::testing
