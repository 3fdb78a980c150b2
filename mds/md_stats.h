// The MDT's statistics in Lustre's names: `mdt.FS-MDT0000.md_stats` (one lprocfs counter per
// metadata operation, its latency in usecs) and `mdt.FS-MDT0000.job_stats` (the same per
// JOBID from the request's credentials). MdsService counts every request its handlers ran,
// successful or not, as Lustre's mdt_counter_incr does; lookups and keepalives are not
// metadata operations here (Lustre has no md_stats counter for them).
//
// Which counter a request feeds: OP_MDS_CREATE of a directory -> mkdir; of any other type ->
// mknod (and open as well with CreateRequest.open, as open(O_CREAT)); OP_MDS_UNLINK -> unlink
// or rmdir (a batch of unlinks: one unlink per name, each with its share of the latency);
// OP_MDS_RENAME -> rename and samedir_rename or crossdir_rename; OP_MDS_CLOSE -> close when
// it closes a handle, sync when it asks for one (fsync); GETXATTR and LISTXATTR -> getxattr;
// SETXATTR and REMOVEXATTR -> setxattr; READDIR -> readpage; DOM_READ/DOM_WRITE -> read/write
// and read_bytes/write_bytes.
//
// Thread-safety: as StatsSet and JobStats.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "common/stats.h"
#include "proto/stria.pb.h"

namespace stria::mds {

enum MdCounter : size_t {
  kMdOpen, kMdClose, kMdMknod, kMdLink, kMdUnlink, kMdMkdir, kMdRmdir, kMdRename,
  kMdGetattr, kMdSetattr, kMdGetxattr, kMdSetxattr, kMdStatfs, kMdSync, kMdSamedirRename,
  kMdCrossdirRename, kMdReadBytes, kMdWriteBytes, kMdRead, kMdWrite, kMdMigrate, kMdReadpage,
  kMdNone,
};

inline constexpr CounterSpec kMdCounters[] = {
    {"open", StatUnit::kUsecs},          {"close", StatUnit::kUsecs},
    {"mknod", StatUnit::kUsecs},         {"link", StatUnit::kUsecs},
    {"unlink", StatUnit::kUsecs},        {"mkdir", StatUnit::kUsecs},
    {"rmdir", StatUnit::kUsecs},         {"rename", StatUnit::kUsecs},
    {"getattr", StatUnit::kUsecs},       {"setattr", StatUnit::kUsecs},
    {"getxattr", StatUnit::kUsecs},      {"setxattr", StatUnit::kUsecs},
    {"statfs", StatUnit::kUsecs},        {"sync", StatUnit::kUsecs},
    {"samedir_rename", StatUnit::kUsecs}, {"crossdir_rename", StatUnit::kUsecs},
    {"read_bytes", StatUnit::kBytes, true}, {"write_bytes", StatUnit::kBytes, true},
    {"read", StatUnit::kUsecs},          {"write", StatUnit::kUsecs},
    {"migrate", StatUnit::kUsecs},       {"readpage", StatUnit::kUsecs},
};

struct MdStats {
  StatsSet stats{kMdCounters};
  JobStats jobs{kMdCounters};

  void Count(std::string_view jobid, MdCounter c, uint64_t v) {
    if (c == kMdNone) return;
    stats.Add(c, v);
    jobs.Add(jobid, c, v);
  }
};

// Counts one request of opcode `op`, from job `job` (its credentials' JOBID), that ran for
// `usecs` (see above for the mapping).
void CountMdRequest(MdStats* s, proto::Opcode op, const google::protobuf::Message& req,
                    std::string_view job, uint64_t usecs);

// The JOBID in a request's credentials (field `cred`), or "" for a request without them.
template <typename Req>
std::string_view JobOf(const Req& req) {
  if constexpr (requires { req.cred().jobid(); }) {
    return req.cred().jobid();
  } else {
    return {};
  }
}

}  // namespace stria::mds
