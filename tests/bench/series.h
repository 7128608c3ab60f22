// Series: values of one run over time (the congestion workload's probe
// latencies and bulk write progress), for results.json and the timeline
// chart, and the pure functions that build them from timestamped samples.
//
// Thread safety: plain values and pure functions.

#ifndef NFSEDGE_TESTS_BENCH_SERIES_H_
#define NFSEDGE_TESTS_BENCH_SERIES_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nfsedge::bench {

using SteadyClock = std::chrono::steady_clock;

struct Series {
  std::string name;  // "GETATTR latency", "bulk throughput"...
  std::string unit;  // "ms", "MiB/s", "MiB".
  // (seconds since the run's time origin, value in `unit`), in time order.
  std::vector<std::pair<double, double>> points;
};

// A latency sample: when the probe was sent, and its round trip in ms.
using LatencySample = std::pair<SteadyClock::time_point, double>;
// A bulk reply: when it arrived, and the bytes it acknowledged.
using AckSample = std::pair<SteadyClock::time_point, uint64_t>;

// Returns the samples as a series: x = send time - t0 (s), y = ms; sorted
// by send time.
Series LatencySeries(const std::string& name, std::vector<LatencySample> samples,
                     SteadyClock::time_point t0);
// Returns the bytes acknowledged so far (MiB) at each reply: x = reply time
// - t0 (s); sorted by reply time.
Series AckedSeries(const std::string& name, std::vector<AckSample> acks,
                   SteadyClock::time_point t0);
// Returns the throughput (MiB/s) every `step` from `from` until `to` (the
// last point at `to`), measured from reply to reply so that large calls
// (few replies) do not make it jump: at each time t, with b the last reply
// at or before t and a the last reply at or before t - window (`from` if
// none), the bytes of the replies in (a, b] over b - a; 0 if no reply came
// in (t - window, t]. x = t - t0 (s). Empty if to <= from.
// REQUIRES: step > 0, window > 0.
Series ThroughputSeries(const std::string& name, const std::vector<AckSample>& acks,
                        SteadyClock::time_point t0, SteadyClock::time_point from,
                        SteadyClock::time_point to, std::chrono::duration<double> step,
                        std::chrono::duration<double> window);

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_SERIES_H_
