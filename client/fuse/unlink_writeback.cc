#include "client/fuse/unlink_writeback.h"

#include <algorithm>
#include <utility>

#include "common/log.h"

namespace stria::client::fuse {

namespace {
// Set on the sender threads: their own unlinks do not wait for the queue.
thread_local bool t_sender = false;
}  // namespace

UnlinkWriteback::UnlinkWriteback(int senders, size_t max_queued, SendFn send, FailedFn failed)
    : send_(std::move(send)), failed_(std::move(failed)), max_queued_(max_queued ? max_queued : 1) {
  for (int i = 0; i < std::max(senders, 1); ++i) {
    senders_.emplace_back([this] { RunSender(); });
  }
}

UnlinkWriteback::~UnlinkWriteback() { Stop(); }

void UnlinkWriteback::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
    grants_.clear();
  }
  work_cv_.notify_all();
  done_cv_.notify_all();                     // a TryQueue waiting for room gives up
  for (std::thread& t : senders_) t.join();  // each sends what is left first
  senders_.clear();
}

uint64_t UnlinkWriteback::Epoch() const {
  std::lock_guard lock(mu_);
  return epoch_;
}

void UnlinkWriteback::Granted(uint64_t dir, uint32_t ms, Clock::time_point sent, uint64_t epoch) {
  if (ms == 0) return;
  std::lock_guard lock(mu_);
  if (stop_ || epoch != epoch_) return;  // a recall came while it was out
  grants_[dir] = sent + std::chrono::milliseconds(ms);
  ++counters_.grants;
}

bool UnlinkWriteback::TryQueue(uint64_t dir, std::string_view name,
                               const proto::Credentials& cred) {
  std::unique_lock lock(mu_);
  auto usable = [&] {
    if (stop_) return false;
    auto g = grants_.find(dir);
    return g != grants_.end() && g->second - kMargin > Clock::now();
  };
  if (!usable()) return false;
  if (queue_.size() >= max_queued_) {
    done_cv_.wait(lock, [&] { return stop_ || queue_.size() < max_queued_; });
    if (!usable()) return false;  // recalled, ended or stopped meanwhile
  }
  const uint64_t seq = next_seq_++;
  queue_.emplace_back(seq, Item{dir, std::string(name), cred});
  outstanding_.emplace(seq, dir);
  ++counters_.queued;
  lock.unlock();
  work_cv_.notify_one();
  return true;
}

void UnlinkWriteback::Recall(const std::vector<uint64_t>& dirs, bool all) {
  {
    std::lock_guard lock(mu_);
    ++epoch_;
    ++counters_.recalls;
    if (all) {
      grants_.clear();
    } else {
      for (uint64_t d : dirs) grants_.erase(d);
    }
  }
  if (all) {
    Flush();
  } else {
    FlushDirs(dirs);
  }
}

void UnlinkWriteback::FlushDirs(const std::vector<uint64_t>& dirs) {
  if (t_sender) return;
  std::unique_lock lock(mu_);
  auto pending = [&] {
    for (const auto& [seq, parent] : outstanding_) {
      if (std::find(dirs.begin(), dirs.end(), parent) != dirs.end()) return true;
    }
    return false;
  };
  if (!pending()) return;
  ++counters_.waits;
  done_cv_.wait(lock, [&] { return !pending(); });
}

void UnlinkWriteback::MdsRestarted() {
  std::lock_guard lock(mu_);
  ++epoch_;
  if (!grants_.empty()) {
    LOG_INFO("the MDS restarted: {} write-back grants end", grants_.size());
    grants_.clear();
  }
}

void UnlinkWriteback::Flush() {
  if (t_sender) return;
  std::unique_lock lock(mu_);
  if (outstanding_.empty()) return;
  const uint64_t upto = next_seq_ - 1;
  ++counters_.waits;
  done_cv_.wait(lock, [&] { return outstanding_.empty() || outstanding_.begin()->first > upto; });
}

void UnlinkWriteback::BeforeMdsCall(uint16_t op) {
  switch (op) {
    case proto::OP_MDS_KEEPALIVE:
    case proto::OP_MDS_LEASE_REGISTER:
    // A close, a lock, a Data-on-MDT transfer or a capability renewal and an unlink of the
    // same file end the same in either order.
    case proto::OP_MDS_CLOSE_BATCH:
    case proto::OP_MDS_LOCK:
    case proto::OP_MDS_DOM_READ:
    case proto::OP_MDS_DOM_WRITE:
    case proto::OP_MDS_CAPA_RENEW:
      return;
    default:
      break;
  }
  // The MGS's requests (configuration, parameters) are not about names.
  if (op >= proto::OP_MGS_REGISTER_OST && op < proto::OP_MDS_LOOKUP) return;
  Flush();
}

namespace {
// One request may carry both: the same directory, and the same user (the pid aside).
bool SameBatch(const UnlinkWriteback::Item& a, const UnlinkWriteback::Item& b) {
  const proto::Credentials &x = a.cred, &y = b.cred;
  return a.parent == b.parent && x.uid() == y.uid() && x.gid() == y.gid() &&
         x.jobid() == y.jobid() &&
         std::equal(x.groups().begin(), x.groups().end(), y.groups().begin(), y.groups().end());
}
}  // namespace

void UnlinkWriteback::RunSender() {
  t_sender = true;
  std::unique_lock lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopped, and everything sent
    // The oldest unlink and those queued after it that can go with it. What is queued are
    // unlinks of distinct names that exist (anything else this mount asks waits for them),
    // so they may reach the MDS in any order.
    std::vector<Item> batch;
    std::vector<uint64_t> seqs;
    for (auto it = queue_.begin(); it != queue_.end() && batch.size() < kMaxBatch;) {
      if (!batch.empty() && !SameBatch(it->second, batch.front())) {
        ++it;
        continue;
      }
      seqs.push_back(it->first);
      batch.push_back(std::move(it->second));
      it = queue_.erase(it);
    }
    done_cv_.notify_all();  // room in the queue
    if (!queue_.empty()) work_cv_.notify_one();  // for another sender
    lock.unlock();
    std::vector<Status> results = send_(batch);
    results.resize(batch.size(), Status(Code::kIO, "no result for this unlink"));
    size_t failed = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (results[i].ok()) continue;
      ++failed;
      LOG_WARN("unlink of '{}' in directory {}, answered done before, refused by the MDS: {}",
               batch[i].name, batch[i].parent, results[i].ToString());
      if (failed_) failed_(batch[i], results[i]);
    }
    lock.lock();
    for (uint64_t seq : seqs) outstanding_.erase(seq);
    counters_.sent += batch.size() - failed;
    counters_.failed += failed;
    ++counters_.batches;
    done_cv_.notify_all();
  }
}

UnlinkWriteback::Counters UnlinkWriteback::counters() const {
  std::lock_guard lock(mu_);
  Counters c = counters_;
  c.pending = outstanding_.size();
  return c;
}

}  // namespace stria::client::fuse
