// stria-fuse and mount.stria: mount a Stria filesystem with FUSE.
//
//   stria-fuse DEVICE MOUNTPOINT [-f] [-d] [-o opt[,opt...]] [--lnet-fallback tcp|none]
//              [--config FILE]
//   mount.stria DEVICE DIR [-sfnv] [-o opts]        (what mount -t stria runs)
//
// The mount options of [client] (and [global]) in the config file (client/fuse/
// mount_config.h; default /etc/stria/stria.conf) come first; -o options win.
// DEVICE is NID[,NID...]:/fsname. Without -f the command returns only once the MGS answered
// and the mount exists (the daemon carries on in the background), so scripts may use the
// mount point right away; a wrong DEVICE or an unreachable MGS fails with a message, exit 1.
// The same main serves both names (argv[0] decides): mount.stria always backgrounds and its
// -f means "fake" (check everything, mount nothing), and -s (sloppy) drops unknown options
// with a warning instead of refusing them, as mount(8) helpers do.
//
// Exit status, mount(8)'s (both names): 0 mounted (or checked, with -f); 1 incorrect
// invocation (arguments, DEVICE, the config file); 2 system error (fork, pipe); 32 mount
// failure (the mount point, a bad or unknown -o option, the key, the MGS unreachable or
// refusing, FUSE).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/fuse/fuse_ops.h"
#include "client/fuse/fuse_ring.h"
#include "client/fuse/mount_config.h"
#include "client/fuse/mount_options.h"
#include "client/mount_spec.h"
#include "common/log.h"
#include "common/log_config.h"
#include "common/version.h"
#include "lnet/busy_poll.h"
#include "lnet/lnd.h"
#include "lnet/shared_bulk.h"

