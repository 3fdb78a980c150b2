// Text shape of `lfs df`, as Lustre's lfs prints it:
//
//   UUID                   1K-blocks        Used   Available Use% Mounted on
//   training-MDT0000_UUID    1000000       20000      980000   2% /mnt/training-data[MDT:0]
//   training-OST0000_UUID   51475068     1034560    47802872   3% /mnt/training-data[OST:0]
//   (blank line)
//   filesystem_summary:     51475068     1034560    47802872   3% /mnt/training-data
//   (blank line)
//
// -h prints bytes with binary units ("   48.0G"), -i inodes (Inodes IUsed IFree IUse%).
// The summary adds the OSTs' space and the MDTs' inodes, as Lustre does. A target that
// could not be asked prints "UUID: error text" instead of numbers.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stria::tools {

enum DfFlags : uint32_t {
  kDfInodes = 1u << 0,  // -i
  kDfHuman = 1u << 1,   // -h
};

// One target's statfs, in Lustre's obd_statfs terms.
struct DfTarget {
  std::string uuid;          // "training-OST0000_UUID"
  std::string type;          // "MDT" or "OST"
  uint32_t index = 0;
  std::string error;         // non-empty: could not be asked; the numbers are unused
  uint64_t bsize = 0;        // bytes per block
  uint64_t blocks = 0;
  uint64_t bfree = 0;
  uint64_t bavail = 0;
  uint64_t files = 0;
  uint64_t ffree = 0;
};

// The whole table (header, one line per target, summary) for one mount point.
std::string FormatDf(const std::vector<DfTarget>& targets, std::string_view mount,
                     uint32_t flags);

// One number as -h shows it: "%8.1f" plus K/M/G/T/P/E when it is above 1024, else as is.
std::string HumanSize(uint64_t bytes);

}  // namespace stria::tools
