#include "client/fuse/statahead.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace stria::client::fuse {

bool SplitName(std::string_view name, NamePattern* pattern, uint64_t* number) {
  size_t end = name.size();
  while (end > 0 && (name[end - 1] < '0' || name[end - 1] > '9')) --end;
  if (end == 0) return false;
  size_t begin = end;
  while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9') --begin;
  const size_t digits = end - begin;
  if (digits > 18) return false;
  uint64_t n = 0;
  for (size_t i = begin; i < end; ++i) n = n * 10 + static_cast<uint64_t>(name[i] - '0');
  pattern->prefix.assign(name.substr(0, begin));
  pattern->suffix.assign(name.substr(end));
  pattern->width = digits > 1 && name[begin] == '0' ? static_cast<int>(digits) : 0;
  *number = n;
  return true;
}

std::string JoinName(const NamePattern& pattern, uint64_t number) {
  if (pattern.width > 0) {
    return fmt::format("{}{:0{}}{}", pattern.prefix, number, pattern.width, pattern.suffix);
  }
  return fmt::format("{}{}{}", pattern.prefix, number, pattern.suffix);
}

Statahead::Statahead(int window, std::chrono::milliseconds keep, FetchFn fetch, DropFn drop,
                     WantOpenFn want_open)
    : window_(std::clamp(window, 0, kMaxWindow)),
      keep_(keep),
      fetch_(std::move(fetch)),
      drop_(std::move(drop)),
      want_open_(std::move(want_open)) {
  worker_ = std::thread([this] { Run(); });
}

Statahead::~Statahead() { Stop(); }

void Statahead::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    jobs_.clear();
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  DropSlots([](const Key&, const Slot&) { return true; });
}

void Statahead::set_window(int window) {
  window_.store(std::clamp(window, 0, kMaxWindow), std::memory_order_relaxed);
}

std::optional<AheadEntry> Statahead::Lookup(uint64_t dir, std::string_view name,
                                            const proto::Credentials& cred) {
  const int max = window();  // read once: lctl may change it meanwhile
  const bool on = max > 0;
  const bool want_open = on && want_open_ ? want_open_(dir) : false;
  std::unique_lock lock(mu_);
  if (stop_) return std::nullopt;
  if (on) {
    if (std::optional<Queued> q = ObserveLocked(dir, name, cred, want_open, max)) {
      jobs_.push_back(std::move(*q));
      work_cv_.notify_one();
    }
  }
  const Key key{dir, std::string(name)};
  auto it = slots_.find(key);
  if (it == slots_.end()) return std::nullopt;
  if (it->second.pending) {
    // Asked ahead, not answered yet: the answer is on its way, and is this lookup's too.
    const uint64_t id = it->second.id;
    ++counters_.waits;
    done_cv_.wait_for(lock, kMaxWait, [&] {
      it = slots_.find(key);
      return stop_ || it == slots_.end() || it->second.id != id || !it->second.pending;
    });
    if (it == slots_.end() || it->second.id != id || it->second.pending) return std::nullopt;
  }
  std::optional<AheadEntry> out = std::move(it->second.entry);
  slots_.erase(it);
  if (out) --counters_.kept;
  return out;
}

void Statahead::Used(uint64_t dir) {
  std::lock_guard lock(mu_);
  ++counters_.hits;
  auto r = runs_.find(dir);
  if (r == runs_.end()) return;
  DirRun& run = r->second;
  const int max = window();
  if (max == 0) return;  // off now: the run is left as it was
  run.credit = std::min(run.credit + 1, 2 * max);
  // A window's worth used: the run asks twice as far ahead, up to the most allowed.
  if (++run.used_in_window >= run.window) {
    run.window = std::min(2 * run.window, max);
    run.used_in_window = 0;
  }
}

void Statahead::Unused(uint64_t dir) {
  std::lock_guard lock(mu_);
  ++counters_.misses;
  Charge(dir, 1, /*shrink=*/true);
}

