#include "lnet/nid.h"

#include <charconv>

namespace stria::lnet {

Result<Nid> Nid::Parse(std::string_view text) {
  const size_t at = text.find('@');
  if (at == std::string_view::npos || at == 0) {
    return Status(Code::kInval, "NID '" + std::string(text) + "' is not ADDR@tcp[:PORT]");
  }
  Nid nid;
  nid.addr = std::string(text.substr(0, at));
  for (char c : nid.addr) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) {
      return Status(Code::kInval, "NID '" + std::string(text) + "' has a bad address");
    }
  }
  std::string_view rest = text.substr(at + 1);
  std::string_view net = rest;
  const size_t colon = rest.find(':');
  if (colon != std::string_view::npos) {
    net = rest.substr(0, colon);
    std::string_view port = rest.substr(colon + 1);
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || ptr != port.data() + port.size() || port.empty() || value > 65535) {
      return Status(Code::kInval, "NID '" + std::string(text) + "' has a bad port");
    }
    nid.port = static_cast<uint16_t>(value);
  }
  // Lustre allows a network number after the LND name (tcp1, o2ib0); one network here.
  auto strip_digits = [](std::string_view s) {
    while (!s.empty() && isdigit(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  };
  const std::string_view lnd = strip_digits(net);
  if (lnd == "tcp") {
    nid.lnd = Lnd::kTcp;
  } else if (lnd == "o2ib") {
    nid.lnd = Lnd::kO2ib;
  } else {
    return Status(Code::kInval, "NID '" + std::string(text) + "': unknown network '" +
                                    std::string(net) + "' (tcp or o2ib)");
  }
  return nid;
}

std::string Nid::ToString() const {
  return addr + (lnd == Lnd::kTcp ? "@tcp:" : "@o2ib:") + std::to_string(port);
}

Result<std::vector<Nid>> ParseNidList(std::string_view text) {
  std::vector<Nid> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    STRIA_ASSIGN_OR_RETURN(Nid nid, Nid::Parse(text.substr(0, comma)));
    out.push_back(std::move(nid));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (out.empty()) return Status(Code::kInval, "empty NID list");
  return out;
}

}  // namespace stria::lnet
