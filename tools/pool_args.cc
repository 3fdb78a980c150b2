#include "tools/pool_args.h"

#include <charconv>

namespace stria::tools {
namespace {

Status Bad(std::string_view text, const std::string& why) {
  return Status(Code::kInval, "'" + std::string(text) + "': " + why);
}

bool ParseNumber(std::string_view s, int base, uint64_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && end == s.data() + s.size();
}

constexpr uint64_t kMaxOstIndex = 0xffff;

}  // namespace

Result<std::pair<std::string, std::string>> SplitPoolName(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == text.size() ||
      text.find('.', dot + 1) != std::string_view::npos) {
    return Bad(text, "expected FSNAME.POOL");
  }
  return std::make_pair(std::string(text.substr(0, dot)), std::string(text.substr(dot + 1)));
}

Result<std::vector<uint32_t>> ParseOstList(std::string_view text, std::string_view fsname) {
  std::vector<uint32_t> out;
  uint64_t v = 0;
  if (ParseNumber(text, 10, &v)) {  // a bare index
    if (v > kMaxOstIndex) return Bad(text, "OST index out of range");
    out.push_back(static_cast<uint32_t>(v));
    return out;
  }
  std::string_view rest = text;
  if (rest.ends_with("_UUID")) rest.remove_suffix(5);
  const size_t at = rest.find("OST");
  if (at == std::string_view::npos) return Bad(text, "expected an OST name, list or index");
  if (at > 0) {
    if (rest[at - 1] != '-' || rest.substr(0, at - 1) != fsname) {
      return Bad(text, "names another filesystem than '" + std::string(fsname) + "'");
    }
  }
  rest.remove_prefix(at + 3);
  if (!rest.starts_with('[')) {
    if (rest.size() != 4 || !ParseNumber(rest, 16, &v)) {
      return Bad(text, "expected OSTxxxx with a 4-digit hex index");
    }
    out.push_back(static_cast<uint32_t>(v));
    return out;
  }
  if (!rest.ends_with(']')) return Bad(text, "unterminated [list]");
  rest = rest.substr(1, rest.size() - 2);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    uint64_t step = 1;
    if (const size_t slash = item.find('/'); slash != std::string_view::npos) {
      if (!ParseNumber(item.substr(slash + 1), 10, &step) || step == 0) {
        return Bad(text, "bad step in '" + std::string(item) + "'");
      }
      item = item.substr(0, slash);
    }
    uint64_t lo = 0, hi = 0;
    if (const size_t dash = item.find('-'); dash != std::string_view::npos) {
      if (!ParseNumber(item.substr(0, dash), 10, &lo) ||
          !ParseNumber(item.substr(dash + 1), 10, &hi) || hi < lo) {
        return Bad(text, "bad range '" + std::string(item) + "'");
      }
    } else if (!ParseNumber(item, 10, &lo)) {
      return Bad(text, "bad index '" + std::string(item) + "'");
    } else {
      hi = lo;
    }
    if (hi > kMaxOstIndex) return Bad(text, "OST index out of range");
    for (uint64_t i = lo; i <= hi; i += step) out.push_back(static_cast<uint32_t>(i));
  }
  if (out.empty()) return Bad(text, "an empty list");
  return out;
}

}  // namespace stria::tools
