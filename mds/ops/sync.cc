// OP_MDS_SYNC: fsync(2) of a directory. Every namespace change answered before this request
// arrived is durable on the MDS's disk (WAL synced) when it returns; with the commit
// interval (MdsServiceOptions::commit_interval_ms) that is the one way, beside fsync of a
// file, to have a change durable before the interval has passed.
#include "mds/ops/ops.h"

namespace stria::mds {

Status Sync(Namespace& ns, const proto::SyncRequest&, proto::SyncReply*) { return ns.SyncAll(); }

}  // namespace stria::mds
