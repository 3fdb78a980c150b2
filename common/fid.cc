#include "common/fid.h"

#include <charconv>
#include <cstdio>

namespace stria {

Fid FidOfIno(uint64_t ino) {
  if (ino <= 1) return {kFidSeqRoot, 1, 0};
  return {kFidSeqNormal + (ino >> 17), static_cast<uint32_t>(ino & (kFidSeqWidth - 1)) + 1, 0};
}

Result<uint64_t> InoOfFid(const Fid& fid) {
  if (fid.seq == kFidSeqRoot && fid.oid == 1 && fid.ver == 0) return uint64_t{1};
  const bool normal = fid.seq >= kFidSeqNormal && fid.seq - kFidSeqNormal < (1ull << 47) &&
                      fid.oid >= 1 && fid.oid <= kFidSeqWidth && fid.ver == 0;
  if (normal) {
    const uint64_t ino = ((fid.seq - kFidSeqNormal) << 17) | (fid.oid - 1);
    if (ino >= 2) return ino;
  }
  return Status(Code::kInval, FormatFid(fid) + " is not a FID of this filesystem");
}

std::string FormatFid(const Fid& fid) {
  char buf[64];
  // Lustre's DFID.
  std::snprintf(buf, sizeof(buf), "[%#llx:0x%x:0x%x]", static_cast<unsigned long long>(fid.seq),
                fid.oid, fid.ver);
  return buf;
}

namespace {

bool ParseHex(std::string_view text, uint64_t* out) {
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, 16);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Result<Fid> ParseFid(std::string_view text) {
  const Status bad(Code::kInval, "invalid FID '" + std::string(text) + "'");
  std::string_view t = text;
  if (t.starts_with('[')) {
    if (!t.ends_with(']')) return bad;
    t = t.substr(1, t.size() - 2);
  }
  const size_t c1 = t.find(':');
  const size_t c2 = c1 == std::string_view::npos ? c1 : t.find(':', c1 + 1);
  if (c2 == std::string_view::npos) return bad;
  uint64_t seq = 0, oid = 0, ver = 0;
  if (!ParseHex(t.substr(0, c1), &seq) || !ParseHex(t.substr(c1 + 1, c2 - c1 - 1), &oid) ||
      !ParseHex(t.substr(c2 + 1), &ver) || oid > UINT32_MAX || ver > UINT32_MAX) {
    return bad;
  }
  return Fid{seq, static_cast<uint32_t>(oid), static_cast<uint32_t>(ver)};
}

}  // namespace stria
