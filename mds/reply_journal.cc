#include "mds/reply_journal.h"

#include <rocksdb/write_batch.h>

#include "mds/schema.h"

namespace stria::mds {
namespace {

thread_local const ReplyJournal* g_active = nullptr;

std::string ClientPrefix(const std::string& client_uuid) {
  std::string k(1, kPrefixReply);
  k.push_back(static_cast<char>(client_uuid.size()));
  k.append(client_uuid);
  return k;
}

}  // namespace

std::string ReplyKey(const std::string& client_uuid, uint64_t xid) {
  std::string k = ClientPrefix(client_uuid);
  PutBe64(&k, xid);
  return k;
}

bool IsTrimStartKey(std::string_view key) {
  if (key.size() < 2 || key[0] != kPrefixReply) return false;
  const size_t uuid_len = static_cast<uint8_t>(key[1]);
  return key.size() == 2 + uuid_len + 8 && GetBe64(key.substr(2 + uuid_len)) == 0;
}

const ReplyJournal* ActiveReplyJournal() { return g_active; }

ScopedReplyJournal::ScopedReplyJournal(const ReplyJournal* journal) : prev_(g_active) {
  g_active = journal;
}

ScopedReplyJournal::~ScopedReplyJournal() { g_active = prev_; }

Result<std::optional<std::string>> FindPersistedReply(const Namespace& ns,
                                                      const std::string& client_uuid,
                                                      uint64_t xid) {
  if (client_uuid.empty() || client_uuid.size() > 255) return std::optional<std::string>();
  return ns.Get(ReplyKey(client_uuid, xid));
}

void AppendReplyRecord(rocksdb::WriteBatch* batch) {
  const ReplyJournal* j = g_active;
  if (j == nullptr || j->reply == nullptr || j->client_uuid.empty() ||
      j->client_uuid.size() > 255) {
    return;
  }
  batch->Put(ReplyKey(j->client_uuid, j->xid), j->reply->SerializeAsString());
  // Trim now and then: one range tombstone per kTrimEvery xids. Seldom on purpose: RocksDB
  // fragments every range tombstone in the memtable each time an iterator is created, so
  // frequent range deletes make every readdir and queue scan slower (seen: unlink at 140/s).
  // The range starts at xid 0, which IsTrimStartKey recognizes.
  if (j->xid > kKeepPerClient && j->xid % kTrimEvery == 0) {
    batch->DeleteRange(ReplyKey(j->client_uuid, 0), ReplyKey(j->client_uuid, j->xid - kKeepPerClient));
  }
}

}  // namespace stria::mds
