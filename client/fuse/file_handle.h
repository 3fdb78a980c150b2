// FileHandle and DirHandle: what fi->fh points at for an open file or directory.
//
// A FileHandle is created by open/create and destroyed by release. Its MDS open handle is
// fixed at open; the layout lives on the inode (a write that instantiates a PFL component
// replaces it for every handle); the write bookkeeping is atomic, so reads and writes through one
// handle run concurrently without a lock. Size reports (flush, fsync, release) are serialized
// by report_mu.
//
// A DirHandle caches the entries of one opendir, fetched from the MDS page by page as the
// kernel's readdir offsets reach them: offset N means "resume at entry N" (entry 0 is ".",
// 1 is ".."), so a directory of any size is listed completely and consistently, and a
// rewind (offset 0) refetches. Its mutex serializes readdir calls on one handle.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/capa.h"
#include "client/fuse/inode_table.h"
#include "proto/stria.pb.h"

namespace stria::client::fuse {

struct FileHandle {
  std::shared_ptr<Inode> inode;
  // From OP_MDS_OPEN; 0 when none was granted. An open made without the MDS
  // (opened_locally) gets it when LocalOpens registers it, and only then.
  uint64_t mds_handle = 0;
  bool opened_locally = false;
  int flags = 0;               // open(2) flags
  bool writable = false;       // counted in inode->writers
  bool sync_writes = false;    // O_SYNC / O_DSYNC
  proto::Credentials cred;     // the opener's, for size reports made without a request
  // The open's OSS capabilities (client/capa.h; keyless when the cluster has no key). Shared
  // with the write-behind jobs of this handle, which may run until release drains them.
  std::shared_ptr<OpenCapas> capas;

  std::atomic<bool> dirty{false};          // wrote since the last size report
  std::atomic<bool> wrote{false};          // wrote at all
  std::atomic<int64_t> mtime_ns{0};        // time of the last write
  std::atomic<int64_t> atime_ns{0};        // time of the last read (0: never read)
  bool relatime_due = false;               // at open: a read must update atime (relatime)
  std::atomic<bool> atime_sent{false};     // the read time went to the MDS already
  std::mutex report_mu;                    // serializes size reports
  std::atomic<uint64_t> writes{0};         // writes made through it
  std::atomic<uint64_t> flush_ticket{0};   // of the latest deferred flush (DoFlush)
  std::atomic<bool> released{false};       // its release is queued behind it (DoRelease)
};

struct DirHandle {
  uint64_t ino = 0;
  std::mutex mu;
  std::vector<proto::DirEntry> entries;  // guarded by mu; [0] ".", [1] ".."
  std::string cookie;                    // guarded by mu; resume point for the next page
  bool eof = false;                      // guarded by mu
  bool loaded = false;                   // guarded by mu; "." and ".." added
  bool served = false;                   // guarded by mu; a readdir has been answered
};

}  // namespace stria::client::fuse
