#include "client/jobid.h"

#include <cstdlib>

namespace stria::client {
namespace {
thread_local std::string t_jobid;
}  // namespace

const std::string& CurrentJobId() { return t_jobid; }

ScopedJobId::ScopedJobId(std::string jobid) : saved_(std::move(t_jobid)) {
  t_jobid = std::move(jobid);
}
ScopedJobId::~ScopedJobId() { t_jobid = std::move(saved_); }

std::string ProcessJobId(const std::string& jobid_var) {
  if (jobid_var.empty() || jobid_var == "disable") return "";
  const char* v = std::getenv(jobid_var.c_str());
  return v == nullptr ? "" : std::string(v).substr(0, 128);
}

}  // namespace stria::client
