// LockTable: advisory byte-range locks (fcntl) and whole-file locks (flock), as POSIX and
// Linux define them, for many files and many owners.
//
// The MDS keeps the authoritative table for the whole filesystem; each client keeps a table
// of only its own granted locks, to replay them into a restarted MDS. An owner is a client
// (its uuid) plus the lock owner the kernel gives per process or open file description.
// Ranges are inclusive [start, end]; end = kLockEof means "to the end of the file and any
// growth". The two kinds never conflict with each other (as on Linux).
//
// POSIX semantics of Set: a lock replaces the owner's own locks on the same bytes (upgrade,
// downgrade, split), adjacent ranges of the same mode merge, an unlock may split a lock in
// two. Two locks conflict when their owners differ, they overlap, and one is a write lock.
//
// Thread-safety: none; the owner of the table serializes access.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace stria {

inline constexpr uint64_t kLockEof = UINT64_MAX;

enum class LockKind : uint8_t { kPosix, kFlock };
enum class LockMode : uint8_t { kUnlock, kRead, kWrite };

struct LockOwner {
  std::string client;  // the client's uuid
  uint64_t owner = 0;  // the kernel's lock owner within that client
  bool operator==(const LockOwner&) const = default;
};

struct HeldLock {
  LockOwner owner;
  LockKind kind = LockKind::kPosix;
  LockMode mode = LockMode::kRead;
  uint64_t start = 0;
  uint64_t end = kLockEof;  // inclusive
  uint32_t pid = 0;         // the locking process, reported by F_GETLK
};

class LockTable {
 public:
  // The first lock of another owner on `ino` that conflicts with `want`; none for an unlock.
  std::optional<HeldLock> FindConflict(uint64_t ino, const HeldLock& want) const;

  // Applies `want` (a lock, or an unlock when its mode is kUnlock) unless it conflicts, in
  // which case nothing changes and the conflicting lock is returned.
  std::optional<HeldLock> Set(uint64_t ino, const HeldLock& want);

  // Applies `want` as Set does, without looking for conflicts: for a table that mirrors
  // what an authority (the MDS) granted. A mirror that refused a grant, because another
  // owner's release was granted before it but not yet applied, would forget the lock and
  // never release it.
  void Apply(uint64_t ino, const HeldLock& want);

  // Drops every lock of `owner` of `kind` on `ino` (close of a file, flock release).
  void ReleaseOwner(uint64_t ino, const LockOwner& owner, LockKind kind);

  // Drops every lock held by `client` (eviction); returns how many went.
  size_t ReleaseClient(const std::string& client);

  // Whether `owner` holds any lock of `kind` on `ino`.
  bool Holds(uint64_t ino, const LockOwner& owner, LockKind kind) const;

  // Every lock, with its inode, for replay.
  std::vector<std::pair<uint64_t, HeldLock>> All() const;

  size_t size() const;

 private:
  std::unordered_map<uint64_t, std::vector<HeldLock>> by_ino_;
};

}  // namespace stria
