// POSIX permission checks and name rules shared by the MDS operations.
//
// Classic owner/group/other mode bits against the request's Credentials. Root (uid 0)
// bypasses read and write checks, and execute/search checks except execute on a non-directory
// with no x bit at all. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::mds {

inline constexpr int kMayExec = 1;
inline constexpr int kMayWrite = 2;
inline constexpr int kMayRead = 4;
inline constexpr size_t kMaxNameLen = 255;
inline constexpr size_t kMaxSymlinkLen = 4095;
inline constexpr uint32_t kMaxLinks = 65000;

// True when cred's primary or supplementary groups include gid.
bool InGroup(const proto::Credentials& cred, uint32_t gid);

// kAccess unless cred may do `mask` (kMay* bits) on an inode with these attributes.
Status CheckAccess(const proto::Attr& attr, const proto::Credentials& cred, int mask);

inline bool IsOwnerOrRoot(const proto::Attr& attr, const proto::Credentials& cred) {
  return cred.uid() == 0 || cred.uid() == attr.uid();
}

// kPerm when the sticky bit of `dir` forbids cred to remove or rename `child`.
Status CheckSticky(const proto::Attr& dir, const proto::Attr& child,
                   const proto::Credentials& cred);

// A name to create or remove: kInval for "", ".", ".." or one containing '/' or NUL,
// kNameTooLong past 255 bytes.
Status ValidateName(std::string_view name);

// The directory-entry type of a mode's S_IFMT bits (FT_UNKNOWN for none).
proto::FileType FileTypeOfMode(uint32_t mode);

}  // namespace stria::mds
