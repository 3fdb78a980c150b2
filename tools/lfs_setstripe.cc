// lfs setstripe: set a directory's default layout, or create an empty file with a layout.
//
// -E END starts a component of a composite (PFL) layout that ends at END (a size, or -1/EOF
// for the end of the file); the options after it (-c, -S, -i, -p) describe that component,
// and the next -E starts the next one where it ends. Layout options before the first -E
// are refused, as they would be ambiguous. -N[COUNT] makes mirrors (Lustre's FLR), each
// described by the options after it; `lfs mirror create` is this command with -N required.
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

const char* g_cmd = "setstripe";  // the command name in messages: "setstripe", "mirror create"

int Usage(const char* why) {
  if (why != nullptr && *why != '\0') std::fprintf(stderr, "lfs %s: %s\n", g_cmd, why);
  std::fputs(LfsUsage(g_cmd), stderr);
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
    std::fprintf(stderr, "lfs %s: cannot find '%s': %s\n", g_cmd, path.c_str(),
                 where.status().message().c_str());
    return ExitCode(where.status());
  }
  auto c = session.ClientFor(*where);
  if (!c.ok()) {
    std::fprintf(stderr, "lfs %s: cannot connect to '%s': %s\n", g_cmd,
                 where->mount.source.c_str(), c.status().ToString().c_str());
    return ExitCode(c.status());
  }
  auto target = session.Resolve(*c, where->fs_path);
  if (target.ok() && target->is_dir()) {
    client::Metadata md(*c);
    Status st = args.remove ? md.RemoveDefaultLayout(session.cred(), target->attr.ino())
                            : md.SetDefaultLayout(session.cred(), target->attr.ino(), args.layout);
    if (!st.ok()) {
      std::fprintf(stderr, "lfs %s: cannot %s default layout of '%s': %s\n", g_cmd,
                   args.remove ? "delete" : "set", path.c_str(), st.ToString().c_str());
      return ExitCode(st);
    }
    return 0;
  }
  if (target.ok()) {
    std::fprintf(stderr, "lfs %s: cannot change layout of existing file '%s': %s\n", g_cmd,
                 path.c_str(), std::strerror(EEXIST));
    return EEXIST;
  }
  if (target.status().code() != Code::kNoEnt) {
    std::fprintf(stderr, "lfs %s: cannot stat '%s': %s\n", g_cmd, path.c_str(),
                 target.status().ToString().c_str());
    return ExitCode(target.status());
  }
  if (args.remove) {
    std::fprintf(stderr, "lfs %s: cannot delete default layout of '%s': %s\n", g_cmd,
                 path.c_str(), std::strerror(ENOENT));
    return ENOENT;
  }
  // A new, empty regular file with the layout.
  auto [parent_path, name] = SplitParent(where->fs_path);
  auto parent = session.Resolve(*c, parent_path);
  if (!parent.ok()) {
    std::fprintf(stderr, "lfs %s: cannot create '%s': %s\n", g_cmd, path.c_str(),
                 parent.status().ToString().c_str());
    return ExitCode(parent.status());
  }
  if (!parent->is_dir()) {
    std::fprintf(stderr, "lfs %s: cannot create '%s': %s\n", g_cmd, path.c_str(),
                 std::strerror(ENOTDIR));
    return ENOTDIR;
  }
  client::Metadata::CreateArgs ca;
  ca.parent = parent->attr.ino();
  ca.name = name;
  const mode_t mask = CurrentUmask();
  ca.mode = S_IFREG | (0666 & ~mask);
  ca.umask = mask;
  ca.layout = &args.layout;
  Status st = client::Metadata(*c).Create(session.cred(), ca).status();
  if (!st.ok()) {
    if (st.code() == Code::kExist) {
      std::fprintf(stderr, "lfs %s: cannot change layout of existing file '%s': %s\n", g_cmd,
                   path.c_str(), std::strerror(EEXIST));
    } else {
      std::fprintf(stderr, "lfs %s: cannot create '%s': %s\n", g_cmd, path.c_str(),
                   st.ToString().c_str());
    }
    return ExitCode(st);
  }
  return 0;
}

// lfs setstripe, and lfs mirror create (mirror_create: -N required, only new files or
// directories).
int RunSetstripe(int argc, char** argv, bool mirror_create) {
  constexpr int kFlags = 0x100;
  static const option kLong[] = {
      {"mirror-count", optional_argument, nullptr, 'N'},
      {"flags", required_argument, nullptr, kFlags},
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
  LayoutOptions options;
  optind = 0;
  opterr = 0;
  int c;
  std::string yaml_file;
  while ((c = getopt_long(argc, argv, ":c:dE:i:L:N::o:p:S:y:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'y':
        yaml_file = optarg;
        break;
      case 'd':
        args.remove = true;
        break;
      case 'E':
      case 'L':
      case 'c':
      case 'i':
      case 'o':
      case 'p':
      case 'S':
      case 'N':
        if (Status st = options.Apply(c, optarg); !st.ok()) return Usage(st.message().c_str());
        break;
      case kFlags:
        if (Status st = options.Apply('F', optarg); !st.ok()) return Usage(st.message().c_str());
        break;
      case 'h':
        std::fputs(LfsUsage(g_cmd), stdout);
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
  const bool layout_given = options.given();
  args.layout = options.layout();
  if (args.remove && layout_given) {
    return Usage("cannot combine -d with other options");
  }
  if (mirror_create && !options.mirrored()) return Usage("missing -N (--mirror-count)");
  if (!yaml_file.empty()) {
    // A template (lfs getstripe --yaml): the whole layout comes from it.
    if (layout_given || args.remove) return Usage("--yaml takes no other layout option");
    std::ifstream in(yaml_file);
    if (!in) {
      std::fprintf(stderr, "lfs %s: cannot read '%s': %s\n", g_cmd, yaml_file.c_str(),
                   std::strerror(errno));
      return errno != 0 ? errno : EIO;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = ParseYaml(text.str());
    if (!parsed.ok()) {
      std::fprintf(stderr, "lfs %s: '%s': %s\n", g_cmd, yaml_file.c_str(),
                   parsed.status().message().c_str());
      return kUsageError;
    }
    args.layout = *parsed;
  }
  if (Status st = options.Finish(); !st.ok()) return Usage(st.message().c_str());
  if (yaml_file.empty()) args.layout = options.layout();  // -N assembled by Finish
  ToolSession session;
  int rc = 0;
  for (const std::string& path : args.paths) {
    int r = SetstripeOne(session, args, path);
    if (rc == 0) rc = r;
  }
  return rc;
}

}  // namespace

int LfsSetstripe(int argc, char** argv) {
  g_cmd = "setstripe";
  return RunSetstripe(argc, argv, /*mirror_create=*/false);
}

int LfsMirrorCreate(int argc, char** argv) {
  g_cmd = "mirror create";
  return RunSetstripe(argc, argv, /*mirror_create=*/true);
}

}  // namespace stria::tools
