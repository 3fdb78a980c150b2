// lfs find: walk a directory tree through the MDS (no FUSE traffic) and print the paths
// that match every given test.
#include <fnmatch.h>
#include <getopt.h>

#include <cstdio>
#include <optional>
#include <string>

#include "proto/layout_components.h"
#include "tools/fs_connect.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"
#include "tools/stripe_args.h"

namespace stria::tools {
namespace {

int Usage(const char* why) {
  if (why != nullptr && *why != '\0') std::fprintf(stderr, "lfs find: %s\n", why);
  std::fputs(LfsUsage("find"), stderr);
  return kUsageError;
}

// A numeric test as find(1) spells it: "N" exactly, "+N" more than N, "-N" fewer than N.
struct NumberTest {
  int sign = 0;  // -1, 0, +1
  int64_t value = 0;
  bool Matches(int64_t v) const {
    return sign == 0 ? v == value : (sign > 0 ? v > value : v < value);
  }
};

std::optional<NumberTest> ParseNumberTest(std::string_view text) {
  NumberTest t;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    t.sign = text[0] == '+' ? 1 : -1;
    text.remove_prefix(1);
  }
  auto v = ParseSize(text);
  if (!v.ok() || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  t.value = static_cast<int64_t>(*v);
  return t;
}

struct FindArgs {
  std::optional<NumberTest> stripe_count;
  std::optional<NumberTest> stripe_size;
  std::optional<NumberTest> component_count;
  char type = 0;  // 'f', 'd', 'l' or 0
  std::string name;
  int max_depth = -1;
  std::string root;
};

class Finder {
 public:
  Finder(const FindArgs& args, ToolSession* session, client::Client* c)
      : args_(args), session_(session), client_(c) {}

  int Walk(const std::string& path, const Resolved& r, int depth) {
    int rc = Visit(path, r);
    if (!r.is_dir() || (args_.max_depth >= 0 && depth >= args_.max_depth)) return rc;
    auto entries = session_->ListDir(client_, r.attr.ino());
    if (!entries.ok()) {
      std::fprintf(stderr, "lfs find: cannot read '%s': %s\n", path.c_str(),
                   entries.status().ToString().c_str());
      return ExitCode(entries.status());
    }
    const std::string prefix = path.ends_with('/') ? path : path + "/";
    for (const proto::DirEntry& e : *entries) {
      Resolved child;
      child.attr.set_ino(e.ino());
      uint32_t type_bits = 0;
      switch (e.type()) {
        case proto::FT_REG: type_bits = 0100000; break;
        case proto::FT_DIR: type_bits = 0040000; break;
        case proto::FT_LNK: type_bits = 0120000; break;
        default: type_bits = 0; break;
      }
      child.attr.set_mode(type_bits);
      int r2 = Walk(prefix + e.name(), child, depth + 1);
      if (rc == 0) rc = r2;
    }
    return rc;
  }

 private:
  int Visit(const std::string& path, const Resolved& r) {
    if (args_.type == 'f' && !r.is_reg()) return 0;
    if (args_.type == 'd' && !r.is_dir()) return 0;
    if (args_.type == 'l' && (r.attr.mode() & 0170000) != 0120000) return 0;
    if (!args_.name.empty()) {
      size_t slash = path.rfind('/');
      std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
      if (fnmatch(args_.name.c_str(), base.c_str(), 0) != 0) return 0;
    }
    if (args_.stripe_count || args_.stripe_size || args_.component_count) {
      if (!r.is_reg()) return 0;  // only files have a layout to test
      auto layout = session_->FileLayout(client_, r.attr);
      if (!layout.ok()) {
        std::fprintf(stderr, "lfs find: cannot get layout of '%s': %s\n", path.c_str(),
                     layout.status().ToString().c_str());
        return ExitCode(layout.status());
      }
      if (args_.component_count && !args_.component_count->Matches(layout->components_size())) {
        return 0;
      }
      // A composite file matches when one of its instantiated components does.
      bool matched = false;
      for (const LayoutExtent& e : LayoutExtents(*layout)) {
        if (IsComposite(*layout) && !e.init) continue;
        const int64_t count =
            e.plain->objects_size() > 0 ? e.plain->objects_size() : e.plain->stripe_count();
        const auto size = static_cast<int64_t>(e.plain->stripe_size());
        if ((!args_.stripe_count || args_.stripe_count->Matches(count)) &&
            (!args_.stripe_size || args_.stripe_size->Matches(size))) {
          matched = true;
          break;
        }
      }
      if (!matched) return 0;
    }
    std::printf("%s\n", path.c_str());
    return 0;
  }

