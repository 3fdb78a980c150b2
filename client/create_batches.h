// CreateBatches: creates that threads of one client make at once in one directory, sent to
// the MDS together (OP_MDS_CREATE with CreateRequest.more).
//
// A create goes out alone while no request for its directory (and credentials) is in
// flight (kMaxInFlight): a lone creator waits for nothing. Otherwise it waits in the
// directory's queue; when the request returns, the thread that sent it hands the queue to
// the first waiter, which sends every waiting create (up to kMaxBatch) as one request. The MDS
// makes a batch in one transaction under one mutex hold, with one WAL write and one reply,
// each create checked and answered alone: 16 creating threads cost the MDS a fraction of the
// wake-ups, lock hand-offs and WAL writes of 16 single creates (docs/performance.md).
//
// An MDS from before batches reads a batch as its first create, and answers it alone: the
// others are then sent one by one. An MDS seen answering a batch refuses one as a whole
// only when the parent's check fails (EACCES, ENOENT, ENOTDIR): that error is then each
// create's answer (before such a reply is seen, the error could be the first create's own,
// and the others go one by one). A transport error is each create's answer.
//
// Replays: a batch answered before its commit is kept as one request, and replayed with
// the creates that succeeded, each under the inode number and layout it got
// (PatchCreateReplay below).
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
#include <vector>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client {

class Client;

class CreateBatches {
 public:
  // Requests of one directory in flight before creates wait to be batched. One: the MDS
  // makes a directory's creates one transaction at a time anyway, and a second request in
  // flight halves the batches (on 2 vCPUs, 16 threads: 30-38k creates/s with one, 27-37k
  // with two, 20-27k unbatched; docs/performance.md).
  static constexpr int kMaxInFlight = 1;
  // The most creates in one request (the MDS takes up to mds::kMaxCreateBatch, 128).
  static constexpr int kMaxBatch = 64;

  explicit CreateBatches(Client* client) : client_(client) {}
  CreateBatches(const CreateBatches&) = delete;
  CreateBatches& operator=(const CreateBatches&) = delete;

  // Sends `req` (no `more`, not `open`), alone or in a batch; its reply or its error.
  Result<proto::EntryReply> Create(const proto::CreateRequest& req);

  struct Counters {
    uint64_t requests = 0;  // create requests sent, batches or not
    uint64_t batched = 0;   // creates sent in a batch of two or more
    uint64_t waiting = 0;   // creates waiting now for a request of their directory
  };
  Counters counters() const;

 private:
  struct Waiter {
    explicit Waiter(const proto::CreateRequest* r) : req(r) {}
    const proto::CreateRequest* req;
    Result<proto::EntryReply> result = Status(Code::kInternal, "not sent");
    bool done = false;  // GUARDED_BY(mu_): result is set
    bool lead = false;  // GUARDED_BY(mu_): send the queue's waiting creates, this one first
    std::condition_variable cv;
  };
  struct Queue {
    int in_flight = 0;
    std::deque<std::shared_ptr<Waiter>> waiting;
  };

  // Sends `batch` (one create or more) and sets each one's result.
  void Send(const std::vector<std::shared_ptr<Waiter>>& batch);
  // One create alone (a batch's create after an MDS from before batches).
  Result<proto::EntryReply> SendOne(const proto::CreateRequest& req);
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
