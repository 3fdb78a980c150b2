#include "client/osc_stats.h"

#include <fmt/format.h>

namespace stria::client {
namespace {

unsigned Pct(uint64_t a, uint64_t total) {
  return total == 0 ? 0 : static_cast<unsigned>(a * 100 / total);
}

// One read|write table of rpc_stats; `first` is 0 for pages per rpc (labels 1<<i) and 1 for
// rpcs in flight (labels i).
void Table(std::string* out, const char* title, const Histogram& r, const Histogram& w,
           int first) {
  *out += fmt::format("\n\t\t\tread\t\t\twrite\n{:<22}rpcs   % cum % |       rpcs   % cum %\n",
                      title);
  const uint64_t rt = r.Sum(), wt = w.Sum();
  uint64_t rc = 0, wc = 0;
  for (int i = first; i < kHistBuckets; ++i) {
    const uint64_t rv = r.bucket(i), wv = w.bucket(i);
    rc += rv;
    wc += wv;
    *out += fmt::format("{}:\t\t{:>10} {:>3} {:>3}   | {:>10} {:>3} {:>3}\n",
                        first == 0 ? (1ull << i) : static_cast<uint64_t>(i), rv, Pct(rv, rt),
                        Pct(rc, rt), wv, Pct(wv, wt), Pct(wc, wt));
    if (rc == rt && wc == wt) break;
  }
}

}  // namespace

void OscStats::Clear() {
  read_pages.Clear();
  write_pages.Clear();
  read_rif.Clear();
  write_rif.Clear();
  start_ns.store(WallNow().count());
}

std::string OscStats::Format() const {
  const auto now = WallNow();
  const auto start = std::chrono::nanoseconds(start_ns.load());
  std::string out;
  out += fmt::format("{:<25} {} secs.nsecs\n", "snapshot_time:", SecsNsecs(now));
  out += fmt::format("{:<25} {} secs.nsecs\n", "start_time:", SecsNsecs(start));
  out += fmt::format("{:<25} {} secs.nsecs\n", "elapsed_time:", SecsNsecs(now - start));
  out += fmt::format("read RPCs in flight:  {}\nwrite RPCs in flight: {}\n", reads_in_flight.load(),
                     writes_in_flight.load());
  out += "pending write pages:  0\npending read pages:   0\n";
  Table(&out, "pages per rpc", read_pages, write_pages, 0);
  Table(&out, "rpcs in flight", read_rif, write_rif, 1);
  return out;
}

void InflightGate::Enter(int limit) {
  int cur = n_.load(std::memory_order_relaxed);
  while (cur < limit) {
    if (n_.compare_exchange_weak(cur, cur + 1, std::memory_order_acquire)) return;
  }
  std::unique_lock lock(mu_);
  waiters_.fetch_add(1);
  cv_.wait(lock, [&] {
    int c = n_.load();
    while (c < limit) {
      if (n_.compare_exchange_weak(c, c + 1)) return true;
    }
    return false;
  });
  waiters_.fetch_sub(1);
}

void InflightGate::Leave() {
  n_.fetch_sub(1, std::memory_order_release);
  if (waiters_.load() > 0) {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }
}

ClientTunables::ClientTunables() : jobid_var_(kDefaultJobidVar) {
  const auto specs = stria::ClientTunables();
  for (size_t i = 0; i < specs.size(); ++i) values_[i].store(specs[i].def);
}

int64_t ClientTunables::Get(std::string_view tunable) const {
  const auto specs = stria::ClientTunables();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == tunable) return values_[i].load(std::memory_order_relaxed);
  }
  return 0;
}

std::string ClientTunables::jobid_var() const {
  std::lock_guard lock(mu_);
  return jobid_var_;
}

void ClientTunables::Store(size_t i, int64_t v) {
  const int64_t old = values_[i].exchange(v);
  if (old == v || stria::ClientTunables()[i].name != "max_read_ahead_mb") return;
  std::function<void(int64_t)> fn;
  {
    std::lock_guard lock(mu_);
    fn = on_read_ahead_;
  }
  if (fn) fn(v);
}

Status ClientTunables::Set(std::string_view name, std::string_view value) {
  STRIA_RETURN_IF_ERROR(CheckClientParam(name, value));
  if (name == kJobidVar) {
    std::lock_guard lock(mu_);
    jobid_var_ = value;
    return Status::Ok();
  }
  const TunableSpec* spec = FindClientTunable(name);
  const auto specs = stria::ClientTunables();
  Store(static_cast<size_t>(spec - specs.data()), *ParseTunable(*spec, value));
  return Status::Ok();
}

void ClientTunables::Apply(const std::map<std::string, std::string>& params) {
  const auto specs = stria::ClientTunables();
  for (size_t i = 0; i < specs.size(); ++i) {
    int64_t v = specs[i].def;
    size_t best = 0;
    for (const auto& [name, value] : params) {
      if (FindClientTunable(name) != &specs[i] || name.size() < best) continue;
      auto parsed = ParseTunable(specs[i], value);
      if (!parsed.ok()) continue;  // checked when set; an older MGS may have stored anything
      v = *parsed;
      best = name.size();
    }
    Store(i, v);
  }
  auto it = params.find(std::string(kJobidVar));
  std::lock_guard lock(mu_);
  jobid_var_ = it != params.end() && CheckJobidVar(it->second).ok() ? it->second
                                                                   : std::string(kDefaultJobidVar);
}

void ClientTunables::set_on_read_ahead(std::function<void(int64_t)> fn) {
  std::lock_guard lock(mu_);
  on_read_ahead_ = std::move(fn);
}

}  // namespace stria::client
