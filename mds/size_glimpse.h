// Sizes from the OSTs, for a writer that can no longer report its own.
//
// The MDS keeps each file's size, and writers report it: at fsync and O_SYNC writes at once,
// at close(2) with the closes a mount gathers (client/fuse/close_batcher.h), which the MDS
// asks for before another client is answered about the file (mds_service.cc,
// SettleWriters). A writer that dies or is cut off between its close and that report
// leaves bytes on the OSTs past the size the MDS has. Then the MDS asks the OSTs, as
// Lustre's clients glimpse a file's size from its objects: every object's size, mapped back
// through the layout (common/layout.h), and the file's size is raised to the largest end.
// It is never lowered: a truncate by a live client is reported as such.
//
// Thread-safety: the functions are thread-safe; the RPCs run without namespace locks.
#pragma once

#include <cstdint>
#include <map>

#include "common/status.h"
#include "mds/namespace.h"
#include "mds/ost_gateway.h"
#include "proto/stria.pb.h"

namespace stria::mds {

// The end of the last byte the layout's OST objects hold (0 when none holds any). An
// object on an OST missing from `osts` is an error.
Result<uint64_t> GlimpseObjects(OstGateway& gateway,
                                const std::map<uint32_t, proto::OstInfo>& osts,
                                const proto::Layout& layout);

// Raises the size of regular file `ino` to what its objects hold and returns the size it
// has now; the change goes to the WAL like a close's size report. kNoEnt when it is gone.
Result<uint64_t> RaiseSizeToObjects(Namespace& ns, OstGateway& gateway, uint64_t ino);

}  // namespace stria::mds
