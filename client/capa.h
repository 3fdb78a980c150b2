// OpenCapas: the OSS capabilities of one open file (lnet/capa.h, docs/security.md).
//
// With a cluster key the MDS answers an open with a CapaGrant: one MAC per stripe object of
// the file, for this client, the open's access (read, write) and an expiry. StripedIo puts
// the capability of each object into the OST requests it sends for it. Before 3/4 of the
// lifetime has passed, or when an OSS answers kCapaExpired, or when the grant names no MAC
// for an object (a component instantiated since, a migrated layout), the holder renews it
// with OP_MDS_CAPA_RENEW and the request is sent again: applications never see it.
//
// Without a key (an MDS that grants nothing) an OpenCapas carries only what the open was:
// keyed() is false and requests go without capabilities; the mirror code (client/mirror_io.h)
// still names the open's credentials and handle when it reports a stale mirror.
//
// Memory: one per open (not per inode), 40-odd bytes per stripe object of the file.
// Thread-safety: thread-safe. Fill takes a mutex for a pointer copy; Renew serializes
// renewals, so threads that find the same grant stale make one MDS call between them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "lnet/capa.h"
#include "proto/stria.pb.h"

namespace stria::client {

class OstTransport;

class OpenCapas {
 public:
  // What renewing needs: the open handle and what it was opened with.
  struct OpenedAs {
    proto::Credentials cred;
    uint64_t ino = 0;
    uint64_t handle = 0;  // 0: none (lfs migrate's grant): renewal is refused
    uint32_t flags = 0;   // open(2) flags
  };

  OpenCapas(OpenedAs opened, const proto::CapaGrant& grant);
  explicit OpenCapas(OpenedAs opened);  // keyless

  // A grant from a reply, or a keyless OpenCapas when the reply carries none (an MDS
  // without a key).
  static std::shared_ptr<OpenCapas> FromReply(OpenedAs opened, const proto::CapaGrant* grant);

  // Whether requests carry capabilities (the MDS granted some).
  bool keyed() const { return keyed_; }
  const OpenedAs& opened() const { return opened_; }

  // The capability for `obj` into *capa; false when the grant names no such object. *gen is
  // the grant's generation, for Renew.
  bool Fill(const proto::ObjectId& obj, proto::Capability* capa, uint64_t* gen) const;
  // Whether the grant should be renewed before use (3/4 of its lifetime passed).
  bool RenewDue() const;
  // Fetches a fresh grant unless one newer than generation `seen` arrived meanwhile.
  Status Renew(OstTransport* mds, uint64_t seen);
  // Replaces the grant (a reply that carried a newer one).
  void Replace(const proto::CapaGrant& grant);

  uint64_t generation() const;
  uint64_t renewals() const;  // grants fetched by Renew, since construction

 private:
  using Clock = std::chrono::steady_clock;
  struct Grant {
    uint64_t gen = 0;
    uint32_t ops = 0;
    int64_t expiry_ms = 0;
    uint64_t ino = 0;
    Clock::time_point renew_at;
    // Sorted by (ost_idx, group, object_id), for a binary search per request.
    struct Entry {
      uint32_t ost_idx;
      uint64_t group, object_id;
      lnet::CapaMac mac;
    };
    std::vector<Entry> objects;
  };
  std::shared_ptr<const Grant> Current() const;
  std::shared_ptr<const Grant> Make(const proto::CapaGrant& grant, uint64_t gen) const;

  const OpenedAs opened_;
  const bool keyed_;
  mutable std::mutex mu_;
  std::shared_ptr<const Grant> grant_;  // GUARDED_BY(mu_); never null
  uint64_t renewals_ = 0;               // GUARDED_BY(mu_)
  std::mutex renew_mu_;                 // held during a renewal RPC; before mu_
};

}  // namespace stria::client
