// ConfigFile: Stria's one configuration file, /etc/stria/stria.conf (TOML, read with toml++).
//
//   [global]                       # every program that has the option
//   log_level = "info"
//   key_file = ["/etc/stria/stria.key"]
//   [mds]                          # stria-mds: its long options, '-' written '_'
//   fsname = "training"
//   data = "/var/lib/stria/mdt0"
//   [oss]                          # stria-oss
//   ost = ["0:/srv/ost0", "1:/srv/ost1"]
//   [oss.a]                        # stria-oss --instance a (stria-oss@a.service): over [oss]
//   listen = "10.0.0.21@tcp:9881"
//   [client]                       # stria-fuse / mount.stria: the -o mount options
//   timeout = 300
//
// Load() checks only the shape: the four sections (and [oss.NAME]) and nothing else, each value a
// string, an integer, a boolean or an array of strings or integers. Which keys a section
// takes, and their ranges, are the program's (common/config_cli.h checks them against its
// command line options). Every entry keeps its line, so every error says "FILE:LINE: ...".
// docs/operations.md lists every key.
//
// Thread-safety: a value; Load() may run on any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stria {

// The path the daemons read when no --config is given: $STRIA_CONFIG if set (empty: none),
// else /etc/stria/stria.conf.
inline constexpr const char* kDefaultConfigPath = "/etc/stria/stria.conf";

struct ConfigEntry {
  std::string section;              // "global", "mds", "oss", "oss.NAME" or "client"
  std::string key;                  // as written ("client_lease_ms")
  std::vector<std::string> values;  // one for a scalar; each element of an array
  bool is_array = false;
  bool is_bool = false;             // values[0] is "true" or "false"
  int line = 0;                     // 1-based line of the key in the file
};

class ConfigFile {
 public:
  // Reads and checks `path`. kNoEnt when it does not exist, kInval ("FILE:LINE:COL: ...")
  // when it is not valid TOML or not of the shape above.
  static Result<ConfigFile> Load(const std::string& path);
  // The same for text already in memory; `path` names it in messages.
  static Result<ConfigFile> Parse(std::string_view text, const std::string& path);

  const std::string& path() const { return path_; }
  // The entries of one section, in file order.
  std::vector<ConfigEntry> Section(std::string_view section) const;
  // "FILE:LINE" of an entry, for messages.
  std::string Where(const ConfigEntry& e) const;

 private:
  std::string path_;
  std::vector<ConfigEntry> entries_;
};

// The config file a program reads: `explicit_path` when given (--config), else
// $STRIA_CONFIG, else kDefaultConfigPath. `*required` is set when the file must exist (it
// was named explicitly); the default file is optional. An empty result means "none".
std::string ConfigPathToRead(const std::string& explicit_path, bool explicit_given,
                             bool* required);

}  // namespace stria
