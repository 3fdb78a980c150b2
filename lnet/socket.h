// Small TCP helpers shared by the server and client sides of the TCP LND (and address
// resolution, which the o2ib LND shares).
//
// Every socket is non-blocking; SendAll/RecvAll wait with poll(2) up to a deadline, so no call
// blocks for ever on a stalled peer. Thread-safety: functions; a socket must not be read (or
// written) by two threads at once.
#pragma once

#include <netinet/in.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "lnet/nid.h"

namespace stria::lnet {

using Clock = std::chrono::steady_clock;

// The IPv4 address and port of nid (a host name is looked up). kDisconnected on failure.
Result<sockaddr_in> ResolveAddress(const Nid& nid);

// Resolves and binds a listening socket on nid's address and port (port 0: any).
Result<int> TcpListen(const Nid& nid, int backlog = 1024);

// Connects to nid within timeout_ms; kDisconnected with the reason on failure. A loopback
// address is reached over the local socket that stands for it where its server has one
// (LocalListen), else over TCP.
Result<int> TcpConnect(const Nid& nid, int timeout_ms);

// The local socket: a TCP listener reachable at a loopback address (127.0.0.0/8, or any
// address) also listens on an abstract Unix socket named after that address and port, as
// LNet's lo LND carries a node's messages to itself. A peer on the same host and in the same
// network namespace then skips TCP/IP (no segmentation, acknowledgements or softirq): the
// same frames, read and written the same way. LndConfig::local_sockets (STRIA_LNET_LOCAL=0 in
// the environment) turns it off in a process, on both sides.
bool LocalSocketsEnabled();
// The local listener for the TCP listener tcp_fd: -1 when it is not reachable at a loopback
// address or local sockets are off; an error when the name is taken.
Result<int> LocalListen(int tcp_fd, int backlog = 1024);
// Puts a local socket in non-blocking mode with TCP's in-flight room (4 MiB).
void TuneLocalSocket(int fd);
// Whether fd is a local socket (AF_UNIX).
bool IsLocalSocket(int fd);

// Zero-copy sends on a local socket: SpliceAll passes the pages of iov to the peer by
// reference (vmsplice into this thread's pipe, then splice into the socket; the kernel
// attaches the pages to the socket's buffers instead of copying them), which halves the
// CPU of moving a MiB between two processes. The peer reads the pages as they are when it
// reads, so the sender must leave them unchanged until the peer has read them: until its
// answer arrives, or UnreadBytes says 0. Use it only for bulk that carries a crc the peer
// verifies, so that a page changed too early is a checksum error, never silent. Worth it
// from kSpliceMinBytes. Falls back to copying (SendAll) where splicing is not possible. As
// with SendAll, the iov array is modified as it is consumed.
inline constexpr size_t kSpliceMinBytes = 32u << 10;
Status SpliceAll(int fd, iovec* iov, int iovcnt, Clock::time_point deadline);
// Bytes sent on fd that the peer has not read yet (SIOCOUTQ); 0 on error.
size_t UnreadBytes(int fd);

// Writes all of iov (the array is modified as it is consumed). kDisconnected or kTimeout.
// pass_fd >= 0 (a local socket only) goes to the peer with the first byte (SCM_RIGHTS).
Status SendAll(int fd, iovec* iov, int iovcnt, Clock::time_point deadline, int pass_fd = -1);

// recv(2) on a local socket that also takes a descriptor the peer passed with these bytes:
// it goes to *passed, closing the one there before (only the latest counts).
ssize_t RecvPassingFd(int fd, void* buf, size_t len, int* passed);

// Reads exactly len bytes into buf. kDisconnected (EOF or error) or kTimeout.
Status RecvAll(int fd, void* buf, size_t len, Clock::time_point deadline);

// Reads at least `min` and at most `max` bytes into buf (whatever has arrived beyond `min`
// comes in the same call), and returns how many. With wait_first it polls before the first
// read: for a reply to a request just sent, which is never there yet, that saves a read
// that would only say EAGAIN. kDisconnected (EOF or error) or kTimeout.
Result<size_t> RecvAtLeast(int fd, void* buf, size_t min, size_t max, Clock::time_point deadline,
                           bool wait_first);

// Puts fd in non-blocking mode and sets TCP_NODELAY.
void TuneSocket(int fd);

uint16_t LocalPort(int fd);
// "ADDR:PORT"; a local socket's peer is "127.0.0.1:local-pid-PID", the address it would
// come from over TCP (root squash's NID lists match it as such).
std::string PeerName(int fd);

}  // namespace stria::lnet
