#include "common/log_sinks.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

namespace stria {

namespace {

constexpr int kFacilityDaemon = 3;
constexpr size_t kMaxMessage = 32 * 1024;  // longer lines are cut, as syslog(3) does

}  // namespace

DatagramLogSink::DatagramLogSink(std::string socket_path, std::string ident)
    : socket_path_(std::move(socket_path)), ident_(std::move(ident)), pid_(getpid()) {
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

DatagramLogSink::~DatagramLogSink() {
  if (fd_ >= 0) close(fd_);
}

int DatagramLogSink::Severity(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return 7;
    case spdlog::level::info: return 6;
    case spdlog::level::warn: return 4;
    case spdlog::level::err: return 3;
    case spdlog::level::critical: return 2;
    default: return 6;
  }
}

void DatagramLogSink::sink_it_(const spdlog::details::log_msg& msg) {
  const std::string datagram = Format(msg);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd_ < 0 || socket_path_.size() >= sizeof(addr.sun_path)) {
    dropped_.fetch_add(1);
    return;
  }
  std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  const ssize_t n = sendto(fd_, datagram.data(), datagram.size(), MSG_NOSIGNAL,
                           reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  if (n != static_cast<ssize_t>(datagram.size())) dropped_.fetch_add(1);
}

std::string SyslogSink::Format(const spdlog::details::log_msg& msg) {
  std::string_view text(msg.payload.data(), std::min(msg.payload.size(), kMaxMessage));
  const time_t t = std::chrono::system_clock::to_time_t(msg.time);
  tm local{};
  localtime_r(&t, &local);
  char stamp[32];
  strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &local);
  std::string out = "<" + std::to_string(kFacilityDaemon * 8 + Severity(msg.level)) + ">";
  out += stamp;
  out += " " + ident_ + "[" + std::to_string(pid_) + "]: ";
  out += text;
  return out;
}

std::string JournaldSink::Format(const spdlog::details::log_msg& msg) {
  std::string_view text(msg.payload.data(), std::min(msg.payload.size(), kMaxMessage));
  std::string out;
  out += "PRIORITY=" + std::to_string(Severity(msg.level)) + "\n";
  out += "SYSLOG_FACILITY=" + std::to_string(kFacilityDaemon) + "\n";
  out += "SYSLOG_IDENTIFIER=" + ident_ + "\n";
  out += "SYSLOG_PID=" + std::to_string(pid_) + "\n";
  if (text.find('\n') == std::string_view::npos) {
    out += "MESSAGE=";
    out += text;
    out += "\n";
  } else {
    out += "MESSAGE\n";
    uint64_t len = text.size();
    for (int i = 0; i < 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
    out += text;
    out += "\n";
  }
  return out;
}

}  // namespace stria
