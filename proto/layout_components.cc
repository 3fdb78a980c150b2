#include "proto/layout_components.h"

#include <string>

namespace stria {

std::vector<LayoutExtent> LayoutExtents(const proto::Layout& l) {
  std::vector<LayoutExtent> out;
  if (!IsComposite(l)) {
    out.push_back({0, kLayoutEof, &l, 0, l.objects_size() > 0});
    return out;
  }
  out.reserve(static_cast<size_t>(l.components_size()));
  for (const proto::LayoutComponent& c : l.components()) {
    const bool mdt = c.layout().pattern() == proto::PATTERN_MDT;
    out.push_back({c.start(), c.end(), &c.layout(), c.id(),
                   (c.flags() & kLcmeFlInit) != 0 && (mdt || c.layout().objects_size() > 0), mdt});
  }
  return out;
}

bool HasObjects(const proto::Layout& l) {
  if (!IsComposite(l)) return l.objects_size() > 0;
  for (const proto::LayoutComponent& c : l.components()) {
    if (c.layout().objects_size() > 0) return true;
    if (c.layout().pattern() == proto::PATTERN_MDT && (c.flags() & kLcmeFlInit)) return true;
  }
  return false;
}

uint64_t DomEnd(const proto::Layout& l) {
  if (!IsComposite(l)) return 0;
  const proto::LayoutComponent& first = l.components(0);
  return first.layout().pattern() == proto::PATTERN_MDT ? first.end() : 0;
}

bool RangeInstantiated(const proto::Layout& l, uint64_t start, uint64_t end) {
  if (end <= start) return true;
  if (!IsComposite(l)) return l.objects_size() > 0;  // the write path's common case
  for (const LayoutExtent& e : LayoutExtents(l)) {
    if (e.start < end && start < e.end && !e.init) return false;
  }
  return end <= LayoutEnd(l);
}

uint64_t LayoutEnd(const proto::Layout& l) {
  if (!IsComposite(l)) return kLayoutEof;
  return l.components(l.components_size() - 1).end();
}

std::vector<const proto::StripeObject*> AllObjects(const proto::Layout& l) {
  std::vector<const proto::StripeObject*> out;
  for (const LayoutExtent& e : LayoutExtents(l)) {
    for (const proto::StripeObject& o : e.plain->objects()) out.push_back(&o);
  }
  return out;
}

namespace {

// The rules for the components [first, last) of one mirror (or of a layout without mirrors).
Status CheckOneTiling(const proto::Layout& l, int first, int last, bool mirrored) {
  uint64_t expect = 0;
  for (int i = first; i < last; ++i) {
    const proto::LayoutComponent& c = l.components(i);
    const std::string which = "component " + std::to_string(i + 1);
    if (c.start() != expect) {
      return Status(Code::kInval, which + " starts at " + std::to_string(c.start()) +
                                      ", not where the previous one ends (" +
                                      std::to_string(expect) + ")");
    }
    if (c.end() <= c.start()) {
      return Status(Code::kInval, which + " ends at " + std::to_string(c.end()) +
                                      ", not after its start " + std::to_string(c.start()));
    }
    if (c.end() != kLayoutEof && c.end() % kComponentAlign != 0) {
      return Status(Code::kInval,
                    which + " end " + std::to_string(c.end()) + " is not a multiple of 64 KiB");
    }
    if (c.layout().components_size() > 0) {
      return Status(Code::kInval, which + " is itself composite");
    }
    if (c.end() == kLayoutEof && i + 1 != last) {
      return Status(Code::kInval, which + " ends at EOF but is not the last");
    }
    if (c.layout().pattern() == proto::PATTERN_MDT && (i != 0 || mirrored)) {
      return Status(Code::kInval, which + ": only the first component of a file without "
                                          "mirrors may be on the MDT");
    }
    if (c.layout().pattern() == proto::PATTERN_MDT && c.end() == kLayoutEof) {
      return Status(Code::kInval, which + ": a Data-on-MDT component cannot end at EOF");
    }
    uint64_t at = c.start();
    for (const proto::ByteRange& r : c.stale_ranges()) {
      if (!(c.flags() & kLcmeFlStale) || r.start() < at || r.end() <= r.start() ||
          r.end() > c.end()) {
        return Status(Code::kInval, which + ": stale ranges must be sorted, disjoint and inside "
                                            "the extent of a stale component");
      }
      at = r.end();
    }
    expect = c.end();
  }
  return Status::Ok();
}

}  // namespace

Status CheckComponentExtents(const proto::Layout& l) {
  if (l.components_size() > kMaxLayoutComponents) {
    return Status(Code::kInval, "a layout has at most " + std::to_string(kMaxLayoutComponents) +
                                    " components, not " + std::to_string(l.components_size()));
  }
  // Each mirror's components are consecutive and tile the file on their own.
  std::vector<std::pair<int, int>> groups;  // [first, last) per mirror
  std::vector<uint32_t> seen;
  for (int i = 0; i < l.components_size(); ++i) {
    const uint32_t mirror = MirrorIdOf(l.components(i).id());
    if (i > 0 && mirror == MirrorIdOf(l.components(i - 1).id())) {
      groups.back().second = i + 1;
      continue;
    }
    for (uint32_t m : seen) {
      if (m == mirror) {
        return Status(Code::kInval, "the components of mirror " + std::to_string(mirror) +
                                        " are not consecutive");
      }
    }
    seen.push_back(mirror);
    groups.push_back({i, i + 1});
  }
  const bool mirrored = groups.size() > 1;
  if (groups.size() > kMaxMirrors) {
    return Status(Code::kInval, "a file has at most " + std::to_string(kMaxMirrors) +
                                    " mirrors, not " + std::to_string(groups.size()));
  }
  if (mirrored) {
    for (uint32_t m : seen) {
      if (m == 0) return Status(Code::kInval, "a mirrored layout names mirror 0");
    }
  }
  for (auto [first, last] : groups) {
    STRIA_RETURN_IF_ERROR(CheckOneTiling(l, first, last, mirrored));
    if (l.components(last - 1).end() != l.components(l.components_size() - 1).end()) {
      return Status(Code::kInval, "every mirror must end where the last one does (" +
                                      std::to_string(l.components(l.components_size() - 1).end()) +
                                      ")");
    }
  }
  return Status::Ok();
}

}  // namespace stria
