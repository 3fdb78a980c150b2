// Txn: one namespace mutation, gathered into a single RocksDB WriteBatch.
//
// An operation loads the inodes it touches through the Txn (each is read once and cached,
// so an operation that names the same directory twice edits one copy), changes them, adds
// directory entries, xattrs, destroy-queue records and OST counter updates, and Commit()s:
// every dirty inode, the changed superblock counters and the dirty OST entries go into the
// same batch, written with sync = true. The Namespace's in-memory counters are updated only
// after the write succeeded, so a failed commit changes nothing.
//
// Thread-safety: REQUIRES the Namespace mutex held for the Txn's whole life.
#pragma once

#include <rocksdb/write_batch.h>

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "mds/namespace.h"

namespace stria::mds {

class Txn {
 public:
  explicit Txn(Namespace* ns);
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;

  Namespace& ns() { return *ns_; }
  // One timestamp for everything this operation changes.
  int64_t now() const { return now_; }

  // The inode, loaded once (kNoEnt when absent). The pointer stays valid until Commit.
  Result<InodeRecord*> Inode(uint64_t ino);
  // Like Inode, kNotDir unless a directory.
  Result<InodeRecord*> Dir(uint64_t ino);
  // Marks a loaded inode to be written at Commit.
  void Dirty(uint64_t ino) { dirty_.insert(ino); }

  // A new inode with a fresh number, attr.ino set, nlink 1, times now; dirty.
  InodeRecord* NewInode();
  // A replayed create (docs/durability.md): inode `ino`, which the MDS handed out before a
  // restart that lost its create, set up as NewInode would. kInval unless it is below the
  // ids handed out and free.
  Result<InodeRecord*> ReplayedInode(uint64_t ino);
  // Deletes the inode, its xattrs (unless it has none) and its orphan mark (if it was one); when it
  // is a regular file with objects, they are put on the destroy queue in this batch.
  void RemoveInode(uint64_t ino);
  // Queues every stripe object of `layout` for destruction (a destroy record in this batch,
  // mds/destroy_queue.h): used when a layout is replaced (lfs migrate).
  void QueueDestroy(const proto::Layout& layout);
  // The last link of loaded inode `ino` went away: RemoveInode, or, when the file is open,
  // keep it as an orphan (nlink 0, U key) until its last close. Holds the Namespace's open
  // mutex from here to the end of the Txn.
  void DropLastLink(uint64_t ino);

  void PutDirent(uint64_t parent, std::string_view name, uint64_t ino, proto::FileType type);
  void DeleteDirent(uint64_t parent, std::string_view name);

  // This operation's copy of the superblock counters and the OST table.
  SuperState& super() { return super_; }
  std::map<uint32_t, OstState>& osts();
  // Marks OST `idx`'s info (not its id counter) changed: it is stored at Commit. Ids handed
  // out (next_object_id++) need no mark: Commit reserves a new range when one runs out.
  void OstDirty(uint32_t idx) { dirty_osts_.insert(idx); }
  uint64_t& rr_cursor() { return rr_cursor_; }

  // For keys the helpers above do not cover (xattrs, params).
  rocksdb::WriteBatch& batch() { return batch_; }

  // Writes everything as one batch and publishes the counters. Call once. sync = true: durable
  // (WAL synced, or by the thread's DeferredSync) before it returns; false: in the WAL (it
  // survives a kill -9 of the MDS, not a power loss) and made durable by the next synced
  // write. Only for changes the durability promise lets wait (docs/durability.md).
  Status Commit(bool sync = true);

 private:
  // Hands what the commit changed to the lease table (mds/leases.h).
  void NoteChanges();
  // A new inode numbered `ino` (nlink 1, times now), counted and dirty.
  InodeRecord* AddInode(uint64_t ino);

  Namespace* ns_;
  int64_t now_;
  std::map<uint64_t, InodeRecord> inodes_;
  std::set<uint64_t> dirty_;
  std::set<uint64_t> removed_;
  std::set<uint64_t> orphans_;       // loaded regular files with nlink 0: they have a U key
  std::set<uint64_t> changed_dirs_;  // directories whose entries this operation changes
  SuperState super_;
  SuperState orig_super_;
  std::optional<std::map<uint32_t, OstState>> osts_;
  std::set<uint32_t> dirty_osts_;
  uint64_t rr_cursor_;
  rocksdb::WriteBatch batch_;
  std::unique_lock<std::mutex> open_lock_;  // declared last: released first, after Commit
};

}  // namespace stria::mds
