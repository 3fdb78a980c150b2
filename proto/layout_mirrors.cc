#include "proto/layout_mirrors.h"

#include <algorithm>
#include <set>

namespace stria {

namespace {

bool Instantiated(const proto::LayoutComponent& c) {
  if (!(c.flags() & kLcmeFlInit)) return false;
  return c.layout().pattern() == proto::PATTERN_MDT || c.layout().objects_size() > 0;
}

bool Overlaps(uint64_t a_start, uint64_t a_end, uint64_t b_start, uint64_t b_end) {
  return a_start < b_end && b_start < a_end;
}

// Sorts and merges touching or overlapping spans.
std::vector<ByteSpan> Merged(std::vector<ByteSpan> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const ByteSpan& a, const ByteSpan& b) { return a.start < b.start; });
  std::vector<ByteSpan> out;
  for (const ByteSpan& s : spans) {
    if (s.end <= s.start) continue;
    if (!out.empty() && s.start <= out.back().end) {
      out.back().end = std::max(out.back().end, s.end);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

// Whether merged spans cover [start, end).
bool Covers(const std::vector<ByteSpan>& merged, uint64_t start, uint64_t end) {
  uint64_t at = start;
  for (const ByteSpan& s : merged) {
    if (s.start > at) break;
    if (s.end > at) at = s.end;
    if (at >= end) return true;
  }
  return at >= end;
}

}  // namespace

std::vector<uint32_t> MirrorIds(const proto::Layout& l) {
  std::vector<uint32_t> ids;
  for (const proto::LayoutComponent& c : l.components()) {
    const uint32_t m = MirrorIdOf(c.id());
    if (ids.empty() || ids.back() != m) ids.push_back(m);
  }
  return ids;
}

uint32_t MirrorCount(const proto::Layout& l) {
  const size_t n = MirrorIds(l).size();
  return n == 0 ? 1 : static_cast<uint32_t>(n);
}

bool IsMirrored(const proto::Layout& l) { return MirrorIds(l).size() > 1; }

proto::Layout MirrorView(const proto::Layout& l, uint32_t mirror_id) {
  if (!IsComposite(l)) return l;
  proto::Layout view;
  view.set_ino(l.ino());
  view.set_generation(l.generation());
  for (const proto::LayoutComponent& c : l.components()) {
    if (MirrorIdOf(c.id()) == mirror_id) *view.add_components() = c;
  }
  return view;
}

std::vector<ByteSpan> StaleSpans(const proto::LayoutComponent& c) {
  if (!(c.flags() & kLcmeFlStale)) return {};
  if (c.stale_ranges_size() == 0) return {{c.start(), c.end()}};
  std::vector<ByteSpan> out;
  for (const proto::ByteRange& r : c.stale_ranges()) out.push_back({r.start(), r.end()});
  return out;
}

bool HasStale(const proto::Layout& l) {
  for (const proto::LayoutComponent& c : l.components()) {
    if (c.flags() & kLcmeFlStale) return true;
  }
  return false;
}

uint32_t LcmFlags(const proto::Layout& l) {
  if (!IsMirrored(l)) return kLcmFlNone;
  return HasStale(l) ? kLcmFlWritePending : kLcmFlRdonly;
}

bool StaleCovers(const proto::Layout& l, uint32_t mirror_id, uint64_t start, uint64_t end) {
  for (const proto::LayoutComponent& c : l.components()) {
    if (MirrorIdOf(c.id()) != mirror_id || !Overlaps(c.start(), c.end(), start, end)) continue;
    if (!Covers(Merged(StaleSpans(c)), std::max(start, c.start()), std::min(end, c.end()))) {
      return false;
    }
  }
  return true;
}

bool AddStaleRange(proto::Layout* l, uint32_t mirror_id, uint64_t start, uint64_t end) {
  bool changed = false;
  for (proto::LayoutComponent& c : *l->mutable_components()) {
    if (MirrorIdOf(c.id()) != mirror_id || !Overlaps(c.start(), c.end(), start, end)) continue;
    const ByteSpan add{std::max(start, c.start()), std::min(end, c.end())};
    if (!(c.flags() & kLcmeFlStale)) {
      c.set_flags(c.flags() | kLcmeFlStale);
      c.clear_stale_ranges();
      if (add != ByteSpan{c.start(), c.end()}) {
        proto::ByteRange* r = c.add_stale_ranges();
        r->set_start(add.start);
        r->set_end(add.end);
      }
      changed = true;
      continue;
    }
    std::vector<ByteSpan> spans = StaleSpans(c);
    if (Covers(Merged(spans), add.start, add.end)) continue;
    spans.push_back(add);
    spans = Merged(std::move(spans));
    if (static_cast<int>(spans.size()) > kMaxStaleRanges) {
      // Too many holes to list: stale from the first marked byte on (a resync copies more).
      spans = {{spans.front().start, c.end()}};
    }
    c.clear_stale_ranges();
    if (spans.size() != 1 || spans[0] != ByteSpan{c.start(), c.end()}) {
      for (const ByteSpan& s : spans) {
        proto::ByteRange* r = c.add_stale_ranges();
        r->set_start(s.start);
        r->set_end(s.end);
      }
    }
    changed = true;
  }
  return changed;
}

bool OtherMirrorHolds(const proto::Layout& l, uint32_t mirror_id, uint64_t start,
                      uint64_t end) {
  end = std::min(end, LayoutEnd(l));
  if (end <= start) return true;
  std::vector<ByteSpan> good;
  for (const proto::LayoutComponent& c : l.components()) {
    if (MirrorIdOf(c.id()) == mirror_id || !Instantiated(c)) continue;
    // The component's extent minus its stale spans.
    uint64_t at = c.start();
    for (const ByteSpan& s : Merged(StaleSpans(c))) {
      if (s.start > at) good.push_back({at, s.start});
      at = std::max(at, s.end);
    }
    if (at < c.end()) good.push_back({at, c.end()});
  }
  return Covers(Merged(std::move(good)), start, end);
}

std::vector<MirrorPiece> PlanMirrorRead(const proto::Layout& l, uint64_t offset,
                                        uint64_t length) {
  std::vector<MirrorPiece> out;
  if (length == 0) return out;
  const uint64_t end = offset + length;
  const std::vector<uint32_t> ids = MirrorIds(l);
  if (ids.empty()) {  // plain
    out.push_back({offset, end, {0}});
    if (l.objects_size() == 0) out.back().mirrors.clear();
    return out;
  }
  // Where the candidates may change: component edges and stale-range edges inside the read.
  std::set<uint64_t> cuts{offset, end};
  auto cut = [&](uint64_t at) {
    if (at > offset && at < end) cuts.insert(at);
  };
  for (const proto::LayoutComponent& c : l.components()) {
    cut(c.start());
    cut(c.end());
    for (const ByteSpan& s : StaleSpans(c)) {
      cut(s.start);
      cut(s.end);
    }
  }
  auto add = [&](uint64_t a, uint64_t b, std::vector<uint32_t> mirrors) {
    if (!out.empty() && out.back().end == a && out.back().mirrors == mirrors) {
      out.back().end = b;
    } else {
      out.push_back({a, b, std::move(mirrors)});
    }
  };
  for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
    const uint64_t a = *it, b = *std::next(it);
    std::vector<uint32_t> preferred, others, stale;
    uint64_t unit = 0;
    for (uint32_t m : ids) {
      for (const proto::LayoutComponent& c : l.components()) {
        if (MirrorIdOf(c.id()) != m || c.start() > a || a >= c.end()) continue;
        if (!Instantiated(c)) break;
        bool is_stale = false;
        for (const ByteSpan& s : StaleSpans(c)) {
          is_stale = is_stale || Overlaps(s.start, s.end, a, b);
        }
        if (is_stale) {
          stale.push_back(m);
        } else {
          ((c.flags() & kLcmeFlPrefRd) ? preferred : others).push_back(m);
          if (unit == 0 && c.layout().pattern() == proto::PATTERN_RAID0) {
            unit = c.layout().stripe_size();
          }
        }
        break;
      }
    }
    if (preferred.empty() && others.empty()) {
      // Nothing good holds these bytes (a hole, or a broken invariant): read what there is.
      add(a, b, stale);
      continue;
    }
    if (unit == 0) unit = b - a;
    // Stripe by stripe, rotating the mirrors that are not preferred.
    for (uint64_t p = a; p < b;) {
      const uint64_t q = std::min(b, (p / unit + 1) * unit);
      std::vector<uint32_t> order = preferred;
      if (!others.empty()) {
        const size_t k = static_cast<size_t>((p / unit) % others.size());
        for (size_t i = 0; i < others.size(); ++i) order.push_back(others[(k + i) % others.size()]);
      }
      add(p, q, std::move(order));
      p = q;
    }
  }
  return out;
}

}  // namespace stria
