#include "tools/lctl_param.h"

#include <sys/xattr.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "common/tunables.h"
#include "tools/fs_connect.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"

namespace stria::tools {
namespace {

constexpr const char* kXattrPrefix = "user.stria.lctl.";

// The statistics matching `pattern` on the MDS and on every OSS (names only, or cleared).
std::map<std::string, std::string> DaemonStats(client::Client* c, const std::string& pattern,
                                               bool names_only, bool clear) {
  std::map<std::string, std::string> out;
  proto::StatsRequest req;
  req.set_pattern(pattern);
  req.set_names_only(names_only);
  req.set_clear(clear);
  proto::StatsReply rep;
  if (Status st = c->MdsCall(proto::OP_STATS_GET, req, &rep); st.ok()) {
    out.insert(rep.values().begin(), rep.values().end());
  } else {
    std::fprintf(stderr, "lctl: statistics of the MDS: %s\n", st.ToString().c_str());
  }
  auto config = c->GetConfig(/*refresh=*/true);
  if (!config.ok()) return out;
  std::set<std::string> asked;  // one request per OSS, whatever its OST count
  for (const proto::OstInfo& o : config->osts()) {
    if (!asked.insert(o.nid()).second) continue;
    auto rpc = c->Ost(o.index());
    if (!rpc.ok()) continue;
    proto::StatsReply orep;
    if (Status st = (*rpc)->Call(proto::OP_STATS_GET, req, &orep); st.ok()) {
      out.insert(orep.values().begin(), orep.values().end());
    } else {
      std::fprintf(stderr, "lctl: statistics of the OSS at %s: %s\n", o.nid().c_str(),
                   st.ToString().c_str());
    }
  }
  return out;
}

// The parameters of the mounts on this host matching `pattern`.
std::map<std::string, std::string> MountParams(const std::string& pattern, bool names_only) {
  std::map<std::string, std::string> out;
  auto mounts = ListStriaMounts();
  if (!mounts.ok()) return out;
  const std::string attr = std::string(kXattrPrefix) + (names_only ? "list." : "get.") + pattern;
  for (const MountEntry& m : *mounts) {
    std::string buf;
    for (int attempt = 0; attempt < 5; ++attempt) {  // the text may grow between the calls
      const ssize_t n = getxattr(m.mount_point.c_str(), attr.c_str(), nullptr, 0);
      if (n < 0) break;
      buf.resize(static_cast<size_t>(n) + 4096);
      const ssize_t got = getxattr(m.mount_point.c_str(), attr.c_str(), buf.data(), buf.size());
      if (got >= 0) {
        buf.resize(static_cast<size_t>(got));
        break;
      }
      buf.clear();
      if (errno != ERANGE) break;
    }
    for (size_t pos = 0; pos < buf.size();) {
      const size_t a = buf.find('\0', pos);
      if (a == std::string::npos) break;
      const size_t b = buf.find('\0', a + 1);
      if (b == std::string::npos) break;
      out[buf.substr(pos, a - pos)] = buf.substr(a + 1, b - a - 1);
      pos = b + 1;
    }
  }
  return out;
}

// Sets NAME=VALUE on every mount here: how many mounts took it; -errno of the last refusal.
int SetOnMounts(const std::string& name, const std::string& value, int* err) {
  auto mounts = ListStriaMounts();
  if (!mounts.ok()) return 0;
  int n = 0;
  const std::string attr = std::string(kXattrPrefix) + "set." + name;
  for (const MountEntry& m : *mounts) {
    if (setxattr(m.mount_point.c_str(), attr.c_str(), value.data(), value.size(), 0) == 0) {
      ++n;
    } else if (*err == 0 || *err == ENOENT) {
      // A mount's refusal of the value says more than another file system's ENOENT.
      *err = errno;
    }
  }
  return n;
}

void Print(const std::string& name, const std::string& value, bool values_only, bool names_only) {
  if (names_only) {
    std::printf("%s\n", name.c_str());
  } else if (values_only) {
    std::printf("%s%s", value.c_str(), value.ends_with('\n') ? "" : "\n");
  } else if (value.find('\n') != std::string::npos) {
    std::printf("%s=\n%s%s", name.c_str(), value.c_str(), value.ends_with('\n') ? "" : "\n");
  } else {
    std::printf("%s=%s\n", name.c_str(), value.c_str());
  }
}

bool IsStatsName(const std::string& name) {
  const std::string last = name.substr(name.rfind('.') + 1);
  return last.ends_with("stats");
}

}  // namespace

int LctlGetParam(client::Client* c, int argc, char** argv) {
  bool values_only = false, names_only = false, recursive = false;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-n") == 0) {
      values_only = true;
    } else if (std::strcmp(argv[i], "-N") == 0) {
      names_only = true;
    } else if (std::strcmp(argv[i], "-R") == 0) {
      recursive = true;
    } else if (std::strcmp(argv[i], "-NR") == 0 || std::strcmp(argv[i], "-RN") == 0) {
      names_only = recursive = true;
    } else {
      names.emplace_back(argv[i]);
    }
  }
  int rc = 0;
  for (std::string pattern : names) {
    if (recursive && !pattern.ends_with("*")) pattern += "*";  // everything below the name
    std::map<std::string, std::string> found = DaemonStats(c, pattern, names_only, false);
    for (auto& [k, v] : MountParams(pattern, names_only)) found.emplace(k, v);
    // The MGS's stored params, where no live source has the name.
    proto::GetParamRequest req;
    req.set_pattern(pattern);
    proto::GetParamReply rep;
    Status st = c->MdsCall(proto::OP_MGS_GET_PARAM, req, &rep);
    if (st.ok()) {
      const std::string last = pattern.substr(pattern.rfind('.') + 1);
      for (const auto& [k, v] : rep.params()) {
        const std::string klast = k.substr(k.rfind('.') + 1);
        bool shadowed = false;
        for (const auto& [name, _] : found) {
          if (name.substr(name.rfind('.') + 1) == klast && name.substr(0, name.find('.')) ==
                                                                 k.substr(0, k.find('.'))) {
            shadowed = true;
          }
        }
        if (!shadowed) found.emplace(k, v);
      }
    }
    if (found.empty()) {
      std::fprintf(stderr, "error: get_param: param_path '%s': %s\n", pattern.c_str(),
                   st.ok() ? std::strerror(ENOENT) : st.ToString().c_str());
      if (rc == 0) rc = st.ok() ? ENOENT : ExitCode(st);
      continue;
    }
    for (const auto& [k, v] : found) Print(k, v, values_only, names_only);
  }
  return rc;
}

