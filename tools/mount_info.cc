#include "tools/mount_info.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace stria::tools {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        s[i + 1] >= '0' && s[i + 1] <= '7' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string_view> SplitSpaces(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool IsPrefixAtBoundary(std::string_view prefix, std::string_view path) {
  if (prefix == "/") return !path.empty() && path[0] == '/';
  if (path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

// Removes "." components, repeated and trailing slashes (no symlink resolution).
std::string Normalize(std::string_view path) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    std::string_view comp = path.substr(i, j - i);
    if (!comp.empty() && comp != ".") {
      out += '/';
      out += comp;
    }
    i = j;
  }
  return out.empty() ? "/" : out;
}

}  // namespace

std::vector<MountEntry> ParseMountInfo(std::string_view text) {
  // Fields: id parent major:minor root mount_point options [optional...] - fstype source super
  std::vector<MountEntry> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::vector<std::string_view> f = SplitSpaces(text.substr(pos, end - pos));
    pos = end + 1;
    if (f.size() < 7) continue;
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 2 >= f.size()) continue;
    out.push_back(MountEntry{Unescape(f[4]), Unescape(f[dash + 1]), Unescape(f[dash + 2])});
  }
  return out;
}

Result<DeviceSpec> ParseDevice(std::string_view device) {
  size_t sep = device.rfind(":/");
  if (sep == std::string_view::npos) {
    return Status(Code::kInval, "device '" + std::string(device) +
                                    "' is not NID[,NID]:/fsname");
  }
  DeviceSpec spec{std::string(device.substr(0, sep)), std::string(device.substr(sep + 2))};
  if (spec.nids.empty()) {
    return Status(Code::kInval, "device '" + std::string(device) + "' names no NID");
  }
  if (spec.fsname.empty() || spec.fsname.find('/') != std::string::npos) {
    return Status(Code::kInval, "device '" + std::string(device) + "' has a bad fsname");
  }
  return spec;
}

Result<MountEntry> FindStriaMount(const std::vector<MountEntry>& mounts,
                                  std::string_view abs_path) {
  const MountEntry* best = nullptr;
  for (const MountEntry& m : mounts) {
    if (!IsPrefixAtBoundary(m.mount_point, abs_path)) continue;
    // A later mount over the same or a longer prefix hides earlier ones.
    if (best == nullptr || m.mount_point.size() >= best->mount_point.size()) best = &m;
  }
  if (best == nullptr || best->fstype != kStriaFsType) {
    return Status(Code::kNoEnt, "'" + std::string(abs_path) + "' is not on a Stria filesystem");
  }
  return *best;
}

std::string PathInFilesystem(std::string_view mount_point, std::string_view abs_path) {
  if (mount_point == "/") return Normalize(abs_path);
  return Normalize(abs_path.substr(std::min(mount_point.size(), abs_path.size())));
}

Result<std::vector<MountEntry>> ListStriaMounts() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return ErrnoStatus("open /proc/self/mountinfo", errno);
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<MountEntry> all = ParseMountInfo(ss.str());
  std::vector<MountEntry> out;
  for (MountEntry& m : all) {
    if (m.fstype == kStriaFsType) out.push_back(std::move(m));
  }
  return out;
}

Result<StriaPath> LocatePath(std::string_view path) {
  if (path.empty()) return Status(Code::kInval, "empty path");
  std::string abs;
  if (path[0] == '/') {
    abs = std::string(path);
  } else {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == nullptr) return ErrnoStatus("getcwd", errno);
    abs = std::string(cwd) + "/" + std::string(path);
  }
  abs = Normalize(abs);
  // Resolve symlinks and ".." with realpath: the whole path when it exists, else its parent.
  char buf[PATH_MAX];
  if (realpath(abs.c_str(), buf) != nullptr) {
    abs = buf;
  } else if (errno == ENOENT && abs != "/") {
    size_t slash = abs.rfind('/');
    std::string parent = slash == 0 ? "/" : abs.substr(0, slash);
    std::string name = abs.substr(slash + 1);
    if (name == "..") return ErrnoStatus(std::string(path), ENOENT);
    if (realpath(parent.c_str(), buf) == nullptr) return ErrnoStatus(std::string(path), errno);
    abs = Normalize(std::string(buf) + "/" + name);
  } else {
    return ErrnoStatus(std::string(path), errno);
  }

  std::ifstream in("/proc/self/mountinfo");
  if (!in) return ErrnoStatus("open /proc/self/mountinfo", errno);
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<MountEntry> mounts = ParseMountInfo(ss.str());
  STRIA_ASSIGN_OR_RETURN(MountEntry mount, FindStriaMount(mounts, abs));
  STRIA_ASSIGN_OR_RETURN(DeviceSpec device, ParseDevice(mount.source));
  StriaPath out;
  out.fs_path = PathInFilesystem(mount.mount_point, abs);
  out.abs_path = std::move(abs);
  out.mount = std::move(mount);
  out.device = std::move(device);
  return out;
}

}  // namespace stria::tools
