// EntryBatches: see entry_batches.h.
#include "client/entry_batches.h"

#include <fmt/format.h>

#include <utility>

#include "client/client.h"
#include "client/metadata.h"

namespace stria::client {

namespace {

// Items batch together only with the same directory and credentials (the batch's own); the
// caller's pid is not part of them (the MDS uses none for a create or a lookup), its jobid
// is.
std::string KeyOf(uint64_t parent, const proto::Credentials& c) {
  std::string key =
      std::to_string(parent) + ':' + std::to_string(c.uid()) + ':' + std::to_string(c.gid());
  for (uint32_t g : c.groups()) key += ',' + std::to_string(g);
  return key + '|' + c.jobid();
}

// What differs between the kinds of batch.
template <typename Req>
struct Kind;

template <>
struct Kind<proto::CreateRequest> {
  static constexpr proto::Opcode kOpcode = proto::OP_MDS_CREATE;
  static constexpr const char* kWhat = "create";
  // The MDS refuses a batch as a whole when the parent's check fails.
  static constexpr bool kRefusedInCodes = false;
  static std::string Key(const proto::CreateRequest& r) { return KeyOf(r.parent(), r.cred()); }
  static void Add(proto::CreateRequest* batch, const proto::CreateRequest& item) {
    proto::CreateRequest* more = batch->add_more();
    *more = item;
    more->clear_cred();  // the batch's own
    more->clear_parent();
  }
  static const std::string& Name(const proto::CreateRequest& r) { return r.name(); }
  static bool InodeOk(const proto::CreateRequest&, const proto::EntryReply& rep) {
    return rep.attr().ino() != 0;
  }
  // The parent after the batch (in the reply's own fields): each create's reply shows it.
  static void Complete(const proto::Attr& parent_attr, proto::EntryReply* one) {
    *one->mutable_parent_attr() = parent_attr;
  }
  // A reply none of whose items can be answered: batched creates are never opens.
  static void Discard(Client*, const proto::CreateRequest&, const proto::EntryReply&) {}
};

template <>
struct Kind<proto::LookupRequest> {
  static constexpr proto::Opcode kOpcode = proto::OP_MDS_LOOKUP;
  static constexpr const char* kWhat = "lookup";
  // The MDS answers a batch whose directory's check fails with that code for each name: a
  // batch refused as a whole comes from an MDS from before batches.
  static constexpr bool kRefusedInCodes = true;
  // negative_ok changes what a missing name is answered with, and an open intent what a
  // file found is answered with: batched only with their like.
  static std::string Key(const proto::LookupRequest& r) {
    return KeyOf(r.parent(), r.cred()) + (r.negative_ok() ? "|n" : "") +
           (r.open() ? "|o" + std::to_string(r.open_flags()) : "");
  }
  static void Add(proto::LookupRequest* batch, const proto::LookupRequest& item) {
    batch->add_more_names(item.name());
  }
  static const std::string& Name(const proto::LookupRequest& r) { return r.name(); }
  static bool InodeOk(const proto::LookupRequest& r, const proto::EntryReply& rep) {
    return rep.attr().ino() != 0 || r.negative_ok();
  }
  static void Complete(const proto::Attr&, proto::EntryReply*) {}
  // A reply none of whose items can be answered: the files its open intent opened are
  // closed, or the MDS would keep them open (and unlinked ones as orphans) for the session.
  static void Discard(Client* client, const proto::LookupRequest& req,
                      const proto::EntryReply& rep) {
    if (!req.open()) return;
    Metadata md(client);
    md.CloseOpenOf(req.cred(), rep);
    for (const proto::EntryReply& r : rep.more()) md.CloseOpenOf(req.cred(), r);
  }
};

template <typename Req>
Status ZeroInode() {
  return Status(Code::kProtocol, fmt::format("MDS {} returned inode 0", Kind<Req>::kWhat));
}

}  // namespace

template <typename Req>
Result<proto::EntryReply> EntryBatches<Req>::SendOne(const Req& req) {
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(Kind<Req>::kOpcode, req, &rep));
  if (!Kind<Req>::InodeOk(req, rep)) return ZeroInode<Req>();
  return rep;
}