std::optional<Statahead::Queued> Statahead::ObserveLocked(uint64_t dir, std::string_view name,
                                                          const proto::Credentials& cred,
                                                          bool want_open, int max) {
  NamePattern pattern;
  uint64_t n = 0;
  const bool numbered = SplitName(name, &pattern, &n);
  auto it = runs_.find(dir);
  if (!numbered) {
    if (it != runs_.end()) it->second.length = 0;
    return std::nullopt;
  }
  if (it == runs_.end()) {
    if (runs_.size() >= kMaxDirs) {
      // The run used longest ago goes.
      auto oldest = std::min_element(runs_.begin(), runs_.end(), [](const auto& a, const auto& b) {
        return a.second.used < b.second.used;
      });
      runs_.erase(oldest);
    }
    it = runs_.emplace(dir, DirRun{}).first;
  }
  DirRun& r = it->second;
  r.used = Clock::now();
  const bool same_pattern = r.length > 0 && r.pattern == pattern;
  if (same_pattern && n + kJitter < r.highest && n + kBehind >= r.highest) {
    // A reader behind the others (workers drift apart): its names were asked already.
    return std::nullopt;
  }
  if (!same_pattern || n + kJitter < r.highest || n > r.highest + kJitter) {
    // A new run begins here (none was, another pattern, or a jump).
    r.pattern = std::move(pattern);
    r.highest = n;
    r.asked = n;
    r.length = 1;
    r.credit = max;
    r.window = std::min(kFirstWindow, max);
    r.used_in_window = 0;
    r.asking = false;
    return std::nullopt;
  }
  ++r.length;
  r.highest = std::max(r.highest, n);
  // Within statahead_max, which may have changed since (set to 0 and back, say).
  r.window = std::clamp(r.window, std::min(kFirstWindow, max), max);
  if (r.length < kMinRun || r.credit <= 0) return std::nullopt;
  const uint64_t from = std::max(r.asked, r.highest) + 1;
  const uint64_t to = r.highest + static_cast<uint64_t>(r.window);
  // Half a window at a time: the readers are half a window from the end of what was asked.
  if (to < from || to - from + 1 < static_cast<uint64_t>(std::max(r.window / 2, 1))) {
    return std::nullopt;
  }
  r.asked = to;
  if (!r.asking) {
    r.asking = true;
    ++counters_.runs;
  }
  Queued q;
  q.job.dir = dir;
  q.job.cred = cred;
  q.job.open = want_open;
  for (uint64_t m = from; m <= to; ++m) {
    std::string next = JoinName(r.pattern, m);
    Key key{dir, next};
    if (slots_.contains(key)) continue;
    Slot& s = slots_[std::move(key)];
    s.id = ++next_id_;
    q.ids.push_back(s.id);
    q.job.names.push_back(std::move(next));
  }
  if (q.job.names.empty()) return std::nullopt;
  return q;
}

void Statahead::TakeSlotsLocked(const std::function<bool(const Key&, const Slot&)>& pred,
                                std::vector<AheadEntry>* out) {
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (!pred(it->first, it->second)) {
      ++it;
      continue;
    }
    if (it->second.entry) {
      --counters_.kept;
      out->push_back(std::move(*it->second.entry));
    }
    it = slots_.erase(it);
  }
}

void Statahead::DropSlots(const std::function<bool(const Key&, const Slot&)>& pred) {
  std::vector<AheadEntry> dropped;
  {
    std::lock_guard lock(mu_);
    TakeSlotsLocked(pred, &dropped);
  }
  done_cv_.notify_all();  // lookups waiting for a request ahead ask the MDS themselves
  for (AheadEntry& e : dropped) drop_(e, Why::kChanged);
}

void Statahead::Clear() {
  DropSlots([](const Key&, const Slot&) { return true; });
}

