#include "series.h"

#include <algorithm>

namespace nfsedge::bench {
namespace {

constexpr double kMiBf = 1024.0 * 1024.0;

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

template <typename T>
void SortByTime(std::vector<std::pair<SteadyClock::time_point, T>>* v) {
  std::stable_sort(v->begin(), v->end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

}  // namespace

Series LatencySeries(const std::string& name, std::vector<LatencySample> samples,
                     SteadyClock::time_point t0) {
  SortByTime(&samples);
  Series s{name, "ms", {}};
  for (const auto& [sent, ms] : samples) s.points.emplace_back(Seconds(sent - t0), ms);
  return s;
}

Series AckedSeries(const std::string& name, std::vector<AckSample> acks,
                   SteadyClock::time_point t0) {
  SortByTime(&acks);
  Series s{name, "MiB", {}};
  uint64_t total = 0;
  for (const auto& [at, bytes] : acks) {
    total += bytes;
    s.points.emplace_back(Seconds(at - t0), total / kMiBf);
  }
  return s;
}

Series ThroughputSeries(const std::string& name, const std::vector<AckSample>& acks,
                        SteadyClock::time_point t0, SteadyClock::time_point from,
                        SteadyClock::time_point to, std::chrono::duration<double> step,
                        std::chrono::duration<double> window) {
  Series s{name, "MiB/s", {}};
  if (to <= from) return s;
  const auto step_d = std::chrono::duration_cast<SteadyClock::duration>(step);
  const auto window_d = std::chrono::duration_cast<SteadyClock::duration>(window);
  for (SteadyClock::time_point t = from + step_d;; t += step_d) {
    if (t > to) t = to;
    SteadyClock::time_point a = from, b = from;
    uint64_t bytes = 0;
    for (const auto& [at, n] : acks) {
      if (at > to || at <= from) continue;
      if (at <= t - window_d) a = std::max(a, at);
      if (at <= t) b = std::max(b, at);
    }
    for (const auto& [at, n] : acks) {
      if (at > a && at <= b) bytes += n;
    }
    // b <= a: no reply in (t - window, t].
    s.points.emplace_back(Seconds(t - t0), b <= a ? 0 : bytes / kMiBf / Seconds(b - a));
    if (t == to) break;
  }
  return s;
}

}  // namespace nfsedge::bench
