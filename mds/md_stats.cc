#include "mds/md_stats.h"

#include <sys/stat.h>

#include "mds/ops/ops.h"

namespace stria::mds {
namespace {

MdCounter Simple(proto::Opcode op) {
  switch (op) {
    case proto::OP_MDS_OPEN: return kMdOpen;
    case proto::OP_MDS_LINK: return kMdLink;
    case proto::OP_MDS_GETATTR: return kMdGetattr;
    case proto::OP_MDS_SETATTR: return kMdSetattr;
    case proto::OP_MDS_GETXATTR:
    case proto::OP_MDS_LISTXATTR: return kMdGetxattr;
    case proto::OP_MDS_SETXATTR:
    case proto::OP_MDS_REMOVEXATTR: return kMdSetxattr;
    case proto::OP_MDS_STATFS: return kMdStatfs;
    case proto::OP_MDS_SYNC: return kMdSync;
    case proto::OP_MDS_MIGRATE: return kMdMigrate;
    case proto::OP_MDS_READDIR: return kMdReadpage;
    default: return kMdNone;
  }
}

}  // namespace

void CountMdRequest(MdStats* s, proto::Opcode op, const google::protobuf::Message& req,
                    std::string_view job, uint64_t usecs) {
  switch (op) {
    case proto::OP_MDS_CREATE: {
      const auto& r = static_cast<const proto::CreateRequest&>(req);
      // A batch counts each of its creates, each with its share of the request's time.
      const int n = r.more_size() < kMaxCreateBatch ? 1 + r.more_size() : 1;
      auto count = [&](const proto::CreateRequest& c) {
        if ((c.mode() & S_IFMT) == S_IFDIR) {
          s->Count(job, kMdMkdir, usecs / n);
        } else {
          s->Count(job, kMdMknod, usecs / n);
          if (c.open()) s->Count(job, kMdOpen, usecs / n);
        }
      };
      count(r);
      for (int i = 0; i + 1 < n; ++i) count(r.more(i));
      return;
    }
    case proto::OP_MDS_UNLINK: {
      const auto& r = static_cast<const proto::UnlinkRequest&>(req);
      if (r.is_dir()) {
        s->Count(job, kMdRmdir, usecs);
        return;
      }
      // A batch counts each of its unlinks, each with its share of the request's time.
      const int n = r.more_names_size() < kMaxUnlinkBatch ? 1 + r.more_names_size() : 1;
      for (int i = 0; i < n; ++i) s->Count(job, kMdUnlink, usecs / n);
      return;
    }
    case proto::OP_MDS_RENAME: {
      const auto& r = static_cast<const proto::RenameRequest&>(req);
      s->Count(job, kMdRename, usecs);
      s->Count(job, r.old_parent() == r.new_parent() ? kMdSamedirRename : kMdCrossdirRename,
               usecs);
      return;
    }
    case proto::OP_MDS_CLOSE_BATCH: {
      const auto& r = static_cast<const proto::CloseBatchRequest&>(req);
      const uint64_t each = r.closes_size() > 0 ? usecs / r.closes_size() : usecs;
      for (const proto::CloseRequest& c : r.closes()) s->Count(c.cred().jobid(), kMdClose, each);
      return;
    }
    case proto::OP_MDS_CLOSE: {
      const auto& r = static_cast<const proto::CloseRequest&>(req);
      if (r.handle() != 0) s->Count(job, kMdClose, usecs);
      if (r.sync()) s->Count(job, kMdSync, usecs);
      return;
    }
    default:
      s->Count(job, Simple(op), usecs);
  }
}

}  // namespace stria::mds
