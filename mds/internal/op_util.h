// Small helpers shared by the operations in mds/ops/. Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "mds/namespace.h"
#include "mds/txn.h"

namespace stria::mds {

// Copies an inode's attributes (blocks derived from size for regular files) and, for a
// regular file, its layout into a reply.
void FillReply(const InodeRecord& rec, proto::Attr* attr, proto::Layout* layout);

// Reads directory `ino` for a lookup-like read: kNoEnt, kNotDir, or kAccess without search
// (exec) permission for cred.
Result<InodeRecord> ReadSearchableDir(const Namespace& ns, uint64_t ino,
                                      const proto::Credentials& cred);

// Within a Txn: directory `ino` on which cred may create/remove entries (write + search).
Result<InodeRecord*> WritableDir(Txn& txn, uint64_t ino, const proto::Credentials& cred);

// Within a Txn: regular file `ino` (kInval naming it otherwise, kNoEnt when gone).
Result<InodeRecord*> RegularFile(Txn& txn, uint64_t ino);
// The same, on which cred may write (kAccess otherwise): layout changes (migrate, mirrors).
Result<InodeRecord*> WritableFile(Txn& txn, uint64_t ino, const proto::Credentials& cred);

// Sets a directory's mtime and ctime to the Txn's time and marks it dirty.
void TouchDir(Txn& txn, InodeRecord* dir);

}  // namespace stria::mds
