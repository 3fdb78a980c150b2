#include "common/config_file.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

namespace stria {

namespace {

constexpr std::string_view kSections[] = {"global", "mds", "oss", "client"};

std::string At(const std::string& path, const toml::source_region& r) {
  return path + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

// One scalar as text: a string, an integer or a boolean. False for anything else.
bool ScalarText(const toml::node& n, std::string* out, bool* is_bool) {
  *is_bool = false;
  if (auto s = n.as_string()) {
    *out = s->get();
  } else if (auto i = n.as_integer()) {
    *out = std::to_string(i->get());
  } else if (auto b = n.as_boolean()) {
    *out = b->get() ? "true" : "false";
    *is_bool = true;
  } else {
    return false;
  }
  return true;
}

Status AddEntry(const std::string& path, const std::string& section, const toml::key& key,
                const toml::node& node, std::vector<ConfigEntry>* entries);

Status AddSection(const std::string& path, const std::string& section,
                  const toml::source_region& where, const toml::table& table,
                  std::vector<ConfigEntry>* entries) {
  const std::string name = section.substr(section.find('.') + 1);
  if (name.empty() || name.size() > 64 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
          std::string::npos) {
    return Status(Code::kInval, At(path, where) + ": [" + section +
                                    "]: an instance name is 1-64 of [A-Za-z0-9_-]");
  }
  for (const auto& [key, node] : table) {
    STRIA_RETURN_IF_ERROR(AddEntry(path, section, key, node, entries));
  }
  return Status::Ok();
}

Status AddEntry(const std::string& path, const std::string& section, const toml::key& key,
                const toml::node& node, std::vector<ConfigEntry>* entries) {
  ConfigEntry e;
  e.section = section;
  e.key = std::string(key.str());
  e.line = static_cast<int>(key.source().begin.line);
  const std::string at = At(path, key.source()) + ": [" + section + "] " + e.key;
  std::string text_value;
  if (const toml::array* arr = node.as_array()) {
    e.is_array = true;
    for (const toml::node& item : *arr) {
      bool is_bool = false;
      if (!ScalarText(item, &text_value, &is_bool) || is_bool) {
        return Status(Code::kInval, at + ": an array may hold only strings and integers");
      }
      e.values.push_back(text_value);
    }
  } else if (ScalarText(node, &text_value, &e.is_bool)) {
    e.values.push_back(text_value);
  } else {
    return Status(Code::kInval,
                  at + ": the value must be a string, an integer, true/false or an array");
  }
  entries->push_back(std::move(e));
  return Status::Ok();
}

}  // namespace

Result<ConfigFile> ConfigFile::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus("config file " + path, errno);
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return ErrnoStatus("read " + path, errno);
  return Parse(text.str(), path);
}

Result<ConfigFile> ConfigFile::Parse(std::string_view text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Status(Code::kInval, At(path, e.source()) + ": " + std::string(e.description()));
  }
  ConfigFile file;
  file.path_ = path;
  for (const auto& [section_key, section_node] : root) {
    const std::string section(section_key.str());
    const std::string where = At(path, section_key.source());
    if (std::find(std::begin(kSections), std::end(kSections), section) == std::end(kSections)) {
      return Status(Code::kInval, where + ": unknown section or key '" + section +
                                      "' (the file has [global], [mds], [oss] and [client])");
    }
    const toml::table* table = section_node.as_table();
    if (table == nullptr) {
      return Status(Code::kInval, where + ": '" + section + "' must be a section ([" + section + "])");
    }
    for (const auto& [key, node] : *table) {
      if (section == "oss" && node.is_table()) {
        // [oss.NAME]: one stria-oss of several on a host (stria-oss --instance NAME).
        STRIA_RETURN_IF_ERROR(AddSection(path, "oss." + std::string(key.str()), key.source(),
                                         *node.as_table(), &file.entries_));
        continue;
      }
      STRIA_RETURN_IF_ERROR(AddEntry(path, section, key, node, &file.entries_));
    }
  }
  std::stable_sort(file.entries_.begin(), file.entries_.end(),
                   [](const ConfigEntry& a, const ConfigEntry& b) { return a.line < b.line; });
  return file;
}

std::vector<ConfigEntry> ConfigFile::Section(std::string_view section) const {
  std::vector<ConfigEntry> out;
  for (const ConfigEntry& e : entries_) {
    if (e.section == section) out.push_back(e);
  }
  return out;
}

std::string ConfigFile::Where(const ConfigEntry& e) const {
  return path_ + ":" + std::to_string(e.line);
}

std::string ConfigPathToRead(const std::string& explicit_path, bool explicit_given,
                             bool* required) {
  if (explicit_given) {
    *required = !explicit_path.empty();
    return explicit_path;
  }
  *required = false;
  if (const char* env = std::getenv("STRIA_CONFIG")) {
    *required = env[0] != '\0';
    return env;
  }
  return kDefaultConfigPath;
}

}  // namespace stria
