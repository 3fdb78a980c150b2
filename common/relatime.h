// relatime: when a read should update a file's atime — when atime is not newer than mtime
// or ctime, or is a day old — what Linux mounts do by default, and all tools like mutt or
// tmpwatch need. The MDS applies it (mds/ops/open_close.cc); the FUSE client uses it to
// decide whether a read is worth telling the MDS about (client/fuse/fuse_file_ops.cc).
// Times are nanoseconds since the epoch. Thread-safety: a pure function.
#pragma once

#include <cstdint>

namespace stria {

inline bool RelatimeDue(int64_t atime_ns, int64_t mtime_ns, int64_t ctime_ns, int64_t read_ns) {
  constexpr int64_t kDayNs = 24LL * 3600 * 1'000'000'000;
  return atime_ns <= mtime_ns || atime_ns <= ctime_ns || read_ns - atime_ns >= kDayNs;
}

}  // namespace stria
