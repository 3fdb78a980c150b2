// StatsRegistry: the statistics one daemon serves, by Lustre parameter name
// ("obdfilter.FS-OST0000.stats", "mdt.FS-MDT0000.md_stats", ...), each with the function that
// prints it and the one that clears it. OP_STATS_GET (lnet/stats_service.h) and lctl read it.
// Thread-safety: all methods are thread-safe (one mutex; entries are added rarely, e.g. when
// an OST comes up, and read at lctl's pace, never on the I/O path).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace stria {

class StatsRegistry {
 public:
  using FormatFn = std::function<std::string()>;
  using ClearFn = std::function<void()>;

  // Adds (or replaces) the statistic `name`.
  void Add(const std::string& name, FormatFn format, ClearFn clear);

  // The statistics whose names match the fnmatch(3) glob `pattern` (empty: all), printed
  // (or with empty values when names_only); with clear, each is cleared after it is printed.
  std::map<std::string, std::string> Get(const std::string& pattern, bool clear,
                                         bool names_only) const;

 private:
  struct Entry {
    FormatFn format;
    ClearFn clear;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;  // GUARDED_BY(mu_)
};

}  // namespace stria
