// Metadata: libstria's typed metadata API — one method per MDS operation, so that the FUSE
// client, lfs/lctl, the benchmarks and the native C API (client/include/stria/stria.h) never
// build MDS requests by hand. A protocol rule about a namespace operation lives here (or in
// the MDS), not at its call sites:
//   - every request carries the caller's credentials, and the MDS checks them;
//   - a reply that claims inode 0 is a protocol error;
//   - a write that reaches components without objects asks the MDS to instantiate them
//     first (LayoutIntent), and past the layout's end is EFBIG (LayoutForWrite);
//   - a file's size and times reach the MDS through Close (OP_MDS_CLOSE), synced only when
//     the caller asks (fsync, O_SYNC).
//
// Errors are the MDS's Status (its errno) or the transport's (kDisconnected, kTimeout).
// Thread-safety: as Client — every method is thread-safe; a Metadata holds no state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client {

// ENOENT for an empty name, ENAMETOOLONG past 255 bytes (NAME_MAX).
Status CheckName(std::string_view name);

inline constexpr size_t kMaxNameLen = 255;

class Metadata {
 public:
  using Cred = proto::Credentials;

  explicit Metadata(Client* client) : client_(client) {}

  Client* client() const { return client_; }

  // ---- names ----
  // negative_ok: a name that does not exist is an OK reply with attr.ino 0 (and the entry
  // lease covering its absence) instead of kNoEnt.
  Result<proto::EntryReply> Lookup(const Cred& cred, uint64_t parent, std::string_view name,
                                   bool negative_ok = false);
  // Lookup with open intent: a regular file found is also opened read-only with open_flags
  // (O_ACCMODE O_RDONLY, no O_TRUNC), its reply in EntryReply.open, unless the open was
  // refused or the MDS is older than intents (then no EntryReply.open: open it with Open).
  // Sent alone, never batched. The handle is the caller's to close (Close, CloseBatch).
  Result<proto::EntryReply> LookupOpen(const Cred& cred, uint64_t parent, std::string_view name,
                                       uint32_t open_flags, bool negative_ok = false);

  // Looks up `names` (at least one, at most mds kMaxLookupBatch) in `parent` with one
  // request (LookupRequest.more_names, never batched with other threads'), with the open
  // intent (O_RDONLY) when `open`: one result per name, in order. A name that does not
  // exist is kNoEnt; a reply whose open does not match its file is closed and kProtocol.
  // An MDS from before batches answers the first name only (the others kNotSup);
  // one from before batched opens refuses a batch with open (every name kInval). An error:
  // nothing is known of any name (a transport error), or a reply that does not answer the
  // batch (its opens closed).
  Result<std::vector<Result<proto::EntryReply>>> LookupMany(const Cred& cred, uint64_t parent,
                                                            const std::vector<std::string>& names,
                                                            bool open);
  // Closes the open a lookup's reply brought (its open intent), if any, ignoring errors: a
  // reply that cannot be used must not leave the file open at the MDS.
  void CloseOpenOf(const Cred& cred, const proto::EntryReply& rep);

  struct CreateArgs {
    uint64_t parent = 0;
    std::string_view name;
    uint32_t mode = 0;                          // with the S_IFMT bits
    uint32_t rdev = 0;                          // device nodes
    std::string_view symlink_target;            // S_IFLNK
    const proto::Layout* layout = nullptr;      // regular files: requested layout, else inherit
    bool open = false;                          // regular files: open it too (reply.handle)
    uint32_t umask = 0;                         // the creating process's umask, if known
  };
  // Creates (always exclusively: EEXIST when the name exists).
  Result<proto::EntryReply> Create(const Cred& cred, const CreateArgs& args);
  Result<proto::EntryReply> Link(const Cred& cred, uint64_t ino, uint64_t new_parent,
                                 std::string_view name);
  // unlink(2), or rmdir(2) with is_dir. want_writeback: ask for a write-back grant on the
  // parent (UnlinkReply.writeback_ms; client/fuse/unlink_writeback.h).
  Result<proto::UnlinkReply> Unlink(const Cred& cred, uint64_t parent, std::string_view name,
                                    bool is_dir, bool want_writeback = false);
  // Unlinks the files `names` (at least one, at most mds kMaxUnlinkBatch) of `parent` in one
  // MDS transaction, each alone: the reply's `codes` has each name's result
  // (common/status.h Code), in order. An MDS from before batches unlinks the first name
  // only, or answers its error; the others are then sent one by one, as they are after a
  // file system error for the whole batch. An error: no name's result is known (a single
  // name failed, or a transport error: some may be done).
  Result<proto::UnlinkReply> UnlinkBatch(const Cred& cred, uint64_t parent,
                                         const std::vector<std::string>& names,
                                         bool want_writeback = false);
  // flags: RENAME_NOREPLACE, RENAME_EXCHANGE; others are EINVAL.
  Status Rename(const Cred& cred, uint64_t parent, std::string_view name, uint64_t new_parent,
                std::string_view new_name, uint32_t flags = 0);
  Result<std::string> Readlink(const Cred& cred, uint64_t ino);
  // One page of a directory from `cookie` ("" = the start).
  struct ReaddirArgs {
    uint64_t ino = 0;
    std::string cookie;
    uint32_t max_entries = 512;
    bool want_attrs = false;
    bool want_layouts = false;
  };
  Result<proto::ReaddirReply> Readdir(const Cred& cred, const ReaddirArgs& args);

