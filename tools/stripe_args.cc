#include "tools/stripe_args.h"

#include <charconv>
#include <limits>
#include <string>

#include "common/layout.h"
#include "proto/layout_components.h"

namespace stria::tools {
namespace {

Status Bad(std::string_view what, std::string_view text, std::string_view why) {
  return Status(Code::kInval, std::string("invalid ") + std::string(what) + " '" +
                                  std::string(text) + "': " + std::string(why));
}

// A signed decimal integer that fills the whole text.
Result<int64_t> ParseInt(std::string_view what, std::string_view text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end) {
    return Bad(what, text, "not an integer");
  }
  return v;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  if (text.empty()) return Bad("size", text, "empty");
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return Bad("size", text, "must start with a number");
  uint64_t value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc()) return Bad("size", text, "too large");
  std::string_view suffix = text.substr(digits);
  unsigned shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: return Bad("size", text, "unknown unit (use k, M, G or T)");
    }
    if (suffix.size() > 1) return Bad("size", text, "unknown unit (use k, M, G or T)");
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return Bad("size", text, "too large");
  }
  return value << shift;
}

Result<uint64_t> ParseStripeSize(std::string_view text) {
  auto size = ParseSize(text);
  if (!size.ok()) return Bad("stripe size", text, "not a size");
  if (*size == 0) return Bad("stripe size", text, "must be greater than 0");
  if (*size % kMinStripeSize != 0) {
    return Bad("stripe size", text, "must be a multiple of 64 KiB");
  }
  if (*size > kMaxStripeSize) return Bad("stripe size", text, "must be at most 4 GiB");
  return *size;
}

Result<int32_t> ParseStripeCount(std::string_view text) {
  auto v = ParseInt("stripe count", text);
  if (!v.ok()) return v.status();
  if (*v == -1) return int32_t{-1};
  if (*v < 1 || *v > static_cast<int64_t>(kMaxStripeCount)) {
    return Bad("stripe count", text,
               "must be -1 (all OSTs) or between 1 and " + std::to_string(kMaxStripeCount));
  }
  return static_cast<int32_t>(*v);
}

Result<int32_t> ParseStripeIndex(std::string_view text) {
  auto v = ParseInt("stripe index", text);
  if (!v.ok()) return v.status();
  if (*v < -1 || *v > std::numeric_limits<int32_t>::max()) {
    return Bad("stripe index", text, "must be -1 or an OST index");
  }
  return static_cast<int32_t>(*v);
}

Result<uint64_t> ParseComponentEnd(std::string_view text) {
  if (text == "-1" || text == "EOF" || text == "eof") return kLayoutEof;
  auto size = ParseSize(text);
  if (!size.ok()) return Bad("component end", text, "not a size, -1 or EOF");
  if (*size == 0) return Bad("component end", text, "must be greater than 0");
  if (*size % kComponentAlign != 0) {
    return Bad("component end", text, "must be a multiple of 64 KiB");
  }
  return *size;
}

LayoutOptions::LayoutOptions() : cur_(&layout_) {
  layout_.set_pattern(proto::PATTERN_RAID0);
  layout_.set_stripe_offset(-1);
}

