#include "mds/internal/layout_alloc.h"

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/layout.h"
#include "mds/dom.h"
#include "mds/params.h"
#include "mds/pools.h"
#include "mds/schema.h"
#include "proto/layout_components.h"
#include "proto/layout_mirrors.h"

namespace stria::mds {

bool OstNearlyFull(const proto::OstInfo& info) {
  if (info.bytes_total() == 0) return false;
  const uint64_t reserve = std::min(kOstReservedBytes, info.bytes_total() / kOstReservedFraction);
  return info.bytes_free() < reserve;
}

std::vector<uint32_t> OstsWithRoom(const std::map<uint32_t, OstState>& osts,
                                   const std::vector<uint32_t>& active) {
  std::vector<uint32_t> room;
  for (uint32_t idx : active) {
    auto it = osts.find(idx);
    if (it != osts.end() && !OstNearlyFull(it->second.info)) room.push_back(idx);
  }
  return room.empty() ? active : room;
}

bool FreeSpaceImbalanced(const std::map<uint32_t, OstState>& osts,
                         const std::vector<uint32_t>& candidates, uint32_t threshold_pct) {
  if (candidates.size() < 2 || threshold_pct >= 100) return false;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint32_t idx : candidates) {
    auto it = osts.find(idx);
    if (it == osts.end() || it->second.info.bytes_total() == 0) return false;  // unknown space
    lo = std::min(lo, it->second.info.bytes_free());
    hi = std::max(hi, it->second.info.bytes_free());
  }
  // (hi - lo) / hi > threshold, in integers: no division, no overflow for any OST size.
  return hi > 0 && (hi - lo) > hi / 100 * threshold_pct + (hi % 100) * threshold_pct / 100;
}

std::vector<uint32_t> WeightedByFreeSpace(const std::map<uint32_t, OstState>& osts,
                                          std::vector<uint32_t> candidates, uint32_t count) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::vector<uint32_t> out;
  while (out.size() < count && !candidates.empty()) {
    std::vector<double> weights;
    for (uint32_t idx : candidates) {
      // Every candidate keeps a chance: a nearly empty one is not starved forever.
      weights.push_back(static_cast<double>(osts.at(idx).info.bytes_free()) + 1.0);
    }
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    const size_t i = pick(rng);
    out.push_back(candidates[i]);
    candidates.erase(candidates.begin() + static_cast<ptrdiff_t>(i));
  }
  return out;
}

proto::Layout BuiltinDefaultLayout() {
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  l.set_stripe_size(kDefaultStripeSize);
  l.set_stripe_count(static_cast<int32_t>(kDefaultStripeCount));
  l.set_stripe_offset(-1);
  return l;
}

namespace {

Status CheckPlainRequest(const proto::Layout& l) {
  if (l.pattern() != proto::PATTERN_NONE && l.pattern() != proto::PATTERN_RAID0 &&
      l.pattern() != proto::PATTERN_MDT) {
    return Status(Code::kInval, "unsupported layout pattern " + std::to_string(l.pattern()));
  }
  if (l.stripe_count() < -1 || l.stripe_count() > static_cast<int32_t>(kMaxStripeCount)) {
    return Status(Code::kInval, "stripe count " + std::to_string(l.stripe_count()) +
                                    " must be -1, 0 or 1.." + std::to_string(kMaxStripeCount));
  }
  if (l.stripe_offset() < -1) {
    return Status(Code::kInval, "stripe offset " + std::to_string(l.stripe_offset()) +
                                    " must be -1 or an OST index");
  }
  if (l.stripe_size() != 0) STRIA_RETURN_IF_ERROR(ValidateStripe(l.stripe_size(), 1));
  if (l.objects_size() != 0) {
    return Status(Code::kInval, "a requested layout must not name objects");
  }
  return Status::Ok();
}

}  // namespace

