// OSS capabilities (docs/security.md, "OSS capabilities"): with a cluster key, the MDS signs,
// per open, which objects a client may read or write, and the OSS serves an object request
// only with such a capability, as Lustre's OSS capabilities.
//
// A capability is {object, ino, ops, expiry_ms, client uuid} and a MAC: the first 16 bytes
// of HMAC-SHA256(K_capa, "stria-capa-v1\0" || ost_idx (4) || object_id (8) || group (8) ||
// ino (8) || ops (4) || expiry_ms (8) || uuid length (4) || uuid), integers little endian.
// The object and the uuid are not sent in the capability: the OSS takes them from the request
// and from the connection's CONNECT, so a capability works only for the object it was made
// for and only on a connection of the client it was granted to. A capability with
// CAPA_ANY_OBJECT (object fields zero) is valid for every object: the MDS makes those for
// its own requests (destroy) and never grants one.
//
// K_capa: by default HMAC-SHA256(K, "stria-capa-v1") of each cluster key K, so every holder
// of the cluster key can derive it; with --capa-key-file on the MDS and the OSSes it is a key
// only they hold (docs/security.md says what each protects).
//
// CapaSigner (the MDS) makes grants; CapaVerifier (the OSS) checks requests and remembers
// the capabilities it verified (by MAC, until they expire), so a request whose capability
// was seen before costs one hash lookup and a comparison, not an HMAC.
//
// Thread-safety: CapaSigner is immutable; CapaVerifier is thread-safe (sharded mutexes).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"
#include "lnet/auth.h"
#include "proto/stria.pb.h"

namespace stria::lnet {

constexpr size_t kCapaMacSize = 16;
constexpr int kDefaultCapaTimeoutS = 3600;  // stria-mds --capa-timeout

using CapaMac = std::array<uint8_t, kCapaMacSize>;

// The capability keys for a cluster key ring: HMAC-SHA256(K, "stria-capa-v1") of each key,
// in the same order (the first is the one the MDS signs with).
std::shared_ptr<const KeyRing> DeriveCapaKeys(const KeyRing& cluster);

// The MAC above. `object` null: CAPA_ANY_OBJECT (the object fields are zeros).
CapaMac ComputeCapaMac(const Key& key, const proto::ObjectId* object, uint64_t ino, uint32_t ops,
                       int64_t expiry_ms, std::string_view client_uuid);

// Milliseconds of CLOCK_REALTIME, the clock expiries are in.
int64_t CapaNowMs();

class CapaSigner {
 public:
  CapaSigner(std::shared_ptr<const KeyRing> keys, int lifetime_ms)
      : keys_(std::move(keys)), lifetime_ms_(lifetime_ms) {}

  int lifetime_ms() const { return lifetime_ms_; }

  // A grant of `ops` on every stripe object of `layout` (every instantiated component) for
  // the client `client_uuid`, expiring lifetime_ms from now. Replaces *out.
  void Grant(std::string_view client_uuid, uint64_t ino, uint32_t ops,
             const proto::Layout& layout, proto::CapaGrant* out) const;
  // Adds `layout`'s objects to a grant made by Grant (the same ino, ops and expiry).
  void AddObjects(std::string_view client_uuid, const proto::Layout& layout,
                  proto::CapaGrant* grant) const;

  // The MDS's own capability for every object: ops | CAPA_ANY_OBJECT, ino 0.
  proto::Capability Authority(std::string_view client_uuid, uint32_t ops) const;

 private:
  std::shared_ptr<const KeyRing> keys_;  // never null
  int lifetime_ms_;
};

class CapaVerifier {
 public:
  explicit CapaVerifier(std::shared_ptr<const KeyRing> keys) : keys_(std::move(keys)) {}
  CapaVerifier(const CapaVerifier&) = delete;
  CapaVerifier& operator=(const CapaVerifier&) = delete;

  // OK when `capa` (null: the request carried none) lets `client_uuid` do `need` (CapaOps
  // bits, all required) on `object` now. kAccess "capability refused: ..." when it is
  // missing, malformed, for other ops, another object or client, or its MAC does not match
  // any key; kCapaExpired when it is genuine but past its expiry.
  Status Check(const proto::Capability* capa, const proto::ObjectId& object,
               std::string_view client_uuid, uint32_t need);

  // Capabilities verified (HMAC computed) and found in the cache, since start.
  uint64_t verified() const { return verified_.load(std::memory_order_relaxed); }
  uint64_t cached() const { return cached_.load(std::memory_order_relaxed); }

  static constexpr size_t kShards = 16;
  static constexpr size_t kMaxPerShard = 4096;  // verified capabilities kept per shard

 private:
  // A verified capability: everything its MAC covers.
  struct Entry {
    uint32_t ost_idx;
    uint64_t object_id, group, ino;
    uint32_t ops;
    int64_t expiry_ms;
    std::string uuid;
  };
  struct MacHash {
    size_t operator()(const CapaMac& m) const {
      size_t h;
      static_assert(sizeof h <= kCapaMacSize);
      std::memcpy(&h, m.data(), sizeof h);  // a MAC is uniformly random already
      return h;
    }
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<CapaMac, Entry, MacHash> entries;  // GUARDED_BY(mu)
  };

  std::shared_ptr<const KeyRing> keys_;
  std::array<Shard, kShards> shards_;
  std::atomic<uint64_t> verified_{0}, cached_{0};
};

}  // namespace stria::lnet
