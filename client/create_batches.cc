// CreateBatches: see create_batches.h.
#include "client/create_batches.h"

#include <fmt/format.h>

#include <utility>

#include "client/client.h"

namespace stria::client {

namespace {

// Creates batch together only with the same directory and credentials (the batch's own);
// the caller's pid is not part of them (the MDS uses none for a create), its jobid is.
std::string KeyOf(const proto::CreateRequest& req) {
  const proto::Credentials& c = req.cred();
  std::string key =
      std::to_string(req.parent()) + ':' + std::to_string(c.uid()) + ':' + std::to_string(c.gid());
  for (uint32_t g : c.groups()) key += ',' + std::to_string(g);
  return key + '|' + c.jobid();
}

Status ZeroInode() { return Status(Code::kProtocol, "MDS create returned inode 0"); }

}  // namespace

Result<proto::EntryReply> CreateBatches::SendOne(const proto::CreateRequest& req) {
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(client_->MdsCall(proto::OP_MDS_CREATE, req, &rep));
  if (rep.attr().ino() == 0) return ZeroInode();
  return rep;
}

void CreateBatches::Send(const std::vector<std::shared_ptr<Waiter>>& batch) {
  if (batch.size() == 1) {
    batch.front()->result = SendOne(*batch.front()->req);
    return;
  }
  proto::CreateRequest req = *batch.front()->req;
  for (size_t i = 1; i < batch.size(); ++i) {
    proto::CreateRequest* item = req.add_more();
    *item = *batch[i]->req;
    item->clear_cred();  // the batch's own
    item->clear_parent();
  }
  proto::EntryReply rep;
  Status st = client_->MdsCall(proto::OP_MDS_CREATE, req, &rep);
  const auto code = static_cast<int32_t>(st.code());
  const bool batches_known = mds_answers_batches_.load(std::memory_order_relaxed);
  if (!st.ok() && (code <= 0 || code >= 1000 || batches_known)) {
    // The transport's error: nothing is known of any create (each may be done), as for a
    // single create. Or an MDS that answers batches refused this one as a whole: its
    // parent's check failed, as it would for each create alone, and nothing was done.
    for (const auto& w : batch) w->result = st;
    return;
  }
  if (!st.ok() || rep.codes_size() == 0) {
    // An MDS from before batches (or one not yet seen answering a batch) read the first
    // create alone: it made it (no codes) or answered why not. The others go one by one.
    if (!st.ok()) {
      batch.front()->result = st;
    } else {
      batch.front()->result = rep.attr().ino() != 0 ? Result<proto::EntryReply>(rep) : ZeroInode();
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
                     fmt::format("the MDS answered a batch of {} creates with {} results",
                                 batch.size(), rep.codes_size()));
    for (const auto& w : batch) w->result = bad;
    return;
  }
  const proto::Attr parent_attr = rep.parent_attr();
  auto more = std::move(*rep.mutable_more());
  const auto codes = std::move(*rep.mutable_codes());
  rep.clear_more();
  rep.clear_codes();
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto code = static_cast<Code>(codes[static_cast<int>(i)]);
    if (code != Code::kOk) {
      batch[i]->result =
          Status(code, fmt::format("create of '{}': {}", batch[i]->req->name(), CodeName(code)));
      continue;
    }
    proto::EntryReply one = i == 0 ? std::move(rep) : std::move(more[static_cast<int>(i) - 1]);
    if (one.attr().ino() == 0) {
      batch[i]->result = ZeroInode();
      continue;
    }
    *one.mutable_parent_attr() = parent_attr;
    batch[i]->result = std::move(one);
  }
}

std::shared_ptr<CreateBatches::Waiter> CreateBatches::Returned(const std::string& key) {
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

Result<proto::EntryReply> CreateBatches::Create(const proto::CreateRequest& req) {
  const std::string key = KeyOf(req);
  // Shared with the thread that wakes it, which may touch it after this one has returned.
  auto me = std::make_shared<Waiter>(&req);
  std::unique_lock lock(mu_);
  Queue& q = queues_[key];  // a map node: stays while requests of it are in flight
  std::vector<std::shared_ptr<Waiter>> batch{me};
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
    Send(batch);
  } catch (...) {  // bad_alloc: the queue must not stay blocked behind this request
    for (const auto& w : batch) w->result = Status(Code::kNoMem, "create batch: out of memory");
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

CreateBatches::Counters CreateBatches::counters() const {
  std::lock_guard lock(mu_);
  Counters c = counters_;
  for (const auto& [key, q] : queues_) c.waiting += q.waiting.size();
  return c;
}

}  // namespace stria::client
