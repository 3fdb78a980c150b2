// Small TCP helpers shared by the server and client sides of the TCP LND.
//
// Every socket is non-blocking; SendAll/RecvAll wait with poll(2) up to a deadline, so no call
// blocks for ever on a stalled peer. Thread-safety: functions; a socket must not be read (or
// written) by two threads at once.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "lnet/nid.h"

namespace stria::lnet {

using Clock = std::chrono::steady_clock;

// Resolves and binds a listening socket on nid's address and port (port 0: any).
Result<int> TcpListen(const Nid& nid, int backlog = 1024);

// Connects to nid within timeout_ms; kDisconnected with the reason on failure.
Result<int> TcpConnect(const Nid& nid, int timeout_ms);

// Writes all of iov (the array is modified as it is consumed). kDisconnected or kTimeout.
Status SendAll(int fd, iovec* iov, int iovcnt, Clock::time_point deadline);

// Reads exactly len bytes into buf. kDisconnected (EOF or error) or kTimeout.
Status RecvAll(int fd, void* buf, size_t len, Clock::time_point deadline);

// Puts fd in non-blocking mode and sets TCP_NODELAY.
void TuneSocket(int fd);

uint16_t LocalPort(int fd);
std::string PeerName(int fd);  // "ADDR:PORT"

// Where an o2ib NID is asked for on a machine with no RDMA device, logs once why TCP is used.
void NoteRdmaFallback(const Nid& nid);

}  // namespace stria::lnet
