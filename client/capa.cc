#include "client/capa.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "client/striped_io.h"

namespace stria::client {
namespace {

auto Key(uint32_t ost, uint64_t group, uint64_t id) { return std::make_tuple(ost, group, id); }

}  // namespace

OpenCapas::OpenCapas(OpenedAs opened, const proto::CapaGrant& grant)
    : opened_(std::move(opened)), keyed_(true), grant_(Make(grant, 1)) {}

OpenCapas::OpenCapas(OpenedAs opened)
    : opened_(std::move(opened)), keyed_(false), grant_(std::make_shared<Grant>()) {}

std::shared_ptr<OpenCapas> OpenCapas::FromReply(OpenedAs opened, const proto::CapaGrant* grant) {
  if (grant == nullptr || grant->expiry_ms() == 0) {
    return std::make_shared<OpenCapas>(std::move(opened));
  }
  return std::make_shared<OpenCapas>(std::move(opened), *grant);
}

std::shared_ptr<const OpenCapas::Grant> OpenCapas::Make(const proto::CapaGrant& g,
                                                        uint64_t gen) const {
  auto out = std::make_shared<Grant>();
  out->gen = gen;
  out->ops = g.ops();
  out->expiry_ms = g.expiry_ms();
  out->ino = g.ino();
  // Renew at 3/4 of the lifetime, measured on our clock from now (the MDS's clock may differ).
  out->renew_at = Clock::now() + std::chrono::milliseconds(g.lifetime_ms() * 3 / 4);
  out->objects.reserve(g.objects_size());
  for (const proto::CapaGrant::ObjectMac& om : g.objects()) {
    if (om.mac().size() != lnet::kCapaMacSize) continue;  // never sent by a sane MDS
    Grant::Entry e{om.object().ost_idx(), om.object().group(), om.object().object_id(), {}};
    std::memcpy(e.mac.data(), om.mac().data(), e.mac.size());
    out->objects.push_back(e);
  }
  std::sort(out->objects.begin(), out->objects.end(), [](const auto& a, const auto& b) {
    return Key(a.ost_idx, a.group, a.object_id) < Key(b.ost_idx, b.group, b.object_id);
  });
  return out;
}

std::shared_ptr<const OpenCapas::Grant> OpenCapas::Current() const {
  std::lock_guard lk(mu_);
  return grant_;
}

bool OpenCapas::Fill(const proto::ObjectId& obj, proto::Capability* capa, uint64_t* gen) const {
  std::shared_ptr<const Grant> g = Current();
  *gen = g->gen;
  const auto want = Key(obj.ost_idx(), obj.group(), obj.object_id());
  auto it = std::lower_bound(g->objects.begin(), g->objects.end(), want,
                             [](const Grant::Entry& e, const auto& k) {
                               return Key(e.ost_idx, e.group, e.object_id) < k;
                             });
  if (it == g->objects.end() || Key(it->ost_idx, it->group, it->object_id) != want) return false;
  capa->set_ino(g->ino);
  capa->set_ops(g->ops);
  capa->set_expiry_ms(g->expiry_ms);
  capa->set_mac(it->mac.data(), it->mac.size());
  return true;
}

bool OpenCapas::RenewDue() const { return Clock::now() >= Current()->renew_at; }

uint64_t OpenCapas::generation() const { return Current()->gen; }

uint64_t OpenCapas::renewals() const {
  std::lock_guard lk(mu_);
  return renewals_;
}

Status OpenCapas::Renew(OstTransport* mds, uint64_t seen) {
  std::lock_guard renew(renew_mu_);
  if (generation() != seen) return Status::Ok();  // another thread renewed meanwhile
  if (opened_.handle == 0) {
    return Status(Code::kAccess, "capability expired and cannot be renewed (no open handle)");
  }
  proto::CapaRenewRequest req;
  *req.mutable_cred() = opened_.cred;
  req.set_ino(opened_.ino);
  req.set_handle(opened_.handle);
  req.set_flags(opened_.flags);
  std::string body, reply;
  req.SerializeToString(&body);
  STRIA_RETURN_IF_ERROR(mds->MdsCallBulk(proto::OP_MDS_CAPA_RENEW, body, &reply, {}));
  proto::CapaRenewReply rep;
  if (!rep.ParseFromString(reply)) {
    return Status(Code::kProtocol, "MDS reply does not parse as CapaRenewReply");
  }
  std::shared_ptr<const Grant> fresh = Make(rep.capa(), seen + 1);
  std::lock_guard lk(mu_);
  grant_ = std::move(fresh);
  ++renewals_;
  return Status::Ok();
}

void OpenCapas::Replace(const proto::CapaGrant& grant) {
  std::lock_guard renew(renew_mu_);
  std::shared_ptr<const Grant> fresh = Make(grant, generation() + 1);
  std::lock_guard lk(mu_);
  grant_ = std::move(fresh);
}

}  // namespace stria::client
