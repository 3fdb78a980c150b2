// MountOptions: the `-o opt[,opt...]` of stria-fuse / mount.stria, split into Stria's own
// options and those passed on to libfuse, with the options every Stria mount carries added:
// fsname=DEVICE and subtype=stria (so /proc/mounts shows `DEVICE DIR fuse.stria`), and
// allow_other when root mounts (unless noallow_other), default_permissions (unless
// nodefault_permissions). fstab-only words (defaults, _netdev,
// noauto, nofail, user, x-*, comment=...) are dropped. Generic mount flags (ro, rw,
// noatime, nosuid, nodev, noexec, sync, dirsync ...) and libfuse's own options (allow_root,
// auto_unmount, max_read=, blksize=, fsname=, subtype=, *context=) go to libfuse. Any other
// option is refused (EINVAL, "unknown option 'X', won't mount"), as Lustre's client refuses
// what it does not know, unless the mount is sloppy (mount -s): then it is dropped and named
// in `ignored`.
//
// Stria's options:
//   io_threads=N        parallel stripe RPCs (libstria ClientConfig::io_threads), default 16
//   max_threads=N       FUSE worker threads at most, default 64
//   idle_threads=N      FUSE worker threads kept idle, default 16
//   connect_timeout=S   seconds to reach the MGS at mount time, default 15
//   timeout=S           seconds an unanswered MDS/OST request is resent (servers down,
//                       network partitioned) before the syscall fails with EIO, default 300
//   close_gather_ms=MS  how long a close that reports nothing waits to go to the MDS with
//                       others (client/fuse/close_batcher.h), default 10; 0: at once
//   open_register_ms=MS a read-only open of a file whose attributes the mount holds under a
//                       lease is made without the MDS and registered there this long after,
//                       unless closed before (client/fuse/local_opens.h); default 0 (off:
//                       every open asks the MDS), experimental: see local_opens.h
//   open_intent_ms=MS   in a directory whose files are opened read-only after their lookups,
//                       a lookup opens the file at the MDS too (Lustre's open intent), and
//                       the kernel's open takes that open within MS; one not taken by then is
//                       closed (client/fuse/pre_opens.h); default 1000; 0: every open is an
//                       MDS request of its own
//   statahead_max=N     names asked ahead of a directory's lookups that follow a numbered
//                       pattern (img_000123.jpg, ...), in one MDS request per N/2 names
//                       (client/fuse/statahead.h); default 32, at most 128; 0: none
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
//   busy_poll_us=US     spin this long for the reply to a small request before sleeping
//                       (lnet/busy_poll.h); default 150 once requests go over io_uring
//                       (the application's side of each hand-off then stays on its CPU,
//                       and spinning for the server's reply pays), 0 through /dev/fuse
//                       (the kernel's own cross-CPU wakeups dominate; spinning measured no
//                       gain)
//   nosplice_writes     libfuse reads a WRITE whole into its buffer and the write-behind
//                       copies the data again, instead of the default splice_writes: the
//                       kernel hands the data over through a pipe and it is read once, into
//                       the buffer it is sent from
//   nounlink_writeback  every unlink waits for the MDS, instead of the default
//                       unlink_writeback: in a directory the MDS grants this mount alone
//                       (mds/leases.h), unlinks are answered here and sent behind
//                       (client/fuse/unlink_writeback.h)
//   noio_uring          FUSE requests come through /dev/fuse, instead of the default
//                       io_uring: over the queue of the CPU that issued each, served by
//                       threads pinned to that CPU (client/fuse/fuse_ring.h; Linux 6.14+,
//                       root turns on fuse.enable_uring; else /dev/fuse anyway)
//   ring_threads=N      threads serving each CPU's io_uring queue at first, default 4
//                       (more start, up to max_threads, while all of a queue's are busy)
//   noallow_other       do not add allow_other
//   nodefault_permissions  leave permission checks to the MDS alone (cached dentries then
//                       skip the search permission of directories)
// Lustre's client options (mount.lustre, llite), with Lustre's meaning:
//   flock               fcntl and flock locks coherent across every mount of the cluster
//                       (the MDS's lock service, OP_MDS_LOCK) — the default
//   localflock          locks local to this mount only: the kernel keeps them, the MDS never
//                       hears of them (faster; wrong for applications locking across nodes)
//   noflock             fcntl and flock locks fail with ENOSYS
//   user_xattr          user.* extended attributes allowed — the default
//   nouser_xattr        user.* attributes refused with EOPNOTSUPP and left out of listxattr
//   lazystatfs          statfs(2) answers with the OSTs that reply (the MDS asks each with a
//                       short timeout), never waiting for an unreachable one — the default
//   nolazystatfs        statfs(2) asks every active OST itself and waits for each (up to
//                       timeout=, then EIO): exact totals, blocked by an unreachable OST
// Thread-safety: values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stria::client::fuse {

// How a mount serves fcntl/flock advisory locks (Lustre's flock, localflock, noflock).
enum class LockMode { kCluster, kLocal, kNone };

struct MountOptions {
  std::vector<std::string> fuse_opts;  // for libfuse, in order; commas in values escaped
  int io_threads = 16;
  int max_threads = 64;
  int idle_threads = 16;
  int connect_timeout_s = 15;
  int timeout_s = 300;
  int mirror_timeout_s = 5;
  int close_gather_ms = 10;
  int open_register_ms = 0;
  int open_intent_ms = 1000;
  int statahead_max = 32;
  std::string log_file;
  std::string log_level;
  std::string log_target = "auto";
  std::string key_file;       // empty: the default key (lnet::DefaultKeyRing), if any
  std::string lnet_fallback;  // "tcp", "none" or empty (the process default)
  bool o2ib_poll = false;
  int busy_poll_us = -1;  // not given: 150 over io_uring, else 0
  bool default_permissions = true;  // the kernel checks mode bits too
  LockMode locks = LockMode::kCluster;
  bool user_xattr = true;
  bool lazy_statfs = true;
  bool splice_writes = true;
  bool unlink_writeback = true;
  bool io_uring = true;
  int ring_threads = 4;
  std::vector<std::string> ignored;  // unknown options dropped by a sloppy parse

  // "opt1,opt2,..." for libfuse's -o.
  std::string FuseOptString() const;
};

// `option_args` are the -o arguments as given (each possibly comma separated). EINVAL with
// the offending option on a bad value or an unknown option (unless `sloppy`).
Result<MountOptions> ParseMountOptions(const std::vector<std::string>& option_args,
                                       std::string_view device, bool is_root,
                                       bool sloppy = false);

}  // namespace stria::client::fuse
