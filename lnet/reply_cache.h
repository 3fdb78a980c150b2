// ReplyCache: remembers the replies to non-idempotent requests so that a resent request
// (same client uuid, same xid: RpcClient resends after a lost connection or a timeout) gets
// the original answer instead of running twice. A resend that arrives while the original
// is still running waits for it.
//
// Kept in memory, at most `per_client` replies per client (the oldest xids are forgotten
// first); a daemon that must also answer resends across its own restart persists the
// reply with the change itself (the MDS does this in its WriteBatch).
// Thread-safety: all methods are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/status.h"

namespace stria::lnet {

struct CachedReply {
  Status status;
  std::string body;
  uint64_t transno = 0;  // the reply's transaction number: a resent answer carries it too
};

class ReplyCache {
 public:
  explicit ReplyCache(size_t per_client = 1024) : per_client_(per_client) {}

  // Claims (client, xid). Returns the cached reply if that request already completed
  // (waiting while it runs elsewhere); std::nullopt if the caller must run it and then
  // call Complete().
  std::optional<CachedReply> Begin(const std::string& client, uint64_t xid);

  // Records the reply of a request claimed by Begin() and wakes waiting resends.
  void Complete(const std::string& client, uint64_t xid, CachedReply reply);

 private:
  struct Entry {
    bool done = false;
    CachedReply reply;
  };
  const size_t per_client_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, std::map<uint64_t, Entry>> clients_;  // GUARDED_BY(mu_)
};

}  // namespace stria::lnet
