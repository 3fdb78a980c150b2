#include "mds/squash.h"

#include <charconv>

namespace stria::mds {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

bool ParseNumber(std::string_view s, uint32_t* v) {
  if (s.empty() || s.size() > 3) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && *v <= 255;
}

// One dotted part of a pattern against one part of an address.
bool PartMatches(std::string_view pat, std::string_view part) {
  if (pat == "*") return true;
  uint32_t v = 0;
  if (!ParseNumber(part, &v)) return false;
  if (pat.front() != '[') {
    uint32_t p = 0;
    return ParseNumber(pat, &p) && p == v;
  }
  for (std::string_view r : Split(pat.substr(1, pat.size() - 2), ',')) {
    const size_t dash = r.find('-');
    uint32_t lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (ParseNumber(r, &lo) && lo == v) return true;
    } else if (ParseNumber(r.substr(0, dash), &lo) && ParseNumber(r.substr(dash + 1), &hi) &&
               lo <= v && v <= hi) {
      return true;
    }
  }
  return false;
}

bool PartValid(std::string_view pat) {
  if (pat == "*") return true;
  uint32_t v = 0;
  if (pat.empty()) return false;
  if (pat.front() != '[') return ParseNumber(pat, &v);
  if (pat.size() < 3 || pat.back() != ']') return false;
  for (std::string_view r : Split(pat.substr(1, pat.size() - 2), ',')) {
    const size_t dash = r.find('-');
    uint32_t lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!ParseNumber(r, &lo)) return false;
    } else if (!ParseNumber(r.substr(0, dash), &lo) || !ParseNumber(r.substr(dash + 1), &hi) ||
               lo > hi) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<std::vector<NidPattern>> ParseNidPatterns(std::string_view list) {
  // Split on spaces, and on commas outside brackets.
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ' ' || c == '\t' || (c == ',' && depth == 0)) {
      if (!cur.empty()) items.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) items.push_back(std::move(cur));
  std::vector<NidPattern> out;
  for (const std::string& item : items) {
    const Status bad(Code::kInval, "'" + item +
                                       "' is not a NID pattern (ADDR@NET, e.g. 10.0.0.5@tcp, "
                                       "10.0.0.[1-4]@tcp, *@tcp)");
    const size_t at = item.rfind('@');
    if (at == std::string::npos) return bad;
    NidPattern p{item.substr(0, at), item.substr(at + 1)};
    if (p.net != "tcp" && p.net != "o2ib" && p.net != "*") return bad;
    if (p.addr != "*") {
      const std::vector<std::string_view> parts = Split(p.addr, '.');
      if (parts.size() != 4) return bad;
      for (std::string_view part : parts) {
        if (!PartValid(part)) return bad;
      }
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) return Status(Code::kInval, "empty NID list");
  return out;
}

bool NidListMatches(const std::vector<NidPattern>& list, std::string_view addr,
                    std::string_view net) {
  const std::vector<std::string_view> parts = Split(addr, '.');
  for (const NidPattern& p : list) {
    if (p.net != "*" && p.net != net) continue;
    if (p.addr == "*") return true;
    const std::vector<std::string_view> pats = Split(p.addr, '.');
    if (parts.size() != pats.size()) continue;
    bool all = true;
    for (size_t i = 0; i < parts.size() && all; ++i) all = PartMatches(pats[i], parts[i]);
    if (all) return true;
  }
  return false;
}

bool SquashRoot(const SquashOptions& o, std::string_view peer, std::string_view net,
                proto::Credentials* cred) {
  if (!o.root_squash || cred->uid() != 0) return false;
  if (!o.nosquash_nids.empty()) {
    const size_t colon = peer.rfind(':');
    const std::string_view addr = colon == std::string_view::npos ? peer : peer.substr(0, colon);
    if (NidListMatches(o.nosquash_nids, addr, net)) return false;
  }
  cred->set_uid(o.squash_uid);
  cred->set_gid(o.squash_gid);
  cred->clear_groups();
  return true;
}

}  // namespace stria::mds