  const FindArgs& args_;
  ToolSession* session_;
  client::Client* client_;
};

}  // namespace

int LfsFind(int argc, char** argv) {
  static const option kLong[] = {
      {"stripe-count", required_argument, nullptr, 'c'},
      {"stripe_count", required_argument, nullptr, 'c'},
      {"maxdepth", required_argument, nullptr, 'D'},
      {"name", required_argument, nullptr, 'n'},
      {"stripe-size", required_argument, nullptr, 'S'},
      {"stripe_size", required_argument, nullptr, 'S'},
      {"type", required_argument, nullptr, 't'},
      {"component-count", required_argument, nullptr, 'C'},
      {"comp-count", required_argument, nullptr, 'C'},
      {nullptr, 0, nullptr, 0},
  };
  FindArgs args;
  // lfs find takes its directory first, then the tests (as find(1)); getopt_long permutes.
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":c:D:n:S:t:", kLong, nullptr)) != -1) {
    switch (c) {
      case 'c':
        args.stripe_count = ParseNumberTest(optarg);
        if (!args.stripe_count) return Usage("bad --stripe-count value");
        break;
      case 'C':
        args.component_count = ParseNumberTest(optarg);
        if (!args.component_count) return Usage("bad --component-count value");
        break;
      case 'S':
        args.stripe_size = ParseNumberTest(optarg);
        if (!args.stripe_size) return Usage("bad --stripe-size value");
        break;
      case 'D': {
        auto v = ParseSize(optarg);
        if (!v.ok() || *v > 1'000'000) return Usage("bad --maxdepth value");
        args.max_depth = static_cast<int>(*v);
        break;
      }
      case 'n':
        args.name = optarg;
        break;
      case 't':
        if (std::string(optarg) != "f" && std::string(optarg) != "d" &&
            std::string(optarg) != "l") {
          return Usage("--type takes f, d or l");
        }
        args.type = optarg[0];
        break;
      case ':':
        return Usage((std::string("option '") + argv[optind - 1] + "' requires an argument")
                         .c_str());
      default:
        return Usage((std::string("unrecognized option '") + argv[optind - 1] + "'").c_str());
    }
  }
  if (argc - optind != 1) return Usage("give exactly one DIRECTORY");
  args.root = argv[optind];
  auto where = LocatePath(args.root);
  if (!where.ok()) {
    std::fprintf(stderr, "lfs find: cannot find '%s': %s\n", args.root.c_str(),
                 where.status().message().c_str());
    return ExitCode(where.status());
  }
  ToolSession session;
  auto cl = session.ClientFor(*where);
  if (!cl.ok()) {
    std::fprintf(stderr, "lfs find: cannot connect to '%s': %s\n", where->mount.source.c_str(),
                 cl.status().ToString().c_str());
    return ExitCode(cl.status());
  }
  auto r = session.Resolve(*cl, where->fs_path);
  if (!r.ok()) {
    std::fprintf(stderr, "lfs find: '%s': %s\n", args.root.c_str(),
                 r.status().ToString().c_str());
    return ExitCode(r.status());
  }
  Finder f(args, &session, *cl);
  return f.Walk(args.root, *r, 0);
}

}  // namespace stria::tools
