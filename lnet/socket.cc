#include "lnet/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>

#include "common/log.h"
#include "lnet/lnd.h"

namespace stria::lnet {
namespace {

Result<sockaddr_in> ResolveIpv4(const Nid& nid) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(nid.port);
  if (inet_pton(AF_INET, nid.addr.c_str(), &sa.sin_addr) == 1) return sa;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(nid.addr.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return Status(Code::kDisconnected,
                  "cannot resolve " + nid.addr + ": " + std::string(gai_strerror(rc)));
  }
  sa.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return sa;
}

int MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

// Waits for `events` on fd until the deadline. kTimeout when it passes.
Status WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ms = MsLeft(deadline);
    const int rc = poll(&p, 1, ms);
    if (rc > 0) return Status::Ok();
    if (rc == 0) return Status(Code::kTimeout, "peer did not answer in time");
    if (errno != EINTR) return ErrnoStatus("poll", errno);
  }
}

bool IsLoopback(in_addr a) { return (ntohl(a.s_addr) >> 24) == 127; }

// The abstract Unix socket name that stands for a TCP listener at `sa` (a loopback address).
// Abstract names live in the network namespace, as loopback addresses do.
socklen_t LocalAddress(const sockaddr_in& sa, sockaddr_un* un) {
  *un = sockaddr_un{};
  un->sun_family = AF_UNIX;
  char addr[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof addr);
  const int n = snprintf(un->sun_path + 1, sizeof un->sun_path - 1, "stria-lnet/%s:%u", addr,
                         static_cast<unsigned>(ntohs(sa.sin_port)));
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

// A Unix socket may hold as much in flight as a TCP one grows to (tcp_wmem's 4 MiB). With the
// default (net.core.wmem_default, about 208 KiB) a sender would stop and wait for the reader
// several times per MiB of bulk. Beyond net.core.wmem_max this takes CAP_NET_ADMIN.
void SizeLocalBuffers(int fd) {
  int bytes = 4 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  }
}

// Connects to the local listener standing for `sa`; -1 when there is none.
int LocalConnect(const sockaddr_in& sa) {
  sockaddr_un un;
  const socklen_t len = LocalAddress(sa, &un);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&un), len) != 0) {
    close(fd);
    return -1;
  }
  SizeLocalBuffers(fd);
  return fd;
}

// This thread's pipe for SpliceAll: empty between calls (a call that fails closes it).
class SplicePipe {
 public:
  ~SplicePipe() { Close(); }
  bool Open() {
    if (r_ >= 0) return true;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    r_ = p[0];
    w_ = p[1];
    // A MiB at a time where fs.pipe-max-size allows; a smaller pipe only takes more calls.
    (void)fcntl(w_, F_SETPIPE_SZ, 1 << 20);
    return true;
  }
  void Close() {
    if (r_ >= 0) close(r_);
    if (w_ >= 0) close(w_);
    r_ = w_ = -1;
  }
  int r() const { return r_; }
  int w() const { return w_; }

 private:
  int r_ = -1;
  int w_ = -1;
};

thread_local SplicePipe tls_pipe;

// Steps *iov and *iovcnt past n bytes sent (and past the empty entries after them).
void ConsumeIov(iovec** iov, int* iovcnt, size_t n) {
  while (*iovcnt > 0 && n >= (*iov)->iov_len) {
    n -= (*iov)->iov_len;
    ++*iov;
    --*iovcnt;
  }
  if (*iovcnt > 0) {
    (*iov)->iov_base = static_cast<char*>((*iov)->iov_base) + n;
    (*iov)->iov_len -= n;
  }
}

// splice(2) into a socket whose peer has gone raises SIGPIPE, as a send without
// MSG_NOSIGNAL would; SpliceAll must fail with EPIPE instead, also in processes that keep
// SIGPIPE's default action (libstria's users). While alive, this thread has SIGPIPE blocked
// (where the process does not ignore it), and one raised meanwhile is discarded.
class NoSigpipe {
 public:
  NoSigpipe() {
    struct sigaction sa {};
    if (sigaction(SIGPIPE, nullptr, &sa) == 0 && sa.sa_handler == SIG_IGN) return;
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    already_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    active_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~NoSigpipe() {
    if (!active_) return;
    sigset_t pending;
    sigemptyset(&pending);
    if (!already_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
      const timespec now{};
      while (sigtimedwait(&pipe_, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

 private:
  bool active_ = false;
  bool already_pending_ = false;
  sigset_t pipe_{};
  sigset_t old_{};
};

}  // namespace

Result<sockaddr_in> ResolveAddress(const Nid& nid) { return ResolveIpv4(nid); }

void TuneSocket(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Result<int> TcpListen(const Nid& nid, int backlog) {
  STRIA_ASSIGN_OR_RETURN(sockaddr_in sa, ResolveIpv4(nid));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket", errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    Status st = ErrnoStatus("bind " + nid.ToString(), errno);
    close(fd);
    return st;
  }
  if (listen(fd, backlog) != 0) {
    Status st = ErrnoStatus("listen " + nid.ToString(), errno);
    close(fd);
    return st;
  }
  TuneSocket(fd);
  return fd;
}

bool LocalSocketsEnabled() { return CurrentLndConfig().local_sockets; }

Result<int> LocalListen(int tcp_fd, int backlog) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (!LocalSocketsEnabled() || getsockname(tcp_fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    return -1;
  }
  if (sa.sin_addr.s_addr == htonl(INADDR_ANY)) sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (!IsLoopback(sa.sin_addr)) return -1;
  sockaddr_un un;
  const socklen_t un_len = LocalAddress(sa, &un);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoStatus("socket(AF_UNIX)", errno);
  if (bind(fd, reinterpret_cast<sockaddr*>(&un), un_len) != 0 || listen(fd, backlog) != 0) {
    Status st = ErrnoStatus("binding the local socket " + std::string(un.sun_path + 1), errno);
    close(fd);
    return st;
  }
  return fd;
}

void TuneLocalSocket(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  SizeLocalBuffers(fd);
}

Result<int> TcpConnect(const Nid& nid, int timeout_ms) {
  STRIA_ASSIGN_OR_RETURN(sockaddr_in sa, ResolveIpv4(nid));
  if (LocalSocketsEnabled() && IsLoopback(sa.sin_addr)) {
    if (const int fd = LocalConnect(sa); fd >= 0) return fd;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket", errno);
  TuneSocket(fd);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 && errno != EINPROGRESS) {
    const int err = errno;
    close(fd);
    return Status(Code::kDisconnected, "connect " + nid.ToString() + ": " + strerror(err));
  }
  Status st = WaitFor(fd, POLLOUT, Clock::now() + std::chrono::milliseconds(timeout_ms));
  int err = 0;
  socklen_t len = sizeof err;
  if (st.ok()) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (!st.ok() || err != 0) {
    close(fd);
    return Status(Code::kDisconnected, "connect " + nid.ToString() + ": " +
                                           (st.ok() ? strerror(err) : "timed out"));
  }
  return fd;
}

Status SendAll(int fd, iovec* iov, int iovcnt, Clock::time_point deadline, int pass_fd) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  while (iovcnt > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(std::min(iovcnt, IOV_MAX));
    if (pass_fd >= 0) {  // goes with the first byte sent
      std::memset(control, 0, sizeof control);
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* cm = CMSG_FIRSTHDR(&msg);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
    }
    const ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n > 0) pass_fd = -1;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        STRIA_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline));
        continue;
      }
      return Status(Code::kDisconnected, std::string("send: ") + strerror(errno));
    }
    ConsumeIov(&iov, &iovcnt, static_cast<size_t>(n));
  }
  return Status::Ok();
}

