// JobIdCache: the JOBID of each process that calls into the mount, for job_stats: the value
// of the environment variable named by jobid_var (SLURM_JOB_ID by default) in
// /proc/PID/environ, or, when the process has none, Lustre's fallback jobid_name "%e.%u"
// (the command name and the uid, e.g. "dd.1000"); "" when jobid_var is "disable".
// A process's environment as /proc shows it never changes, so an entry lives until its TTL
// (which bounds the damage of a reused pid) or until jobid_var changes.
// Thread-safety: all methods are thread-safe (one mutex around a hash lookup or insert; the
// /proc read happens outside it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace stria::client::fuse {

class JobIdCache {
 public:
  using Clock = std::chrono::steady_clock;
  explicit JobIdCache(std::chrono::milliseconds ttl = std::chrono::seconds(10),
                      size_t max_entries = 4096)
      : ttl_(ttl), max_entries_(max_entries) {}

  std::string Get(pid_t pid, uid_t uid, const std::string& jobid_var);

  // The JOBID of process `pid` read from /proc now (no cache).
  static std::string Read(pid_t pid, uid_t uid, const std::string& jobid_var);

 private:
  struct Entry {
    Clock::time_point expires;
    std::string var, jobid;
  };
  const std::chrono::milliseconds ttl_;
  const size_t max_entries_;
  std::mutex mu_;
  std::unordered_map<pid_t, Entry> entries_;  // GUARDED_BY(mu_)
};

}  // namespace stria::client::fuse