int LctlSetParam(client::Client* c, int argc, char** argv) {
  bool persist = false;
  std::vector<std::pair<std::string, std::string>> sets;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-P") == 0) {
      persist = true;
      continue;
    }
    const char* eq = std::strchr(argv[i], '=');
    sets.emplace_back(std::string(argv[i], eq - argv[i]), std::string(eq + 1));
  }
  int rc = 0;
  for (const auto& [name, value] : sets) {
    if (IsStatsName(name) && (value == "clear" || value == "0")) {
      size_t n = DaemonStats(c, name, /*names_only=*/true, /*clear=*/true).size();
      int err = 0;
      n += static_cast<size_t>(SetOnMounts(name, "clear", &err));
      if (n == 0) {
        std::fprintf(stderr, "error: set_param: param_path '%s': %s\n", name.c_str(),
                     std::strerror(err ? err : ENOENT));
        if (rc == 0) rc = err ? err : ENOENT;
      }
      continue;
    }
    if (!persist && name.starts_with("llite.") && name.ends_with(".statahead_max")) {
      // Kept by each mount alone (client/fuse/statahead.h), as in Lustre. Mounts of other
      // file systems answer ENOENT; one that the name matches refuses a bad value.
      int err = 0;
      if (SetOnMounts(name, value, &err) > 0 && err != EINVAL) {
        std::printf("%s=%s\n", name.c_str(), value.c_str());
        continue;
      }
      std::fprintf(stderr, "error: set_param: setting '%s'='%s': %s\n", name.c_str(), value.c_str(),
                   std::strerror(err != 0 ? err : ENOENT));
      if (rc == 0) rc = err != 0 ? err : ENOENT;
      continue;
    }
    const bool client_tunable =
        name == kJobidVar || FindClientTunable(name) != nullptr;
    if (client_tunable && !persist) {
      if (Status bad = CheckClientParam(name, value); !bad.ok()) {
        std::fprintf(stderr, "error: set_param: setting '%s'='%s': %s\n", name.c_str(),
                     value.c_str(), bad.ToString().c_str());
        if (rc == 0) rc = ExitCode(bad);
        continue;
      }
      int err = 0;
      if (SetOnMounts(name, value, &err) > 0) {
        std::printf("%s=%s\n", name.c_str(), value.c_str());
        continue;
      }
      if (err != 0) {
        std::fprintf(stderr, "error: set_param: setting '%s'='%s': %s\n", name.c_str(),
                     value.c_str(), std::strerror(err));
        if (rc == 0) rc = err;
        continue;
      }
      // No mount here: the MGS keeps it for every client, as -P.
    }
    proto::SetParamRequest req;
    req.set_name(name);
    req.set_value(value);
    proto::SetParamReply rep;
    Status st = c->MdsCall(proto::OP_MGS_SET_PARAM, req, &rep);
    if (!st.ok()) {
      std::fprintf(stderr, "error: set_param: setting '%s'='%s': %s\n", name.c_str(),
                   value.c_str(), st.ToString().c_str());
      if (rc == 0) rc = ExitCode(st);
      continue;
    }
    std::printf("%s=%s\n", name.c_str(), value.c_str());
  }
  return rc;
}

}  // namespace stria::tools
