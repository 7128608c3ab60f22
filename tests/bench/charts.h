// Charts of the benchmark report: for each workload, a clustered bar chart
// (gnuplot, PNG) of the metrics that share the unit of its first metric,
// direct beside proxied, phase by phase; and for a workload whose runs
// recorded series (congestion), a timeline: the series in ms (probe
// latencies, log scale) above the series in MiB/s (bulk throughput), both
// runs on the same time axis.
//
// Thread safety: not thread-safe (runs gnuplot as a Subprocess).

#ifndef NFSEDGE_TESTS_BENCH_CHARTS_H_
#define NFSEDGE_TESTS_BENCH_CHARTS_H_

#include <string>
#include <vector>

#include "report.h"

namespace nfsedge::bench {

inline constexpr const char* kGnuplot = "/usr/bin/gnuplot";

// Writes <dir>/<workload>.png for each workload with a successful run, and
// <dir>/<workload>-timeline.png with its numbers in
// <dir>/<workload>-timeline.dat (kept) for each whose runs recorded series
// in ms and in MiB/s; returns the PNG names written. Returns an error iff
// gnuplot is installed and failed; without gnuplot, writes nothing and says
// so in `*note`.
Status WriteCharts(const BenchRecord& record, const std::string& dir,
                   std::vector<std::string>* written, std::string* note);

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_CHARTS_H_
