#include "tools/layout_format.h"

#include <cinttypes>
#include <cstdio>

#include "common/layout.h"

namespace stria::tools {
namespace {

// Appends one "label: value" item with Lustre's separators: items of a file go one per
// line, items of a directory on one line separated by spaces. The label is printed only
// when more than this one field is shown.
class FieldPrinter {
 public:
  FieldPrinter(std::string* out, uint32_t fields, bool is_dir)
      : out_(out), fields_(fields), is_dir_(is_dir) {}

  void Add(uint32_t field, std::string_view label, std::string_view value) {
    *out_ += separator_;
    if (fields_ & ~field) {
      if (!is_dir_) *out_ += "lmm_";
      *out_ += label;
    }
    *out_ += value;
    separator_ = is_dir_ ? " " : "\n";
  }

  // Ends the header line(s), as lov_dump_user_lmm_header does.
  void Finish() {
    if (*separator_ != '\0') *out_ += "\n";
  }

 private:
  std::string* out_;
  uint32_t fields_;
  bool is_dir_;
  const char* separator_ = "";
};

std::string Printf(const char* fmt, auto... args) {
  char buf[128];
  int n = std::snprintf(buf, sizeof(buf), fmt, args...);
  return std::string(buf, n < 0 ? 0 : std::min<size_t>(n, sizeof(buf) - 1));
}

}  // namespace

std::string PatternName(proto::LayoutPattern pattern) {
  if (pattern == proto::PATTERN_RAID0) return "raid0";
  return Printf("%x", static_cast<unsigned>(pattern));
}

std::string FormatFileLayout(std::string_view path, const proto::Layout& layout,
                             const GetstripeFormat& format) {
  std::string out;
  const uint32_t f = format.fields;
  if (format.show_path && !path.empty()) {
    out += path;
    out += "\n";
  }
  const int count = layout.objects_size() > 0 ? layout.objects_size() : layout.stripe_count();
  FieldPrinter p(&out, f, /*is_dir=*/false);
  if (f & kFieldCount) p.Add(kFieldCount, "stripe_count:  ", std::to_string(count));
  if (f & kFieldSize) p.Add(kFieldSize, "stripe_size:   ", std::to_string(layout.stripe_size()));
  if (f & kFieldPattern) p.Add(kFieldPattern, "pattern:       ", PatternName(layout.pattern()));
  if (f & kFieldGeneration) {
    p.Add(kFieldGeneration, "layout_gen:    ", std::to_string(layout.generation()));
  }
  if (f & kFieldOffset) {
    const int64_t offset = layout.objects_size() > 0 ? layout.objects(0).ost_idx()
                                                     : layout.stripe_offset();
    p.Add(kFieldOffset, "stripe_offset: ", std::to_string(offset));
  }
  if ((f & kFieldPool) && !layout.pool().empty()) {
    p.Add(kFieldPool, "pool:          ", layout.pool());
  }
  p.Finish();
  if (f & kFieldObjects) {
    out += "\tobdidx\t\t objid\t\t objid\t\t group\n";
    for (const auto& o : layout.objects()) {
      const unsigned long long id = o.object_id();
      const unsigned long long group = o.group();
      // Lustre prints reserved/MDT0 groups (0 here) in decimal, others in hex.
      out += Printf(group == 0 ? "\t%6u\t%14llu\t%#13llx\t%14llu\n"
                               : "\t%6u\t%14llu\t%#13llx\t%#14llx\n",
                    o.ost_idx(), id, id, group);
    }
    out += "\n";
  }
  return out;
}

std::string FormatDirLayout(std::string_view path, const proto::Layout& layout,
                            const GetstripeFormat& format) {
  std::string out;
  const uint32_t f = format.fields & ~(kFieldObjects | kFieldGeneration);
  if (format.show_path && !path.empty()) {
    out += path;
    out += "\n";
  }
  FieldPrinter p(&out, f, /*is_dir=*/true);
  if (f & kFieldCount) p.Add(kFieldCount, "stripe_count:  ", std::to_string(layout.stripe_count()));
  if (f & kFieldSize) p.Add(kFieldSize, "stripe_size:   ", std::to_string(layout.stripe_size()));
  if (f & kFieldPattern) p.Add(kFieldPattern, "pattern:       ", PatternName(layout.pattern()));
  if (f & kFieldOffset) {
    p.Add(kFieldOffset, "stripe_offset: ", std::to_string(layout.stripe_offset()));
  }
  if ((f & kFieldPool) && !layout.pool().empty()) {
    p.Add(kFieldPool, "pool:          ", layout.pool());
  }
  p.Finish();
  return out;
}

proto::Layout EffectiveDirLayout(const proto::Layout* dir_layout,
                                 const proto::Layout& fs_default) {
  proto::Layout base = fs_default;
  base.clear_objects();
  if (base.stripe_count() == 0) base.set_stripe_count(kDefaultStripeCount);
  if (base.stripe_size() == 0) base.set_stripe_size(kDefaultStripeSize);
  if (base.pattern() == proto::PATTERN_NONE) base.set_pattern(proto::PATTERN_RAID0);
  if (dir_layout == nullptr) {
    if (!fs_default.IsInitialized() || fs_default.ByteSizeLong() == 0) {
      base.set_stripe_offset(-1);
    }
    return base;
  }
  proto::Layout out = *dir_layout;
  out.clear_objects();
  if (out.stripe_count() == 0) out.set_stripe_count(base.stripe_count());
  if (out.stripe_size() == 0) out.set_stripe_size(base.stripe_size());
  if (out.pattern() == proto::PATTERN_NONE) out.set_pattern(base.pattern());
  if (out.pool().empty()) out.set_pool(base.pool());
  return out;
}

}  // namespace stria::tools
