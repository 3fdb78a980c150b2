// UnlinkWriteback: unlinks the mount answers before the MDS has them, and sends behind.
//
// Why: an unlink is one synchronous MDS round trip, and on a small machine the MDS's share of
// it (its RocksDB write, the RPC) is most of what a process that removes many files waits
// for: 0.3x of a local file system's unlinks (docs/performance.md). Lustre's metadata
// write-back cache prototype and NFSv4's directory delegations answer such changes at the
// client, under a lock on the directory that the server recalls before anyone else looks.
//
// How (mds/leases.h, "Write-back grants"):
//  - A file's unlink asks the MDS for a write-back grant on its directory (want_writeback);
//    the MDS gives one only while no other client holds a lease over the directory, and
//    none to anyone else while it lasts (Granted).
//  - While the mount holds a grant (with kMargin to spare), the unlink of a name it holds
//    under its entry lease (the kernel sends FUSE_UNLINK only for a name it has, and never
//    for a directory) is queued, and answered done at once (TryQueue): the name exists, is
//    not a directory, and the kernel checked the caller's permissions (default_permissions)
//    against attributes nobody else can have changed. A sender thread sends the queue to
//    the MDS in batches: what queued while the last batch was out, up to kMaxBatch unlinks of
//    one directory by one user, which the MDS makes in one transaction
//    (UnlinkRequest.more_names): one RPC, one namespace-mutex hold and one RocksDB write for
//    many.
//  - Nothing this mount asks the MDS overtakes them: every other MDS request waits until
//    what was queued before it was answered (BeforeMdsCall, the Client's MdsCallGate).
//  - Before another client's request that names the directory, the MDS recalls the grant
//    (a revocation of the directory's entry lease): the grant ends, and the revocation is
//    answered once everything queued reached the MDS (Recall).
//
// What it gives up: an unlink answered here and not yet sent is lost if the mount process
// dies (as data written and not fsync'd is; fsync on the directory or any later MDS request
// of this mount sends it first). An unlink the MDS refuses after it was answered (an I/O
// error there) is logged and counted (failed), the name is looked up again.
//
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client/client.h"
#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::client::fuse {

class UnlinkWriteback : public MdsCallGate {
 public:
  using Clock = std::chrono::steady_clock;
  // A grant is used only while it has this much left: what is queued reaches the MDS well
  // before the grant ends there.
  static constexpr std::chrono::milliseconds kMargin{2000};
  // A mount's sender threads, and how many unlinks may wait to be sent. One sender: the
  // unlinks queued while its batch is out go as the next batch. (Measured against 2 and 4:
  // 21-27k against 18-26k and 12-18k unlinks/s, with a third to a half less MDS CPU,
  // docs/performance.md.)
  static constexpr int kSenders = 1;
  static constexpr size_t kMaxQueued = 256;
  // The most unlinks one request carries (the MDS takes up to mds::kMaxUnlinkBatch, 256).
  static constexpr size_t kMaxBatch = 64;

  struct Item {
    uint64_t parent = 0;
    std::string name;
    proto::Credentials cred;
  };
  // Sends unlinks of one directory by one user (their Credentials but the pid are the same)
  // to the MDS as one request, want_writeback set: each item's result, in order.
  using SendFn = std::function<std::vector<Status>(const std::vector<Item>&)>;
  // After the MDS refused an unlink that was answered done.
  using FailedFn = std::function<void(const Item&, const Status&)>;

  // `senders` threads send the queue; at most `max_queued` unlinks wait (TryQueue waits
  // for room beyond).
  UnlinkWriteback(int senders, size_t max_queued, SendFn send, FailedFn failed);
  ~UnlinkWriteback();  // Stop()s
  UnlinkWriteback(const UnlinkWriteback&) = delete;
  UnlinkWriteback& operator=(const UnlinkWriteback&) = delete;

  // Sends what is queued and ends the senders; later unlinks are not queued.
  void Stop();

  // Taken before a synchronous unlink whose reply may carry a grant: a recall that comes
  // while it is out means the grant may already be recalled at the MDS.
  uint64_t Epoch() const;
  // A grant on `dir` for `ms` from the reply to an unlink sent at `sent` with `epoch`.
  void Granted(uint64_t dir, uint32_t ms, Clock::time_point sent, uint64_t epoch);
  // Queues the unlink of `name` in `dir` when the mount holds a grant there: true, and the
  // caller answers the unlink done. False: the caller unlinks synchronously.
  bool TryQueue(uint64_t dir, std::string_view name, const proto::Credentials& cred);
  // The MDS recalls the grants on `dirs` (all: every grant, the leases were lost): they
  // end, and what was queued in those directories has reached the MDS when this returns
  // (nothing is waited for in a directory without one).
  void Recall(const std::vector<uint64_t>& dirs, bool all);
  // Waits until every unlink queued before the call has been answered by the MDS.
  void Flush();
  // The same for those in `dirs` only.
  void FlushDirs(const std::vector<uint64_t>& dirs);
  // MdsCallGate: Flush before any request but those that need not wait (keepalives,
  // registrations, gathered closes) and the senders' own.
  void BeforeMdsCall(uint16_t op) override;
  // MdsCallGate: the restarted MDS knows of no grant: they end (what is queued still goes).
  void MdsRestarted() override;

  struct Counters {
    uint64_t queued = 0;   // unlinks answered here
    uint64_t sent = 0;     // ... and answered by the MDS
    uint64_t batches = 0;  // requests that carried them
    uint64_t failed = 0;   // ... refused by the MDS after all
    uint64_t grants = 0;   // grants taken
    uint64_t recalls = 0;  // recalls served
    uint64_t waits = 0;    // flushes that had to wait
    size_t pending = 0;    // queued or being sent now
  };
  Counters counters() const;

 private:
  void RunSender();

  const SendFn send_;
  const FailedFn failed_;
  const size_t max_queued_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // senders: an item, or stop
  std::condition_variable done_cv_;  // flushes and full queues: an item answered
  std::unordered_map<uint64_t, Clock::time_point> grants_;  // GUARDED_BY(mu_): dir -> end
  uint64_t epoch_ = 0;                                      // GUARDED_BY(mu_)
  std::deque<std::pair<uint64_t, Item>> queue_;             // GUARDED_BY(mu_): seq, item
  std::map<uint64_t, uint64_t> outstanding_;  // GUARDED_BY(mu_): seq -> parent, queued or
                                              // being sent
  uint64_t next_seq_ = 1;           // GUARDED_BY(mu_)
  bool stop_ = false;               // GUARDED_BY(mu_)
  Counters counters_;               // GUARDED_BY(mu_)
  std::vector<std::thread> senders_;
};

}  // namespace stria::client::fuse
