// The mount's own parameters, as lctl on the client host sees them (Lustre keeps them in
// the client's /proc and /sys; here the FUSE daemon answers for them):
//
//   llite.FS-INST.stats                 the mount's lprocfs counters (kLliteCounters)
//   llite.FS-INST.max_read_ahead_mb     tunable (common/tunables.h)
//   llite.FS-INST.mirror_stats          mirrored files (client/mirror_io.h): reads served by
//                                       another mirror, damaged reads reported, stale marks
//                                       made, writes completed without a mirror
//   osc.FS-OSTxxxx-osc-INST.rpc_stats   per OST: pages per RPC, RPCs in flight
//   osc.FS-OSTxxxx-osc-INST.{max_rpcs_in_flight,max_dirty_mb,checksums}
//   jobid_var
//
// INST is libstria's Client::instance(). lctl reaches them through extended attributes of
// the mount's root directory, which the FUSE client answers itself and never sends to the
// MDS: getxattr "user.stria.lctl.get.PATTERN" returns NAME\0VALUE\0 pairs for the names
// matching the glob (".list." instead of ".get.": the names only); setxattr
// "user.stria.lctl.set.NAME" = VALUE sets a tunable for this mount until the MGS's params
// change (lctl set_param without -P), or clears statistics (VALUE "clear" on a stats name);
// setting needs uid 0.
// Thread-safety: all thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/stats.h"

namespace stria::client::fuse {

inline constexpr std::string_view kLctlXattrPrefix = "user.stria.lctl.";

// Whether the extended attribute `name` of FUSE inode `ino` is one of lctl's above (on the
// mount's root, under kLctlXattrPrefix): then the rest of the name ("get.PATTERN",
// "list.PATTERN", "set.NAME"), else nullopt and the attribute is the file's own. The one
// place getxattr and setxattr decide it.
std::optional<std::string_view> LctlXattrRest(uint64_t ino, std::string_view name);

enum LliteCounter : size_t {
  kLlReadBytes, kLlWriteBytes, kLlRead, kLlWrite, kLlOpen, kLlClose, kLlFsync, kLlReaddir,
  kLlSetattr, kLlTruncate, kLlFlock, kLlGetattr, kLlCreate, kLlLink, kLlUnlink, kLlSymlink,
  kLlMkdir, kLlRmdir, kLlMknod, kLlRename, kLlStatfs, kLlSetxattr, kLlGetxattr, kLlListxattr,
  kLlRemovexattr,
  kLlSplicedWriteBytes,  // Stria's own: the write_bytes that came through a pipe (splice)
  kLlRingRequests,       // Stria's own: requests that came over io_uring (client/fuse/fuse_ring.h)
};

inline constexpr CounterSpec kLliteCounters[] = {
    {"read_bytes", StatUnit::kBytes},  {"write_bytes", StatUnit::kBytes},
    {"read", StatUnit::kUsecs},        {"write", StatUnit::kUsecs},
    {"open", StatUnit::kUsecs},        {"close", StatUnit::kUsecs},
    {"fsync", StatUnit::kUsecs},       {"readdir", StatUnit::kUsecs},
    {"setattr", StatUnit::kUsecs},     {"truncate", StatUnit::kUsecs},
    {"flock", StatUnit::kUsecs},       {"getattr", StatUnit::kUsecs},
    {"create", StatUnit::kUsecs},      {"link", StatUnit::kUsecs},
    {"unlink", StatUnit::kUsecs},      {"symlink", StatUnit::kUsecs},
    {"mkdir", StatUnit::kUsecs},       {"rmdir", StatUnit::kUsecs},
    {"mknod", StatUnit::kUsecs},       {"rename", StatUnit::kUsecs},
    {"statfs", StatUnit::kUsecs},      {"setxattr", StatUnit::kUsecs},
    {"getxattr", StatUnit::kUsecs},    {"listxattr", StatUnit::kUsecs},
    {"removexattr", StatUnit::kUsecs}, {"spliced_write_bytes", StatUnit::kBytes},
    {"ring_requests", StatUnit::kReqs},
};

// Counts one operation's latency in a StatsSet when it goes out of scope.
class LliteOp {
 public:
  LliteOp(StatsSet* s, LliteCounter c) : s_(s), c_(c), t0_(std::chrono::steady_clock::now()) {}
  ~LliteOp() { s_->Add(c_, UsecsSince(t0_)); }
  LliteOp(const LliteOp&) = delete;
  LliteOp& operator=(const LliteOp&) = delete;

 private:
  StatsSet* s_;
  LliteCounter c_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace stria::client::fuse
