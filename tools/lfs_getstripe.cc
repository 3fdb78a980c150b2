// lfs getstripe: print the layout of files and the default layout of directories.
#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fid.h"
#include "proto/layout_components.h"
#include "tools/fs_connect.h"
#include "tools/layout_format.h"
#include "tools/layout_yaml.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"
#include "tools/stripe_args.h"

namespace stria::tools {
namespace {

struct GetstripeArgs {
  uint32_t fields = 0;        // 0 = all
  uint32_t component_id = 0;  // -I: one component of a composite layout
  std::function<bool(uint64_t, uint64_t)> component_filter;  // --component-start/-end
  bool detail = false;                                       // -v
  bool yaml = false;                                         // -y/--yaml
  bool quiet = false;                                        // -q: objects only
  int max_depth = 1;  // 0: the paths themselves (-d or a single field); -1: -r
  std::vector<std::string> paths;
};

int Usage(const char* why) {
  if (why != nullptr && *why != '\0') std::fprintf(stderr, "lfs getstripe: %s\n", why);
  std::fputs(LfsUsage("getstripe"), stderr);
  return kUsageError;
}

class Getstripe {
 public:
  Getstripe(const GetstripeArgs& args, ToolSession* session) : args_(args), session_(session) {
    format_.fields = args.quiet ? kFieldObjects : (args.fields ? args.fields : kFieldsDefault);
    format_.show_path = args.max_depth != 0;
    format_.component_id = args.component_id;
    format_.component_filter = args.component_filter;
    format_.detail = args.detail;
  }

  int Run(const std::string& path) {
    auto where = LocatePath(path);
    if (!where.ok()) {
      std::fprintf(stderr, "lfs getstripe: cannot find '%s': %s\n", path.c_str(),
                   where.status().message().c_str());
      return ExitCode(where.status());
    }
    auto c = session_->ClientFor(*where);
    if (!c.ok()) {
      std::fprintf(stderr, "lfs getstripe: cannot connect to '%s': %s\n",
                   where->mount.source.c_str(), c.status().ToString().c_str());
      return ExitCode(c.status());
    }
    client_ = *c;
    auto config = client_->GetConfig();
    if (config.ok()) fs_default_ = config->default_layout();
    auto r = session_->Resolve(client_, where->fs_path);
    if (!r.ok()) {
      std::fprintf(stderr, "lfs getstripe: cannot open '%s': %s\n", path.c_str(),
                   r.status().ToString().c_str());
      return ExitCode(r.status());
    }
    // Print the path as the user gave it, as Lustre does.
    return Show(path, *r, 0, /*top=*/true);
  }

 private:
  int Show(const std::string& path, const Resolved& r, int depth, bool top) {
    if (r.is_reg()) return ShowFile(path, r);
    if (!r.is_dir()) return 0;  // symlinks and special files have no layout
    int rc = ShowDir(path, r, top);
    if (args_.max_depth >= 0 && depth >= args_.max_depth) return rc;
    auto entries = session_->ListDir(client_, r.attr.ino());
    if (!entries.ok()) {
      std::fprintf(stderr, "lfs getstripe: cannot read '%s': %s\n", path.c_str(),
                   entries.status().ToString().c_str());
      return ExitCode(entries.status());
    }
    const std::string prefix = path.ends_with('/') ? path : path + "/";
    for (const proto::DirEntry& e : *entries) {
      if (e.type() != proto::FT_REG && e.type() != proto::FT_DIR) continue;
      Resolved child;
      child.attr.set_ino(e.ino());
      child.attr.set_mode(e.type() == proto::FT_DIR ? 0040000 : 0100000);
      int r2 = Show(prefix + e.name(), child, depth + 1, /*top=*/false);
      if (rc == 0) rc = r2;
    }
    return rc;
  }

  int ShowFile(const std::string& path, const Resolved& r) {
    proto::Layout layout = r.layout;
    if (!HasObjects(layout)) {
      auto l = session_->FileLayout(client_, r.attr);
      if (!l.ok()) {
        std::fprintf(stderr, "lfs getstripe: cannot get layout of '%s': %s\n", path.c_str(),
                     l.status().ToString().c_str());
        return ExitCode(l.status());
      }
      layout = *l;
    }
    if (!IsComposite(layout) && layout.objects_size() == 0 && layout.stripe_count() == 0) {
      std::printf("%s has no stripe info\n", path.c_str());
      return 0;
    }
    if (args_.yaml) {
      std::fputs(FormatYaml(layout).c_str(), stdout);
      return 0;
    }
    GetstripeFormat format = format_;
    format.fid = FormatFid(FidOfIno(r.attr.ino()));
    std::fputs(FormatFileLayout(path, layout, format).c_str(), stdout);
    return 0;
  }

  // The directory's default layout; below the top, only directories that carry one.
  int ShowDir(const std::string& path, const Resolved& r, bool top) {
    auto def = client::Metadata(client_).GetDefaultLayout(session_->cred(), r.attr.ino());
    if (!def.ok()) {
      std::fprintf(stderr, "lfs getstripe: cannot get default layout of '%s': %s\n", path.c_str(),
                   def.status().ToString().c_str());
      return ExitCode(def.status());
    }
    if (!def->has_value() && !top) return 0;
    if (args_.quiet) return 0;  // -q shows objects, and directories have none
    proto::Layout eff = EffectiveDirLayout(def->has_value() ? &**def : nullptr, fs_default_);
    if (args_.yaml) {
      std::fputs(FormatYaml(eff).c_str(), stdout);
      return 0;
    }
    GetstripeFormat format = format_;
    format.fid = FormatFid(FidOfIno(r.attr.ino()));
    std::fputs(FormatDirLayout(path, eff, format).c_str(), stdout);
    return 0;
  }

