// The MDS and MGS operations, one per file in mds/ops/, each a function over a Namespace.
//
// Each takes the decoded request and fills the reply; a non-OK Status is the error reply.
// Mutations take the namespace mutex and commit one synced WriteBatch (mds/txn.h) before
// returning; reads take no lock. Unit tests call these directly; mds/mds_service.cc registers
// them on the RPC server. Every field of a request is validated here: requests come from the
// network. Thread-safety: all are safe to call concurrently.
#pragma once

#include <span>

#include "common/status.h"
#include "lnet/buffer.h"
#include "mds/namespace.h"
#include "proto/stria.pb.h"

namespace stria::mds {

// ---- MDS ----
// OP_MDS_LOOKUP. A batch (more_names): the directory checked once, then each name alone,
// its result in rep->codes and its reply in rep->more; EINVAL for more than
// kMaxLookupBatch names in all.
inline constexpr int kMaxLookupBatch = 128;
Status Lookup(Namespace& ns, const proto::LookupRequest& req, proto::EntryReply* rep);
Status Getattr(Namespace& ns, const proto::GetattrRequest& req, proto::AttrReply* rep);
Status Setattr(Namespace& ns, const proto::SetattrRequest& req, proto::AttrReply* rep);
// OP_MDS_CREATE. A batch (more, without open): each create alone in one transaction, its
// result in rep->codes and its reply in rep->more; EINVAL for more than kMaxCreateBatch
// creates in all.
inline constexpr int kMaxCreateBatch = 128;
Status Create(Namespace& ns, const proto::CreateRequest& req, proto::EntryReply* rep);
// OP_MDS_UNLINK: unlink, or rmdir with is_dir. A batch (more_names, files only): each name
// unlinked alone in one transaction, its result in rep->codes; EINVAL for more than
// kMaxUnlinkBatch names in all.
inline constexpr int kMaxUnlinkBatch = 256;
Status Unlink(Namespace& ns, const proto::UnlinkRequest& req, proto::UnlinkReply* rep);
Status Rename(Namespace& ns, const proto::RenameRequest& req, proto::RenameReply* rep);
Status Link(Namespace& ns, const proto::LinkRequest& req, proto::EntryReply* rep);
Status Readlink(Namespace& ns, const proto::ReadlinkRequest& req, proto::ReadlinkReply* rep);
Status Readdir(Namespace& ns, const proto::ReaddirRequest& req, proto::ReaddirReply* rep);
Status Statfs(Namespace& ns, const proto::StatfsRequest& req, proto::StatfsReply* rep);
Status Getxattr(Namespace& ns, const proto::XattrRequest& req, proto::XattrReply* rep);
Status Setxattr(Namespace& ns, const proto::XattrRequest& req, proto::XattrReply* rep);
Status Listxattr(Namespace& ns, const proto::XattrRequest& req, proto::XattrReply* rep);
Status Removexattr(Namespace& ns, const proto::XattrRequest& req, proto::XattrReply* rep);
Status Open(Namespace& ns, const proto::OpenRequest& req, proto::OpenReply* rep);
Status Close(Namespace& ns, const proto::CloseRequest& req, proto::AttrReply* rep);
// OP_MDS_CLOSE_BATCH: each close as Close; one that fails is counted, the others go on.
// EINVAL for more than kMaxCloseBatch, or a close that reports a write or asks for a sync.
inline constexpr int kMaxCloseBatch = 1024;
Status CloseBatch(Namespace& ns, const proto::CloseBatchRequest& req,
                  proto::CloseBatchReply* rep);
Status Reopen(Namespace& ns, const proto::ReopenRequest& req, proto::ReopenReply* rep);
Status Sync(Namespace& ns, const proto::SyncRequest& req, proto::SyncReply* rep);
Status SetDefaultLayout(Namespace& ns, const proto::SetDefaultLayoutRequest& req,
                        proto::SetDefaultLayoutReply* rep);
Status GetDefaultLayout(Namespace& ns, const proto::GetDefaultLayoutRequest& req,
                        proto::GetDefaultLayoutReply* rep);
Status LayoutIntent(Namespace& ns, const proto::LayoutIntentRequest& req,
                    proto::LayoutIntentReply* rep);
Status Fid2Path(Namespace& ns, const proto::Fid2PathRequest& req, proto::Fid2PathReply* rep);
Status Migrate(Namespace& ns, const proto::MigrateRequest& req, proto::MigrateReply* rep);
class MirrorResync;
// OP_MDS_MIRROR (mds/ops/mirror.cc); `resync` copies for RESYNC and EXTEND (null: ENOTSUP,
// and an extended mirror stays stale).
Status Mirror(Namespace& ns, MirrorResync* resync, const proto::MirrorRequest& req,
              proto::MirrorReply* rep);
// Data-on-MDT I/O: the read's bytes go to *data (the reply bulk), the write's come in `data`.
Status DomRead(Namespace& ns, const proto::DomIoRequest& req, lnet::Buffer* data,
               proto::DomIoReply* rep);
Status DomWrite(Namespace& ns, const proto::DomIoRequest& req, std::span<const uint8_t> data,
                proto::DomIoReply* rep);

// ---- MGS ----
Status RegisterOst(Namespace& ns, const proto::RegisterOstRequest& req,
                   proto::RegisterOstReply* rep);
Status GetConfig(Namespace& ns, const proto::GetConfigRequest& req, proto::FsConfig* rep);
Status SetParam(Namespace& ns, const proto::SetParamRequest& req, proto::SetParamReply* rep);
Status GetParam(Namespace& ns, const proto::GetParamRequest& req, proto::GetParamReply* rep);
Status PoolOp(Namespace& ns, const proto::PoolRequest& req, proto::PoolReply* rep);

// RENAME_* flags of RenameRequest.flags, XATTR_* of XattrRequest.flags.
inline constexpr uint32_t kRenameNoReplace = 1;
inline constexpr uint32_t kRenameExchange = 2;
inline constexpr uint32_t kXattrCreate = 1;
inline constexpr uint32_t kXattrReplace = 2;
inline constexpr size_t kMaxXattrValue = 64 * 1024;
// readdir: entries per reply when max_entries is 0, and the most ever sent.
inline constexpr uint32_t kDefaultReaddirEntries = 1024;
inline constexpr uint32_t kMaxReaddirEntries = 8192;

}  // namespace stria::mds
