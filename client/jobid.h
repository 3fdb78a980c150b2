// The JOBID of the I/O a thread is doing, for the OSTs' job_stats: libstria puts it into
// every OST request (OstIoRequest.jobid, ...) that a Read, Write, Punch, Truncate or Sync
// called on this thread sends, whichever I/O thread sends it. The FUSE client sets it from
// the opener's credentials (Credentials.jobid) around each read and write; MDS requests carry
// it in their credentials instead.
// Thread-safety: thread-local.
#pragma once

#include <string>

namespace stria::client {

// The calling thread's JOBID ("" = none).
const std::string& CurrentJobId();

// Sets the calling thread's JOBID for its lifetime, then restores the previous one.
class ScopedJobId {
 public:
  explicit ScopedJobId(std::string jobid);
  ~ScopedJobId();
  ScopedJobId(const ScopedJobId&) = delete;
  ScopedJobId& operator=(const ScopedJobId&) = delete;

 private:
  std::string saved_;
};

// The JOBID of this process for libstria's own users (lfs, tests, benchmarks): the value of
// the environment variable named by jobid_var (SLURM_JOB_ID unless given; "disable": none).
std::string ProcessJobId(const std::string& jobid_var = "SLURM_JOB_ID");

}  // namespace stria::client
