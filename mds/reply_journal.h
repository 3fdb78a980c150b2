// ReplyJournal: persists the reply of a non-idempotent request in the same WriteBatch as the
// change it reports, so a client that resends after an MDS crash or restart (same client
// uuid, same xid) gets the original answer instead of, say, EEXIST for its own create.
//
// The RPC server's in-memory reply cache (lnet/reply_cache.h) answers resends while the MDS
// runs; this journal covers restarts. MdsService looks a reply up here only for requests that
// say they may have been done before: resends (kFlagResend) and replays (kFlagReplay). MdsService wraps each non-idempotent handler in a
// ScopedReplyJournal naming (client uuid, xid) and the reply message; Txn::Commit adds
// R<uuid><xid> -> serialized reply to its batch when a journal is active on the thread
// (operations fill their reply before committing). Older records of a client are trimmed
// in the same batches (kKeepPerClient most recent xids are kept).
// Thread-safety: the active journal is thread_local; a handler runs on one thread.
#pragma once

#include <google/protobuf/message.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mds/namespace.h"

namespace stria::mds {

inline constexpr uint64_t kKeepPerClient = 1024;
inline constexpr uint64_t kTrimEvery = 8192;

// R<uuid length:u8><uuid><xid:be64>.
std::string ReplyKey(const std::string& client_uuid, uint64_t xid);

// Whether `key` is where a trim's range deletion starts (ReplyKey(uuid, 0)): the MDS keeps
// range-deletion starts out of the memtable's insert hints (mds/namespace.cc), and the trim
// is its only range deletion.
bool IsTrimStartKey(std::string_view key);

struct ReplyJournal {
  std::string client_uuid;
  uint64_t xid = 0;
  const google::protobuf::Message* reply = nullptr;
};

// The journal active on this thread, or null.
const ReplyJournal* ActiveReplyJournal();

// Activates a journal for the current thread for its lifetime.
class ScopedReplyJournal {
 public:
  explicit ScopedReplyJournal(const ReplyJournal* journal);
  ~ScopedReplyJournal();
  ScopedReplyJournal(const ScopedReplyJournal&) = delete;
  ScopedReplyJournal& operator=(const ScopedReplyJournal&) = delete;

 private:
  const ReplyJournal* prev_;
};

// A persisted reply body for (client_uuid, xid), if any.
Result<std::optional<std::string>> FindPersistedReply(const Namespace& ns,
                                                      const std::string& client_uuid,
                                                      uint64_t xid);

// Adds the active journal's record (and trimming of older ones) to `batch`; no-op when none.
void AppendReplyRecord(rocksdb::WriteBatch* batch);

}  // namespace stria::mds
