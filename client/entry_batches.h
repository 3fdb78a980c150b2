// EntryBatches: requests of one kind that threads of one client make at once about one
// directory, sent to the MDS together. Two kinds are batched, both answered by EntryReply:
//  - creates (CreateBatches: OP_MDS_CREATE with CreateRequest.more);
//  - lookups (LookupBatches: OP_MDS_LOOKUP with LookupRequest.more_names), with an open
//    intent or without (LookupRequest.open: each regular file found is opened too).
//
// A request goes out alone while no request for its directory (and credentials) is in
// flight (kMaxInFlight): a lone thread waits for nothing. Otherwise it waits in the
// directory's queue; when the request returns, the thread that sent it hands the queue to
// the first waiter, which sends every waiting request (up to kMaxBatch) as one. The MDS
// answers a batch with one wake-up and one reply (a batch of creates in one transaction,
// with one WAL write), each item checked and answered alone: 16 threads cost the MDS a
// fraction of the wake-ups, lock hand-offs and WAL writes of 16 single requests
// (docs/performance.md).
//
// An MDS from before batches reads a batch as its first item, and answers it alone: the
// others are then sent one by one. When the directory's check fails (EACCES, ENOENT,
// ENOTDIR), the MDS answers a batch of lookups with that code for each name, and refuses a
// batch of creates as a whole: that error is then each create's answer once this MDS has
// been seen answering a batch (before, or after an MDS restart, the error could be the
// first create's own, and the others go one by one). A transport error is each item's
// answer.
//
// Replays (creates only; a lookup changes nothing): a batch answered before its commit is
// kept as one request, and replayed with the creates that succeeded, each under the inode
// number and layout it got (PatchCreateReplay below).
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client {

class Client;

// Req: proto::CreateRequest or proto::LookupRequest (entry_batches.cc instantiates both).
template <typename Req>
class EntryBatches {
 public:
  // Requests of one directory in flight before others wait to be batched. Creates: one.
  // The MDS makes a directory's creates one transaction at a time anyway, and a second
  // request in flight halves the batches (on 2 vCPUs, 16 threads: 30-38k creates/s with
  // one, 27-37k with two, 20-27k unbatched; docs/performance.md). Lookups: two. The MDS
  // runs them in parallel, and a name whose lookup waits (for another client's size, a
  // write-back recall) then holds up only half of its directory's lookups.
  static constexpr int kMaxInFlight = std::is_same_v<Req, proto::LookupRequest> ? 2 : 1;
  // The most items in one request (the MDS takes up to mds::kMaxCreateBatch and
  // mds::kMaxLookupBatch, 128 each).
  static constexpr int kMaxBatch = 64;

  explicit EntryBatches(Client* client) : client_(client) {}
  EntryBatches(const EntryBatches&) = delete;
  EntryBatches& operator=(const EntryBatches&) = delete;

  // Sends `req` (a create without `more` nor `open`; a lookup without `more_names`, with or
  // without an open intent), alone or in a batch; its reply or its error.
  Result<proto::EntryReply> Send(const Req& req);

  struct Counters {
    uint64_t requests = 0;  // requests sent, batches or not
    uint64_t batched = 0;   // items sent in a batch of two or more
    uint64_t waiting = 0;   // items waiting now for a request of their directory
  };
  Counters counters() const;
  // The MDS restarted, or another took over: it may be one from before batches.
  void MdsRestarted() { mds_answers_batches_.store(false, std::memory_order_relaxed); }

 private:
  struct Waiter {
    explicit Waiter(const Req* r) : req(r) {}
    const Req* req;
    Result<proto::EntryReply> result = Status(Code::kInternal, "not sent");
    bool done = false;  // GUARDED_BY(mu_): result is set
    bool lead = false;  // GUARDED_BY(mu_): send the queue's waiting items, this one first
    std::condition_variable cv;
  };
  using Batch = std::vector<std::shared_ptr<Waiter>>;
  struct Queue {
    int in_flight = 0;
    std::deque<std::shared_ptr<Waiter>> waiting;
  };

  // Sends `batch` (one item or more) and sets each one's result.
  void SendBatch(const Batch& batch);
  // One item alone (a batch's item after an MDS from before batches).
  Result<proto::EntryReply> SendOne(const Req& req);
  // A request of `key`'s queue returned: the first waiter leads the next batch (returned,
  // to be woken once mu_ is released), or the request's slot is free. REQUIRES mu_ held.
  std::shared_ptr<Waiter> Returned(const std::string& key);

  Client* const client_;
  mutable std::mutex mu_;
  std::map<std::string, Queue> queues_;  // GUARDED_BY(mu_), by directory and credentials
  Counters counters_;                    // GUARDED_BY(mu_)
  // The MDS has answered a batch with codes: it knows batches.
  std::atomic<bool> mds_answers_batches_{false};
};

using CreateBatches = EntryBatches<proto::CreateRequest>;
using LookupBatches = EntryBatches<proto::LookupRequest>;

// What a kept create says when replayed (client/client.cc PatchReplay), patched from its
// reply: the inode number and layout it got (so the kernel's inode and any objects written
// under that layout stay valid), and not `open` (the handle comes back by OP_MDS_REOPEN).
// A batch: only the creates that succeeded (one that failed must not succeed in the
// replay), each so, the first of them in the request's own fields; a batch in which none
// succeeded wrote nothing and is never kept. A batch answered without codes, by an MDS
// from before batches, was its first create alone. Leaves a batch as it is when `rep` does
// not answer it.
void PatchCreateReplay(proto::CreateRequest* req, const proto::EntryReply& rep);

}  // namespace stria::client