  // ---- attributes ----
  Result<proto::AttrReply> Getattr(const Cred& cred, uint64_t ino);
  // req.cred is set from `cred`; req.valid says what changes (proto::SetattrValid).
  Result<proto::AttrReply> Setattr(const Cred& cred, proto::SetattrRequest req);
  Result<proto::StatfsReply> Statfs(const Cred& cred);
  // size 0 asks for the size only (XattrReply.size).
  Result<proto::XattrReply> Getxattr(const Cred& cred, uint64_t ino, std::string_view name,
                                     uint32_t size);
  Result<proto::XattrReply> Listxattr(const Cred& cred, uint64_t ino, uint32_t size);
  Status Setxattr(const Cred& cred, uint64_t ino, std::string_view name,
                  std::string_view value, uint32_t flags);
  Status Removexattr(const Cred& cred, uint64_t ino, std::string_view name);

  // ---- open files ----
  Result<proto::OpenReply> Open(const Cred& cred, uint64_t ino, uint32_t flags);
  // What a writer (or reader) reports when it flushes, syncs or closes (OP_MDS_CLOSE).
  struct CloseArgs {
    uint64_t ino = 0;
    uint64_t handle = 0;      // non-zero: the MDS handle is closed too
    bool wrote = false;       // new writes since the last report: size and mtime count
    uint64_t size = 0;        // the end of the bytes the OSTs acknowledged
    int64_t mtime_ns = 0;
    int64_t atime_ns = 0;     // > 0: a relatime update for reads
    bool sync = false;        // durable on the MDS before the reply
  };
  Result<proto::AttrReply> Close(const Cred& cred, const CloseArgs& args);
  // Closes that report nothing, together (client/fuse/close_batcher.h).
  Result<proto::CloseBatchReply> CloseBatch(const proto::CloseBatchRequest& req);
  // fsync(2) of a directory: every change answered so far is durable.
  Status Sync(const Cred& cred, uint64_t ino);

  // ---- layouts ----
  // The MDS instantiates the components covering [start, end) (through `handle`, opened for
  // writing, or the caller's write permission) and returns the layout, which then covers it.
  Result<proto::Layout> LayoutIntent(const Cred& cred, uint64_t ino, uint64_t handle,
                                     uint64_t start, uint64_t end);
  // The layout to write [offset, end) with: nullopt when `held` already has objects there;
  // otherwise the MDS's after LayoutIntent. EFBIG past the end of the layout's last component.
  Result<std::optional<proto::Layout>> LayoutForWrite(const Cred& cred, uint64_t ino,
                                                      uint64_t handle,
                                                      const proto::Layout& held,
                                                      uint64_t offset, uint64_t end);
  // A directory's default layout, or nullopt when it has none (it inherits).
  Result<std::optional<proto::Layout>> GetDefaultLayout(const Cred& cred, uint64_t ino);
  Status SetDefaultLayout(const Cred& cred, uint64_t ino, const proto::Layout& layout);
  // lfs setstripe -d: the directory inherits again.
  Status RemoveDefaultLayout(const Cred& cred, uint64_t ino);

  // lfs migrate and swap_layouts, one step (BEGIN, COMMIT, ABORT, SWAP); req.cred is set
  // from `cred`.
  Result<proto::MigrateReply> Migrate(const Cred& cred, proto::MigrateRequest req);
  // OP_MDS_MIRROR: stale marks, resync, extend, split of a mirrored file.
  Result<proto::MirrorReply> Mirror(const Cred& cred, proto::MirrorRequest req);

  // ---- identifiers ----
  Result<proto::Fid2PathReply> Fid2Path(const Cred& cred, uint64_t ino);

 private:
  // One MDS call and its typed reply.
  template <typename Rep, typename Req>
  Result<Rep> Call(proto::Opcode op, const Req& req);

  Client* const client_;
};

// Whether reading [offset, end) with `held` may need a newer layout: a component in the
// range has no objects here, and another client may have instantiated it since.
bool ReadNeedsNewerLayout(const proto::Layout* held, uint64_t offset, uint64_t end);

}  // namespace stria::client
