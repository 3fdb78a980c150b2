#include "lnet/reply_cache.h"

namespace stria::lnet {

std::optional<CachedReply> ReplyCache::Begin(const std::string& client, uint64_t xid) {
  std::unique_lock lk(mu_);
  auto& entries = clients_[client];
  auto it = entries.find(xid);
  if (it == entries.end()) {
    entries.emplace(xid, Entry{});
    while (entries.size() > per_client_) {
      auto oldest = entries.begin();
      if (!oldest->second.done) break;  // never forget one still running
      entries.erase(oldest);
    }
    return std::nullopt;
  }
  cv_.wait(lk, [&] {
    auto e = clients_[client].find(xid);
    return e == clients_[client].end() || e->second.done;
  });
  auto e = clients_[client].find(xid);
  if (e == clients_[client].end()) {
    return CachedReply{Status(Code::kNotReady, "resent request was evicted; retry"), {}};
  }
  return e->second.reply;
}

void ReplyCache::Complete(const std::string& client, uint64_t xid, CachedReply reply) {
  {
    std::lock_guard lk(mu_);
    auto& entries = clients_[client];
    auto it = entries.find(xid);
    if (it == entries.end()) return;
    it->second.done = true;
    it->second.reply = std::move(reply);
  }
  cv_.notify_all();
}

}  // namespace stria::lnet
