// ParseCommandLineAndConfig: how stria-mds and stria-oss read their options, from the
// command line and from one section of the config file (common/config_file.h).
//
// Every long option of the program's CLI11 app is a key of its section ("--client-lease-ms"
// is `client_lease_ms`), except --help, --version, --config, --instance and the options of
// kCommandLineOnlyGroup; [global] keys (kGlobalKeys)
// apply to every program that has the option. Precedence: the command line, then the
// program's section ([oss.NAME] before [oss] for an instance), then [global], then the
// built-in default. An option given on the
// command line replaces the file's value entirely (a repeated option such as --ost too).
// The file's values go through the option's own checks (ranges, choices), so a bad value
// fails as it would on the command line, with "FILE:LINE: key: why". An unknown key in the
// program's section or in [global] is an error. Options marked ->required() may come from
// either place.
//
// The function adds --config FILE to the app: the file to read (default $STRIA_CONFIG, else
// /etc/stria/stria.conf when it exists; --config '' reads none).
//
// Thread-safety: call once, from main, before threads start.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "common/log_config.h"

namespace stria {

// Options in this CLI11 group (fault injection for tests) are never read from the file.
inline constexpr const char* kCommandLineOnlyGroup = "Testing (command line only)";

// The keys [global] may hold; each applies to every program that has the option.
inline constexpr std::string_view kGlobalKeys[] = {"log_level",     "log_target", "log_file",
                                                   "key_file",      "lnet_fallback",
                                                   "o2ib_poll",     "busy_poll_us"};

// Parses argv and the config file into `app`'s options. Returns nullopt to go on, or the
// exit status when the program must stop now (--help/--version: 0; an error, printed to
// stderr as "PROG: ...": 1).
// With `instance` (stria-oss --instance NAME, bound to an option of `app`) set after the
// command line is parsed, [SECTION.NAME] comes first and must exist.
std::optional<int> ParseCommandLineAndConfig(CLI::App& app, int argc, char** argv,
                                             std::string_view section,
                                             const std::string* instance = nullptr);

// Adds --log-level, --log-target and --log-file (common/log_config.h) bound to `*log`.
void AddLogOptions(CLI::App& app, LogOptions* log);

// Adds --busy-poll-us (lnet/busy_poll.h) bound to `*us`, which holds the default.
void AddBusyPollOption(CLI::App& app, int* us);

}  // namespace stria
