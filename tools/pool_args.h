// Parsers for lctl's pool commands, with Lustre's spellings.
//
//   SplitPoolName("training.hot")        -> {"training", "hot"}  (FSNAME.POOL)
//   ParseOstList("training-OST[0-3]")    -> 0, 1, 2, 3            (decimal, as lctl's
//   ParseOstList("training-OST[0-6/2,9]")-> 0, 2, 4, 6, 9          expression lists)
//   ParseOstList("training-OST000a_UUID")-> 10                    (a name: hex index)
//   ParseOstList("OST0003"), ("3")       -> 3
//
// EINVAL with a message naming the bad text. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace stria::tools {

Result<std::pair<std::string, std::string>> SplitPoolName(std::string_view text);

// The OST indexes one argument names; `fsname`, when the argument carries one, must match.
Result<std::vector<uint32_t>> ParseOstList(std::string_view text, std::string_view fsname);

}  // namespace stria::tools
