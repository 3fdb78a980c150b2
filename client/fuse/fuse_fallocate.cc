// StriaFs: fallocate(2) on an open file (see fuse_ops.h).
//
// Modes:
//   0                                  the size grows to offset+length when that is past the
//                                      end (reported to the MDS at once, as a write would
//                                      be); the new range reads as zeros (holes).
//   FALLOC_FL_KEEP_SIZE                accepted; the size does not change.
//   FALLOC_FL_PUNCH_HOLE|KEEP_SIZE     every stripe object frees its part of the range
//                                      (OP_OST_PUNCH, one per object); it reads as zeros.
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

// Frees file range [offset, end) in every object of `layout`: the bytes of object s that
// lie in the range are its object offsets [ObjectSize(offset), ObjectSize(end)).
Status PunchObjects(Client* client, const proto::Layout& layout, uint64_t offset,
                    uint64_t end) {
  StripeGeometry g;
  g.stripe_size = layout.stripe_size();
  g.stripe_count = static_cast<uint32_t>(layout.objects_size());
  for (uint32_t s = 0; s < g.stripe_count; ++s) {
    const uint64_t from = ObjectSizeForFileSize(g, s, offset);
    const uint64_t to = ObjectSizeForFileSize(g, s, end);
    if (to <= from) continue;
    const proto::StripeObject& o = layout.objects(static_cast<int>(s));
    STRIA_ASSIGN_OR_RETURN(lnet::RpcClient * ost, client->Ost(o.ost_idx()));
    proto::OstPunchRequest pr;
    pr.mutable_object()->set_ost_idx(o.ost_idx());
    pr.mutable_object()->set_object_id(o.object_id());
    pr.mutable_object()->set_group(o.group());
    pr.set_offset(from);
    pr.set_length(to - from);
    proto::OstIoReply rep;
    STRIA_RETURN_IF_ERROR(ost->Call(proto::OP_OST_PUNCH, pr, &rep));
  }
  return Status::Ok();
}

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
  if (mode == kPunch) {
    if (fh->layout.objects_size() == 0) return Status::Ok();
    return PunchObjects(client_, fh->layout, offset, end);
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