void Statahead::DropDir(uint64_t dir) {
  {
    std::lock_guard lock(mu_);
    auto first = slots_.lower_bound(Key{dir, std::string()});
    if (first == slots_.end() || first->first.first != dir) return;
  }
  DropSlots([dir](const Key& k, const Slot&) { return k.first == dir; });
}

void Statahead::DropIf(const std::function<bool(const proto::EntryReply&)>& pred) {
  {
    std::lock_guard lock(mu_);
    if (slots_.empty()) return;
  }
  DropSlots(
      [&pred](const Key&, const Slot& s) { return s.pending || (s.entry && pred(s.entry->rep)); });
}

void Statahead::Charge(uint64_t dir, int n, bool shrink) {
  auto it = runs_.find(dir);
  if (it == runs_.end()) return;
  DirRun& r = it->second;
  const bool had = r.credit > 0;
  r.credit -= n;
  if (had && r.credit <= 0) ++counters_.wrong;
  if (shrink) {
    const int max = window();
    r.window = std::clamp(r.window / 2, std::min(kFirstWindow, max), std::max(max, 1));
  }
}

Statahead::Counters Statahead::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

void Statahead::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    // Replies not taken in time go, and count against their directory's run.
    const Clock::time_point now = Clock::now();
    std::vector<AheadEntry> expired;
    std::optional<Clock::time_point> next_due;
    for (auto it = slots_.begin(); it != slots_.end();) {
      Slot& s = it->second;
      if (s.pending) {
        ++it;
      } else if (s.due <= now) {
        if (s.entry) {
          ++counters_.misses;
          --counters_.kept;
          Charge(it->first.first, 1, /*shrink=*/true);
          expired.push_back(std::move(*s.entry));
        }
        it = slots_.erase(it);
      } else {
        next_due = next_due ? std::min(*next_due, s.due) : s.due;
        ++it;
      }
    }
    if (!expired.empty()) {
      lock.unlock();
      for (AheadEntry& e : expired) drop_(e, Why::kUnused);
      lock.lock();
      continue;
    }
    if (stop_) return;
    if (jobs_.empty()) {
      if (next_due) {
        work_cv_.wait_until(lock, *next_due);
      } else {
        work_cv_.wait(lock);
      }
      continue;
    }
    Queued q = std::move(jobs_.front());
    jobs_.erase(jobs_.begin());
    ++counters_.requests;
    counters_.asked += q.job.names.size();
    lock.unlock();
    std::vector<Result<AheadEntry>> got = fetch_(q.job);
    got.resize(q.job.names.size(), Status(Code::kInternal, "not answered"));
    lock.lock();
    std::vector<AheadEntry> unwanted;
    const Clock::time_point due = Clock::now() + keep_;
    for (size_t i = 0; i < q.job.names.size(); ++i) {
      auto it = slots_.find(Key{q.job.dir, q.job.names[i]});
      if (it == slots_.end() || it->second.id != q.ids[i]) {
        // Dropped while asked (Clear, DropDir): what came back may predate that.
        if (got[i].ok()) unwanted.push_back(std::move(*got[i]));
        continue;
      }
      if (!got[i].ok() || stop_) {
        // Asked in vain (past the last name, a gap, an MDS that refuses such batches):
        // it counts against the run, which stops asking when it keeps doing so.
        ++counters_.unkept;
        // Not a transport's error (an MDS failing over): that says nothing of the names.
        if (!got[i].ok() && IsErrno(got[i].status().code())) {
          Charge(q.job.dir, 1, /*shrink=*/false);
        }
        if (got[i].ok()) unwanted.push_back(std::move(*got[i]));
        slots_.erase(it);
        continue;
      }
      it->second.pending = false;
      it->second.entry = std::move(*got[i]);
      it->second.due = due;
      ++counters_.kept;
    }
    done_cv_.notify_all();
    if (!unwanted.empty()) {
      lock.unlock();
      for (AheadEntry& e : unwanted) drop_(e, Why::kChanged);
      lock.lock();
    }
  }
}

}  // namespace stria::client::fuse
