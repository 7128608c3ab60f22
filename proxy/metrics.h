// Metrics: a small registry of counters, gauges and histograms with labels,
// rendered in the Prometheus text exposition format (version 0.0.4).
//
// Components publish through collect callbacks: at every scrape the
// registry runs each collector, which writes the current values of its own
// stats structs into a MetricsWriter. Nothing is copied between scrapes, and
// a component needs no metric objects of its own unless it measures
// something new (a Histogram it observes into).
//
// Adding a metric (and its row in docs/operating.md):
//
//   int id = registry.Add([&stats](MetricsWriter& w) {
//     w.Counter("nfsedge_widget_calls_total", "Widget calls.", {{"kind", "x"}}, stats.x);
//     w.Gauge("nfsedge_widget_queue", "Widget calls queued.", {}, queue.size());
//   });
//   ...
//   registry.Remove(id);  // before `stats` goes away
//
// Names follow Prometheus conventions: nfsedge_ prefix, base units (seconds,
// bytes), counters end in _total. Several collectors (or several calls) may
// write samples of one family (same name) as long as they agree on its type.
//
// Thread-safety: MetricsRegistry and MetricsWriter are not synchronized; the
// daemon uses them on its event loop thread only. Histogram likewise.
#ifndef NFSEDGE_PROXY_METRICS_H_
#define NFSEDGE_PROXY_METRICS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nfsedge {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A cumulative histogram with fixed upper bounds (an implicit +Inf bucket
// follows the last one).
class Histogram {
 public:
  // REQUIRES: `bounds` strictly ascending.
  explicit Histogram(std::vector<double> bounds);

  void Observe(double value);

  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket counts (not cumulative), bounds().size() + 1 of them; the
  // last is the +Inf bucket.
  const std::vector<uint64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

  // Bounds for latencies in seconds: 100 us to 30 s, roughly x2.5 apart,
  // covering a LAN reply and a WAN call with retries.
  static std::vector<double> LatencyBounds();

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

class MetricsWriter {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  // Each adds one sample to family `name` (created with `help` and the type
  // on first use). A sample with an invalid metric or label name, or whose
  // type disagrees with the family's, is not written; errors() counts it.
  void Counter(std::string_view name, std::string_view help, const MetricLabels& labels,
               double value);
  void Gauge(std::string_view name, std::string_view help, const MetricLabels& labels,
             double value);
  void Hist(std::string_view name, std::string_view help, const MetricLabels& labels,
            const Histogram& h);

  // The exposition: for each family in order of first use, "# HELP",
  // "# TYPE" and its samples.
  std::string Render() const;
  uint64_t errors() const { return errors_; }

  // Returns true iff `name` is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*).
  static bool ValidMetricName(std::string_view name);
  // Returns true iff `name` is a valid label name ([a-zA-Z_][a-zA-Z0-9_]*,
  // not starting with "__", which is reserved).
  static bool ValidLabelName(std::string_view name);
  // Label values: backslash, double quote and newline escaped.
  static std::string EscapeLabelValue(std::string_view v);
  // HELP text: backslash and newline escaped.
  static std::string EscapeHelp(std::string_view v);
  // Sample values: integers without a fraction, +Inf, -Inf, NaN.
  static std::string FormatValue(double v);

 private:
  struct Family {
    Type type;
    std::string help;
    std::vector<std::string> lines;
  };
  // Returns the family for a new sample, or null (and counts an error).
  Family* Prepare(std::string_view name, std::string_view help, Type type,
                  const MetricLabels& labels);
  static std::string LabelText(const MetricLabels& labels, const char* extra_name = nullptr,
                               const std::string& extra_value = "");

  std::vector<std::string> order_;
  std::map<std::string, Family, std::less<>> families_;
  uint64_t errors_ = 0;
};

class MetricsRegistry {
 public:
  using Collector = std::function<void(MetricsWriter&)>;

  // Adds a collector run at every scrape, in order of addition. Returns an
  // id for Remove().
  int Add(Collector collector);
  // Removes the collector `id` (no-op if unknown).
  void Remove(int id);
  // Runs every collector and returns the exposition text.
  std::string Scrape() const;

 private:
  std::vector<std::pair<int, Collector>> collectors_;
  int next_id_ = 1;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_METRICS_H_
