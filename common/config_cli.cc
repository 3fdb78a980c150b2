#include "common/config_cli.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include "common/config_file.h"

namespace stria {

namespace {

std::string KeyToOption(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return "--" + key;
}

std::string OptionToKey(std::string name) {
  if (name.starts_with("--")) name = name.substr(2);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

bool Settable(const CLI::Option* opt, const CLI::Option* config_opt) {
  if (opt == config_opt || opt->get_lnames().empty()) return false;
  if (opt->get_group() == kCommandLineOnlyGroup) return false;
  const std::string& n = opt->get_lnames()[0];
  return n != "help" && n != "version" && n != "instance";
}

// The keys a program's section takes, for the unknown-key message.
std::string KnownKeys(CLI::App& app, const CLI::Option* config_opt) {
  std::string out;
  for (const CLI::Option* opt : app.get_options()) {
    if (!Settable(opt, config_opt)) continue;
    if (!out.empty()) out += ", ";
    out += OptionToKey(opt->get_lnames()[0]);
  }
  return out;
}

bool IsGlobalKey(std::string_view key) {
  return std::find(std::begin(kGlobalKeys), std::end(kGlobalKeys), key) != std::end(kGlobalKeys);
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return v.size() == 1 ? out : "[" + out + "]";
}

// Applies one entry unless the command line (or a more specific section) set the option.
// Returns an error message, or "" when applied or skipped.
std::string Apply(CLI::App& app, const CLI::Option* config_opt, const ConfigFile& file,
                  const ConfigEntry& e, std::string_view section) {
  const std::string where = file.Where(e) + ": ";
  const bool global = e.section == "global";
  if (global && !IsGlobalKey(e.key)) {
    std::string keys;
    for (std::string_view k : kGlobalKeys) keys += (keys.empty() ? "" : ", ") + std::string(k);
    return where + "unknown key '" + e.key + "' in [global] (it takes " + keys + ")";
  }
  CLI::Option* opt = app.get_option_no_throw(KeyToOption(e.key));
  if (opt == nullptr || !Settable(opt, config_opt) || e.key.find('-') != std::string::npos) {
    if (global) return "";  // a [global] key this program does not have
    return where + "unknown key '" + e.key + "' in [" + e.section + "] (" +
           app.get_name() + " takes " + KnownKeys(app, config_opt) + ")";
  }
  if (opt->count() > 0) return "";  // the command line wins
  const int max_items = opt->get_items_expected_max();
  if (max_items == 0) {  // a flag
    if (!e.is_bool) return where + e.key + " = " + Joined(e.values) + ": expected true or false";
    if (e.values[0] == "false") return "";
    opt->add_result(std::string("true"));
  } else {
    if (e.is_bool) return where + e.key + ": expected a value, not true/false";
    if (e.is_array && max_items == 1) {
      return where + e.key + " = " + Joined(e.values) + ": takes one value, not an array";
    }
    opt->add_result(e.values);
  }
  try {
    opt->run_callback();
  } catch (const CLI::Error& ex) {
    return where + e.key + " = " + Joined(e.values) + ": " + ex.what();
  }
  return "";
}

}  // namespace

void AddLogOptions(CLI::App& app, LogOptions* log) {
  app.add_option("--log-level", log->level, "trace, debug, info, warn or error (default info)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  app.add_option("--log-target", log->target,
                 "auto (default: stderr when it is a terminal, file or pipe, else journald or "
                 "syslog), stderr, syslog[:SOCKET] or journald[:SOCKET]")
      ->check([](const std::string& t) {
        LogOptions o;
        o.target = t;
        auto d = ResolveLogDestination(o, LogEnvironment{});
        return d.ok() ? std::string() : d.status().message();
      });
  app.add_option("--log-file", log->file, "append the log to this file instead");
}

void AddBusyPollOption(CLI::App& app, int* us) {
  app.add_option("--busy-poll-us", *us,
                 "spin this many microseconds for the reply to a small request before "
                 "sleeping, while no other thread of this process waits for one (0: never)")
      ->check(CLI::Range(0, 10'000))
      ->capture_default_str();
}

std::optional<int> ParseCommandLineAndConfig(CLI::App& app, int argc, char** argv,
                                             std::string_view section,
                                             const std::string* instance) {
  std::string prog = argc > 0 ? argv[0] : "stria";
  prog = prog.substr(prog.rfind('/') + 1);
  app.name(prog);
  std::string config_path;
  CLI::Option* config_opt = app.add_option(
      "--config", config_path,
      std::string("config file (default $STRIA_CONFIG, else ") + kDefaultConfigPath +
          " if it exists; '' for none): its [" + std::string(section) +
          "] and [global] sections set any option not given here");
  // Required options may come from the file: check them after it is read.
  std::vector<CLI::Option*> required;
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_required()) {
      required.push_back(opt);
      opt->required(false);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }

  bool must_exist = false;
  const std::string path = ConfigPathToRead(config_path, config_opt->count() > 0, &must_exist);
  std::string source = "the command line";
  if (!path.empty() && (must_exist || access(path.c_str(), F_OK) == 0 || errno != ENOENT)) {
    auto file = ConfigFile::Load(path);
    if (!file.ok()) {
      std::fprintf(stderr, "%s: %s\n", prog.c_str(), file.status().message().c_str());
      return 1;
    }
    // The most specific section first: a key there beats the same key further down.
    std::vector<std::string> sections = {std::string(section), "global"};
    if (instance != nullptr && !instance->empty()) {
      const std::string sub = std::string(section) + "." + *instance;
      if (file->Section(sub).empty()) {
        std::fprintf(stderr, "%s: --instance %s: %s has no [%s] section\n", prog.c_str(),
                     instance->c_str(), path.c_str(), sub.c_str());
        return 1;
      }
      sections.insert(sections.begin(), sub);
    }
    for (const std::string& name : sections) {
      for (const ConfigEntry& e : file->Section(name)) {
        const std::string err = Apply(app, config_opt, *file, e, section);
        if (!err.empty()) {
          std::fprintf(stderr, "%s: %s\n", prog.c_str(), err.c_str());
          return 1;
        }
      }
    }
    source = "the command line or [" + std::string(section) + "] of " + path;
  } else if (instance != nullptr && !instance->empty()) {
    std::fprintf(stderr, "%s: --instance %s needs a config file with an [%s.%s] section\n",
                 prog.c_str(), instance->c_str(), std::string(section).c_str(),
                 instance->c_str());
    return 1;
  }
  for (CLI::Option* opt : required) {
    if (opt->count() == 0) {
      std::fprintf(stderr, "%s: %s is required (on %s)\n", prog.c_str(),
                   opt->get_name().c_str(), source.c_str());
      return 1;
    }
  }
  return std::nullopt;
}

}  // namespace stria