Status CheckLayoutRequest(const proto::Layout& l) {
  if (!IsComposite(l)) return CheckPlainRequest(l);
  STRIA_RETURN_IF_ERROR(CheckComponentExtents(l));
  for (const proto::LayoutComponent& c : l.components()) {
    // A request may name a component's mirror (lfs mirror create -N) and prefer it
    // (--flags=prefer); the rest of the id and the other flags are the MDS's.
    if ((c.flags() & ~kLcmeFlPrefRw) != 0) {
      return Status(Code::kInval, "a requested component may carry only the prefer flags, not " +
                                      std::to_string(c.flags()));
    }
    if (ComponentId(MirrorIdOf(c.id()), 0) != c.id()) {
      return Status(Code::kInval, "a requested component names only its mirror id (id " +
                                      std::to_string(c.id()) + ")");
    }
    STRIA_RETURN_IF_ERROR(CheckPlainRequest(c.layout()));
    const uint64_t size = c.layout().stripe_size();
    const bool mdt = c.layout().pattern() == proto::PATTERN_MDT;
    if (!mdt && size != 0 && c.end() != kLayoutEof && c.end() % size != 0) {
      return Status(Code::kInval, "component end " + std::to_string(c.end()) +
                                      " is not a multiple of its stripe size " +
                                      std::to_string(size));
    }
  }
  return Status::Ok();
}

