// MountOptions: the `-o opt[,opt...]` of stria-fuse / mount.stria, split into Stria's own
// options and those passed on to libfuse, with the options every Stria mount carries added:
// fsname=DEVICE and subtype=stria (so /proc/mounts shows `DEVICE DIR fuse.stria`), and
// allow_other when root mounts (unless noallow_other), default_permissions (unless
// nodefault_permissions). fstab-only words (defaults, _netdev,
// noauto, nofail, user, x-*, comment=...) are dropped.
//
// Stria's options:
//   io_threads=N        parallel stripe RPCs (libstria ClientConfig::io_threads), default 16
//   max_threads=N       FUSE worker threads at most, default 64
//   idle_threads=N      FUSE worker threads kept idle, default 16
//   connect_timeout=S   seconds to reach the MGS at mount time, default 15
//   timeout=S           seconds an unanswered MDS/OST request is resent (servers down,
//                       network partitioned) before the syscall fails with EIO, default 300
//   mirror_timeout=S    seconds a mirror's OSTs may take before a write completes on the
//                       other mirrors (marking it stale) or a read moves to another mirror
//                       (client/mirror_io.h), default 5
//   log=FILE            the daemon's log once in the background (default: log_target)
//   log_level=LEVEL     trace, debug, info, warn, error
//   log_target=T        auto, stderr, syslog[:SOCKET], journald[:SOCKET] (common/log_config.h;
//                       auto: a mount in the background logs to journald or syslog)
//   key_file=PATH       the cluster key (docs/security.md); without it, $STRIA_KEY_FILE,
//                       else /etc/stria/stria.key if it exists, else none
//   lnet_fallback=tcp   carry o2ib NIDs over TCP where this host has no RDMA device
//                       (lnet/lnd.h; the same as stria-fuse --lnet-fallback tcp)
//   o2ib_poll           busy-poll RDMA completion queues
//   noallow_other       do not add allow_other
//   nodefault_permissions  leave permission checks to the MDS alone (cached dentries then
//                       skip the search permission of directories)
// Thread-safety: values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stria::client::fuse {

struct MountOptions {
  std::vector<std::string> fuse_opts;  // for libfuse, in order; commas in values escaped
  int io_threads = 16;
  int max_threads = 64;
  int idle_threads = 16;
  int connect_timeout_s = 15;
  int timeout_s = 300;
  int mirror_timeout_s = 5;
  std::string log_file;
  std::string log_level;
  std::string log_target = "auto";
  std::string key_file;       // empty: the default key (lnet::DefaultKeyRing), if any
  std::string lnet_fallback;  // "tcp", "none" or empty (the process default)
  bool o2ib_poll = false;
  bool default_permissions = true;  // the kernel checks mode bits too

  // "opt1,opt2,..." for libfuse's -o.
  std::string FuseOptString() const;
};

// `option_args` are the -o arguments as given (each possibly comma separated). EINVAL with
// the offending option on a bad value.
Result<MountOptions> ParseMountOptions(const std::vector<std::string>& option_args,
                                       std::string_view device, bool is_root);

}  // namespace stria::client::fuse
