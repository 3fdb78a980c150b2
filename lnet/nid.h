// NIDs: how Stria names a peer, in Lustre's words.
//
//   192.168.1.5@tcp          TCP, default port (kDefaultPort)
//   192.168.1.5@tcp:9401     TCP, port 9401
//   10.0.0.5@o2ib            RDMA (librdmacm, lnet/o2ib/); without a device an error, or TCP
//                            where the operator allows it (lnet/lnd.h)
//   localhost@tcp            host names are resolved at connect time
//
// A NID list is comma separated ("a@tcp,b@tcp"): the same service reachable at several NIDs
// (failover). Thread-safety: values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stria::lnet {

// Stria's default port: 9880, not Lustre's 988 (the LNet acceptor), so that Stria and a
// Lustre client or server can run on one host (docs/operations.md, "Ports").
inline constexpr uint16_t kDefaultPort = 9880;

enum class Lnd : uint8_t {
  kTcp,   // socklnd
  kO2ib,  // RDMA
};

struct Nid {
  Lnd lnd = Lnd::kTcp;
  std::string addr;  // an IPv4 address or a host name
  uint16_t port = kDefaultPort;

  // "ADDR@tcp[:PORT]" or "ADDR@o2ib[:PORT]". EINVAL with a reason for anything else.
  static Result<Nid> Parse(std::string_view text);

  // The canonical text form; the port is always written ("127.0.0.1@tcp:9880").
  std::string ToString() const;

  bool operator==(const Nid&) const = default;
};

// Parses "NID[,NID...]"; at least one.
Result<std::vector<Nid>> ParseNidList(std::string_view text);

}  // namespace stria::lnet
