// PromText: builds a page in the Prometheus text exposition format (version 0.0.4) that the
// daemons serve at /metrics (common/metrics_server.h). Samples are grouped per metric family
// whatever order they are added in, each family once with its # HELP and # TYPE lines, as
// the format requires. StatsSet adds its counters in one fixed shape (AddStats).
// Thread-safety: none; build one page per scrape on one thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/stats.h"

namespace stria {

using PromLabels = std::vector<std::pair<std::string, std::string>>;

class PromText {
 public:
  // type: "counter", "gauge" or "histogram". A family's help and type are those of its first
  // sample. `suffix` (e.g. "_bucket", "_sum") is appended to the family name in the sample.
  void Add(std::string_view family, std::string_view type, std::string_view help,
           const PromLabels& labels, double value, std::string_view suffix = "");

  // A StatsSet under prefix P (e.g. "stria_ost"), each sample with `labels`:
  //   P_bytes_total{op="read"}              sum of a [bytes] counter named read_bytes
  //   P_io_total{op="read"}                 its samples (RPCs)
  //   P_ops_total{op="open"}                samples of every other counter
  //   P_latency_usecs{op="open"}            histogram of a [usecs] counter (log2 buckets)
  void AddStats(std::string_view prefix, const StatsSet& stats, const PromLabels& labels);

  std::string str() const;

 private:
  struct Family {
    std::string type, help;
    std::vector<std::string> samples;
  };
  std::map<std::string, Family> families_;
};

}  // namespace stria
