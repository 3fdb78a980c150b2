// Root squash (Lustre's root_squash and nosquash_nids): requests from uid 0 run as a
// configured uid:gid unless the client's NID is in the nosquash list.
//
// A NID pattern is ADDR@NET as Lustre writes nidlists: ADDR is four dotted parts, each a
// number, `*` or a bracketed list of numbers and ranges (`10.0.0.[1-4,9]`), or ADDR is `*`
// alone; NET is the LND (`tcp`, `o2ib`) or `*`. A list is separated by spaces or by commas
// outside brackets. Thread-safety: values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::mds {

struct NidPattern {
  std::string addr;  // "*" or four dotted parts
  std::string net;   // "tcp", "o2ib" or "*"
};

// EINVAL with the offending pattern when one does not parse.
Result<std::vector<NidPattern>> ParseNidPatterns(std::string_view list);

// Whether a peer at `addr` (dotted IPv4, no port) on `net` matches any pattern.
bool NidListMatches(const std::vector<NidPattern>& list, std::string_view addr,
                    std::string_view net);

struct SquashOptions {
  bool root_squash = false;
  uint32_t squash_uid = 65534;
  uint32_t squash_gid = 65534;
  std::vector<NidPattern> nosquash_nids;  // clients whose root stays root
};

// The credentials an operation runs with: uid 0 from a peer (`peer` "ADDR:PORT" on LND
// `net`) outside nosquash_nids becomes squash_uid:squash_gid with no supplementary groups.
// Returns true when it squashed.
bool SquashRoot(const SquashOptions& o, std::string_view peer, std::string_view net,
                proto::Credentials* cred);

}  // namespace stria::mds
