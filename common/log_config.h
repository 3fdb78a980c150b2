// Where a daemon's log goes: stderr, the system log (journald or syslog) or a file.
//
// LogOptions come from --log-level, --log-target and --log-file (stria-mds, stria-oss) or
// the mount options log_level=, log_target=, log= (stria-fuse), or the config file. Targets:
//
//   auto            (the default) stderr when someone reads it: a terminal, a file or a pipe
//                   (a shell redirect, scripts/stria-local, a container runtime); the system
//                   log when stderr goes nowhere (/dev/null, closed: a daemon in the
//                   background) or to journald (a systemd service: $JOURNAL_STREAM names
//                   stderr). The system log is journald when its socket exists, else syslog.
//   stderr          always stderr
//   syslog[:SOCK]   RFC 3164 datagrams to SOCK (default /dev/log), facility daemon
//   journald[:SOCK] journald's native protocol to SOCK (default
//                   /run/systemd/journal/socket): PRIORITY, SYSLOG_IDENTIFIER, MESSAGE
//
// A log file (LogOptions::file) wins over the target: lines are appended to it.
//
// Thread-safety: ConfigureLogging() once at start (and again in a forked child); logging itself
// is thread-safe (spdlog).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace stria {

inline constexpr const char* kSyslogSocket = "/dev/log";
inline constexpr const char* kJournalSocket = "/run/systemd/journal/socket";

struct LogOptions {
  std::string level;            // trace, debug, info, warn, error; empty: info
  std::string target = "auto";  // see above
  std::string file;             // append here instead (the target is then not used)
};

enum class LogSink { kStderr, kSyslog, kJournald, kFile };

struct LogDestination {
  LogSink sink = LogSink::kStderr;
  std::string path;  // the socket or the file; empty for stderr
};

// What `auto` looks at, probed from the process (ProbeLogEnvironment) or given by a test.
struct LogEnvironment {
  bool stderr_readable = true;  // a terminal, a regular file, a pipe or a socket not journald's
  bool stderr_is_journal = false;  // $JOURNAL_STREAM is stderr's device:inode
  bool journal_socket_exists = false;
};

LogEnvironment ProbeLogEnvironment();

// Checks `options` and picks the destination. kInval for an unknown level or target.
Result<LogDestination> ResolveLogDestination(const LogOptions& options, const LogEnvironment& env);

// Whether `level` is one ConfigureLogging accepts (empty counts as "info").
bool ValidLogLevel(std::string_view level);

// Makes the default logger write to the destination `options` resolve to, each line with
// `process_name` (and the pid). $STRIA_LOG, when set, wins over options.level. kInval for a
// bad option, an errno status when the log file cannot be opened. Callable again (a forked
// daemon re-targets its log once it has left the terminal).
Status ConfigureLogging(std::string_view process_name, const LogOptions& options);

}  // namespace stria
