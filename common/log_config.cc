#include "common/log_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "common/log.h"
#include "common/log_sinks.h"

namespace stria {

namespace {

constexpr const char* kLinePattern = "%Y-%m-%d %H:%M:%S.%e %n[%P] %^%l%$ %v";

}  // namespace

bool ValidLogLevel(std::string_view level) {
  return level.empty() || level == "trace" || level == "debug" || level == "info" ||
         level == "warn" || level == "error";
}

LogEnvironment ProbeLogEnvironment() {
  LogEnvironment env;
  struct stat st{};
  if (fstat(2, &st) != 0) {
    env.stderr_readable = false;
  } else if (S_ISCHR(st.st_mode) && !isatty(2)) {
    env.stderr_readable = false;  // /dev/null and the like
  } else if (S_ISSOCK(st.st_mode)) {
    // systemd's StandardError=journal: $JOURNAL_STREAM is "DEVICE:INODE" of that socket.
    if (const char* js = std::getenv("JOURNAL_STREAM")) {
      unsigned long long dev = 0, ino = 0;
      if (sscanf(js, "%llu:%llu", &dev, &ino) == 2 && dev == st.st_dev && ino == st.st_ino) {
        env.stderr_is_journal = true;
      }
    }
  }
  env.journal_socket_exists = access(kJournalSocket, W_OK) == 0;
  return env;
}

Result<LogDestination> ResolveLogDestination(const LogOptions& options, const LogEnvironment& env) {
  if (!ValidLogLevel(options.level)) {
    return Status(Code::kInval, "log level '" + options.level +
                                    "': expected trace, debug, info, warn or error");
  }
  if (!options.file.empty()) return LogDestination{LogSink::kFile, options.file};
  const std::string& t = options.target;
  auto socket_of = [&](std::string_view name, const char* def) -> std::string {
    if (t.size() == name.size()) return def;
    return t.substr(name.size() + 1);
  };
  auto is = [&](std::string_view name) {
    return t == name || (t.starts_with(std::string(name) + ":") && t.size() > name.size() + 1);
  };
  if (t.empty() || t == "auto") {
    if (env.stderr_readable && !env.stderr_is_journal) return LogDestination{LogSink::kStderr, ""};
    if (env.journal_socket_exists) return LogDestination{LogSink::kJournald, kJournalSocket};
    if (env.stderr_is_journal) return LogDestination{LogSink::kStderr, ""};
    return LogDestination{LogSink::kSyslog, kSyslogSocket};
  }
  if (t == "stderr") return LogDestination{LogSink::kStderr, ""};
  if (is("syslog")) return LogDestination{LogSink::kSyslog, socket_of("syslog", kSyslogSocket)};
  if (is("journald")) {
    return LogDestination{LogSink::kJournald, socket_of("journald", kJournalSocket)};
  }
  return Status(Code::kInval, "log target '" + t +
                                  "': expected auto, stderr, syslog[:SOCKET] or journald[:SOCKET]");
}

Status ConfigureLogging(std::string_view process_name, const LogOptions& options) {
  STRIA_ASSIGN_OR_RETURN(LogDestination dest,
                         ResolveLogDestination(options, ProbeLogEnvironment()));
  const std::string name(process_name);
  spdlog::sink_ptr sink;
  switch (dest.sink) {
    case LogSink::kStderr:
      sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
      break;
    case LogSink::kFile:
      try {
        sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(dest.path, /*truncate=*/false);
      } catch (const spdlog::spdlog_ex& e) {
        return Status(Code::kInval, "log file " + dest.path + ": " + e.what());
      }
      break;
    case LogSink::kSyslog:
      sink = std::make_shared<SyslogSink>(dest.path, name);
      break;
    case LogSink::kJournald:
      sink = std::make_shared<JournaldSink>(dest.path, name);
      break;
  }
  auto logger = std::make_shared<spdlog::logger>(name, sink);
  if (dest.sink == LogSink::kStderr || dest.sink == LogSink::kFile) {
    logger->set_pattern(kLinePattern);
  } else {
    logger->set_pattern("%v");  // the log daemon stamps time, name and pid
  }
  spdlog::set_default_logger(logger);
  std::string lvl = options.level.empty() ? "info" : options.level;
  if (const char* env = std::getenv("STRIA_LOG")) lvl = env;
  spdlog::set_level(spdlog::level::from_str(lvl));
  spdlog::flush_on(spdlog::level::info);
  return Status::Ok();
}

}  // namespace stria