Status LayoutOptions::Apply(int c, const char* arg) {
  if (c == 'N') {
    if (given_ && mirrors_.empty()) {
      return Status(Code::kInval, "layout options must follow -N in a mirrored layout");
    }
    MirrorGroup g;
    if (arg != nullptr && *arg != '\0') {
      auto n = ParseInt("mirror count", arg);
      if (!n.ok()) return n.status();
      if (*n < 1 || *n > static_cast<int64_t>(kMaxMirrors)) {
        return Bad("mirror count", arg, "must be between 1 and " + std::to_string(kMaxMirrors));
      }
      g.count = static_cast<uint32_t>(*n);
    }
    g.layout = std::make_unique<LayoutOptions>();
    mirrors_.push_back(std::move(g));
    given_ = true;
    return Status::Ok();
  }
  if (!mirrors_.empty()) {
    if (c == 'F') {
      const std::string flags = arg;
      if (flags == "prefer") {
        mirrors_.back().flags = kLcmeFlPrefRw;
      } else if (flags == "prefrd") {
        mirrors_.back().flags = kLcmeFlPrefRd;
      } else if (flags == "prefwr") {
        mirrors_.back().flags = kLcmeFlPrefWr;
      } else {
        return Bad("mirror flags", arg, "prefer, prefrd or prefwr");
      }
      return Status::Ok();
    }
    return mirrors_.back().layout->Apply(c, arg);
  }
  if (c == 'F') return Status(Code::kInval, "--flags applies to the mirrors of a -N");
  const std::string text = arg;
  switch (c) {
    case 'E': {
      STRIA_ASSIGN_OR_RETURN(uint64_t end, ParseComponentEnd(text));
      if (!IsComposite(layout_) && given_) {
        return Status(Code::kInval, "layout options must follow -E in a composite layout");
      }
      const uint64_t start = IsComposite(layout_) ? layout_.components().rbegin()->end() : 0;
      if (start == kLayoutEof) {
        return Status(Code::kInval, "no component may follow one that ends at EOF");
      }
      if (end <= start) {
        return Status(Code::kInval, "component end " + text + " is not past the previous end " +
                                        std::to_string(start));
      }
      layout_.clear_stripe_offset();
      layout_.clear_pattern();
      proto::LayoutComponent* comp = layout_.add_components();
      comp->set_start(start);
      comp->set_end(end);
      cur_ = comp->mutable_layout();
      cur_->set_pattern(proto::PATTERN_RAID0);
      cur_->set_stripe_offset(-1);
      break;
    }
    case 'L':
      if (text == "mdt") {
        cur_->set_pattern(proto::PATTERN_MDT);
      } else if (text == "raid0") {
        cur_->set_pattern(proto::PATTERN_RAID0);
      } else {
        return Status(Code::kInval, "invalid layout '" + text + "': mdt or raid0");
      }
      break;
    case 'c': {
      STRIA_ASSIGN_OR_RETURN(int32_t v, ParseStripeCount(text));
      cur_->set_stripe_count(v);
      break;
    }
    case 'i':
    case 'o': {
      STRIA_ASSIGN_OR_RETURN(int32_t v, ParseStripeIndex(text));
      cur_->set_stripe_offset(v);
      break;
    }
    case 'p': {
      std::string pool = text;
      // Lustre accepts "fsname.pool"; the pool is the part after the dot.
      if (size_t dot = pool.find('.'); dot != std::string::npos) pool = pool.substr(dot + 1);
      if (pool.empty() || pool.size() > 15) {
        return Status(Code::kInval, "invalid pool name '" + text + "'");
      }
      cur_->set_pool(pool);
      break;
    }
    case 'S': {
      STRIA_ASSIGN_OR_RETURN(uint64_t v, ParseStripeSize(text));
      cur_->set_stripe_size(v);
      break;
    }
    default:
      return Status(Code::kInval, "not a layout option");
  }
  given_ = true;
  return Status::Ok();
}

Status LayoutOptions::Finish() {
  if (mirrors_.empty()) return FinishPlain();
  proto::Layout out;
  uint32_t mirror = 0;
  for (MirrorGroup& g : mirrors_) {
    STRIA_RETURN_IF_ERROR(g.layout->Finish());
    const proto::Layout& l = g.layout->layout();
    for (const proto::LayoutComponent& comp : l.components()) {
      if (comp.layout().pattern() == proto::PATTERN_MDT) {
        return Status(Code::kInval, "a mirror cannot have a Data-on-MDT component");
      }
    }
    for (uint32_t i = 0; i < g.count; ++i) {
      ++mirror;
      if (mirror > kMaxMirrors) {
        return Status(Code::kInval, "at most " + std::to_string(kMaxMirrors) + " mirrors");
      }
      if (IsComposite(l)) {
        for (const proto::LayoutComponent& comp : l.components()) {
          proto::LayoutComponent* c = out.add_components();
          *c = comp;
          c->set_id(ComponentId(mirror, 0));
          c->set_flags(g.flags);
        }
      } else {
        proto::LayoutComponent* c = out.add_components();
        c->set_id(ComponentId(mirror, 0));
        c->set_flags(g.flags);
        c->set_start(0);
        c->set_end(kLayoutEof);
        *c->mutable_layout() = l;
      }
    }
  }
  layout_ = std::move(out);
  cur_ = &layout_;
  return CheckComponentExtents(layout_);
}

Status LayoutOptions::FinishPlain() const {
  for (const proto::LayoutComponent& comp : layout_.components()) {
    const uint64_t size = comp.layout().stripe_size();
    const bool dom = comp.layout().pattern() == proto::PATTERN_MDT;
    if (dom && (comp.layout().stripe_count() != 0 || !comp.layout().pool().empty())) {
      return Status(Code::kInval, "a Data-on-MDT component (-L mdt) takes no -c or -p");
    }
    if (!dom && size != 0 && comp.end() != kLayoutEof && comp.end() % size != 0) {
      return Status(Code::kInval, "component end " + std::to_string(comp.end()) +
                                      " is not a multiple of its stripe size " +
                                      std::to_string(size));
    }
  }
  return Status::Ok();
}

}  // namespace stria::tools
