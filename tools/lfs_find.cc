// lfs find: walk a directory tree through the MDS (no FUSE traffic) and print the paths
// that pass every test, as Lustre's lfs find (and find(1)) take them:
//
//   lfs find DIR [[!] --type|-t f|d|l] [[!] --name|-n GLOB] [[!] --iname GLOB]
//                [[!] --size|-s [+-]N[kMGT]] [[!] --mtime|--atime|--ctime [+-]DAYS]
//                [[!] --uid|--gid N] [[!] --user|--group NAME]
//                [[!] --stripe-count|-c [+-]N] [[!] --stripe-size|-S [+-]N[kMG]]
//                [[!] --component-count [+-]N] [[!] --layout|-L raid0|mdt]
//                [[!] --pool POOL] [[!] --ost|-O INDEX[,INDEX...]]
//                [[!] --mirror-count [+-]N] [[!] --mirror-state [^]ro|wp|sp]
//                [--maxdepth|-D N] [--print0|-0]
//
// Single-dash spellings work too (-name, -type, -size, -mtime, ...). `!` negates the test
// after it. Sizes: +N more than, -N less than, N equal (rounded up to the unit, as find).
// Times: days since the last change, rounded down (+N older, -N newer). Layout tests match
// a composite file when one of its instantiated components does. One READDIR with
// attributes and layouts per directory page: no per-file round trip.
#include <fnmatch.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "proto/layout_components.h"
#include "proto/layout_mirrors.h"
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

// "[+-]N" with an optional size suffix; the unit of the suffix goes to *unit (1 without).
std::optional<NumberTest> ParseNumberTest(std::string_view text, uint64_t* unit = nullptr) {
  NumberTest t;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    t.sign = text[0] == '+' ? 1 : -1;
    text.remove_prefix(1);
  }
  auto v = ParseSize(text);
  if (!v.ok() || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  if (unit != nullptr) {
    *unit = 1;
    if (!text.empty() && (text.back() < '0' || text.back() > '9')) {
      auto one = ParseSize(std::string("1") + text.back());
      if (one.ok()) *unit = *one;
    }
  }
  t.value = static_cast<int64_t>(*v);
  return t;
}

// What a test looks at.
struct Entry {
  const std::string& path;
  const proto::Attr& attr;
  const proto::Layout* layout;  // regular files
};

struct Test {
  bool negate = false;
  std::function<bool(const Entry&)> match;
};

bool IsReg(const proto::Attr& a) { return (a.mode() & 0170000) == 0100000; }

// Whether one of the file's instantiated extents passes `pred`.
bool AnyExtent(const Entry& e, const std::function<bool(const LayoutExtent&)>& pred) {
  if (e.layout == nullptr) return false;
  for (const LayoutExtent& x : LayoutExtents(*e.layout)) {
    if (IsComposite(*e.layout) && !x.init) continue;
    if (pred(x)) return true;
  }
  return false;
}

struct FindArgs {
  std::vector<Test> tests;
  int max_depth = -1;
  bool print0 = false;
  std::string root;
};

class Finder {
 public:
  Finder(const FindArgs& args, ToolSession* session, client::Client* c)
      : args_(args), session_(session), client_(c) {}

  int Walk(const std::string& path, const proto::Attr& attr, const proto::Layout* layout,
           int depth) {
    Visit(path, attr, layout);
    const bool dir = (attr.mode() & 0170000) == 0040000;
    if (!dir || (args_.max_depth >= 0 && depth >= args_.max_depth)) return 0;
    auto entries = session_->ListDir(client_, attr.ino(), /*plus=*/true);
    if (!entries.ok()) {
      std::fprintf(stderr, "lfs find: cannot read '%s': %s\n", path.c_str(),
                   entries.status().ToString().c_str());
      return ExitCode(entries.status());
    }
    const std::string prefix = path.ends_with('/') ? path : path + "/";
    int rc = 0;
    for (const proto::DirEntry& e : *entries) {
      if (!e.has_attr()) continue;  // removed while we listed
      const bool reg = IsReg(e.attr());
      int r = Walk(prefix + e.name(), e.attr(), reg ? &e.layout() : nullptr, depth + 1);
      if (rc == 0) rc = r;
    }
    return rc;
  }

 private:
  void Visit(const std::string& path, const proto::Attr& attr, const proto::Layout* layout) {
    const Entry e{path, attr, layout};
    for (const Test& t : args_.tests) {
      if (t.match(e) == t.negate) return;
    }
    std::fputs(path.c_str(), stdout);
    std::fputc(args_.print0 ? '\0' : '\n', stdout);
  }

  const FindArgs& args_;
  ToolSession* session_;
  client::Client* client_;
};

