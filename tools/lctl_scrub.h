// `lctl scrub [--ost INDEX] [--timeout SECONDS] [--repair]`: asks each OSS to verify every
// object of its OSTs against their on-disk checksums (OP_OST_SCRUB) and prints what was
// checked and every corrupt object. The OSTs and their OSSes come from the MGS config, as for
// `lctl dl`; OSTs are scrubbed one after another, so one OSS is busy at a time. With
// --repair, the files holding the corrupt objects are found (a walk of the namespace) and
// each damaged mirror component is reported to the MDS (OP_MDS_MIRROR STALE, damaged),
// whose resync rewrites it from a good mirror; objects of files without another mirror are
// listed as not repairable.
//
// Exit status: 0 when every OST scrubbed clean; EIO (5) when corruption was found; otherwise
// the errno of the first OST that could not be scrubbed (unreachable, kBusy, ...).
// Thread-safety: run from main only.
#pragma once

#include <cstdint>
#include <optional>

#include "client/client.h"
#include "common/status.h"

namespace stria::tools {

struct ScrubArgs {
  std::optional<uint32_t> ost;  // one OST; all of them when unset
  int timeout_s = 3600;         // the longest one OST's scrub may take
  bool repair = false;          // hand damaged mirror components to the MDS's resync
};

// Parses the arguments after "scrub" (argv[0] is "scrub"); kInval with the reason.
Result<ScrubArgs> ParseScrubArgs(int argc, char** argv);

// Runs the scrub through `c`'s MGS config; prints the report, returns the exit status.
int LctlScrub(client::Client* c, const ScrubArgs& args);

}  // namespace stria::tools