ssize_t RecvPassingFd(int fd, void* buf, size_t len, int* passed) {
  iovec iov{buf, len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  if (n <= 0) return n;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int got = -1;
      std::memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
      if (*passed >= 0) close(*passed);  // only the latest counts
      *passed = got;
    }
  }
  return n;
}

bool IsLocalSocket(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 && ss.ss_family == AF_UNIX;
}

size_t UnreadBytes(int fd) {
  int n = 0;
  return ioctl(fd, SIOCOUTQ, &n) == 0 && n > 0 ? static_cast<size_t>(n) : 0;
}

Status SpliceAll(int fd, iovec* iov, int iovcnt, Clock::time_point deadline) {
  const NoSigpipe no_sigpipe;
  bool sent_any = false;
  while (iovcnt > 0) {
    if (iov->iov_len == 0) {
      ++iov;
      --iovcnt;
      continue;
    }
    if (!tls_pipe.Open()) break;
    const ssize_t in = vmsplice(tls_pipe.w(), iov, std::min(iovcnt, IOV_MAX), SPLICE_F_NONBLOCK);
    if (in <= 0) {
      if (in < 0 && errno == EINTR) continue;
      tls_pipe.Close();
      if (sent_any) return Status(Code::kDisconnected, std::string("vmsplice: ") + strerror(errno));
      break;  // nothing went: copy instead
    }
    sent_any = true;
    for (size_t left = static_cast<size_t>(in); left > 0;) {
      const ssize_t out = splice(tls_pipe.r(), nullptr, fd, nullptr, left, SPLICE_F_NONBLOCK);
      if (out > 0) {
        left -= static_cast<size_t>(out);
        continue;
      }
      if (out < 0 && errno == EINTR) continue;
      if (out < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (Status st = WaitFor(fd, POLLOUT, deadline); !st.ok()) {
          tls_pipe.Close();  // pages of this call still in it
          return st;
        }
        continue;
      }
      const int err = out < 0 ? errno : EPIPE;
      tls_pipe.Close();
      return Status(Code::kDisconnected, std::string("splice: ") + strerror(err));
    }
    ConsumeIov(&iov, &iovcnt, static_cast<size_t>(in));
  }
  return iovcnt > 0 ? SendAll(fd, iov, iovcnt, deadline) : Status::Ok();
}

Status RecvAll(int fd, void* buf, size_t len, Clock::time_point deadline) {
  return RecvAtLeast(fd, buf, len, len, deadline, /*wait_first=*/false).status();
}

Result<size_t> RecvAtLeast(int fd, void* buf, size_t min, size_t max, Clock::time_point deadline,
                           bool wait_first) {
  auto* p = static_cast<uint8_t*>(buf);
  size_t got = 0;
  if (wait_first) STRIA_RETURN_IF_ERROR(WaitFor(fd, POLLIN, deadline));
  while (got < min) {
    const ssize_t n = recv(fd, p + got, max - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Status(Code::kDisconnected, "peer closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      STRIA_RETURN_IF_ERROR(WaitFor(fd, POLLIN, deadline));
      continue;
    }
    return Status(Code::kDisconnected, std::string("recv: ") + strerror(errno));
  }
  return got;
}

uint16_t LocalPort(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return 0;
  return ntohs(sa.sin_port);
}

std::string PeerName(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "?";
  if (sa.sin_family == AF_UNIX) {
    // A local peer: named as its TCP connection would be, from the loopback address.
    ucred cred{};
    socklen_t cl = sizeof cred;
    const int pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 ? cred.pid : 0;
    return "127.0.0.1:local-pid-" + std::to_string(pid);
  }
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &sa.sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(sa.sin_port));
}

}  // namespace stria::lnet
