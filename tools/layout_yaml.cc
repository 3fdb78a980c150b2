#include "tools/layout_yaml.h"

#include <charconv>
#include <cstdio>
#include <vector>

#include "common/layout.h"
#include "proto/layout_components.h"
#include "tools/layout_format.h"

namespace stria::tools {
namespace {

std::string Line(std::string_view indent, std::string_view key, std::string_view value) {
  std::string out(indent);
  out += key;
  out += ":";
  // Values start in column 19 (21 for lcme_*), as Lustre prints them.
  const size_t width = key.starts_with("lcme_") ? 20 : 18;
  out.append(key.size() + 1 < width ? width - key.size() : 1, ' ');
  out += value;
  out += "\n";
  return out;
}

void AppendPlain(std::string* out, const proto::Layout& l, std::string_view indent, bool init) {
  const int count = l.objects_size() > 0 ? l.objects_size() : l.stripe_count();
  const bool dom = l.pattern() == proto::PATTERN_MDT;
  *out += Line(indent, "lmm_stripe_count", std::to_string(count));
  *out += Line(indent, "lmm_stripe_size", std::to_string(l.stripe_size()));
  *out += Line(indent, "lmm_pattern", PatternName(l.pattern()));
  *out += Line(indent, "lmm_layout_gen", "0");
  const int64_t offset = init && l.objects_size() > 0 ? static_cast<int64_t>(l.objects(0).ost_idx())
                                                      : static_cast<int64_t>(l.stripe_offset());
  *out += Line(indent, dom ? "lmm_mdt_index" : "lmm_stripe_offset", std::to_string(offset));
  if (!l.pool().empty()) *out += Line(indent, "lmm_pool", l.pool());
  if (!init || dom || l.objects_size() == 0) return;
  *out += std::string(indent) + "lmm_objects:\n";
  for (const proto::StripeObject& o : l.objects()) {
    std::string fid = ObjectFid(o);  // "[seq:oid:ver]": YAML wants it bare
    fid = fid.substr(1, fid.size() - 2);
    *out += std::string(indent) + "- l_ost_idx: " + std::to_string(o.ost_idx()) + "\n";
    *out += std::string(indent) + "  l_fid:     " + fid + "\n";
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool ToInt(std::string_view s, int64_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::string FormatYaml(const proto::Layout& layout) {
  std::string out;
  if (!IsComposite(layout)) {
    AppendPlain(&out, layout, "", /*init=*/true);
    return out;
  }
  out += Line("", "lcm_layout_gen", std::to_string(layout.generation()));
  out += Line("", "lcm_mirror_count", "1");
  out += Line("", "lcm_entry_count", std::to_string(layout.components_size()));
  out += "components:\n";
  for (const proto::LayoutComponent& c : layout.components()) {
    const bool init = (c.flags() & kLcmeFlInit) != 0;
    out += "  - lcme_id:             " + std::to_string(c.id()) + "\n";
    out += Line("    ", "lcme_mirror_id", "0");
    out += Line("    ", "lcme_flags", init ? "init" : "0");
    out += Line("    ", "lcme_extent.e_start", std::to_string(c.start()));
    out += Line("    ", "lcme_extent.e_end",
                c.end() == kLayoutEof ? std::string("EOF") : std::to_string(c.end()));
    out += "    sub_layout:\n";
    AppendPlain(&out, c.layout(), "      ", init);
  }
  return out;
}

Result<proto::Layout> ParseYaml(std::string_view text) {
  proto::Layout out;
  proto::Layout* cur = &out;  // the plain layout the lmm_* keys describe
  bool composite = false;
  int line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    auto bad = [&](const std::string& why) {
      return Status(Code::kInval, "YAML line " + std::to_string(line_no) + ": " + why);
    };
    std::string_view s = Trim(line);
    if (s.empty() || s.front() == '#') continue;
    const bool item = s.starts_with("- ");
    if (item) s = Trim(s.substr(2));
    const size_t colon = s.find(':');
    if (colon == std::string_view::npos) return bad("expected KEY: VALUE");
    const std::string_view key = Trim(s.substr(0, colon));
    const std::string_view value = Trim(s.substr(colon + 1));
    int64_t n = 0;
    if (key == "components") {
      composite = true;
    } else if (key == "lcme_id") {
      if (!composite || !item) return bad("lcme_id outside 'components:'");
      proto::LayoutComponent* c = out.add_components();
      cur = c->mutable_layout();
      cur->set_stripe_offset(-1);
    } else if (key == "lcme_extent.e_start" || key == "lcme_extent.e_end") {
      if (out.components_size() == 0) return bad(std::string(key) + " outside a component");
      proto::LayoutComponent* c = out.mutable_components(out.components_size() - 1);
      uint64_t v = 0;
      if (value == "EOF" || value == "-1") {
        v = kLayoutEof;
      } else if (ToInt(value, &n) && n >= 0) {
        v = static_cast<uint64_t>(n);
      } else {
        return bad("bad extent '" + std::string(value) + "'");
      }
      if (key == "lcme_extent.e_start") {
        c->set_start(v);
      } else {
        c->set_end(v);
      }
    } else if (key == "lmm_stripe_count") {
      if (!ToInt(value, &n) || n < -1 || n > static_cast<int64_t>(kMaxStripeCount)) {
        return bad("bad stripe count '" + std::string(value) + "'");
      }
      cur->set_stripe_count(static_cast<int32_t>(n));
    } else if (key == "lmm_stripe_size") {
      if (!ToInt(value, &n) || n < 0) return bad("bad stripe size '" + std::string(value) + "'");
      cur->set_stripe_size(static_cast<uint64_t>(n));
    } else if (key == "lmm_pattern") {
      if (value == "raid0") {
        cur->set_pattern(proto::PATTERN_RAID0);
      } else if (value == "mdt") {
        cur->set_pattern(proto::PATTERN_MDT);
      } else {
        return bad("unsupported pattern '" + std::string(value) + "'");
      }
    } else if (key == "lmm_stripe_offset") {
      if (!ToInt(value, &n) || n < -1 || n > 0xffff) {
        return bad("bad stripe offset '" + std::string(value) + "'");
      }
      cur->set_stripe_offset(static_cast<int32_t>(n));
    } else if (key == "lmm_pool") {
      cur->set_pool(std::string(value));
    } else if (key == "lcm_layout_gen" || key == "lcm_mirror_count" || key == "lcm_entry_count" ||
               key == "lcme_mirror_id" || key == "lcme_flags" || key == "sub_layout" ||
               key == "lmm_layout_gen" || key == "lmm_objects" || key == "l_ost_idx" ||
               key == "l_fid" || key == "lmm_mdt_index" || key == "lmm_fid" || key == "lmm_magic" ||
               key == "lmm_seq" || key == "lmm_object_id" || key == "lcm_magic" ||
               key == "lcm_size" || key == "lcm_flags" || key == "lcme_offset" ||
               key == "lcme_size") {
      // What the MDS decides (ids, flags, objects) or detail: not part of a template.
    } else {
      return bad("unknown key '" + std::string(key) + "'");
    }
  }
  if (composite) {
    if (out.components_size() == 0) return Status(Code::kInval, "YAML: 'components:' is empty");
    // An uninstantiated template component: the MDS fills inherited fields; a DoM one takes
    // no count or offset.
    for (proto::LayoutComponent& c : *out.mutable_components()) {
      if (c.layout().pattern() == proto::PATTERN_MDT) {
        c.mutable_layout()->clear_stripe_count();
        c.mutable_layout()->clear_stripe_size();
        c.mutable_layout()->set_stripe_offset(-1);
      }
    }
    STRIA_RETURN_IF_ERROR(CheckComponentExtents(out));
  } else if (out.stripe_size() == 0 && out.stripe_count() == 0 &&
             out.pattern() == proto::PATTERN_NONE) {
    return Status(Code::kInval, "YAML: no layout in the file");
  }
  return out;
}

}  // namespace stria::tools
