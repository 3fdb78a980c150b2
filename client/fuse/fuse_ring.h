// FUSE over io_uring (Linux 6.14 and later) beneath libfuse's request dispatch.
//
// Through /dev/fuse, every request wakes whichever stria-fuse worker the kernel picks, on
// whichever CPU the scheduler picks, and every reply wakes the application back: on a VM
// whose idle vCPUs are halted, those two cross-CPU wake-ups cost more than the work of a
// small request (docs/performance.md, "What the CPU goes to"). Over io_uring the kernel
// queues each request on the queue of the CPU that issued it; the threads serving that
// queue are pinned to that CPU, so the application and stria-fuse hand a request back and
// forth with plain context switches.
//
// Debian 12's libfuse (3.14) has no io_uring transport, so this one sits under it:
//  - libfuse still parses and dispatches every request and builds every reply. A request
//    taken from a ring entry is laid out as /dev/fuse would have delivered it (its headers
//    are copied in front of the payload, which stays where the kernel put it) and handed
//    to fuse_session_process_buf.
//  - Its reply reaches us through libfuse's custom-I/O writev, which finds the ring entry
//    by the request's unique ID and commits the reply into it (COMMIT_AND_FETCH). A READ
//    served on a ring thread is read straight into the entry (ReplySpace), so its data is
//    not copied again.
//  - The INIT reply is where the transport is negotiated: the kernel offers
//    FUSE_OVER_IO_URING when its fuse.enable_uring parameter is on (EnableInKernel sets it,
//    as root), and the custom-I/O writev adds the flag to libfuse's reply. The ring
//    threads register their entries once the kernel has taken that reply.
//  - The INIT reply also gets FUSE_PARALLEL_DIROPS where the kernel offers it, on either
//    transport (StriaFs::Init asks for FUSE_CAP_PARALLEL_DIROPS): libfuse before 3.17 sets
//    FUSE_CAP_PARALLEL_DIROPS in conn->want and never passes it on (libfuse #861, fixed by
//    c9905341), so the kernel took the directory's mutex around every LOOKUP and READDIR
//    and a directory's lookups went to the MDS one round trip at a time, however many
//    processes opened its files.
//  - Forgets, interrupts and notifications stay on /dev/fuse, as the kernel sends them,
//    and so does everything before the kernel's queues are all registered, or every
//    request where the kernel does not offer io_uring: libfuse's own loop keeps serving
//    the device.
//
// Each queue (one per possible CPU) is served by `threads_per_queue` threads, each with
// its own io_uring and one entry, so that a handler that waits (for an OST, the MDS) holds
// up only its own entry; when a queue's last idle thread takes a request, another starts
// (up to max_threads_per_queue), as libfuse's loop adds workers. A request answered later
// by another thread (a lock wait, lock_waiters.h, which can last as long as another
// process holds the lock) keeps its entry until then; its thread arms another if it has
// no other free, so waiters never hold a thread, nor every entry of a CPU's queue, and a
// thread never blocks while requests wait in its other entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

struct fuse_session;

namespace stria {
class StatsSet;
}

namespace stria::client::fuse {

struct FuseRingOptions {
  // Requests over io_uring where the kernel offers it; false: through /dev/fuse, with only
  // the INIT reply completed here.
  bool io_uring = true;
  unsigned threads_per_queue = 4;       // started with the ring
  unsigned max_threads_per_queue = 64;  // started as handlers wait (see Ring::Busy)
  // Counts each request served over the ring (kLlRingRequests); may be null.
  StatsSet* stats = nullptr;
  // Called once the kernel has taken io_uring and the ring threads start; may be empty.
  std::function<void()> on_active;
};

class FuseRing {
 public:
  // Turns on fuse.enable_uring (root; the kernel offers io_uring at INIT only when it is
  // on). False, with the reason, where the kernel has no FUSE io_uring or it cannot be
  // turned on.
  static bool EnableInKernel(std::string* why);

  // Installs the transport on a mounted session, before its loop starts: from the INIT
  // reply on, requests go over io_uring where the kernel agrees (and options.io_uring).
  // One session per process.
  static bool Attach(fuse_session* se, const FuseRingOptions& options);

  // Whether the kernel offered io_uring in its INIT request (known from the init callback
  // on): requests then come over the ring, and /dev/fuse carries little but FORGETs.
  static bool KernelOffers();

  // Stops the ring threads; after the session's loop has returned, before it is destroyed.
  static void Stop();

  // Where a READ served on a ring thread can put its reply's data so that the reply needs
  // no copy: the ring entry's payload, when it holds `size` bytes; else empty.
  static std::span<uint8_t> ReplySpace(size_t size);
};

}  // namespace stria::client::fuse
