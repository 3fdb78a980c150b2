#include "lnet/capa.h"

#include <chrono>
#include <vector>

#include "proto/layout_components.h"

namespace stria::lnet {
namespace {

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

bool HasOps(uint32_t have, uint32_t need) { return (have & need) == need; }

std::string OpsText(uint32_t ops) {
  std::string s;
  if (ops & proto::CAPA_READ) s += "read,";
  if (ops & proto::CAPA_WRITE) s += "write,";
  if (ops & proto::CAPA_DESTROY) s += "destroy,";
  if (s.empty()) return "nothing";
  s.pop_back();
  return s;
}

Status Refused(std::string_view why) {
  return Status(Code::kAccess, "capability refused: " + std::string(why));
}

}  // namespace

std::shared_ptr<const KeyRing> DeriveCapaKeys(const KeyRing& cluster) {
  std::vector<Key> keys;
  for (const Key& k : cluster.keys()) {
    const Mac m = Hmac(k, "stria-capa-v1");
    Key d{};
    static_assert(sizeof d == sizeof m);
    std::memcpy(d.data(), m.data(), d.size());
    keys.push_back(d);
  }
  return std::make_shared<const KeyRing>(std::move(keys));
}

CapaMac ComputeCapaMac(const Key& key, const proto::ObjectId* object, uint64_t ino, uint32_t ops,
                       int64_t expiry_ms, std::string_view client_uuid) {
  std::string msg = "stria-capa-v1";
  msg.push_back('\0');
  PutLe(&msg, object ? object->ost_idx() : 0, 4);
  PutLe(&msg, object ? object->object_id() : 0, 8);
  PutLe(&msg, object ? object->group() : 0, 8);
  PutLe(&msg, ino, 8);
  PutLe(&msg, ops, 4);
  PutLe(&msg, static_cast<uint64_t>(expiry_ms), 8);
  AppendField(&msg, client_uuid);
  const Mac full = Hmac(key, msg);
  CapaMac out{};
  std::memcpy(out.data(), full.data(), out.size());
  return out;
}

int64_t CapaNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void CapaSigner::Grant(std::string_view client_uuid, uint64_t ino, uint32_t ops,
                       const proto::Layout& layout, proto::CapaGrant* out) const {
  out->Clear();
  out->set_ino(ino);
  out->set_ops(ops & (proto::CAPA_READ | proto::CAPA_WRITE));
  out->set_expiry_ms(CapaNowMs() + lifetime_ms_);
  out->set_lifetime_ms(static_cast<uint32_t>(lifetime_ms_));
  AddObjects(client_uuid, layout, out);
}

void CapaSigner::AddObjects(std::string_view client_uuid, const proto::Layout& layout,
                            proto::CapaGrant* grant) const {
  for (const proto::StripeObject* o : AllObjects(layout)) {
    proto::CapaGrant::ObjectMac* om = grant->add_objects();
    proto::ObjectId* id = om->mutable_object();
    id->set_ost_idx(o->ost_idx());
    id->set_object_id(o->object_id());
    id->set_group(o->group());
    const CapaMac mac = ComputeCapaMac(keys_->primary(), id, grant->ino(), grant->ops(),
                                       grant->expiry_ms(), client_uuid);
    om->set_mac(mac.data(), mac.size());
  }
}

proto::Capability CapaSigner::Authority(std::string_view client_uuid, uint32_t ops) const {
  proto::Capability c;
  c.set_ops(ops | proto::CAPA_ANY_OBJECT);
  c.set_expiry_ms(CapaNowMs() + lifetime_ms_);
  const CapaMac mac =
      ComputeCapaMac(keys_->primary(), nullptr, 0, c.ops(), c.expiry_ms(), client_uuid);
  c.set_mac(mac.data(), mac.size());
  return c;
}

Status CapaVerifier::Check(const proto::Capability* capa, const proto::ObjectId& object,
                           std::string_view client_uuid, uint32_t need) {
  if (capa == nullptr) {
    return Refused("the request carries no capability (this OSS has a cluster key: open the "
                   "file at the MDS first)");
  }
  if (capa->mac().size() != kCapaMacSize) return Refused("malformed capability");
  if (!HasOps(capa->ops(), need)) {
    return Refused("it grants " + OpsText(capa->ops()) + ", the request needs " +
                   OpsText(need));
  }
  const bool any = (capa->ops() & proto::CAPA_ANY_OBJECT) != 0;
  CapaMac mac{};
  std::memcpy(mac.data(), capa->mac().data(), mac.size());
  Entry want{any ? 0 : object.ost_idx(),
             any ? 0 : object.object_id(),
             any ? 0 : object.group(),
             capa->ino(),
             capa->ops(),
             capa->expiry_ms(),
             std::string(client_uuid)};
  Shard& shard = shards_[MacHash()(mac) % kShards];
  bool known = false;
  {
    std::lock_guard lk(shard.mu);
    auto it = shard.entries.find(mac);
    if (it != shard.entries.end()) {
      const Entry& e = it->second;
      known = e.ost_idx == want.ost_idx && e.object_id == want.object_id &&
              e.group == want.group && e.ino == want.ino && e.ops == want.ops &&
              e.expiry_ms == want.expiry_ms && e.uuid == want.uuid;
    }
  }
  if (known) {
    cached_.fetch_add(1, std::memory_order_relaxed);
  } else {
    verified_.fetch_add(1, std::memory_order_relaxed);
    bool match = false;
    for (const Key& k : keys_->keys()) {
      const CapaMac m = ComputeCapaMac(k, any ? nullptr : &object, want.ino, want.ops,
                                       want.expiry_ms, client_uuid);
      match |= ConstantTimeEqual(m, mac);
    }
    if (!match) {
      return Refused("its MAC does not match (not granted for this object, to this client, "
                     "or altered)");
    }
  }
  const int64_t now = CapaNowMs();
  if (now >= want.expiry_ms) {
    return Status(Code::kCapaExpired,
                  "capability expired " + std::to_string(now - want.expiry_ms) +
                      " ms ago: renew it at the MDS");
  }
  if (!known) {
    std::lock_guard lk(shard.mu);
    if (shard.entries.size() >= kMaxPerShard) {
      std::erase_if(shard.entries, [now](const auto& kv) { return kv.second.expiry_ms <= now; });
      if (shard.entries.size() >= kMaxPerShard) shard.entries.clear();
    }
    shard.entries.emplace(mac, std::move(want));
  }
  return Status::Ok();
}

}  // namespace stria::lnet
