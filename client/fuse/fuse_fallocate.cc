// StriaFs: fallocate(2) on an open file (see fuse_ops.h).
//
// Modes:
//   0                                  the size grows to offset+length when that is past the
//                                      end (reported to the MDS at once, as a write would
//                                      be); the new range reads as zeros (holes).
//   FALLOC_FL_KEEP_SIZE                accepted; the size does not change.
//   FALLOC_FL_PUNCH_HOLE|KEEP_SIZE     every stripe object frees its part of the range
//                                      (OP_OST_PUNCH, one per object of each instantiated
//                                      component); it reads as zeros.
//   anything else                      EOPNOTSUPP.
// Space is not reserved on the OSTs: a later write can still fail with ENOSPC.
#include <fcntl.h>
#include <linux/falloc.h>

#include "client/fuse/fuse_ops.h"
#include "client/fuse/fuse_util.h"
#include "common/layout.h"

namespace stria::client::fuse {

namespace {

constexpr int kPunch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;

}  // namespace

Status StriaFs::DoFallocate(fuse_req_t req, FileHandle* fh, int mode, uint64_t offset,
                            uint64_t length) {
  if (mode != 0 && mode != FALLOC_FL_KEEP_SIZE && mode != kPunch) {
    return Status(Code::kNotSup, "fallocate mode " + std::to_string(mode) + " unsupported");
  }
  if (length == 0) return Status(Code::kInval, "fallocate of no bytes");
  if (offset > kMaxFileSize || length > kMaxFileSize - offset) {
    return Status(Code::kFBig, "fallocate past the maximum file size");
  }
  if (!fh->writable) return Status(Code::kBadF, "file not open for writing");
  const uint64_t end = offset + length;
  STRIA_RETURN_IF_ERROR(fh->inode->DrainWrites());
  fh->inode->DropOpenData();
  if (mode == kPunch) {
    std::shared_ptr<const proto::Layout> layout = fh->inode->layout();
    if (!layout) return Status::Ok();
    return client_->PunchObjects(*layout, offset, end, fh->capas.get());
  }
  if (mode != 0 || end <= fh->inode->known_size.load()) return Status::Ok();
  // Growing: as a write that ends at `end`, reported to the MDS now (size = max, mtime and
  // ctime now, S_ISUID/S_ISGID cleared for a non-root caller).
  fh->inode->NoteWrite(end);
  fh->inode->NoteAcked(end);  // nothing to store: the new bytes are a hole of zeros
  fh->mtime_ns.store(NowNs());
  fh->wrote.store(true);
  fh->dirty.store(true);
  return ReportSize(req, fh, /*close=*/false, /*sync=*/true);
}

}  // namespace stria::client::fuse
