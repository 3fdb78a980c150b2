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

}  // namespace stria::tools
