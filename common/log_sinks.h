// spdlog sinks for the system log, each sending one datagram per line to a Unix socket:
// SyslogSink (RFC 3164, as syslog(3) writes to /dev/log) and JournaldSink (journald's native
// protocol, as sd_journal_send writes to /run/systemd/journal/socket). The socket path is a
// parameter, so tests read what a daemon logs from a socket of their own. A send that fails
// (no log daemon) drops the line, as syslog(3) does; dropped() counts them.
//
// Thread-safety: spdlog's base_sink serialises sink_it_ with its mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include <spdlog/sinks/base_sink.h>

namespace stria {

class DatagramLogSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  DatagramLogSink(std::string socket_path, std::string ident);
  ~DatagramLogSink() override;
  uint64_t dropped() const { return dropped_.load(); }

 protected:
  // The datagram for one message.
  virtual std::string Format(const spdlog::details::log_msg& msg) = 0;
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

  // The syslog(3) severity of an spdlog level (7 debug ... 2 critical).
  static int Severity(spdlog::level::level_enum level);

  const std::string socket_path_;
  const std::string ident_;
  const int pid_;

 private:
  int fd_ = -1;
  std::atomic<uint64_t> dropped_{0};
};

// "<PRI>Mmm dd hh:mm:ss IDENT[PID]: MESSAGE", facility daemon.
class SyslogSink final : public DatagramLogSink {
 public:
  using DatagramLogSink::DatagramLogSink;

 protected:
  std::string Format(const spdlog::details::log_msg& msg) override;
};

// PRIORITY=, SYSLOG_FACILITY=, SYSLOG_IDENTIFIER=, SYSLOG_PID=, MESSAGE= (a message with a
// newline in the binary form: name, '\n', 64-bit little-endian length, bytes).
class JournaldSink final : public DatagramLogSink {
 public:
  using DatagramLogSink::DatagramLogSink;

 protected:
  std::string Format(const spdlog::details::log_msg& msg) override;
};

}  // namespace stria
