#include "common/prom_text.h"

#include <fmt/format.h>

#include <cmath>

namespace stria {
namespace {

std::string Escape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string LabelText(const PromLabels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].first + "=\"" + Escape(labels[i].second) + "\"";
  }
  return out + "}";
}

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e18) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

}  // namespace

void PromText::Add(std::string_view family, std::string_view type, std::string_view help,
                   const PromLabels& labels, double value, std::string_view suffix) {
  Family& f = families_[std::string(family)];
  if (f.type.empty()) {
    f.type = type;
    f.help = help;
  }
  f.samples.push_back(fmt::format("{}{}{} {}", family, suffix, LabelText(labels), Number(value)));
}

void PromText::AddStats(std::string_view prefix, const StatsSet& stats, const PromLabels& labels) {
  const std::string p(prefix);
  for (size_t i = 0; i < stats.size(); ++i) {
    const CounterSpec& spec = stats.spec(i);
    const StatCounter& c = stats.counter(i);
    const StatCounter::Snapshot s = c.Read();
    std::string name = spec.name;
    PromLabels l = labels;
    if (spec.unit == StatUnit::kBytes) {
      if (name.ends_with("_bytes")) name.resize(name.size() - 6);
      l.emplace_back("op", name);
      Add(p + "_bytes_total", "counter", "bytes moved, by operation", l, s.sum);
      Add(p + "_io_total", "counter", "data requests, by operation", l, s.samples);
      continue;
    }
    l.emplace_back("op", name);
    Add(p + "_ops_total", "counter", "requests, by operation", l, s.samples);
    if (spec.unit != StatUnit::kUsecs) continue;
    // Cumulative log2 buckets up to the highest non-empty one, then +Inf.
    const std::string fam = p + "_latency_usecs";
    int last = -1;
    for (int b = 0; b < kHistBuckets; ++b) {
      if (c.hist().bucket(b) != 0) last = b;
    }
    uint64_t cum = 0;
    for (int b = 0; b <= last; ++b) {
      cum += c.hist().bucket(b);
      PromLabels lb = l;
      lb.emplace_back("le", Number(static_cast<double>((2ull << b) - 1)));
      Add(fam, "histogram", "request latency in microseconds", lb, cum, "_bucket");
    }
    PromLabels inf = l;
    inf.emplace_back("le", "+Inf");
    Add(fam, "histogram", "request latency in microseconds", inf, s.samples, "_bucket");
    Add(fam, "histogram", "", l, s.sum, "_sum");
    Add(fam, "histogram", "", l, s.samples, "_count");
  }
}

std::string PromText::str() const {
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + f.type + "\n";
    for (const std::string& s : f.samples) out += s + "\n";
  }
  return out;
}

}  // namespace stria
