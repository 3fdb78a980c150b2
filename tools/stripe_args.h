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
#include <memory>
#include <string_view>
#include <vector>

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

// The layout lfs setstripe's (and lfs migrate's, lfs mirror create's) layout options
// describe, built one option at a time: -E END starts a component (options after it
// describe that component), -c, -S, -i/-o, -p and -L set fields of the current one.
// -N[COUNT] starts COUNT mirrors (default 1) that share the options after it, up to the next
// -N (Lustre's FLR: lfs mirror create -N2 -c1 -N -c2 -p flash); --flags=prefer after a -N
// makes those mirrors the preferred ones for reads. Errors are EINVAL with the reason.
class LayoutOptions {
 public:
  LayoutOptions();
  // Applies option `c` ('E', 'c', 'S', 'i', 'o', 'p', 'L', 'N', 'F' for --flags) with its
  // argument (null for -N without a count).
  Status Apply(int c, const char* arg);
  // Whether any layout option was given; whether -N was.
  bool given() const { return given_; }
  bool mirrored() const { return !mirrors_.empty(); }
  // The final checks (component ends against stripe sizes, DoM components' options); with
  // -N, assembles the mirrored layout: each mirror's components with its mirror id (1..) in
  // the high bits of their ids.
  Status Finish();
  const proto::Layout& layout() const { return layout_; }

 private:
  struct MirrorGroup {
    uint32_t count = 1;
    uint32_t flags = 0;                     // LCME_FL_PREF_* (--flags=prefer)
    std::unique_ptr<LayoutOptions> layout;  // the options after this -N
  };
  Status FinishPlain() const;

  proto::Layout layout_;   // count 0 / size 0 = inherit; offset -1 = the MDS chooses
  proto::Layout* cur_;     // the plain layout the options describe
  bool given_ = false;
  std::vector<MirrorGroup> mirrors_;  // -N groups, in order
};

}  // namespace stria::tools
