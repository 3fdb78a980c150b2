#include "tools/layout_format.h"

#include <cinttypes>
#include <cstdio>
#include <vector>

#include "common/fid.h"
#include "common/layout.h"
#include "proto/layout_components.h"
#include "proto/layout_mirrors.h"

namespace stria::tools {
namespace {

// Appends one "label: value" item with Lustre's separators: items of a file go one per
// line, items of a directory on one line separated by spaces. The label is printed only
// when more than this one field is shown.
class FieldPrinter {
 public:
  // `indent` goes before each label (a composite layout's components).
  FieldPrinter(std::string* out, uint32_t fields, bool is_dir, std::string_view indent = "")
      : out_(out), fields_(fields), is_dir_(is_dir), indent_(indent) {}

  void Add(uint32_t field, std::string_view label, std::string_view value) {
    *out_ += separator_;
    if (fields_ & ~field) {
      *out_ += indent_;
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
  std::string_view indent_;
  const char* separator_ = "";
};

// The fields that belong to a plain (sub)layout, not to a composite header.
constexpr uint32_t kPlainFields =
    kFieldObjects | kFieldCount | kFieldSize | kFieldOffset | kFieldPool | kFieldPattern |
    kFieldGeneration;

std::string Printf(const char* fmt, auto... args) {
  char buf[160];
  int n = std::snprintf(buf, sizeof(buf), fmt, args...);
  return std::string(buf, n < 0 ? 0 : std::min<size_t>(n, sizeof(buf) - 1));
}

}  // namespace

std::string PatternName(proto::LayoutPattern pattern) {
  if (pattern == proto::PATTERN_RAID0) return "raid0";
  if (pattern == proto::PATTERN_MDT) return "mdt";
  return Printf("%x", static_cast<unsigned>(pattern));
}

namespace {

// The lmm_* block of a plain layout. `indent` is "" for a plain file, six spaces inside a
// component; `skip_objects` for an uninstantiated component (no objects, generation 0, the
// requested stripe offset).
void AppendPlainFile(std::string* out, const proto::Layout& layout, uint32_t f,
                     std::string_view indent, bool skip_objects,
                     const GetstripeFormat& format) {
  const int count = layout.objects_size() > 0 ? layout.objects_size() : layout.stripe_count();
  if (format.detail) {
    // lov_dump_user_lmm_header's VERBOSE_DETAIL lines: lmm_oi is the file's FID.
    auto fid = ParseFid(format.fid);
    *out += std::string(indent) + "lmm_magic:         0x0BD10BD0\n";
    *out += std::string(indent) + Printf("lmm_seq:           %#llx\n",
                                         static_cast<unsigned long long>(fid.ok() ? fid->seq : 0));
    *out += std::string(indent) + Printf("lmm_object_id:     %#x\n", fid.ok() ? fid->oid : 0u);
    f |= kFieldFid;
  }
  FieldPrinter p(out, f, /*is_dir=*/false, indent);
  if (f & kFieldFid) p.Add(kFieldFid, "fid:           ", format.fid);
  if (f & kFieldCount) p.Add(kFieldCount, "stripe_count:  ", std::to_string(count));
  if (f & kFieldSize) p.Add(kFieldSize, "stripe_size:   ", std::to_string(layout.stripe_size()));
  if (f & kFieldPattern) p.Add(kFieldPattern, "pattern:       ", PatternName(layout.pattern()));
  if (f & kFieldGeneration) {
    p.Add(kFieldGeneration, "layout_gen:    ",
          std::to_string(skip_objects ? 0 : layout.generation()));
  }
  const bool dom = layout.pattern() == proto::PATTERN_MDT;
  if (f & kFieldOffset) {
    const int64_t offset = !skip_objects && layout.objects_size() > 0
                               ? static_cast<int64_t>(layout.objects(0).ost_idx())
                               : static_cast<int64_t>(layout.stripe_offset());
    // A Data-on-MDT layout names its MDT, as Lustre's lov_dump_user_lmm_header.
    p.Add(kFieldOffset, dom ? "mdt_index:     " : "stripe_offset: ", std::to_string(offset));
  }
  if ((f & kFieldPool) && !layout.pool().empty()) {
    p.Add(kFieldPool, "pool:          ", layout.pool());
  }
  p.Finish();
  if (!(f & kFieldObjects) || skip_objects || dom) return;
  if (indent.empty()) {
    *out += "\tobdidx\t\t objid\t\t objid\t\t group\n";
    for (const auto& o : layout.objects()) {
      const unsigned long long id = o.object_id();
      const unsigned long long group = o.group();
      // Lustre prints reserved/MDT0 groups (0 here) in decimal, others in hex.
      *out += Printf(group == 0 ? "\t%6u\t%14llu\t%#13llx\t%14llu\n"
                                : "\t%6u\t%14llu\t%#13llx\t%#14llx\n",
                     o.ost_idx(), id, id, group);
    }
    return;
  }
  *out += indent;
  *out += "lmm_objects:\n";
  for (int i = 0; i < layout.objects_size(); ++i) {
    const proto::StripeObject& o = layout.objects(i);
    *out += indent;
    *out += Printf("- %3d: { l_ost_idx: %3u, l_fid: %s }\n", i, o.ost_idx(),
                   ObjectFid(o).c_str());
  }
}

// The single-line fields of a directory's plain (sub)layout.
void AppendPlainDir(std::string* out, const proto::Layout& layout, uint32_t f,
                    std::string_view indent) {
  FieldPrinter p(out, f, /*is_dir=*/true, indent);
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
}

std::string EndString(uint64_t end) {
  return end == kLayoutEof ? std::string("EOF") : std::to_string(end);
}

// lcme_flags as Lustre's comp_flags_table names them, in its order; unknown bits in hex.
std::string FlagsString(uint32_t flags) {
  if (flags == 0) return "0";
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {kLcmeFlInit, "init"},     {kLcmeFlStale, "stale"},   {kLcmeFlPrefRw, "prefer"},
      {kLcmeFlPrefWr, "prefwr"}, {kLcmeFlPrefRd, "prefrd"},
  };
  std::string out;
  for (const auto& [bits, name] : kNames) {
    if ((flags & bits) != bits) continue;
    if (!out.empty()) out += ",";
    out += name;
    flags &= ~bits;
  }
  if (flags != 0) {
    if (!out.empty()) out += ",";
    out += Printf("%#x", flags);
  }
  return out;
}

// lcm_flags (llapi_layout_flags_string): the state of a mirrored file.
std::string LcmFlagsString(uint32_t flags) {
  switch (flags) {
    case kLcmFlRdonly: return "ro";
    case kLcmFlWritePending: return "wp";
    case kLcmFlSyncPending: return "sp";
    default: return "0";
  }
}

// lov_dump_comp_v1: the composite header, then each component and its sub-layout.
std::string FormatComposite(std::string_view path, const proto::Layout& layout,
                            const GetstripeFormat& format, bool is_dir) {
  std::string out;
  uint32_t f = format.fields;
  if (is_dir) f &= ~(kFieldObjects | kFieldGeneration);
  if (format.show_path && !path.empty()) {
    out += path;
    out += "\n";
  }
  const bool all =
      (format.fields & ~kFieldFid) == kFieldsDefault || format.component_id != 0 ||
      format.detail || format.component_filter != nullptr;
  // -v: the blob offsets and sizes of lov_comp_md_v1 (client/lov_xattr.h): a 32-byte
  // header, 48 bytes per entry, then each entry's lov_user_md_v1 (32 + 24 per object).
  std::vector<uint32_t> blob_offset, blob_size;
  uint32_t total = 32 + 48 * static_cast<uint32_t>(layout.components_size());
  for (const proto::LayoutComponent& c : layout.components()) {
    const bool with_objects = !is_dir && (c.flags() & kLcmeFlInit);
    blob_offset.push_back(total);
    blob_size.push_back(32 + 24 * static_cast<uint32_t>(with_objects ? c.layout().objects_size() : 0));
    total += blob_size.back();
  }
  if (format.detail) {
    out += "composite_header:\n  lcm_magic:         0x0BD60BD0\n";
    out += "  lcm_size:          " + std::to_string(total) + "\n";
    out += "  lcm_flags:         " + (is_dir ? std::string(IsMirrored(layout) ? "mirrored" : "")
                                            : LcmFlagsString(LcmFlags(layout))) + "\n";
  }
  // A header field alone prints its value; with others, its label.
  const uint32_t hf = format.fields;
  auto header = [&](uint32_t field, std::string_view label, uint32_t value) {
    if (!(hf & field)) return;
    if (hf & ~field) {
      out += "  ";
      out += label;
    }
    out += std::to_string(value);
    out += "\n";
  };
  header(kFieldGeneration, "lcm_layout_gen:    ", is_dir ? 0 : layout.generation());
  if (all) out += "  lcm_mirror_count:  " + std::to_string(MirrorCount(layout)) + "\n";
  header(kFieldComponentCount, "lcm_entry_count:   ",
         static_cast<uint32_t>(layout.components_size()));
  if (format.detail) out += "components:\n";
  const uint32_t plain = f & kPlainFields & ~(is_dir ? 0u : (all ? 0u : kFieldGeneration));
  if (!all) {
    // Single fields: those of the last instantiated component (a template's last).
    if ((plain & ~kFieldGeneration) == 0 && !(f & kFieldFid)) return out;
    const proto::LayoutComponent* last = nullptr;
    for (const proto::LayoutComponent& c : layout.components()) {
      if (is_dir || (c.flags() & kLcmeFlInit)) last = &c;
    }
    if (last == nullptr) return out;
    if (is_dir) {
      AppendPlainDir(&out, last->layout(), plain, "");
    } else {
      AppendPlainFile(&out, last->layout(), (plain & ~kFieldObjects) | (f & kFieldFid), "",
                      /*skip_objects=*/false, format);
    }
    return out;
  }
  for (int i = 0; i < layout.components_size(); ++i) {
    const proto::LayoutComponent& c = layout.components(i);
    if (format.component_id != 0 && c.id() != format.component_id) continue;
    if (format.component_filter && !format.component_filter(c.start(), c.end())) continue;
    const bool init = !is_dir && (c.flags() & kLcmeFlInit) != 0;
    const std::string id = is_dir || c.id() == 0 ? std::string("N/A") : std::to_string(c.id());
    out += (format.detail ? "  - lcme_id:             " : "    lcme_id:             ") + id + "\n";
    // A template names only its mirror (none when not mirrored).
    const bool no_id = is_dir ? MirrorIdOf(c.id()) == 0 : c.id() == 0;
    out += "    lcme_mirror_id:      " +
           (no_id ? std::string("N/A") : std::to_string(MirrorIdOf(c.id()))) + "\n";
    out += "    lcme_flags:          " + FlagsString(is_dir ? 0 : c.flags()) + "\n";
    out += "    lcme_extent.e_start: " + std::to_string(c.start()) + "\n";
    out += "    lcme_extent.e_end:   " + EndString(c.end()) + "\n";
    if (format.detail) {
      out += "    lcme_offset:         " + std::to_string(blob_offset[i]) + "\n";
      out += "    lcme_size:           " + std::to_string(blob_size[i]) + "\n";
      out += "    sub_layout:\n";
    }
    if (is_dir) {
      AppendPlainDir(&out, c.layout(), f & kPlainFields, "      ");
    } else {
      AppendPlainFile(&out, c.layout(), f & (kPlainFields | kFieldFid), "      ",
                      /*skip_objects=*/!init, format);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string ObjectFid(const proto::StripeObject& o) {
  const unsigned long long id = o.object_id();
  if (o.group() != 0) {
    return Printf("[%#llx:%#x:0x0]", static_cast<unsigned long long>(o.group()),
                  static_cast<unsigned>(id & 0xffffffffu));
  }
  // An IDIF FID, as Lustre shows objects of the MDT0 sequence: the OST index and the high
  // bits of the object id in the sequence.
  const unsigned long long seq = 0x100000000ull | (static_cast<unsigned long long>(o.ost_idx()) << 16) |
                                 ((id >> 32) & 0xffff);
  return Printf("[%#llx:%#x:0x0]", seq, static_cast<unsigned>(id & 0xffffffffu));
}

std::string FormatFileLayout(std::string_view path, const proto::Layout& layout,
                             const GetstripeFormat& format) {
  if (IsComposite(layout)) return FormatComposite(path, layout, format, /*is_dir=*/false);
  std::string out;
  if (format.show_path && !path.empty()) {
    out += path;
    out += "\n";
  }
  AppendPlainFile(&out, layout, format.fields & (kPlainFields | kFieldFid), "",
                  /*skip_objects=*/false, format);
  if (format.fields & kFieldObjects) out += "\n";
  return out;
}

std::string FormatDirLayout(std::string_view path, const proto::Layout& layout,
                            const GetstripeFormat& format) {
  if (IsComposite(layout)) return FormatComposite(path, layout, format, /*is_dir=*/true);
  std::string out;
  if (format.show_path && !path.empty()) {
    out += path;
    out += "\n";
  }
  if ((format.fields & kFieldFid) || format.detail) {
    // The directory's own FID, on its own line (labelled when other fields follow).
    const uint32_t others = format.fields & kPlainFields & ~(kFieldObjects | kFieldGeneration);
    out += (others != 0 || format.detail ? "lmm_fid:           " : "") + format.fid + "\n";
  }
  AppendPlainDir(&out, layout, format.fields & kPlainFields & ~(kFieldObjects | kFieldGeneration),
                 "");
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
  if (IsComposite(*dir_layout)) {
    proto::Layout out = *dir_layout;
    for (proto::LayoutComponent& c : *out.mutable_components()) {
      proto::Layout* l = c.mutable_layout();
      if (l->stripe_count() == 0) l->set_stripe_count(base.stripe_count());
      if (l->stripe_size() == 0) l->set_stripe_size(base.stripe_size());
      if (l->pattern() == proto::PATTERN_NONE) l->set_pattern(base.pattern());
    }
    return out;
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