namespace {

// Overlays the fields `over` sets onto the plain layout `base`.
void OverlayPlain(proto::Layout* base, const proto::Layout& over) {
  if (over.pattern() != proto::PATTERN_NONE) base->set_pattern(over.pattern());
  if (over.stripe_size() != 0) base->set_stripe_size(over.stripe_size());
  if (over.stripe_count() != 0) base->set_stripe_count(over.stripe_count());
  base->set_stripe_offset(over.stripe_offset());
  if (!over.pool().empty()) base->set_pool(over.pool());
}

// `over` applied to `base` (both templates): a composite `over` replaces the layout, each of
// its components inheriting the fields it leaves unset from the plain part of `base` (the
// built-in default when `base` is composite itself); a plain `over` replaces it too,
// inheriting from that same plain part.
proto::Layout Overlay(const proto::Layout& base, const proto::Layout& over) {
  proto::Layout plain = IsComposite(base) ? BuiltinDefaultLayout() : base;
  plain.set_pattern(proto::PATTERN_RAID0);  // Data-on-MDT is never inherited field by field
  if (!IsComposite(over)) {
    OverlayPlain(&plain, over);
    return plain;
  }
  proto::Layout out;
  for (const proto::LayoutComponent& c : over.components()) {
    proto::LayoutComponent* oc = out.add_components();
    oc->set_id(ComponentId(MirrorIdOf(c.id()), 0));  // the mirror, if any
    oc->set_flags(c.flags() & kLcmeFlPrefRw);
    oc->set_start(c.start());
    oc->set_end(c.end());
    *oc->mutable_layout() = plain;
    OverlayPlain(oc->mutable_layout(), c.layout());
  }
  return out;
}

// Where a mirror's component goes: away from the OSSes that hold the same bytes in the
// other mirrors, so that losing one OSS never loses both copies of a stripe.
struct MirrorPlacement {
  // The plain layouts of the other mirrors' instantiated components over the same bytes.
  std::vector<const proto::Layout*> others;
  // Out: a stripe went to an OST that has not heartbeated lately (its OSS is the only
  // other one, and down): the component starts stale, for the resync to fill.
  bool on_silent_ost = false;
};

// The OSS NIDs (OstInfo.nid: one per OSS process) that stripe `stripe` of a `count`-stripe
// component must avoid: those of the same stripe in the other mirrors with the same count,
// all of theirs otherwise.
std::set<std::string> AvoidNids(Txn& txn, const MirrorPlacement& p, uint32_t stripe,
                                uint32_t count) {
  std::set<std::string> out;
  for (const proto::Layout* o : p.others) {
    for (int i = 0; i < o->objects_size(); ++i) {
      if (static_cast<uint32_t>(o->objects_size()) == count && static_cast<uint32_t>(i) != stripe) {
        continue;
      }
      auto it = txn.osts().find(o->objects(i).ost_idx());
      if (it != txn.osts().end()) out.insert(it->second.info.nid());
    }
  }
  return out;
}

// Allocates the objects of the resolved plain layout `l` (size, count, offset and pool set;
// no objects yet): stripe_count and stripe_offset become what was allocated. With
// `placement` (a mirror's component), each MDS-chosen stripe goes, in order of preference,
// to an OST that is alive and on another OSS than its copies, on another OSS though silent,
// alive, or any; never twice to one OST.
Status AllocateObjects(Txn& txn, proto::Layout* l, MirrorPlacement* placement = nullptr) {
  l->set_pattern(proto::PATTERN_RAID0);
  l->clear_objects();
  auto& osts = txn.osts();
  // OSTs that heartbeated recently; when none has (e.g. just after an MDS restart), every
  // active one. An explicit stripe_offset may name any active OST.
  AllocTunables& tunables = txn.ns().alloc_tunables_locked();
  if (tunables.config_gen != txn.super().config_gen) {
    STRIA_ASSIGN_OR_RETURN(
        tunables, LoadAllocTunables(txn.ns().db(), txn.ns().fsname(), txn.super().config_gen));
  }
  std::vector<uint32_t> active, fresh;
  for (const auto& [idx, st] : osts) {
    if (!st.info.active()) continue;
    // lctl deactivate / set_param osp.*.active=0: no new objects there.
    if (!tunables.OstActive(txn.ns().fsname(), idx)) continue;
    active.push_back(idx);
    if (txn.now() - static_cast<int64_t>(st.info.last_seen_ns()) < kOstStaleNs)
      fresh.push_back(idx);
  }
  if (active.empty()) return Status(Code::kNoSpc, "no OSTs registered");
  if (!l->pool().empty()) {
    // lfs setstripe -p: only the pool's OSTs.
    STRIA_ASSIGN_OR_RETURN(std::optional<proto::PoolInfo> pool, ReadPool(txn.ns().db(), l->pool()));
    if (!pool) {
      return Status(Code::kInval,
                    "pool " + txn.ns().fsname() + "." + l->pool() + " does not exist");
    }
    const std::set<uint32_t> members(pool->osts().begin(), pool->osts().end());
    auto outside = [&](uint32_t idx) { return members.count(idx) == 0; };
    active.erase(std::remove_if(active.begin(), active.end(), outside), active.end());
    fresh.erase(std::remove_if(fresh.begin(), fresh.end(), outside), fresh.end());
    if (active.empty()) {
      return Status(Code::kNoSpc,
                    "pool " + txn.ns().fsname() + "." + l->pool() + " has no active OST");
    }
  }
  // Just after an MDS restart no OST has heartbeated yet: then all count as alive.
  const std::set<uint32_t> alive = fresh.empty() ? std::set<uint32_t>(active.begin(), active.end())
                                                 : std::set<uint32_t>(fresh.begin(), fresh.end());
  if (l->stripe_offset() < 0 && placement != nullptr && !placement->others.empty()) {
    // A mirror: silent OSTs stay candidates, since being on another OSS matters more.
    active = OstsWithRoom(osts, active);
  } else if (l->stripe_offset() < 0) {
    // The MDS chooses: OSTs alive and with room first.
    if (!fresh.empty()) active = std::move(fresh);
    active = OstsWithRoom(osts, active);
  }
  const uint32_t n = static_cast<uint32_t>(active.size());
  uint32_t count = l->stripe_count() < 0 ? n : static_cast<uint32_t>(l->stripe_count());
  if (count == 0) count = 1;
  if (count > n) count = n;
  STRIA_RETURN_IF_ERROR(ValidateStripe(l->stripe_size(), count));

  uint32_t start = 0;
  if (l->stripe_offset() >= 0) {
    bool found = false;
    for (uint32_t i = 0; i < n; ++i) {
      if (active[i] == static_cast<uint32_t>(l->stripe_offset())) {
        start = i;
        found = true;
      }
    }
    if (!found) {
      return Status(Code::kInval, "stripe offset: OST index " + std::to_string(l->stripe_offset()) +
                                      " is unknown, inactive or outside the pool");
    }
  } else {
    start = static_cast<uint32_t>(txn.rr_cursor() % n);
    txn.rr_cursor()++;
  }
  // The OSTs, in stripe order: round robin from `start` while the OSTs' free space is
  // balanced; weighted by free space when it is not (Lustre's QoS).
  std::vector<uint32_t> chosen;
  if (l->stripe_offset() < 0 && placement != nullptr && !placement->others.empty()) {
    std::set<uint32_t> used;
    for (uint32_t s = 0; s < count; ++s) {
      const std::set<std::string> avoid = AvoidNids(txn, *placement, s, count);
      int best = -1, best_rank = 4;
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t idx = active[(start + s + i) % n];
        if (used.count(idx)) continue;
        const bool apart = avoid.count(osts.at(idx).info.nid()) == 0;
        const int rank = apart ? (alive.count(idx) ? 0 : 1) : (alive.count(idx) ? 2 : 3);
        if (rank < best_rank) {
          best = static_cast<int>(idx);
          best_rank = rank;
        }
      }
      if (best < 0) break;
      used.insert(static_cast<uint32_t>(best));
      chosen.push_back(static_cast<uint32_t>(best));
      if (!alive.count(static_cast<uint32_t>(best))) placement->on_silent_ost = true;
    }
  } else if (l->stripe_offset() < 0) {
    if (FreeSpaceImbalanced(osts, active, tunables.qos_threshold_rr)) {
      chosen = WeightedByFreeSpace(osts, active, count);
    }
  }
  if (chosen.empty()) {
    for (uint32_t i = 0; i < count; ++i) chosen.push_back(active[(start + i) % n]);
  }
  l->set_stripe_count(static_cast<int32_t>(count));
  l->set_stripe_offset(static_cast<int32_t>(chosen.front()));
  for (uint32_t idx : chosen) {
    OstState& st = osts.at(idx);
    proto::StripeObject* o = l->add_objects();
    o->set_ost_idx(idx);
    o->set_object_id(st.next_object_id++);
    o->set_group(0);
  }
  return Status::Ok();
}

}  // namespace

