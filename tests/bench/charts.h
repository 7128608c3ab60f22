// Charts of the benchmark report: for each workload, a clustered bar chart
// (gnuplot, PNG) of the metrics that share the unit of its first metric,
// direct beside proxied, phase by phase.
//
// Thread safety: not thread-safe (runs gnuplot as a Subprocess).

#ifndef NFSEDGE_TESTS_BENCH_CHARTS_H_
#define NFSEDGE_TESTS_BENCH_CHARTS_H_

#include <string>
#include <vector>

#include "report.h"

namespace nfsedge::bench {

inline constexpr const char* kGnuplot = "/usr/bin/gnuplot";

// Writes <dir>/<workload>.png for each workload with a successful run;
// returns the file names written. Returns an error iff gnuplot is installed
// and failed; without gnuplot, writes nothing and says so in `*note`.
Status WriteCharts(const BenchRecord& record, const std::string& dir,
                   std::vector<std::string>* written, std::string* note);

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_CHARTS_H_
