#include "common/log_config.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "common/log_sinks.h"

namespace stria {
namespace {

TEST(LogDestinationTest, AutoFollowsWhereStderrGoes) {
  LogOptions o;  // target auto
  LogEnvironment terminal_or_file{.stderr_readable = true};
  EXPECT_EQ(ResolveLogDestination(o, terminal_or_file)->sink, LogSink::kStderr);
  // Background daemon (stderr /dev/null): journald when its socket exists, else syslog.
  LogEnvironment detached{.stderr_readable = false, .journal_socket_exists = true};
  auto d = ResolveLogDestination(o, detached);
  EXPECT_EQ(d->sink, LogSink::kJournald);
  EXPECT_EQ(d->path, kJournalSocket);
  detached.journal_socket_exists = false;
  d = ResolveLogDestination(o, detached);
  EXPECT_EQ(d->sink, LogSink::kSyslog);
  EXPECT_EQ(d->path, kSyslogSocket);
  // A systemd service: stderr is the journal stream; log natively (with priorities).
  LogEnvironment service{.stderr_readable = true, .stderr_is_journal = true,
                         .journal_socket_exists = true};
  EXPECT_EQ(ResolveLogDestination(o, service)->sink, LogSink::kJournald);
}

TEST(LogDestinationTest, ExplicitTargetsAndFile) {
  LogEnvironment env;
  LogOptions o;
  o.target = "stderr";
  EXPECT_EQ(ResolveLogDestination(o, env)->sink, LogSink::kStderr);
  o.target = "syslog";
  EXPECT_EQ(ResolveLogDestination(o, env)->path, "/dev/log");
  o.target = "syslog:/run/x.sock";
  EXPECT_EQ(ResolveLogDestination(o, env)->path, "/run/x.sock");
  o.target = "journald:/tmp/j.sock";
  EXPECT_EQ(ResolveLogDestination(o, env)->sink, LogSink::kJournald);
  EXPECT_EQ(ResolveLogDestination(o, env)->path, "/tmp/j.sock");
  o.file = "/var/log/stria/mds.log";  // a file wins over the target
  EXPECT_EQ(ResolveLogDestination(o, env)->sink, LogSink::kFile);
  EXPECT_EQ(ResolveLogDestination(o, env)->path, "/var/log/stria/mds.log");
}

TEST(LogDestinationTest, BadTargetOrLevelIsRefused) {
  LogEnvironment env;
  for (const char* t : {"file", "syslog:", "journal", "stdout", "Syslog"}) {
    LogOptions o;
    o.target = t;
    auto d = ResolveLogDestination(o, env);
    ASSERT_FALSE(d.ok()) << t;
    EXPECT_EQ(d.status().code(), Code::kInval);
  }
  LogOptions o;
  o.level = "verbose";  // spdlog would silently turn this into "off"
  EXPECT_FALSE(ResolveLogDestination(o, env).ok());
  EXPECT_TRUE(ValidLogLevel("warn"));
  EXPECT_FALSE(ValidLogLevel("warning"));
}

// A datagram socket standing in for /dev/log or journald's socket.
class LogSocket {
 public:
  LogSocket() {
    char tmpl[] = "/tmp/stria-logsock-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/log.sock";
    fd_ = socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path_.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~LogSocket() {
    close(fd_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  std::string Receive() {
    char buf[65536];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, n) : std::string();
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

TEST(LogSinkTest, SyslogDatagram) {
  LogSocket sock;
  auto logger = std::make_shared<spdlog::logger>("t", std::make_shared<SyslogSink>(sock.path(), "stria-oss"));
  logger->warn("OST{:04x} is full", 3);
  const std::string d = sock.Receive();
  // facility daemon (3) * 8 + warning (4) = 28
  EXPECT_TRUE(d.starts_with("<28>")) << d;
  EXPECT_TRUE(d.ends_with(" stria-oss[" + std::to_string(getpid()) + "]: OST0003 is full")) << d;
}

TEST(LogSinkTest, JournaldDatagram) {
  LogSocket sock;
  auto sink = std::make_shared<JournaldSink>(sock.path(), "stria-mds");
  auto logger = std::make_shared<spdlog::logger>("t", sink);
  logger->error("cannot open {}", "/srv/mdt0");
  std::string d = sock.Receive();
  EXPECT_NE(d.find("PRIORITY=3\n"), std::string::npos) << d;
  EXPECT_NE(d.find("SYSLOG_IDENTIFIER=stria-mds\n"), std::string::npos) << d;
  EXPECT_NE(d.find("MESSAGE=cannot open /srv/mdt0\n"), std::string::npos) << d;
  // A message with a newline goes in the binary form: name, newline, 64-bit LE length.
  logger->info("two\nlines");
  d = sock.Receive();
  const std::string want = std::string("MESSAGE\n") + '\x09' + std::string(7, '\0') + "two\nlines\n";
  EXPECT_NE(d.find(want), std::string::npos);
  EXPECT_EQ(sink->dropped(), 0u);
}

TEST(LogSinkTest, NoLogDaemonDropsAndCounts) {
  auto sink = std::make_shared<SyslogSink>("/nonexistent/dev-log", "x");
  spdlog::logger logger("t", sink);
  logger.info("lost");
  EXPECT_EQ(sink->dropped(), 1u);
}

TEST(ConfigureLoggingTest, FileGetsTheLines) {
  char tmpl[] = "/tmp/stria-logfile-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string file = dir + "/mds.log";
  LogOptions o;
  o.file = file;
  o.level = "debug";
  unsetenv("STRIA_LOG");
  ASSERT_TRUE(ConfigureLogging("stria-mds", o).ok());
  LOG_DEBUG("debug line {}", 1);
  LOG_INFO("info line");
  spdlog::default_logger()->flush();
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("stria-mds[" + std::to_string(getpid()) + "] debug debug line 1"),
            std::string::npos) << text.str();
  EXPECT_NE(text.str().find("info info line"), std::string::npos) << text.str();
  // A file that cannot be opened is an error, not silence.
  o.file = file + "/x.log";  // under a regular file
  EXPECT_FALSE(ConfigureLogging("stria-mds", o).ok());
  InitLogging("test", "info");
  unlink(file.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace stria
