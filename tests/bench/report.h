// The benchmark report: results.json (every figure), results.md (the table
// of direct vs proxied per metric, with the calls that crossed the WAN), one
// PNG chart per workload (gnuplot), and optionally docs/benchmarks.md.
//
// Thread safety: free functions over values.

#ifndef NFSEDGE_TESTS_BENCH_REPORT_H_
#define NFSEDGE_TESTS_BENCH_REPORT_H_

#include <string>
#include <vector>

#include "bench_options.h"
#include "json.h"
#include "runner.h"

namespace nfsedge::bench {

struct BenchRecord {
  BenchOptions options;
  std::vector<RunResult> runs;
  std::string started;        // Local time, "2024-06-01 12:00".
  double seconds = 0;         // Whole benchmark.
  std::string load_at_start;  // /proc/loadavg when the benchmark started.
  std::string revision;       // SourceRevision() when the benchmark started.
};

// The machine: CPU, nproc, memory, kernel, OS, package versions.
std::vector<std::pair<std::string, std::string>> MachineInfo();
// The first three fields of /proc/loadavg ("0.52 0.31 0.20").
std::string LoadAverage();

// Returns true iff every run succeeded, verified its data, and every direct
// run's call counts matched the emulator's.
bool AllChecksPassed(const BenchRecord& record);

// The markdown results table (and the checks table below it).
std::string ResultsMarkdown(const BenchRecord& record);
Json ResultsJson(const BenchRecord& record);
// One line per workload phase (headline metric, ratio, WAN calls), plus the
// added latency of the lan workload and the congestion probes' rise.
std::string Highlights(const BenchRecord& record);
// The sizes and links used, one markdown bullet per workload.
std::string SizesText(const BenchOptions& options);

// Writes results.json, results.md and <workload>.png (if gnuplot is
// installed) into `dir`. Returns an error iff a file could not be written.
Status WriteResults(const BenchRecord& record, const std::string& dir);
// Writes <docs_dir>/benchmarks.md and <docs_dir>/bench/<workload>.png.
Status WriteDocs(const BenchRecord& record, const std::string& docs_dir);

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_REPORT_H_
