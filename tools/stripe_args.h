// Parsers for the values users type after lfs's layout options, with Lustre's rules.
//
//   ParseSize("1M") == 1048576      sizes: a decimal number with an optional binary suffix
//                                   k/K, m/M, g/G, t/T (KiB, MiB, GiB, TiB); no suffix = bytes
//   ParseStripeSize("1M")           a size that is a stripe size: > 0, a multiple of 64 KiB,
//                                   at most 4 GiB (common/layout.h)
//   ParseStripeCount("-1")          -1 (all OSTs) or 1 .. kMaxStripeCount
//   ParseStripeIndex("3")           -1 (the MDS chooses) or an OST index >= 0
//   ParseComponentEnd("64M")        a PFL component end: a size that is a multiple of 64 KiB,
//                                   or -1 / EOF / eof for the end of the file (kLayoutEof)
//
// Every failure is EINVAL with a message naming the bad text. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::tools {

// A byte count: digits, then an optional suffix. Rejects signs, spaces, overflow, empty text.
Result<uint64_t> ParseSize(std::string_view text);

// A stripe size (see above).
Result<uint64_t> ParseStripeSize(std::string_view text);

// A stripe count (see above). 0 is refused: lfs setstripe -c 0 would mean "default",
// which Stria expresses by leaving the option out.
Result<int32_t> ParseStripeCount(std::string_view text);

// A starting OST index (see above).
Result<int32_t> ParseStripeIndex(std::string_view text);

// A component end (see above); 0 is refused.
Result<uint64_t> ParseComponentEnd(std::string_view text);

// The layout lfs setstripe's (and lfs migrate's) layout options describe, built one option
// at a time: -E END starts a component (options after it describe that component), -c, -S,
// -i/-o, -p and -L set fields of the current one. Errors are EINVAL with the reason.
class LayoutOptions {
 public:
  LayoutOptions();
  // Applies option `c` ('E', 'c', 'S', 'i', 'o', 'p', 'L') with its argument.
  Status Apply(int c, const char* arg);
  // Whether any layout option was given.
  bool given() const { return given_; }
  // The final checks (component ends against stripe sizes, DoM components' options).
  Status Finish() const;
  const proto::Layout& layout() const { return layout_; }

 private:
  proto::Layout layout_;   // count 0 / size 0 = inherit; offset -1 = the MDS chooses
  proto::Layout* cur_;     // the plain layout the options describe
  bool given_ = false;
};

}  // namespace stria::tools