proto::Layout MergeDefaults(const InodeRecord& root, const InodeRecord* dir) {
  proto::Layout l = BuiltinDefaultLayout();
  if (root.has_default_layout) l = Overlay(l, root.default_layout);
  if (dir && dir->has_default_layout) l = Overlay(l, dir->default_layout);
  return l;
}

Result<proto::Layout> EffectiveDefault(Txn& txn, uint64_t parent) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord * root, txn.Inode(kRootIno));
  InodeRecord* dir = nullptr;
  if (parent != kRootIno) {
    STRIA_ASSIGN_OR_RETURN(dir, txn.Inode(parent));
  }
  return MergeDefaults(*root, dir);
}

Result<bool> InstantiateRange(Txn& txn, proto::Layout* l, uint64_t start, uint64_t end) {
  if (!IsComposite(*l)) return false;
  if (end > LayoutEnd(*l)) {
    return Status(Code::kFBig, "the layout ends at " + std::to_string(LayoutEnd(*l)) +
                                   ": nothing can be written past it");
  }
  bool changed = false;
  const bool mirrored = IsMirrored(*l);
  for (int i = 0; i < l->components_size(); ++i) {
    proto::LayoutComponent& c = *l->mutable_components(i);
    if (c.end() <= start || end <= c.start() || (c.flags() & kLcmeFlInit)) continue;
    // A Data-on-MDT component needs no objects: its bytes are the MDS's.
    if (c.layout().pattern() != proto::PATTERN_MDT) {
      MirrorPlacement placement;
      if (mirrored) {
        for (const proto::LayoutComponent& o : l->components()) {
          if (MirrorIdOf(o.id()) != MirrorIdOf(c.id()) && (o.flags() & kLcmeFlInit) &&
              o.start() < c.end() && c.start() < o.end()) {
            placement.others.push_back(&o.layout());
          }
        }
      }
      STRIA_RETURN_IF_ERROR(AllocateObjects(txn, c.mutable_layout(), &placement));
      c.set_flags(c.flags() | kLcmeFlInit);
      if (placement.on_silent_ost &&
          OtherMirrorHolds(*l, MirrorIdOf(c.id()), c.start(), c.end())) {
        // Its OSS is down: written by nobody until the resync fills it when it returns.
        AddStaleRange(l, MirrorIdOf(c.id()), c.start(), c.end());
      }
    } else {
      c.set_flags(c.flags() | kLcmeFlInit);
    }
    changed = true;
  }
  if (changed) l->set_generation(l->generation() + 1);
  return changed;
}

