// Helpers shared by the FUSE callbacks: the caller's credentials from a request, and the
// conversions between Stria's wire attributes and the kernel's struct stat.
// Thread-safety: pure functions (CredentialsOf reads /proc through libfuse, or its cache).
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include "client/fuse/groups_cache.h"
#include "proto/stria.pb.h"

namespace stria::client::fuse {

// uid, gid, pid of the calling process and its supplementary groups (fuse_req_getgroups,
// through `groups`; none when the kernel cannot tell them).
proto::Credentials CredentialsOf(fuse_req_t req, GroupsCache& groups);

// The stat(2) view of an MDS attribute record; `size` overrides attr.size().
struct stat AttrToStat(const proto::Attr& attr, uint64_t size);

// S_IF* bits of a directory entry type (0 when unknown).
uint32_t ModeOfType(proto::FileType type);

int64_t TimespecToNs(const struct timespec& ts);
int64_t NowNs();

}  // namespace stria::client::fuse
