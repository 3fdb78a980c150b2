#include "client/fuse/mount_config.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <string_view>

#include "client/fuse/mount_options.h"

namespace stria::client::fuse {

namespace {

// kValue: key = "v" is the option key=v; kFlag: key = true is the option key; kNegatable:
// true/false are key/nokey; kWord: the value is the option itself, one of `words`.
enum class Kind { kValue, kFlag, kNegatable, kWord };

struct KeyInfo {
  const char* key;     // in the file
  const char* option;  // the mount option it becomes
  Kind kind;
  bool global;         // also taken from [global]
  std::array<std::string_view, 3> words = {};  // kWord's values
};

constexpr KeyInfo kKeys[] = {
    {"io_threads", "io_threads", Kind::kValue, false},
    {"max_threads", "max_threads", Kind::kValue, false},
    {"idle_threads", "idle_threads", Kind::kValue, false},
    {"connect_timeout", "connect_timeout", Kind::kValue, false},
    {"timeout", "timeout", Kind::kValue, false},
    {"mirror_timeout", "mirror_timeout", Kind::kValue, false},
    {"close_gather_ms", "close_gather_ms", Kind::kValue, false},
    {"open_register_ms", "open_register_ms", Kind::kValue, false},
    {"open_intent_ms", "open_intent_ms", Kind::kValue, false},
    {"statahead_max", "statahead_max", Kind::kValue, false},
    {"log", "log", Kind::kValue, false},
    {"log_file", "log", Kind::kValue, true},  // [global]'s name for it
    {"log_level", "log_level", Kind::kValue, true},
    {"log_target", "log_target", Kind::kValue, true},
    {"key_file", "key_file", Kind::kValue, true},
    {"lnet_fallback", "lnet_fallback", Kind::kValue, true},
    {"o2ib_poll", "o2ib_poll", Kind::kFlag, true},
    {"busy_poll_us", "busy_poll_us", Kind::kValue, true},
    {"allow_other", "allow_other", Kind::kNegatable, false},
    {"default_permissions", "default_permissions", Kind::kNegatable, false},
    {"flock", "flock", Kind::kWord, false, {{"flock", "localflock", "noflock"}}},
    {"user_xattr", "user_xattr", Kind::kNegatable, false},
    {"lazystatfs", "lazystatfs", Kind::kNegatable, false},
    {"splice_writes", "splice_writes", Kind::kNegatable, false},
    {"unlink_writeback", "unlink_writeback", Kind::kNegatable, false},
    {"io_uring", "io_uring", Kind::kNegatable, false},
    {"ring_threads", "ring_threads", Kind::kValue, false},
};

const KeyInfo* Find(const ConfigEntry& e) {
  for (const KeyInfo& k : kKeys) {
    if (e.key != k.key) continue;
    if (e.section == "global" ? k.global : e.key != "log_file") return &k;
  }
  return nullptr;
}

}  // namespace

Result<std::vector<std::string>> MountOptionsFromConfig(const ConfigFile& file) {
  std::vector<std::string> out;
  for (const char* section : {"global", "client"}) {
    for (const ConfigEntry& e : file.Section(section)) {
      const std::string where = file.Where(e) + ": ";
      const KeyInfo* k = Find(e);
      if (k == nullptr) {
        if (e.section == "global") continue;  // a daemon's [global] key
        std::string keys;
        for (const KeyInfo& info : kKeys) {
          if (std::string_view(info.key) != "log_file") keys += (keys.empty() ? "" : ", ") + std::string(info.key);
        }
        return Status(Code::kInval, where + "unknown key '" + e.key + "' in [client] (it takes " +
                                        keys + ")");
      }
      // [global] key_file is a list (the daemons take several); a mount takes one.
      if (e.values.size() != 1) {
        return Status(Code::kInval, where + e.key + ": takes one value" +
                                        (e.key == "key_file" ? " (a mount uses one key file)" : ""));
      }
      std::string opt;
      if (k->kind == Kind::kWord) {
        bool known = false;
        std::string words;
        for (std::string_view w : k->words) {
          if (w.empty()) continue;
          known |= e.values[0] == w;
          words += (words.empty() ? "" : ", ") + std::string(w);
        }
        if (e.is_bool || !known) {
          return Status(Code::kInval, where + e.key + " = " + e.values[0] + ": expected " + words);
        }
        opt = e.values[0];
      } else if (k->kind == Kind::kValue) {
        if (e.is_bool) return Status(Code::kInval, where + e.key + ": expected a value, not true/false");
        opt = std::string(k->option) + "=" + e.values[0];
      } else {
        if (!e.is_bool) {
          return Status(Code::kInval, where + e.key + " = " + e.values[0] + ": expected true or false");
        }
        const bool on = e.values[0] == "true";
        if (k->kind == Kind::kFlag && !on) continue;
        opt = on ? k->option : "no" + std::string(k->option);
      }
      // Checked as the option it becomes; commas would split it, so none are allowed.
      if (opt.find(',') != std::string::npos) {
        return Status(Code::kInval, where + e.key + ": a value may not hold a comma");
      }
      auto checked = ParseMountOptions({opt}, "config", false);
      if (!checked.ok()) return Status(Code::kInval, where + checked.status().message());
      out.push_back(opt);
    }
  }
  return out;
}

Result<std::vector<std::string>> LoadMountConfig(const std::string& explicit_path,
                                                 bool explicit_given) {
  bool must_exist = false;
  const std::string path = ConfigPathToRead(explicit_path, explicit_given, &must_exist);
  if (path.empty()) return std::vector<std::string>{};
  if (!must_exist && access(path.c_str(), F_OK) != 0 && errno == ENOENT) {
    return std::vector<std::string>{};
  }
  STRIA_ASSIGN_OR_RETURN(ConfigFile file, ConfigFile::Load(path));
  return MountOptionsFromConfig(file);
}

}  // namespace stria::client::fuse
