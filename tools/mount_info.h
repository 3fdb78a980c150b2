// Finding the Stria filesystem under a path, as Lustre's llapi_search_mounts does.
//
// A Stria mount shows in /proc/self/mountinfo with filesystem type "fuse.stria" and its
// DEVICE ("NID[,NID]:/fsname", e.g. "127.0.0.1@tcp:9880:/training") as the mount source.
// Given a path, LocatePath makes it absolute, finds the Stria mount with the longest
// mount point that contains it, and gives the path inside the filesystem ("/shards/a"),
// which is what Client::ResolvePath takes. The path itself need not exist (lfs setstripe
// creates files), but its parent must.
//
// Thread-safety: pure functions, except LocatePath/ListStriaMounts which read the
// process's mount table and the file system.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stria::tools {

inline constexpr std::string_view kStriaFsType = "fuse.stria";

// One line of /proc/self/mountinfo (the fields the tools need), escapes (\040) decoded.
struct MountEntry {
  std::string mount_point;
  std::string fstype;
  std::string source;
};

// A mount DEVICE split into its parts: "a@tcp:9880,b@tcp:/training" ->
// nids "a@tcp:9880,b@tcp", fsname "training". The NIDs are checked by lnet when used.
struct DeviceSpec {
  std::string nids;
  std::string fsname;
};

// Where a user's path lies.
struct StriaPath {
  std::string abs_path;     // absolute, symlinks in the directories resolved
  MountEntry mount;
  DeviceSpec device;
  std::string fs_path;      // inside the filesystem: "/" for the mount point itself
};

// Parses the text of /proc/self/mountinfo; malformed lines are skipped.
std::vector<MountEntry> ParseMountInfo(std::string_view text);

// Splits DEVICE at its last ":/". EINVAL when there is no ":/", no NID or no fsname, or the
// fsname holds a '/'.
Result<DeviceSpec> ParseDevice(std::string_view device);

// The Stria mount whose mount point is the longest prefix (at a '/' boundary) of abs_path.
// ENODEV-like kNoEnt with "not on a Stria filesystem" when none.
Result<MountEntry> FindStriaMount(const std::vector<MountEntry>& mounts,
                                  std::string_view abs_path);

// abs_path relative to mount_point, as an absolute path inside the filesystem.
// REQUIRES: mount_point is a prefix of abs_path at a '/' boundary.
std::string PathInFilesystem(std::string_view mount_point, std::string_view abs_path);

// Every Stria mount of this process's mount namespace, in mount order.
Result<std::vector<MountEntry>> ListStriaMounts();

// Resolves `path` (relative to the working directory or absolute) as described above.
Result<StriaPath> LocatePath(std::string_view path);

}  // namespace stria::tools
