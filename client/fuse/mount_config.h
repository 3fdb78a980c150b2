// The [client] section (and [global]) of the config file (common/config_file.h) as mount
// options: what every Stria mount on the host gets before its own -o options, which win
// (ParseMountOptions takes the last value of an option).
//
//   [client]                       becomes
//   timeout = 600                  timeout=600
//   o2ib_poll = true               o2ib_poll
//   allow_other = false            noallow_other
//   [global] log_file = "/x"       log=/x
//
// Each entry is checked as the option it becomes, so a bad one fails with "FILE:LINE: ...".
// Thread-safety: a function of its arguments.
#pragma once

#include <string>
#include <vector>

#include "common/config_file.h"
#include "common/status.h"

namespace stria::client::fuse {

// The mount options from `file`, [global] ones first. kInval for an unknown key or a bad value.
Result<std::vector<std::string>> MountOptionsFromConfig(const ConfigFile& file);

// Reads the config file a mount uses (--config, else $STRIA_CONFIG, else
// /etc/stria/stria.conf when it exists) into mount options; none when there is no file.
Result<std::vector<std::string>> LoadMountConfig(const std::string& explicit_path,
                                                 bool explicit_given);

}  // namespace stria::client::fuse
