// OstMeta: the identity of an OST directory, kept in `<dir>/ost.meta`.
//
// Written once when the directory is formatted (FormatOst) and checked every time the OSS
// starts, so a directory is never served under another filesystem's name or another index.
// The file is small text, one `key=value` per line (fsname, index, uuid, object_format),
// written atomically (temporary file, fsync, rename, fsync of the directory). A meta without
// object_format is from before it existed: its objects keep sidecars (object_format.h).
// Thread-safety: free functions over values; formatting one directory from two processes at
// once is not supported.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "oss/object_format.h"

namespace stria::oss {

inline constexpr std::string_view kOstMetaFile = "ost.meta";
inline constexpr uint32_t kMaxOstIndex = 65535;  // Lustre's OST index limit

struct OstMeta {
  std::string fsname;
  uint32_t index = 0;
  std::string uuid;
  // How the OST keeps its objects' checksums; FormatOst writes it, it never changes after.
  ObjectFormat object_format = kNewOstObjectFormat;
};

// EINVAL unless fsname is 1-64 characters of [A-Za-z0-9_-].
Status ValidateFsname(std::string_view fsname);

// A fresh random UUID ("8-4-4-4-12" hex).
std::string NewUuid();

// Reads `<dir>/ost.meta`: kNoEnt when the directory is not formatted, kCorrupt when the file
// is malformed or names an object format this version does not know.
Result<OstMeta> ReadOstMeta(const std::string& dir);

// Formats `dir` (created if missing) for `meta`, and pre-creates the object directories of
// group 0. A directory already formatted for the same fsname and index is left as it is
// (its stored meta wins); one formatted for another is refused (kWrongFs / kInval).
Status FormatOst(const std::string& dir, const OstMeta& meta);

// Checks a stored meta against what the caller expects: index must match; fsname must match
// unless `fsname` is empty. A clear kWrongFs / kInval error otherwise.
Status CheckOstMeta(const std::string& dir, const OstMeta& stored, uint32_t index,
                    std::string_view fsname);

}  // namespace stria::oss