std::string Base(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Builds the test for option `c` with argument `arg`, or a usage error message.
Result<Test> MakeTest(int c, const std::string& arg) {
  auto bad = [&](const std::string& what) {
    return Status(Code::kInval, "bad " + what + " value '" + arg + "'");
  };
  Test t;
  switch (c) {
    case 't': {
      if (arg != "f" && arg != "d" && arg != "l")
        return Status(Code::kInval, "--type takes f, d or l");
      const uint32_t want = arg == "f" ? 0100000 : arg == "d" ? 0040000 : 0120000;
      t.match = [want](const Entry& e) { return (e.attr.mode() & 0170000) == want; };
      return t;
    }
    case 'n':
      t.match = [arg](const Entry& e) {
        return fnmatch(arg.c_str(), Base(e.path).c_str(), 0) == 0;
      };
      return t;
    case 'N':
      t.match = [arg](const Entry& e) {
        return fnmatch(arg.c_str(), Base(e.path).c_str(), FNM_CASEFOLD) == 0;
      };
      return t;
    case 's': {
      uint64_t unit = 1;
      auto n = ParseNumberTest(arg, &unit);
      if (!n) return bad("--size");
      n->value /= static_cast<int64_t>(unit);
      t.match = [n = *n, unit](const Entry& e) {
        // Rounded up to the unit, as find(1): -size 1M matches 1..1048576 bytes.
        const auto units = static_cast<int64_t>((e.attr.size() + unit - 1) / unit);
        return n.Matches(units);
      };
      return t;
    }
    case 'M':
    case 'A':
    case 'C': {
      auto n = ParseNumberTest(arg);
      if (!n || arg.find_first_not_of("+-0123456789") != std::string::npos) {
        return bad(c == 'M' ? "--mtime" : c == 'A' ? "--atime" : "--ctime");
      }
      const int64_t now = static_cast<int64_t>(std::time(nullptr)) * 1'000'000'000;
      t.match = [n = *n, c, now](const Entry& e) {
        const int64_t at = c == 'M'   ? e.attr.mtime_ns()
                           : c == 'A' ? e.attr.atime_ns()
                                      : e.attr.ctime_ns();
        const int64_t days = (now - at) / (86400LL * 1'000'000'000);
        return n.Matches(days);
      };
      return t;
    }
    case 'u':
    case 'g': {
      char* end = nullptr;
      const unsigned long id = std::strtoul(arg.c_str(), &end, 10);
      if (arg.empty() || *end != '\0' || id > UINT32_MAX) return bad(c == 'u' ? "--uid" : "--gid");
      t.match = [id, c](const Entry& e) { return (c == 'u' ? e.attr.uid() : e.attr.gid()) == id; };
      return t;
    }
    case 'U': {
      const passwd* pw = getpwnam(arg.c_str());
      if (pw == nullptr) return Status(Code::kInval, "unknown user '" + arg + "'");
      const uint32_t id = pw->pw_uid;
      t.match = [id](const Entry& e) { return e.attr.uid() == id; };
      return t;
    }
    case 'G': {
      const group* gr = getgrnam(arg.c_str());
      if (gr == nullptr) return Status(Code::kInval, "unknown group '" + arg + "'");
      const uint32_t id = gr->gr_gid;
      t.match = [id](const Entry& e) { return e.attr.gid() == id; };
      return t;
    }
    case 'c': {
      auto n = ParseNumberTest(arg);
      if (!n) return bad("--stripe-count");
      t.match = [n = *n](const Entry& e) {
        return AnyExtent(e, [&](const LayoutExtent& x) {
          if (x.on_mdt) return false;
          return n.Matches(x.plain->objects_size() > 0 ? x.plain->objects_size()
                                                       : x.plain->stripe_count());
        });
      };
      return t;
    }
    case 'S': {
      auto n = ParseNumberTest(arg);
      if (!n) return bad("--stripe-size");
      t.match = [n = *n](const Entry& e) {
        return AnyExtent(e, [&](const LayoutExtent& x) {
          return !x.on_mdt && n.Matches(static_cast<int64_t>(x.plain->stripe_size()));
        });
      };
      return t;
    }
    case 'K': {
      auto n = ParseNumberTest(arg);
      if (!n) return bad("--component-count");
      t.match = [n = *n](const Entry& e) {
        return e.layout != nullptr && n.Matches(e.layout->components_size());
      };
      return t;
    }
    case 'm': {  // --mirror-count: lcm_mirror_count (1 for a file without mirrors)
      auto n = ParseNumberTest(arg);
      if (!n) return bad("--mirror-count");
      t.match = [n = *n](const Entry& e) {
        return e.layout != nullptr && n.Matches(MirrorCount(*e.layout));
      };
      return t;
    }
    case 'W': {  // --mirror-state: ro, wp or sp (lcm_flags); ^STATE negates
      std::string state = arg;
      const bool neg = !state.empty() && state[0] == '^';
      if (neg) state.erase(0, 1);
      uint32_t want = 0;
      if (state == "ro") {
        want = kLcmFlRdonly;
      } else if (state == "wp") {
        want = kLcmFlWritePending;
      } else if (state == "sp") {
        want = kLcmFlSyncPending;
      } else {
        return Status(Code::kInval, "--mirror-state takes [^]ro, wp or sp");
      }
      t.match = [want, neg](const Entry& e) {
        if (e.layout == nullptr || !IsMirrored(*e.layout)) return false;
        return (LcmFlags(*e.layout) == want) != neg;
      };
      return t;
    }
    case 'L': {
      if (arg != "raid0" && arg != "mdt")
        return Status(Code::kInval, "--layout takes raid0 or mdt");
      const bool mdt = arg == "mdt";
      t.match = [mdt](const Entry& e) {
        return AnyExtent(e, [&](const LayoutExtent& x) { return x.on_mdt == mdt; });
      };
      return t;
    }
    case 'P': {
      std::string pool = arg;
      if (const size_t dot = pool.find('.'); dot != std::string::npos) pool = pool.substr(dot + 1);
      t.match = [pool](const Entry& e) {
        return AnyExtent(e, [&](const LayoutExtent& x) { return x.plain->pool() == pool; });
      };
      return t;
    }
    case 'O': {
      std::set<uint32_t> osts;
      size_t pos = 0;
      while (pos <= arg.size()) {
        const size_t comma = arg.find(',', pos);
        const std::string item =
            arg.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        char* end = nullptr;
        const unsigned long idx = std::strtoul(item.c_str(), &end, 0);
        if (item.empty() || *end != '\0' || idx > 0xffff) return bad("--ost");
        osts.insert(static_cast<uint32_t>(idx));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
      t.match = [osts](const Entry& e) {
        return AnyExtent(e, [&](const LayoutExtent& x) {
          for (const auto& o : x.plain->objects()) {
            if (osts.count(o.ost_idx())) return true;
          }
          return false;
        });
      };
      return t;
    }
    default:
      return Status(Code::kInval, "unknown test");
  }
}

}  // namespace

int LfsFind(int argc, char** argv) {
  static const option kLong[] = {
      {"atime", required_argument, nullptr, 'A'},
      {"ctime", required_argument, nullptr, 'C'},
      {"component-count", required_argument, nullptr, 'K'},
      {"comp-count", required_argument, nullptr, 'K'},
      {"gid", required_argument, nullptr, 'g'},
      {"group", required_argument, nullptr, 'G'},
      {"iname", required_argument, nullptr, 'N'},
      {"layout", required_argument, nullptr, 'L'},
      {"maxdepth", required_argument, nullptr, 'D'},
      {"mirror-count", required_argument, nullptr, 'm'},
      {"mirror-state", required_argument, nullptr, 'W'},
      {"mtime", required_argument, nullptr, 'M'},
      {"name", required_argument, nullptr, 'n'},
      {"ost", required_argument, nullptr, 'O'},
      {"obd", required_argument, nullptr, 'O'},
      {"pool", required_argument, nullptr, 'P'},
      {"print0", no_argument, nullptr, '0'},
      {"size", required_argument, nullptr, 's'},
      {"stripe-count", required_argument, nullptr, 'c'},
      {"stripe_count", required_argument, nullptr, 'c'},
      {"stripe-size", required_argument, nullptr, 'S'},
      {"stripe_size", required_argument, nullptr, 'S'},
      {"type", required_argument, nullptr, 't'},
      {"uid", required_argument, nullptr, 'u'},
      {"user", required_argument, nullptr, 'U'},
      {nullptr, 0, nullptr, 0},
  };
  FindArgs args;
  std::vector<std::string> dirs;
  bool negate_next = false;
  // "+" keeps getopt from permuting: "!" and the directory are taken where they stand.
  optind = 0;
  opterr = 0;
  while (optind < argc || optind == 0) {
    const int c = getopt_long_only(argc, argv, "+:0c:D:L:n:O:s:S:t:", kLong, nullptr);
    if (c == -1) {
      if (optind >= argc) break;
      const std::string word = argv[optind++];
      if (word == "!") {
        if (negate_next) return Usage("'!' twice");
        negate_next = true;
      } else {
        dirs.push_back(word);
      }
      continue;
    }
    switch (c) {
      case 'D': {
        auto v = ParseSize(optarg);
        if (!v.ok() || *v > 1'000'000) return Usage("bad --maxdepth value");
        args.max_depth = static_cast<int>(*v);
        break;
      }
      case '0':
        args.print0 = true;
        break;
      case ':':
        return Usage(
            (std::string("option '") + argv[optind - 1] + "' requires an argument").c_str());
      case '?':
        return Usage((std::string("unrecognized option '") + argv[optind - 1] + "'").c_str());
      default: {
        auto t = MakeTest(c, optarg);
        if (!t.ok()) return Usage(t.status().message().c_str());
        t->negate = negate_next;
        negate_next = false;
        args.tests.push_back(std::move(t).value());
        continue;
      }
    }
    if (negate_next) return Usage("'!' must come before a test");
  }
  if (negate_next) return Usage("'!' must come before a test");
  if (dirs.size() != 1) return Usage("give exactly one DIRECTORY");
  args.root = dirs.front();
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
    std::fprintf(stderr, "lfs find: '%s': %s\n", args.root.c_str(), r.status().ToString().c_str());
    return ExitCode(r.status());
  }
  Finder f(args, &session, *cl);
  return f.Walk(args.root, r->attr, r->is_reg() ? &r->layout : nullptr, 0);
}

}  // namespace stria::tools
