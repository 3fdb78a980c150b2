#include "client/fuse/mount_options.h"

#include <charconv>
#include <span>

#include "client/fuse/statahead.h"
#include "common/log_config.h"

namespace stria::client::fuse {

namespace {

std::vector<std::string> SplitCommas(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      cur += s[++i];
    } else if (s[i] == ',') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += s[i];
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::string EscapeCommas(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ',' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

Status ParseInt(std::string_view opt, std::string_view value, int lo, int hi, int* out) {
  int v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || v < lo || v > hi) {
    return Status(Code::kInval, "option " + std::string(opt) + "=" + std::string(value) +
                                    ": expected a number from " + std::to_string(lo) + " to " +
                                    std::to_string(hi));
  }
  *out = v;
  return Status::Ok();
}

bool IsFstabOnly(std::string_view o) {
  return o == "defaults" || o == "auto" || o == "noauto" || o == "_netdev" || o == "nofail" ||
         o == "user" || o == "users" || o == "nouser" || o == "owner" || o == "group" ||
         o.starts_with("x-") || o.starts_with("comment=");
}

// Generic mount flags (mount(8), the kernel's MS_* flags) and libfuse's own mount options:
// passed on to libfuse, which sets them on the mount.
bool IsPassedToFuse(std::string_view key, bool has_value) {
  static constexpr std::string_view kFlags[] = {
      "rw", "ro", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "async", "sync",
      "dirsync", "atime", "noatime", "diratime", "nodiratime", "relatime", "norelatime",
      "strictatime", "nostrictatime", "lazytime", "nolazytime", "symfollow", "nosymfollow",
      "allow_root", "auto_unmount"};
  static constexpr std::string_view kValued[] = {"fsname", "subtype", "max_read", "blksize",
                                                 "context", "fscontext", "defcontext",
                                                 "rootcontext"};
  const std::span<const std::string_view> known =
      has_value ? std::span<const std::string_view>(kValued) : std::span<const std::string_view>(kFlags);
  for (std::string_view f : known) {
    if (key == f) return true;
  }
  return false;
}

}  // namespace

std::string MountOptions::FuseOptString() const {
  std::string s;
  for (const auto& o : fuse_opts) {
    if (!s.empty()) s += ',';
    s += o;
  }
  return s;
}

Result<MountOptions> ParseMountOptions(const std::vector<std::string>& option_args,
                                       std::string_view device, bool is_root, bool sloppy) {
  MountOptions m;
  bool allow_other = is_root;
  bool have_fsname = false, have_subtype = false;
  for (const std::string& arg : option_args) {
    for (const std::string& o : SplitCommas(arg)) {
      const size_t eq = o.find('=');
      const std::string key = o.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : o.substr(eq + 1);
      if (IsFstabOnly(o)) continue;
      if (key == "io_threads") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 1, 1024, &m.io_threads));
      } else if (key == "max_threads") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 2, 4096, &m.max_threads));
      } else if (key == "idle_threads") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 1, 4096, &m.idle_threads));
      } else if (key == "timeout") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 1, 86400, &m.timeout_s));
      } else if (key == "close_gather_ms") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 0, 600'000, &m.close_gather_ms));
      } else if (key == "open_register_ms") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 0, 10'000, &m.open_register_ms));
      } else if (key == "open_intent_ms") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 0, 10'000, &m.open_intent_ms));
      } else if (key == "statahead_max") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 0, Statahead::kMaxWindow, &m.statahead_max));
      } else if (key == "mirror_timeout") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 1, 3600, &m.mirror_timeout_s));
      } else if (key == "connect_timeout") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 1, 3600, &m.connect_timeout_s));
      } else if (key == "log") {
        if (value.empty()) return Status(Code::kInval, "option log= needs a file name");
        m.log_file = value;
      } else if (key == "log_level") {
        if (!ValidLogLevel(value) || value.empty()) {
          return Status(Code::kInval, "option log_level=" + value +
                                          ": trace, debug, info, warn or error");
        }
        m.log_level = value;
      } else if (key == "log_target") {
        LogOptions lo;
        lo.target = value;
        if (auto d = ResolveLogDestination(lo, LogEnvironment{}); !d.ok()) {
          return Status(Code::kInval, "option " + d.status().message());
        }
        m.log_target = value;
      } else if (key == "key_file") {
        if (value.empty()) return Status(Code::kInval, "option key_file= needs a file name");
        m.key_file = value;
      } else if (key == "lnet_fallback") {
        if (value != "tcp" && value != "none") {
          return Status(Code::kInval, "option lnet_fallback=" + value + ": tcp or none");
        }
        m.lnet_fallback = value;
      } else if (key == "busy_poll_us") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 0, 10'000, &m.busy_poll_us));
      } else if (o == "splice_writes" || o == "nosplice_writes") {
        m.splice_writes = o == "splice_writes";
      } else if (o == "unlink_writeback" || o == "nounlink_writeback") {
        m.unlink_writeback = o == "unlink_writeback";
      } else if (o == "io_uring" || o == "noio_uring") {
        m.io_uring = o == "io_uring";
      } else if (key == "ring_threads") {
        STRIA_RETURN_IF_ERROR(ParseInt(key, value, 1, 64, &m.ring_threads));
      } else if (o == "o2ib_poll") {
        m.o2ib_poll = true;
      } else if (o == "allow_other") {
        allow_other = true;
      } else if (o == "noallow_other") {
        allow_other = false;
      } else if (o == "default_permissions") {
        m.default_permissions = true;
      } else if (o == "nodefault_permissions") {
        m.default_permissions = false;
      } else if (o == "flock") {
        m.locks = LockMode::kCluster;
      } else if (o == "localflock") {
        m.locks = LockMode::kLocal;
      } else if (o == "noflock") {
        m.locks = LockMode::kNone;
      } else if (o == "user_xattr" || o == "nouser_xattr") {
        m.user_xattr = o == "user_xattr";
      } else if (o == "lazystatfs" || o == "nolazystatfs") {
        m.lazy_statfs = o == "lazystatfs";
      } else if (IsPassedToFuse(key, eq != std::string::npos)) {
        have_fsname |= key == "fsname";
        have_subtype |= key == "subtype";
        m.fuse_opts.push_back(EscapeCommas(o));
      } else if (sloppy) {
        m.ignored.push_back(o);
      } else {
        return Status(Code::kInval, "unknown option '" + o + "', won't mount");
      }
    }
  }
  if (m.idle_threads > m.max_threads) m.idle_threads = m.max_threads;
  if (!have_fsname) m.fuse_opts.push_back("fsname=" + EscapeCommas(device));
  if (!have_subtype) m.fuse_opts.push_back("subtype=stria");
  if (allow_other) m.fuse_opts.push_back("allow_other");
  // The kernel checks mode bits too (the MDS stays the authority): without it a path walk
  // through cached dentries skips the search permission of each directory.
  if (m.default_permissions) m.fuse_opts.push_back("default_permissions");
  return m;
}

}  // namespace stria::client::fuse
