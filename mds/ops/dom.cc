// OP_MDS_DOM_READ / OP_MDS_DOM_WRITE: the bytes of a file's Data-on-MDT component (mds/dom.h).
//   EINVAL: not a regular file with a DoM component, or a write whose bulk is not `length`
//   bytes; EFBIG: past the end of the DoM component; ENOENT: no such inode. A read returns
//   what is stored up to its last byte in the range (the client reads the rest as holes).
#include "mds/dom.h"

#include <mutex>
#include <string>

#include "mds/ops/ops.h"
#include "proto/layout_components.h"

namespace stria::mds {

namespace {

// Largest DoM transfer in one RPC, as an OST read.
constexpr uint64_t kMaxDomIo = 64ull << 20;

Status CheckDomRange(const InodeRecord& rec, uint64_t ino, uint64_t offset, uint64_t length) {
  if (!rec.is_reg()) return Status(Code::kInval, "inode " + std::to_string(ino) + " is not a file");
  const uint64_t dom_end = DomEnd(rec.layout);
  if (dom_end == 0) {
    return Status(Code::kInval, "inode " + std::to_string(ino) + " has no Data-on-MDT component");
  }
  if (length > kMaxDomIo) return Status(Code::kInval, "DoM transfer over 64 MiB");
  if (offset > dom_end || length > dom_end - offset) {
    return Status(Code::kFBig, "bytes [" + std::to_string(offset) + ", " +
                                   std::to_string(offset + length) +
                                   ") pass the end of the Data-on-MDT component (" +
                                   std::to_string(dom_end) + ")");
  }
  return Status::Ok();
}

}  // namespace

Status DomRead(Namespace& ns, const proto::DomIoRequest& req, lnet::Buffer* data,
               proto::DomIoReply* rep) {
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  STRIA_RETURN_IF_ERROR(CheckDomRange(rec, req.ino(), req.offset(), req.length()));
  *data = lnet::Buffer(static_cast<size_t>(req.length()));
  STRIA_ASSIGN_OR_RETURN(size_t n, DomReadBlocks(ns.db(), req.ino(), req.offset(),
                                                 std::span<uint8_t>(data->data(), data->size())));
  data->Shrink(n);
  rep->set_length(n);
  return Status::Ok();
}

Status DomWrite(Namespace& ns, const proto::DomIoRequest& req, std::span<const uint8_t> data,
                proto::DomIoReply* rep) {
  if (req.length() != data.size()) {
    return Status(Code::kInval, "DoM write of " + std::to_string(req.length()) +
                                    " bytes but the bulk carries " + std::to_string(data.size()));
  }
  std::lock_guard lock(ns.mutex());  // against truncates and other writes of the same blocks
  STRIA_ASSIGN_OR_RETURN(InodeRecord rec, ns.GetInode(req.ino()));
  STRIA_RETURN_IF_ERROR(CheckDomRange(rec, req.ino(), req.offset(), req.length()));
  rocksdb::WriteBatch batch;
  STRIA_RETURN_IF_ERROR(DomWriteBlocks(ns.db(), &batch, req.ino(), req.offset(), data));
  STRIA_RETURN_IF_ERROR(ns.Write(&batch, req.sync()));
  rep->set_length(req.length());
  return Status::Ok();
}

}  // namespace stria::mds