namespace stria::client::fuse {
namespace {

struct Args {
  std::string prog = "stria-fuse";
  std::string device;
  std::string mountpoint;
  bool foreground = false;
  bool debug = false;
  bool fake = false;
  bool verbose = false;
  std::string lnet_fallback;  // --lnet-fallback (the option lnet_fallback= does the same)
  std::string config;         // --config FILE ('' for none)
  bool config_given = false;
  bool sloppy = false;        // mount.stria -s
  std::vector<std::string> options;
};

// mount(8)'s exit codes.
constexpr int kExitUsage = 1;    // incorrect invocation or permissions
constexpr int kExitSystem = 2;   // system error (out of memory, cannot fork)
constexpr int kExitFailure = 32; // mount failure

int Fail(const Args& a, const std::string& msg, int code = kExitFailure) {
  std::fprintf(stderr, "%s: %s\n", a.prog.c_str(), msg.c_str());
  return code;
}

// Raises the kernel readahead of the new mount (its bdi, /sys/class/bdi/MAJ:MIN) to `kb`
// before the FUSE INIT is answered: the kernel keeps min(bdi readahead, INIT's
// max_readahead), and a fresh bdi starts at 128 KiB. Best effort (root only).
void RaiseReadahead(const std::string& mountpoint, unsigned kb) {
  char real[PATH_MAX];
  if (realpath(mountpoint.c_str(), real) == nullptr) return;
  std::ifstream info("/proc/self/mountinfo");
  std::string line, found;
  while (std::getline(info, line)) {
    // id parent MAJ:MIN root mountpoint ... - fstype source opts
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt;
    f >> id >> parent >> dev >> root >> mnt;
    if (mnt == real && line.find(" - fuse.stria ") != std::string::npos) found = dev;
  }
  if (found.empty()) return;
  std::ofstream ra("/sys/class/bdi/" + found + "/read_ahead_kb");
  ra << kb << "\n";
  ra.flush();
  if (ra) LOG_INFO("readahead of bdi {} set to {} KiB", found, kb);
}

// Whether libfuse can splice a whole WRITE of `max_write` bytes: it sizes each worker's
// pipe to the request buffer (max_write plus a page of headers, which the kernel rounds up
// to a power of two) and falls back to reading requests when F_SETPIPE_SZ refuses that. An
// unprivileged process (and root without CAP_SYS_RESOURCE, as in most containers) may not
// go beyond fs.pipe-max-size, 1 MiB by default: raise it when it is lower. Best effort
// (root only); false when pipes that large cannot be had.
bool PipesHoldWrites(uint32_t max_write) {
  size_t want = 1;
  while (want < static_cast<size_t>(max_write) + 4096) want <<= 1;
  auto fits = [want] {
    int p[2];
    if (pipe(p) != 0) return false;
    const bool ok = fcntl(p[0], F_SETPIPE_SZ, static_cast<int>(want)) >= 0;
    close(p[0]);
    close(p[1]);
    return ok;
  };
  if (fits()) return true;
  {
    std::ofstream max("/proc/sys/fs/pipe-max-size");
    max << want << "\n";
    max.flush();
    if (!max) return false;
  }
  if (!fits()) return false;
  LOG_INFO("fs.pipe-max-size raised to {} so that writes of {} KiB can be spliced", want,
           max_write >> 10);
  return true;
}

// Runs the mount; `ready_fd` (>= 0 when a parent waits) gets one byte once mounted.
int Serve(const Args& a, const MountSpec& spec, const MountOptions& mo, int ready_fd) {
  const std::string level = mo.log_level.empty() ? (a.verbose || a.debug ? "debug" : "info")
                                                 : mo.log_level;
  // In the background, the terminal sees only warnings and errors until the mount is up;
  // the daemon's log (log=FILE, else log_target: journald or syslog) then gets `level`.
  if (ready_fd >= 0) {
    InitLogging(a.prog, a.verbose ? level : "warn");
  } else if (Status st = ConfigureLogging(a.prog, {.level = level, .target = mo.log_target, .file = ""});
             !st.ok()) {
    return Fail(a, st.message());
  }
  // FUSE read buffers come from the shared bulk arena, so that a local OSS reads into
  // them directly (lnet/shared_bulk.h); connections share it as they open.
  lnet::BulkArena::Create();
  ClientConfig cfg;
  cfg.mgs_nids = spec.mgs_nids;
  cfg.fsname = spec.fsname;
  cfg.io_threads = mo.io_threads;
  cfg.rpc.retry_deadline_ms = mo.timeout_s * 1000;
  cfg.mirror_timeout_ms = mo.mirror_timeout_s * 1000;
  // One attempt (a connect, a wait for a reply) never outlasts the whole deadline.
  cfg.rpc.rpc_timeout_ms = std::min(cfg.rpc.rpc_timeout_ms, cfg.rpc.retry_deadline_ms);
  cfg.rpc.connect_timeout_ms = std::min(cfg.rpc.connect_timeout_ms, cfg.rpc.retry_deadline_ms);
  {
    auto keys = mo.key_file.empty() ? lnet::DefaultKeyRing() : lnet::LoadKeyRing({mo.key_file});
    if (!keys.ok()) return Fail(a, "cannot mount " + a.device + ": " + keys.status().message());
    cfg.rpc.keys = *keys;
  }
  {
    // First contact, with a deadline a person waits for.
    ClientConfig probe = cfg;
    probe.io_threads = 1;
    probe.rpc.retry_deadline_ms = mo.connect_timeout_s * 1000;
    probe.rpc.connect_timeout_ms = std::min(probe.rpc.connect_timeout_ms, probe.rpc.retry_deadline_ms);
    auto c = Client::Connect(probe);
    if (!c.ok()) {
      // A refusal (the cluster key) is an answer, not silence.
      const bool refused = c.status().code() == Code::kAccess;
      return Fail(a, "cannot mount " + a.device + ": MGS " + spec.mgs_nids[0].ToString() +
                         (refused ? " refused us: " : " did not answer: ") +
                         c.status().ToString());
    }
  }
  auto client = Client::Connect(cfg);
  if (!client.ok()) return Fail(a, "cannot mount " + a.device + ": " + client.status().ToString());

  FsOptions fs_opts;
  // Without default_permissions the MDS alone checks access: no reuse of caller groups.
  if (!mo.default_permissions) fs_opts.groups_ttl_ms = 0;
  fs_opts.locks = mo.locks;
  fs_opts.user_xattr = mo.user_xattr;
  fs_opts.lazy_statfs = mo.lazy_statfs;
  fs_opts.close_gather_ms = mo.close_gather_ms;
  fs_opts.open_register_ms = mo.open_register_ms;
  fs_opts.open_intent_ms = mo.open_intent_ms;
  fs_opts.statahead_max = mo.statahead_max;
  fs_opts.capabilities = cfg.rpc.keys != nullptr;
  fs_opts.splice_writes = mo.splice_writes;
  if (fs_opts.splice_writes && !PipesHoldWrites(fs_opts.max_write)) {
    LOG_WARN("fs.pipe-max-size is below what a {} KiB write needs and cannot be raised here: "
             "writes are read whole and copied (as with nosplice_writes)",
             fs_opts.max_write >> 10);
    fs_opts.splice_writes = false;
  }
  StriaFs fs(client->get(), fs_opts);

  const std::string opt_string = mo.FuseOptString();
  std::vector<std::string> argv_s = {a.prog, "-o", opt_string};
  if (a.debug) argv_s.push_back("-d");
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se = fuse_session_new(&args, &StriaFs::Ops(), sizeof(fuse_lowlevel_ops), &fs);
  if (se == nullptr) return Fail(a, "bad FUSE options: -o " + opt_string);
  fs.set_session(se);
  // Metadata leases: the kernel keeps names and attributes until the MDS revokes them
  // (client/fuse/lease_cache.h); without them, for FsOptions' second. Registered before
  // the mount appears, so every request the kernel sends can be granted them.
  LeaseCache leases(client->get(), {.fallback_entry_s = fs_opts.entry_timeout_s,
                                    .fallback_attr_s = fs_opts.attr_timeout_s,
                                    .fsname = cfg.fsname,
                                    .keys = cfg.rpc.keys});
  leases.set_flush_closes([&fs] { fs.FlushCloses(); });
  leases.set_on_revoked_inodes(
      [&fs](const std::vector<uint64_t>& inos) { fs.AttrLeasesRevoked(inos); });
  leases.set_on_revoked_dirs([&fs](const std::vector<uint64_t>& dirs, bool all) {
    fs.RecallUnlinks(dirs, all);
    fs.DropAhead();
    if (all) fs.DropPreOpens();
  });
  if (Status st = leases.Start(se, cfg.mgs_nids[0]); st.ok()) {
    fs.set_leases(&leases);
    // Write-back unlinks go by the kernel's permission check (default_permissions), and
    // an open made without the MDS (local_opens.h) would not be known when they reach it.
    if (mo.unlink_writeback && mo.default_permissions && fs_opts.open_register_ms == 0) {
      fs.StartUnlinkWriteback();
    } else if (mo.unlink_writeback) {
      LOG_INFO(
          "unlinks wait for the MDS: write-back unlinks need default_permissions and "
          "no open_register_ms");
    }
  } else {
    LOG_WARN("no metadata leases (names and attributes cached for {} s): {}",
             fs_opts.entry_timeout_s, st.ToString());
  }
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    return Fail(a, "cannot install signal handlers", kExitSystem);
  }
  // libfuse catches SIGPIPE with a handler that does nothing; ignored instead, as in the
  // MDS and OSS, the transport's splice into a socket need not block and unblock it around
  // each send (lnet/socket.cc NoSigpipe: four system calls per spliced write request).
  signal(SIGPIPE, SIG_IGN);
  // FUSE over io_uring, where the kernel has it: the kernel offers it at INIT only if
  // fuse.enable_uring is on by then.
  bool ring = mo.io_uring;
  if (std::string why; ring && !FuseRing::EnableInKernel(&why)) {
    LOG_INFO("FUSE requests come through /dev/fuse: {}", why);
    ring = false;
  }
  if (fuse_session_mount(se, a.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return Fail(a, "mounting " + a.device + " on " + a.mountpoint + " failed");
  }
  // Beneath libfuse either way: it completes the INIT reply (fuse_ring.h).
  FuseRingOptions ring_opts{
      .io_uring = ring,
      .threads_per_queue = static_cast<unsigned>(mo.ring_threads),
      .max_threads_per_queue = static_cast<unsigned>(std::max(mo.ring_threads, mo.max_threads)),
      .stats = &fs.llite_stats(),
      .on_active = {}};
  if (mo.busy_poll_us < 0) {
    // Over io_uring the application's side of each hand-off stays on its CPU, and spinning
    // for the server's reply then pays (docs/performance.md); through /dev/fuse it did not.
    ring_opts.on_active = [] { lnet::SetBusyPollUs(lnet::kDefaultBusyPollUs); };
  }
  if (!FuseRing::Attach(se, ring_opts)) {
    LOG_WARN(
        "libfuse's custom I/O could not be installed: FUSE requests come through "
        "/dev/fuse, and the kernel serializes the lookups of each directory");
  }
  LOG_INFO("mounted {} on {}", a.device, a.mountpoint);
  RaiseReadahead(a.mountpoint, fs_opts.max_readahead >> 10);
  // llite.*.max_read_ahead_mb (lctl set_param) sets the bdi's readahead from now on.
  (*client)->tunables().set_on_read_ahead(
      [mnt = a.mountpoint](int64_t mb) { RaiseReadahead(mnt, static_cast<unsigned>(mb) << 10); });

  if (ready_fd >= 0) {
    // Mounted: let the waiting parent return, and leave the terminal.
    const char ok = 'k';
    if (write(ready_fd, &ok, 1) != 1) {
    }
    close(ready_fd);
    const int null_fd = open("/dev/null", O_RDWR);
    const int log_fd = mo.log_file.empty()
                           ? -1
                           : open(mo.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (null_fd >= 0) {
      dup2(null_fd, 0);
      dup2(null_fd, 1);
      dup2(log_fd >= 0 ? log_fd : null_fd, 2);
      if (null_fd > 2) close(null_fd);
    }
    if (log_fd > 2) close(log_fd);
    if (log_fd < 0) {
      // Nobody reads stderr now: log_target (auto: journald, else syslog) gets the log.
      (void)ConfigureLogging(a.prog, {.level = level, .target = mo.log_target, .file = ""});
    }
    if (std::getenv("STRIA_LOG") == nullptr) spdlog::set_level(spdlog::level::from_str(level));
    LOG_INFO("mounted {} on {} (pid {})", a.device, a.mountpoint, getpid());
    if (chdir("/") != 0) {
    }
  }

  // The lease, locks and open-file replay after an MDS restart (client/session.h).
  ClientSession mds_session(client->get());
  mds_session.Start();
  fs.set_mds_session(&mds_session);

  mds_session.set_lease_check([&leases](bool registered) { leases.CheckRegistered(registered); });

  fuse_loop_config* loop = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(loop, 0);
  fuse_loop_cfg_set_max_threads(loop, static_cast<unsigned>(mo.max_threads));
  fuse_loop_cfg_set_idle_threads(loop, static_cast<unsigned>(mo.idle_threads));
  const int rc = fuse_session_loop_mt(se, loop);
  fuse_loop_cfg_destroy(loop);
  fs.StopLockWaits();  // their answers go out before the ring threads do
  FuseRing::Stop();
  LOG_INFO("unmounting {}", a.mountpoint);
  fs.StopPreOpens();  // those not taken join the gathered closes
  fs.FlushCloses();  // while the MDS session still runs
  fs.StopUnlinkWriteback();
  fs.StopLocalOpens();
  mds_session.set_lease_check(nullptr);
  leases.Stop();
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  fuse_opt_free_args(&args);
  return rc == 0 ? 0 : 1;
}

int Main(int argc, char** argv) {
  Args a;
  std::string argv0 = argc > 0 ? argv[0] : "stria-fuse";
  const bool as_mount_helper = argv0.substr(argv0.rfind('/') + 1).starts_with("mount.");
  a.prog = as_mount_helper ? "mount.stria" : "stria-fuse";

  CLI::App app{as_mount_helper ? "Mount a Stria filesystem (helper for mount -t stria)"
                               : "Mount a Stria filesystem with FUSE",
               a.prog};
  app.set_version_flag("--version", a.prog + " " + stria::kVersion + " (Stria)");
  app.add_option("device", a.device, "NID[,NID...]:/fsname, e.g. 127.0.0.1@tcp:9880:/training")
      ->required();
  app.add_option("mountpoint", a.mountpoint, "the directory to mount on")->required();
  app.add_option("-o", a.options, "mount options, comma separated")->allow_extra_args(false);
  app.add_option("--lnet-fallback", a.lnet_fallback,
                 "tcp: carry o2ib NIDs over TCP where this host has no RDMA device "
                 "(as -o lnet_fallback=tcp)")
      ->check(CLI::IsMember({"tcp", "none"}));
  CLI::Option* config_opt = app.add_option(
      "--config", a.config,
      "config file (default $STRIA_CONFIG, else /etc/stria/stria.conf if it exists; '' for "
      "none): its [client] and [global] mount options come before -o");
  if (as_mount_helper) {
    bool no_mtab = false;
    app.add_flag("-s", a.sloppy, "sloppy: drop unknown -o options with a warning");
    app.add_flag("-f", a.fake, "fake: check everything but do not mount");
    app.add_flag("-n", no_mtab, "do not write /etc/mtab (there is none)");
    app.add_flag("-v", a.verbose, "verbose");
  } else {
    app.add_flag("-f,--foreground", a.foreground, "stay in the foreground");
    app.add_flag("-d,--debug", a.debug, "FUSE debug output (implies -f)");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a bad command line is mount(8)'s "incorrect invocation".
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (a.debug) a.foreground = true;
  a.config_given = config_opt->count() > 0;

  auto spec = ParseMountSpec(a.device);
  if (!spec.ok()) return Fail(a, spec.status().message(), kExitUsage);
  auto from_config = LoadMountConfig(a.config, a.config_given);
  if (!from_config.ok()) return Fail(a, from_config.status().message(), kExitUsage);
  struct stat st;
  if (stat(a.mountpoint.c_str(), &st) != 0) {
    return Fail(a, "mount point " + a.mountpoint + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return Fail(a, "mount point " + a.mountpoint + " is not a directory");
  std::vector<std::string> options = std::move(*from_config);
  options.insert(options.end(), a.options.begin(), a.options.end());
  auto mo = ParseMountOptions(options, a.device, geteuid() == 0, a.sloppy);
  if (!mo.ok()) return Fail(a, mo.status().message());
  for (const std::string& o : mo->ignored) {
    std::fprintf(stderr, "%s: ignoring unknown option '%s' (-s)\n", a.prog.c_str(), o.c_str());
  }
  // The MGS NIDs must be reachable on some LND here: an o2ib NID without a device fails now,
  // with the one message, unless the fallback allows TCP.
  lnet::SetBusyPollUs(std::max(mo->busy_poll_us, 0));  // over io_uring, see Serve
  Status lnd = lnet::ConfigureLndsFromOptions(
      !a.lnet_fallback.empty() ? a.lnet_fallback : mo->lnet_fallback, mo->o2ib_poll);
  if (lnd.ok()) lnd = lnet::CheckNids(spec->mgs_nids);
  if (!lnd.ok()) return Fail(a, lnd.message());
  if (a.fake) return 0;

  if (a.foreground) return Serve(a, *spec, *mo, -1);

  // Background: the child mounts and serves; this process waits until the child says the
  // mount exists (exit 0) or the child fails (its exit status; it printed why).
  int fds[2];
  if (pipe(fds) != 0) return Fail(a, std::string("pipe: ") + std::strerror(errno), kExitSystem);
  const pid_t pid = fork();
  if (pid < 0) return Fail(a, std::string("fork: ") + std::strerror(errno), kExitSystem);
  if (pid == 0) {
    close(fds[0]);
    setsid();
    _exit(Serve(a, *spec, *mo, fds[1]));
  }
  close(fds[1]);
  char c = 0;
  ssize_t n;
  do {
    n = read(fds[0], &c, 1);
  } while (n < 0 && errno == EINTR);
  close(fds[0]);
  if (n == 1 && c == 'k') return 0;
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return WEXITSTATUS(status);
  return Fail(a, "the mount daemon died before the mount was ready");
}

}  // namespace
}  // namespace stria::client::fuse

int main(int argc, char** argv) { return stria::client::fuse::Main(argc, argv); }