template <typename Req>
void EntryBatches<Req>::SendBatch(const Batch& batch) {
  if (batch.size() == 1) {
    batch.front()->result = SendOne(*batch.front()->req);
    return;
  }
  Req req = *batch.front()->req;
  for (size_t i = 1; i < batch.size(); ++i) Kind<Req>::Add(&req, *batch[i]->req);
  proto::EntryReply rep;
  Status st = client_->MdsCall(Kind<Req>::kOpcode, req, &rep);
  const bool batches_known =
      !Kind<Req>::kRefusedInCodes && mds_answers_batches_.load(std::memory_order_relaxed);
  if (!st.ok() && (!IsErrno(st.code()) || batches_known)) {
    // The transport's error: nothing is known of any item (each create may be done), as
    // for a single request. Or an MDS that answers batches refused this one as a whole:
    // the directory's check failed, as it would for each item alone, and nothing was done.
    for (const auto& w : batch) w->result = st;
    return;
  }
  if (!st.ok() || rep.codes_size() == 0) {
    // An MDS from before batches (or one not yet seen answering a batch) read the first
    // item alone: it answered it (no codes) or said why not. The others go one by one.
    if (!st.ok()) {
      batch.front()->result = st;
    } else if (Kind<Req>::InodeOk(*batch.front()->req, rep)) {
      batch.front()->result = std::move(rep);
    } else {
      batch.front()->result = ZeroInode<Req>();
    }
    for (size_t i = 1; i < batch.size(); ++i) {
      {
        std::lock_guard lock(mu_);
        ++counters_.requests;
      }
      batch[i]->result = SendOne(*batch[i]->req);
    }
    return;
  }
  mds_answers_batches_.store(true, std::memory_order_relaxed);
  if (rep.codes_size() != static_cast<int>(batch.size()) ||
      rep.more_size() != static_cast<int>(batch.size()) - 1) {
    const Status bad(Code::kProtocol,
                     fmt::format("the MDS answered a batch of {} {}s with {} results", batch.size(),
                                 Kind<Req>::kWhat, rep.codes_size()));
    Kind<Req>::Discard(client_, req, rep);
    for (const auto& w : batch) w->result = bad;
    return;
  }
  auto more = std::move(*rep.mutable_more());
  const auto codes = std::move(*rep.mutable_codes());
  rep.clear_more();
  rep.clear_codes();
  const proto::Attr parent_attr = rep.parent_attr();  // for Complete, before rep is moved
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto c = static_cast<Code>(codes[static_cast<int>(i)]);
    const Req& item = *batch[i]->req;
    if (c != Code::kOk) {
      batch[i]->result = Status(
          c, fmt::format("{} of '{}': {}", Kind<Req>::kWhat, Kind<Req>::Name(item), CodeName(c)));
      continue;
    }
    proto::EntryReply one = i == 0 ? std::move(rep) : std::move(more[static_cast<int>(i) - 1]);
    if (!Kind<Req>::InodeOk(item, one)) {
      batch[i]->result = ZeroInode<Req>();
      continue;
    }
    Kind<Req>::Complete(parent_attr, &one);
    batch[i]->result = std::move(one);
  }
}

template <typename Req>
std::shared_ptr<typename EntryBatches<Req>::Waiter> EntryBatches<Req>::Returned(
    const std::string& key) {
  auto it = queues_.find(key);
  Queue& q = it->second;
  if (!q.waiting.empty()) {
    // The request's slot goes to the next batch.
    std::shared_ptr<Waiter> next = std::move(q.waiting.front());
    q.waiting.pop_front();
    next->lead = true;
    return next;
  }
  if (--q.in_flight == 0) queues_.erase(it);
  return nullptr;
}

template <typename Req>
Result<proto::EntryReply> EntryBatches<Req>::Send(const Req& req) {
  const std::string key = Kind<Req>::Key(req);
  // Shared with the thread that wakes it, which may touch it after this one has returned.
  auto me = std::make_shared<Waiter>(&req);
  std::unique_lock lock(mu_);
  Queue& q = queues_[key];  // a map node: stays while requests of it are in flight
  Batch batch{me};
  if (q.in_flight < kMaxInFlight) {
    ++q.in_flight;
  } else {
    q.waiting.push_back(me);
    me->cv.wait(lock, [&] { return me->done || me->lead; });
    if (me->done) return std::move(me->result);
    while (!q.waiting.empty() && batch.size() < static_cast<size_t>(kMaxBatch)) {
      batch.push_back(std::move(q.waiting.front()));
      q.waiting.pop_front();
    }
  }
  ++counters_.requests;
  if (batch.size() > 1) counters_.batched += batch.size();
  lock.unlock();
  try {
    SendBatch(batch);
  } catch (...) {  // bad_alloc: the queue must not stay blocked behind this request
    for (const auto& w : batch) {
      w->result = Status(Code::kNoMem, fmt::format("{} batch: out of memory", Kind<Req>::kWhat));
    }
  }
  lock.lock();
  for (const auto& w : batch) w->done = true;
  std::shared_ptr<Waiter> next = Returned(key);
  lock.unlock();
  // Woken outside the lock, so that none wakes only to wait for it.
  for (size_t i = 1; i < batch.size(); ++i) batch[i]->cv.notify_one();
  if (next) next->cv.notify_one();
  return std::move(me->result);
}

template <typename Req>
typename EntryBatches<Req>::Counters EntryBatches<Req>::counters() const {
  std::lock_guard lock(mu_);
  Counters c = counters_;
  for (const auto& [key, q] : queues_) c.waiting += q.waiting.size();
  return c;
}

template class EntryBatches<proto::CreateRequest>;
template class EntryBatches<proto::LookupRequest>;

void PatchCreateReplay(proto::CreateRequest* req, const proto::EntryReply& rep) {
  if (req->more_size() > 0 && rep.codes_size() == 0) {
    // A batch that an MDS from before batches read as its first create alone (the others
    // were sent again one by one): replayed as that create.
    req->clear_more();
  }
  if (req->more_size() == 0) {
    req->set_replay_ino(rep.attr().ino());
    if (rep.has_layout()) *req->mutable_replay_layout() = rep.layout();
    req->set_open(false);
    return;
  }
  if (rep.codes_size() != 1 + req->more_size() || rep.more_size() != req->more_size()) return;
  proto::CreateRequest out;
  *out.mutable_cred() = req->cred();
  const uint64_t parent = req->parent();
  auto more = std::move(*req->mutable_more());
  req->clear_more();
  bool first = true;
  for (int i = 0; i < rep.codes_size(); ++i) {
    if (rep.codes(i) != 0) continue;
    const proto::EntryReply& one = i == 0 ? rep : rep.more(i - 1);
    proto::CreateRequest& item = i == 0 ? *req : more[i - 1];
    item.set_replay_ino(one.attr().ino());
    if (one.has_layout()) *item.mutable_replay_layout() = one.layout();
    item.clear_cred();
    item.clear_parent();
    if (first) {
      out.MergeFrom(item);  // the first that succeeded: the request's own fields
      first = false;
    } else {
      *out.add_more() = std::move(item);
    }
  }
  out.set_parent(parent);
  *req = std::move(out);
}

}  // namespace stria::client
