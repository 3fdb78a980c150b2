// Lustre-style file identifiers, [0xSEQ:0xOID:0xVER], derived from MDS inode numbers.
//
// Every inode has a FID for its whole life: the root is Lustre's [0x200000007:0x1:0x0];
// inode i >= 2 is [0x200000400 + (i >> 17) : (i & 0x1ffff) + 1 : 0x0], a normal-sequence
// FID (sequences of 0x20000 object ids, as Lustre's). Inode numbers are never reused, so a
// FID names one file forever and survives MDS restarts. Objects on OSTs are shown as IDIF
// FIDs by the tools (tools/layout_format.h). Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace stria {

struct Fid {
  uint64_t seq = 0;
  uint32_t oid = 0;
  uint32_t ver = 0;
  bool operator==(const Fid&) const = default;
};

inline constexpr uint64_t kFidSeqRoot = 0x200000007;    // FID_SEQ_ROOT
inline constexpr uint64_t kFidSeqNormal = 0x200000400;  // FID_SEQ_NORMAL
inline constexpr uint32_t kFidSeqWidth = 0x20000;       // object ids per sequence

Fid FidOfIno(uint64_t ino);

// The inode a FID names; EINVAL for a FID this filesystem never hands out.
Result<uint64_t> InoOfFid(const Fid& fid);

// "[0x200000401:0x1:0x0]"
std::string FormatFid(const Fid& fid);

// Lustre's spellings: "[0x200000401:0x1:0x0]" or without the brackets; hex with or
// without 0x. EINVAL with the text otherwise.
Result<Fid> ParseFid(std::string_view text);

}  // namespace stria
