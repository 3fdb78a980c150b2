// OP_MDS_MIGRATE: lfs migrate (see the message in proto/stria.proto).
//   BEGIN: ENOENT, EINVAL for a non-file or a bad layout, EACCES without write access, EBUSY
//   while a writer has the file open, EOPNOTSUPP for a new layout with a Data-on-MDT
//   component (its bytes are the MDS's, keyed by the inode: they cannot be written aside
//   while the old layout serves the file). Off Data-on-MDT is fine: the copy reads the DoM
//   bytes through the old layout and writes them to the new objects.
//   COMMIT: EBUSY when the file changed (size, mtime or layout generation) or has a writer.
//   The old layout's Data-on-MDT blocks are freed in the same batch as the swap.
//   ABORT: always succeeds for a layout BEGIN returned; its objects are destroyed.
#include <algorithm>
#include <mutex>

#include "mds/dom.h"
#include "mds/internal/layout_alloc.h"
#include "mds/internal/op_util.h"
#include "mds/internal/perm.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "mds/txn.h"
#include "proto/layout_components.h"

namespace stria::mds {

namespace {

void FillVersion(const InodeRecord& rec, proto::MigrateReply* rep) {
  rep->set_size(rec.attr.size());
  rep->set_mtime_ns(rec.attr.mtime_ns());
  rep->set_generation(rec.layout.generation());
}

}  // namespace

Status Migrate(Namespace& ns, const proto::MigrateRequest& req, proto::MigrateReply* rep) {
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(InodeRecord * rec, WritableFile(txn, req.ino(), req.cred()));
  bool writers = false;
  {
    // Lock order: the namespace mutex, then the open mutex.
    std::lock_guard open_lock(ns.open_mutex());
    writers = ns.HasWritersLocked(req.ino());
  }
  switch (req.step()) {
    case proto::MIGRATE_BEGIN: {
      if (writers) return Status(Code::kBusy, "the file is open for writing");
      const uint64_t parent = rec->links.empty() ? kRootIno : rec->links.front().first;
      const proto::Layout* requested = req.has_layout() ? &req.layout() : nullptr;
      STRIA_ASSIGN_OR_RETURN(proto::Layout l, AllocateLayout(txn, parent, requested));
      if (DomEnd(l) > 0) {
        return Status(Code::kNotSup,
                      "migrating to a Data-on-MDT layout is not supported (off it is)");
      }
      // Every component the file's bytes reach gets its objects now: the copy writes them.
      STRIA_RETURN_IF_ERROR(
          InstantiateRange(txn, &l, 0, std::max<uint64_t>(rec->attr.size(), 1)).status());
      l.set_ino(req.ino());
      *rep->mutable_layout() = l;
      FillVersion(*rec, rep);
      return txn.Commit();  // the object id counters
    }
    case proto::MIGRATE_COMMIT: {
      if (writers) return Status(Code::kBusy, "the file is open for writing");
      if (rec->attr.size() != req.size() || rec->attr.mtime_ns() != req.mtime_ns() ||
          rec->layout.generation() != req.generation()) {
        return Status(Code::kBusy, "the file changed during the migration");
      }
      if (!HasObjects(req.layout())) return Status(Code::kInval, "the new layout has no objects");
      if (DomEnd(req.layout()) > 0) {
        return Status(Code::kNotSup, "migrating to a Data-on-MDT layout is not supported");
      }
      if (DomEnd(rec->layout) > 0) {
        STRIA_RETURN_IF_ERROR(DomTruncateBlocks(ns.db(), &txn.batch(), req.ino(), 0));
      }
      txn.QueueDestroy(rec->layout);
      proto::Layout l = req.layout();
      l.set_generation(rec->layout.generation() + 1);
      l.set_ino(req.ino());
      rec->layout = std::move(l);
      rec->attr.set_ctime_ns(txn.now());
      txn.Dirty(req.ino());
      *rep->mutable_layout() = rec->layout;
      FillVersion(*rec, rep);
      return txn.Commit();
    }
    case proto::MIGRATE_ABORT:
      txn.QueueDestroy(req.layout());
      return txn.Commit();
    case proto::MIGRATE_SWAP: {
      if (req.ino2() == req.ino()) return Status(Code::kInval, "swapping a file with itself");
      STRIA_ASSIGN_OR_RETURN(InodeRecord * other, WritableFile(txn, req.ino2(), req.cred()));
      {
        std::lock_guard open_lock(ns.open_mutex());
        writers = writers || ns.HasWritersLocked(req.ino2());
      }
      if (writers) return Status(Code::kBusy, "a file is open for writing");
      if (DomEnd(rec->layout) > 0 || DomEnd(other->layout) > 0) {
        return Status(Code::kNotSup, "swapping the layout of a Data-on-MDT file is not supported");
      }
      // The bytes go with the layouts, and so does the size the MDS keeps for them.
      const uint32_t gen = std::max(rec->layout.generation(), other->layout.generation()) + 1;
      std::swap(rec->layout, other->layout);
      const uint64_t size = rec->attr.size();
      rec->attr.set_size(other->attr.size());
      other->attr.set_size(size);
      for (InodeRecord* r : {rec, other}) {
        r->layout.set_generation(gen);
        r->layout.set_ino(r->attr.ino());
        r->attr.set_ctime_ns(txn.now());
        // New bytes: clients drop what they cached (close-to-open compares size and mtime).
        r->attr.set_mtime_ns(txn.now());
        txn.Dirty(r->attr.ino());
      }
      *rep->mutable_layout() = rec->layout;
      FillVersion(*rec, rep);
      return txn.Commit();
    }
    default:
      return Status(Code::kInval, "unknown migrate step " + std::to_string(req.step()));
  }
}

}  // namespace stria::mds