Status ApplyDomLimit(proto::Layout* l, uint64_t limit) {
  if (!IsComposite(*l)) {
    if (l->pattern() != proto::PATTERN_MDT) return Status::Ok();
    // -L mdt: a file all on the MDT, up to the limit.
    proto::Layout dom = *l;
    l->Clear();
    proto::LayoutComponent* c = l->add_components();
    c->set_start(0);
    c->set_end(limit);
    *c->mutable_layout() = std::move(dom);
  }
  proto::LayoutComponent& first = *l->mutable_components(0);
  if (first.layout().pattern() != proto::PATTERN_MDT) return Status::Ok();
  if (limit == 0) {
    return Status(Code::kInval, "Data-on-MDT is disabled (lod.*.dom_stripesize=0)");
  }
  if (first.end() > limit) {
    // As Lustre: a DoM component larger than the MDT allows is cut to the limit.
    if (l->components_size() > 1 && l->components(1).end() <= limit) {
      return Status(Code::kInval, "the second component ends inside the Data-on-MDT limit " +
                                      std::to_string(limit));
    }
    first.set_end(limit);
    if (l->components_size() > 1) l->mutable_components(1)->set_start(limit);
  }
  proto::Layout* dom = first.mutable_layout();
  dom->set_stripe_size(first.end());
  dom->set_stripe_count(0);
  dom->set_stripe_offset(0);  // the MDT index
  dom->clear_pool();
  return Status::Ok();
}

Result<proto::Layout> ResolveLayout(Txn& txn, uint64_t parent, const proto::Layout* requested) {
  if (requested) STRIA_RETURN_IF_ERROR(CheckLayoutRequest(*requested));
  STRIA_ASSIGN_OR_RETURN(proto::Layout l, EffectiveDefault(txn, parent));
  if (requested) l = Overlay(l, *requested);
  if (DomEnd(l) > 0 || (!IsComposite(l) && l.pattern() == proto::PATTERN_MDT)) {
    STRIA_ASSIGN_OR_RETURN(uint64_t limit, DomStripeSize(txn.ns().db(), txn.ns().fsname()));
    STRIA_RETURN_IF_ERROR(ApplyDomLimit(&l, limit));
  }
  if (!IsComposite(l)) return l;
  uint32_t id = 0;
  for (proto::LayoutComponent& c : *l.mutable_components()) {
    // Lustre's numbering: the mirror id in the high bits, a sequence over the whole layout.
    c.set_id(ComponentId(MirrorIdOf(c.id()), ++id));
    c.set_flags(c.flags() & kLcmeFlPrefRw);
    c.clear_stale_ranges();
    if (c.layout().pattern() == proto::PATTERN_MDT) continue;
    c.mutable_layout()->set_pattern(proto::PATTERN_RAID0);
    const uint64_t size = c.layout().stripe_size();
    if (c.end() != kLayoutEof && c.end() % size != 0) {
      return Status(Code::kInval,
                    "component " + std::to_string(id) + " end " + std::to_string(c.end()) +
                        " is not a multiple of its stripe size " + std::to_string(size));
    }
  }
  STRIA_RETURN_IF_ERROR(CheckComponentExtents(l));
  return l;
}

Result<proto::Layout> AllocateLayout(Txn& txn, uint64_t parent, const proto::Layout* requested) {
  STRIA_ASSIGN_OR_RETURN(proto::Layout l, ResolveLayout(txn, parent, requested));
  if (!IsComposite(l)) {
    STRIA_RETURN_IF_ERROR(AllocateObjects(txn, &l));
    return l;
  }
  // The component that holds the file's first byte gets its objects now, as Lustre does
  // (in every mirror).
  STRIA_RETURN_IF_ERROR(InstantiateRange(txn, &l, 0, 1).status());
  return l;
}

}  // namespace stria::mds
