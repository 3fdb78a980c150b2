// lfs setstripe: set a directory's default layout, or create an empty file with a layout.
//
// -E END starts a component of a composite (PFL) layout that ends at END (a size, or -1/EOF
// for the end of the file); the options after it (-c, -S, -i, -p) describe that component,
// and the next -E starts the next one where it ends. Layout options before the first -E
// are refused, as they would be ambiguous.
#include <getopt.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <cstring>
#include <string>
#include <vector>

#include "common/log.h"
#include "proto/layout_components.h"
#include "tools/fs_connect.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"
#include "tools/layout_yaml.h"
#include "tools/stripe_args.h"

namespace stria::tools {
namespace {

struct SetstripeArgs {
  bool remove = false;           // -d
  proto::Layout layout;          // count 0 / size 0 = inherit; offset -1 = MDS chooses
  std::vector<std::string> paths;
};

int Usage(const char* why) {
  if (why != nullptr && *why != '\0') std::fprintf(stderr, "lfs setstripe: %s\n", why);
  std::fputs(LfsUsage("setstripe"), stderr);
  return kUsageError;
}

mode_t CurrentUmask() {
  mode_t m = umask(0);
  umask(m);
  return m;
}

// Applies the layout to one path. Returns the exit status for it.
int SetstripeOne(ToolSession& session, const SetstripeArgs& args, const std::string& path) {
  auto where = LocatePath(path);
  if (!where.ok()) {
    std::fprintf(stderr, "lfs setstripe: cannot find '%s': %s\n", path.c_str(),
                 where.status().message().c_str());
    return ExitCode(where.status());
  }
  auto c = session.ClientFor(*where);
  if (!c.ok()) {
    std::fprintf(stderr, "lfs setstripe: cannot connect to '%s': %s\n",
                 where->mount.source.c_str(), c.status().ToString().c_str());
    return ExitCode(c.status());
  }
  auto target = session.Resolve(*c, where->fs_path);
  if (target.ok() && target->is_dir()) {
    proto::SetDefaultLayoutRequest req;
    *req.mutable_cred() = session.cred();
    req.set_ino(target->attr.ino());
    req.set_remove(args.remove);
    if (!args.remove) *req.mutable_layout() = args.layout;
    proto::SetDefaultLayoutReply rep;
    Status st = (*c)->MdsCall(proto::OP_MDS_SET_DEFAULT_LAYOUT, req, &rep);
    if (!st.ok()) {
      std::fprintf(stderr, "lfs setstripe: cannot %s default layout of '%s': %s\n",
                   args.remove ? "delete" : "set", path.c_str(), st.ToString().c_str());
      return ExitCode(st);
    }
    return 0;
  }
  if (target.ok()) {
    std::fprintf(stderr, "lfs setstripe: cannot change layout of existing file '%s': %s\n",
                 path.c_str(), std::strerror(EEXIST));
    return EEXIST;
  }
  if (target.status().code() != Code::kNoEnt) {
    std::fprintf(stderr, "lfs setstripe: cannot stat '%s': %s\n", path.c_str(),
                 target.status().ToString().c_str());
    return ExitCode(target.status());
  }
  if (args.remove) {
    std::fprintf(stderr, "lfs setstripe: cannot delete default layout of '%s': %s\n",
                 path.c_str(), std::strerror(ENOENT));
    return ENOENT;
  }
  // A new, empty regular file with the layout.
  auto [parent_path, name] = SplitParent(where->fs_path);
  auto parent = session.Resolve(*c, parent_path);
  if (!parent.ok()) {
    std::fprintf(stderr, "lfs setstripe: cannot create '%s': %s\n", path.c_str(),
                 parent.status().ToString().c_str());
    return ExitCode(parent.status());
  }
  if (!parent->is_dir()) {
    std::fprintf(stderr, "lfs setstripe: cannot create '%s': %s\n", path.c_str(),
                 std::strerror(ENOTDIR));
    return ENOTDIR;
  }
  proto::CreateRequest req;
  *req.mutable_cred() = session.cred();
  req.set_parent(parent->attr.ino());
  req.set_name(name);
  const mode_t mask = CurrentUmask();
  req.set_mode(S_IFREG | (0666 & ~mask));
  req.set_umask(mask);
  req.set_exclusive(true);
  *req.mutable_layout() = args.layout;
  proto::EntryReply rep;
  Status st = (*c)->MdsCall(proto::OP_MDS_CREATE, req, &rep);
  if (!st.ok()) {
    if (st.code() == Code::kExist) {
      std::fprintf(stderr, "lfs setstripe: cannot change layout of existing file '%s': %s\n",
                   path.c_str(), std::strerror(EEXIST));
    } else {
      std::fprintf(stderr, "lfs setstripe: cannot create '%s': %s\n", path.c_str(),
                   st.ToString().c_str());
    }
    return ExitCode(st);
  }
  return 0;
}

}  // namespace

int LfsSetstripe(int argc, char** argv) {
  static const option kLong[] = {
      {"stripe-count", required_argument, nullptr, 'c'},
      {"stripe_count", required_argument, nullptr, 'c'},
      {"delete", no_argument, nullptr, 'd'},
      {"stripe-index", required_argument, nullptr, 'i'},
      {"stripe_index", required_argument, nullptr, 'i'},
      {"ost", required_argument, nullptr, 'o'},
      {"pool", required_argument, nullptr, 'p'},
      {"stripe-size", required_argument, nullptr, 'S'},
      {"stripe_size", required_argument, nullptr, 'S'},
      {"component-end", required_argument, nullptr, 'E'},
      {"layout", required_argument, nullptr, 'L'},
      {"yaml", required_argument, nullptr, 'y'},
      {"comp-end", required_argument, nullptr, 'E'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  SetstripeArgs args;
  args.layout.set_pattern(proto::PATTERN_RAID0);
  args.layout.set_stripe_offset(-1);
  bool layout_given = false;
  proto::Layout* cur = &args.layout;  // the plain layout the options describe
  optind = 0;
  opterr = 0;
  int c;
  std::string yaml_file;
  while ((c = getopt_long(argc, argv, ":c:dE:i:L:o:p:S:y:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'y':
        yaml_file = optarg;
        break;
      case 'L': {
        const std::string pattern = optarg;
        if (pattern == "mdt") {
          cur->set_pattern(proto::PATTERN_MDT);
        } else if (pattern == "raid0") {
          cur->set_pattern(proto::PATTERN_RAID0);
        } else {
          return Usage(("invalid layout '" + pattern + "': mdt or raid0").c_str());
        }
        layout_given = true;
        break;
      }
      case 'E': {
        auto end = ParseComponentEnd(optarg);
        if (!end.ok()) return Usage(end.status().message().c_str());
        if (!IsComposite(args.layout) && layout_given) {
          return Usage("layout options must follow -E in a composite layout");
        }
        const uint64_t start =
            IsComposite(args.layout) ? args.layout.components().rbegin()->end() : 0;
        if (start == kLayoutEof) return Usage("no component may follow one that ends at EOF");
        if (*end <= start) {
          return Usage(("component end " + std::string(optarg) + " is not past the previous "
                        "end " + std::to_string(start)).c_str());
        }
        args.layout.clear_stripe_offset();
        args.layout.clear_pattern();
        proto::LayoutComponent* comp = args.layout.add_components();
        comp->set_start(start);
        comp->set_end(*end);
        cur = comp->mutable_layout();
        cur->set_pattern(proto::PATTERN_RAID0);
        cur->set_stripe_offset(-1);
        layout_given = true;
        break;
      }
      case 'c': {
        auto v = ParseStripeCount(optarg);
        if (!v.ok()) return Usage(v.status().message().c_str());
        cur->set_stripe_count(*v);
        layout_given = true;
        break;
      }
      case 'd':
        args.remove = true;
        break;
      case 'i':
      case 'o': {
        auto v = ParseStripeIndex(optarg);
        if (!v.ok()) return Usage(v.status().message().c_str());
        cur->set_stripe_offset(*v);
        layout_given = true;
        break;
      }
      case 'p': {
        std::string pool = optarg;
        // Lustre accepts "fsname.pool"; the pool is the part after the dot.
        if (size_t dot = pool.find('.'); dot != std::string::npos) pool = pool.substr(dot + 1);
        if (pool.empty() || pool.size() > 15) {
          return Usage(("invalid pool name '" + std::string(optarg) + "'").c_str());
        }
        cur->set_pool(pool);
        layout_given = true;
        break;
      }
      case 'S': {
        auto v = ParseStripeSize(optarg);
        if (!v.ok()) return Usage(v.status().message().c_str());
        cur->set_stripe_size(*v);
        layout_given = true;
        break;
      }
      case 'h':
        std::fputs(LfsUsage("setstripe"), stdout);
        return 0;
      case ':':
        return Usage((std::string("option '") + argv[optind - 1] + "' requires an argument")
                         .c_str());
      default:
        return Usage((std::string("unrecognized option '") + argv[optind - 1] + "'").c_str());
    }
  }
  for (int i = optind; i < argc; ++i) args.paths.emplace_back(argv[i]);
  if (args.paths.empty()) return Usage("missing PATH");
  if (args.remove && layout_given) {
    return Usage("cannot combine -d with other options");
  }
  if (!yaml_file.empty()) {
    // A template (lfs getstripe --yaml): the whole layout comes from it.
    if (layout_given || args.remove) return Usage("--yaml takes no other layout option");
    std::ifstream in(yaml_file);
    if (!in) {
      std::fprintf(stderr, "lfs setstripe: cannot read '%s': %s\n", yaml_file.c_str(),
                   std::strerror(errno));
      return errno != 0 ? errno : EIO;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = ParseYaml(text.str());
    if (!parsed.ok()) {
      std::fprintf(stderr, "lfs setstripe: '%s': %s\n", yaml_file.c_str(),
                   parsed.status().message().c_str());
      return kUsageError;
    }
    args.layout = *parsed;
  }
  if (IsComposite(args.layout)) {
    for (const proto::LayoutComponent& comp : args.layout.components()) {
      const uint64_t size = comp.layout().stripe_size();
      const bool dom = comp.layout().pattern() == proto::PATTERN_MDT;
      if (dom && (comp.layout().stripe_count() != 0 || comp.layout().pool().size() > 0)) {
        return Usage("a Data-on-MDT component (-L mdt) takes no -c or -p");
      }
      if (!dom && size != 0 && comp.end() != kLayoutEof && comp.end() % size != 0) {
        return Usage(("component end " + std::to_string(comp.end()) +
                      " is not a multiple of its stripe size " + std::to_string(size))
                         .c_str());
      }
    }
  }
  ToolSession session;
  int rc = 0;
  for (const std::string& path : args.paths) {
    int r = SetstripeOne(session, args, path);
    if (rc == 0) rc = r;
  }
  return rc;
}

}  // namespace stria::tools
