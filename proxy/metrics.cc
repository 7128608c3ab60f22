#include "proxy/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace nfsedge {

// ---- Histogram ----

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[i]++;
  sum_ += value;
  count_++;
}

std::vector<double> Histogram::LatencyBounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30};
}

// ---- MetricsWriter ----

namespace {

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

const char* TypeName(MetricsWriter::Type t) {
  switch (t) {
    case MetricsWriter::Type::kCounter:
      return "counter";
    case MetricsWriter::Type::kGauge:
      return "gauge";
    case MetricsWriter::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

bool MetricsWriter::ValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = IsAlpha(c) || c == '_' || c == ':' || (i > 0 && IsDigit(c));
    if (!ok) return false;
  }
  return true;
}

bool MetricsWriter::ValidLabelName(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = IsAlpha(c) || c == '_' || (i > 0 && IsDigit(c));
    if (!ok) return false;
  }
  return true;
}

namespace {

// Escapes backslash and newline, and double quote iff `quote`.
std::string Escape(std::string_view v, bool quote) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string MetricsWriter::EscapeLabelValue(std::string_view v) { return Escape(v, true); }

std::string MetricsWriter::EscapeHelp(std::string_view v) { return Escape(v, false); }

std::string MetricsWriter::FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    // The shortest form that reads back as the same double.
    for (int precision = 1; precision <= 17; ++precision) {
      std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
  }
  return buf;
}

std::string MetricsWriter::LabelText(const MetricLabels& labels, const char* extra_name,
                                     const std::string& extra_value) {
  if (labels.empty() && !extra_name) return "";
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) s += ',';
    first = false;
    s += k + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (extra_name) {
    if (!first) s += ',';
    s += std::string(extra_name) + "=\"" + extra_value + "\"";
  }
  return s + "}";
}

MetricsWriter::Family* MetricsWriter::Prepare(std::string_view name, std::string_view help,
                                              Type type, const MetricLabels& labels) {
  bool ok = ValidMetricName(name);
  for (const auto& l : labels) {
    ok = ok && ValidLabelName(l.first) && !(type == Type::kHistogram && l.first == "le");
  }
  if (!ok) {
    errors_++;
    return nullptr;
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    order_.emplace_back(name);
    it = families_.emplace(std::string(name), Family{type, std::string(help), {}}).first;
  } else if (it->second.type != type) {
    errors_++;
    return nullptr;
  }
  return &it->second;
}

void MetricsWriter::Counter(std::string_view name, std::string_view help,
                            const MetricLabels& labels, double value) {
  if (Family* f = Prepare(name, help, Type::kCounter, labels)) {
    f->lines.push_back(std::string(name) + LabelText(labels) + " " + FormatValue(value));
  }
}

void MetricsWriter::Gauge(std::string_view name, std::string_view help,
                          const MetricLabels& labels, double value) {
  if (Family* f = Prepare(name, help, Type::kGauge, labels)) {
    f->lines.push_back(std::string(name) + LabelText(labels) + " " + FormatValue(value));
  }
}

void MetricsWriter::Hist(std::string_view name, std::string_view help,
                         const MetricLabels& labels, const Histogram& h) {
  Family* f = Prepare(name, help, Type::kHistogram, labels);
  if (!f) return;
  const std::string n(name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.counts().size(); ++i) {
    cumulative += h.counts()[i];
    std::string le = i < h.bounds().size() ? FormatValue(h.bounds()[i]) : "+Inf";
    f->lines.push_back(n + "_bucket" + LabelText(labels, "le", le) + " " +
                       FormatValue(static_cast<double>(cumulative)));
  }
  f->lines.push_back(n + "_sum" + LabelText(labels) + " " + FormatValue(h.sum()));
  f->lines.push_back(n + "_count" + LabelText(labels) + " " +
                     FormatValue(static_cast<double>(h.count())));
}

std::string MetricsWriter::Render() const {
  std::string out;
  for (const std::string& name : order_) {
    const Family& f = families_.find(name)->second;
    out += "# HELP " + name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + name + " " + TypeName(f.type) + "\n";
    for (const std::string& line : f.lines) out += line + "\n";
  }
  return out;
}

// ---- MetricsRegistry ----

int MetricsRegistry::Add(Collector collector) {
  int id = next_id_++;
  collectors_.emplace_back(id, std::move(collector));
  return id;
}

void MetricsRegistry::Remove(int id) {
  std::erase_if(collectors_, [id](const auto& c) { return c.first == id; });
}

std::string MetricsRegistry::Scrape() const {
  MetricsWriter w;
  for (const auto& [id, collect] : collectors_) collect(w);
  w.Gauge("nfsedge_metrics_rejected_samples",
          "Samples dropped at this scrape for a bad name or a type conflict (a bug if not 0).",
          {}, static_cast<double>(w.errors()));
  return w.Render();
}

}  // namespace nfsedge