  const GetstripeArgs& args_;
  ToolSession* session_;
  GetstripeFormat format_;
  client::Client* client_ = nullptr;
  proto::Layout fs_default_;
};

}  // namespace

int LfsGetstripe(int argc, char** argv) {
  static const option kLong[] = {
      {"stripe-count", no_argument, nullptr, 'c'},
      {"stripe_count", no_argument, nullptr, 'c'},
      {"directory", no_argument, nullptr, 'd'},
      {"generation", no_argument, nullptr, 'g'},
      {"stripe-index", no_argument, nullptr, 'i'},
      {"stripe_index", no_argument, nullptr, 'i'},
      {"index", no_argument, nullptr, 'i'},
      {"offset", no_argument, nullptr, 'o'},
      {"layout", no_argument, nullptr, 'L'},
      {"pool", no_argument, nullptr, 'p'},
      {"quiet", no_argument, nullptr, 'q'},
      {"recursive", no_argument, nullptr, 'r'},
      {"stripe-size", no_argument, nullptr, 'S'},
      {"stripe_size", no_argument, nullptr, 'S'},
      {"component-id", required_argument, nullptr, 'I'},
      {"comp-id", required_argument, nullptr, 'I'},
      {"component-count", no_argument, nullptr, 'C'},
      {"fid", no_argument, nullptr, 'F'},
      {"component-start", required_argument, nullptr, 1001},
      {"comp-start", required_argument, nullptr, 1001},
      {"component-end", required_argument, nullptr, 1002},
      {"comp-end", required_argument, nullptr, 1002},
      {"verbose", no_argument, nullptr, 'v'},
      {"yaml", no_argument, nullptr, 'y'},
      {"comp-count", no_argument, nullptr, 'C'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  GetstripeArgs args;
  bool dir_only = false, recursive = false;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":cdFgiI:oLpqrSvyh", kLong, nullptr)) != -1) {
    switch (c) {
      case 'y':
        args.yaml = true;
        break;
      case 1001:
      case 1002: {
        // [+-]N with size suffixes; an end may be EOF.
        std::string_view v = optarg;
        int sign = 0;
        if (!v.empty() && (v[0] == '+' || v[0] == '-') && v != "-1") {
          sign = v[0] == '+' ? 1 : -1;
          v.remove_prefix(1);
        }
        uint64_t n = 0;
        if (c == 1002 && (v == "EOF" || v == "eof" || v == "-1")) {
          n = kLayoutEof;
        } else if (auto size = ParseSize(v); size.ok()) {
          n = *size;
        } else {
          return Usage((std::string("invalid component extent '") + optarg + "'").c_str());
        }
        const bool start = c == 1001;
        auto test = [sign, n, start](uint64_t s, uint64_t e) {
          const uint64_t x = start ? s : e;
          return sign == 0 ? x == n : (sign > 0 ? x > n : x < n);
        };
        if (args.component_filter) {
          auto before = args.component_filter;
          args.component_filter = [before, test](uint64_t s, uint64_t e) {
            return before(s, e) && test(s, e);
          };
        } else {
          args.component_filter = test;
        }
        break;
      }
      case 'F':
        args.fields |= kFieldFid;
        break;
      case 'v':
        args.detail = true;
        break;
      case 'I': {
        char* end = nullptr;
        errno = 0;
        const unsigned long id = std::strtoul(optarg, &end, 0);
        if (errno != 0 || end == optarg || *end != '\0' || id == 0 || id > 0x7fffffffUL ||
            optarg[0] == '-') {
          return Usage((std::string("invalid component id '") + optarg + "'").c_str());
        }
        args.component_id = static_cast<uint32_t>(id);
        break;
      }
      case 'C':
        args.fields |= kFieldComponentCount;
        break;
      case 'c':
        args.fields |= kFieldCount;
        break;
      case 'S':
        args.fields |= kFieldSize;
        break;
      case 'i':
      case 'o':
        args.fields |= kFieldOffset;
        break;
      case 'p':
        args.fields |= kFieldPool;
        break;
      case 'g':
        args.fields |= kFieldGeneration;
        break;
      case 'L':
        args.fields |= kFieldPattern;
        break;
      case 'd':
        dir_only = true;
        break;
      case 'q':
        args.quiet = true;
        break;
      case 'r':
        recursive = true;
        break;
      case 'h':
        std::fputs(LfsUsage("getstripe"), stdout);
        return 0;
      case ':':
        return Usage(
            (std::string("option '") + argv[optind - 1] + "' requires an argument").c_str());
      default:
        return Usage((std::string("unrecognized option '") + argv[optind - 1] + "'").c_str());
    }
  }
  // As Lustre: asking for particular fields or -d shows only the paths themselves.
  if (args.fields != 0 || dir_only) args.max_depth = 0;
  if (recursive) args.max_depth = -1;
  for (int i = optind; i < argc; ++i) args.paths.emplace_back(argv[i]);
  if (args.paths.empty()) return Usage("missing PATH");
  ToolSession session;
  Getstripe g(args, &session);
  int rc = 0;
  for (const std::string& path : args.paths) {
    int r = g.Run(path);
    if (rc == 0) rc = r;
  }
  return rc;
}

}  // namespace stria::tools
