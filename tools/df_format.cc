#include "tools/df_format.h"

#include <cstdio>

namespace stria::tools {
namespace {

std::string Printf(const char* fmt, auto... args) {
  char buf[256];
  int n = std::snprintf(buf, sizeof(buf), fmt, args...);
  return std::string(buf, n < 0 ? 0 : std::min<size_t>(n, sizeof(buf) - 1));
}

std::string Number(uint64_t v, bool human) {
  if (human) return HumanSize(v);
  return Printf("%11llu", static_cast<unsigned long long>(v));
}

// One row: UUID, three numbers, percentage, mount point and [TYPE:INDEX].
std::string Row(const DfTarget& t, std::string_view mount, uint32_t flags, bool summary) {
  if (!t.error.empty()) return Printf("%-20s: %s\n", t.uuid.c_str(), t.error.c_str());
  uint64_t total, used, avail;
  if (flags & kDfInodes) {
    total = t.files;
    avail = t.ffree;
    used = t.files >= t.ffree ? t.files - t.ffree : 0;
  } else {
    const int shift = (flags & kDfHuman) ? 0 : 10;
    const unsigned __int128 bs = t.bsize;
    total = static_cast<uint64_t>((t.blocks * bs) >> shift);
    avail = static_cast<uint64_t>((t.bavail * bs) >> shift);
    used = t.blocks >= t.bfree ? static_cast<uint64_t>(((t.blocks - t.bfree) * bs) >> shift) : 0;
  }
  double ratio = 0;
  if (used + avail > 0) ratio = static_cast<double>(used) / static_cast<double>(used + avail);
  const bool human = flags & kDfHuman;
  std::string out = Printf("%-20s %11s %11s %11s %4s %s", t.uuid.c_str(),
                           Number(total, human).c_str(), Number(used, human).c_str(),
                           Number(avail, human).c_str(),
                           Printf("%3d%%", static_cast<int>(ratio * 100 + 0.5)).c_str(),
                           std::string(mount).c_str());
  if (!summary) out += Printf("[%s:%u]", t.type.c_str(), t.index);
  out += "\n";
  return out;
}

}  // namespace

std::string HumanSize(uint64_t bytes) {
  static const char kSuffix[] = "KMGTPEZY";
  double v = static_cast<double>(bytes);
  int radix = 0;
  while (v > 1024) {
    v /= 1024;
    ++radix;
  }
  if (radix == 0) return Printf("%11llu", static_cast<unsigned long long>(bytes));
  return Printf("%8.1f%c", v, kSuffix[radix - 1]);
}

std::string FormatDf(const std::vector<DfTarget>& targets, std::string_view mount,
                     uint32_t flags) {
  std::string out;
  if (flags & kDfInodes) {
    out += Printf("%-20s %11s %11s %11s %4s %s\n", "UUID", "Inodes", "IUsed", "IFree", "IUse%",
                  "Mounted on");
  } else {
    out += Printf("%-20s %11s %11s %11s %4s %s\n", "UUID",
                  (flags & kDfHuman) ? "bytes" : "1K-blocks", "Used", "Available", "Use%",
                  "Mounted on");
  }
  DfTarget sum;
  sum.uuid = "filesystem_summary:";
  sum.bsize = 1;
  uint64_t ost_ffree = 0;
  bool ost_counts_files = false;
  for (const DfTarget& t : targets) {
    out += Row(t, mount, flags, /*summary=*/false);
    if (!t.error.empty()) continue;
    if (t.type == "MDT") {
      sum.files += t.files;
      sum.ffree += t.ffree;
    } else {
      sum.blocks += t.blocks * t.bsize;
      sum.bfree += t.bfree * t.bsize;
      sum.bavail += t.bavail * t.bsize;
      ost_ffree += t.ffree;
      ost_counts_files |= t.files > 0;
    }
  }
  // As Lustre: with fewer free objects on the OSTs than free inodes on the MDTs, the
  // OSTs are the limit on new files.
  if (ost_counts_files && ost_ffree < sum.ffree) {
    sum.files = (sum.files - sum.ffree) + ost_ffree;
    sum.ffree = ost_ffree;
  }
  out += "\n";
  out += Row(sum, mount, flags, /*summary=*/true);
  out += "\n";
  return out;
}

}  // namespace stria::tools
