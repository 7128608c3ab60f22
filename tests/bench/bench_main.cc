// nfsedge-bench: runs the chosen workloads directly against nfs-ganesha
// behind the WAN emulator and through nfsedge in front of the same emulator,
// then writes the report (see bench_options.cc for the command line and
// runner.h for what one run does). Exit status: 0 iff every run completed
// with verified data and every direct run's call counts matched the
// emulator's; 77 if the private network namespace cannot be entered (not
// root); 2 on a bad command line; 1 otherwise.

#include <cstdio>
#include <ctime>

#include "bench_options.h"
#include "harness/private_network.h"
#include "report.h"
#include "runner.h"

namespace nfsedge::bench {
namespace {

std::string Now() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M %Z", std::localtime(&t));
  return buf;
}

void PrintRun(const RunResult& r) {
  std::string phases;
  for (const PhaseResult& p : r.report.phases) {
    if (!p.shown || p.metrics.empty()) continue;
    char buf[128];
    std::snprintf(buf, sizeof(buf), "%s%s %.3g %s", phases.empty() ? "" : ", ", p.name.c_str(),
                  p.metrics[0].value, p.metrics[0].unit.c_str());
    phases += buf;
  }
  std::fprintf(stderr, "[nfsedge-bench] %s %s: %s in %.1f s%s%s%s\n", r.workload.c_str(),
               ModeName(r.mode), r.ok ? "ok" : "FAILED", r.wall_seconds, phases.empty() ? "" : ": ",
               phases.c_str(),
               r.counts_checked ? (r.counts_match ? " (WAN counts = client counts)"
                                                  : " (WAN counts DIFFER from client counts)")
                                : "");
  if (!r.ok) std::fprintf(stderr, "  %s\n  logs: %s\n", r.error.c_str(), r.log_dir.c_str());
  if (r.counts_checked && !r.counts_match) {
    std::fprintf(stderr, "  client: %s\n  WAN:    %s\n", r.client_calls.Compact().c_str(),
                 r.wan_calls.Compact().c_str());
  }
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = ParseBenchArgs(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "nfsedge-bench: %s\n%s", parsed.status().message().c_str(), kBenchUsage);
    return 2;
  }
  BenchOptions options = std::move(parsed).value();
  if (options.help) {
    std::fputs(kBenchUsage, stdout);
    return 0;
  }
  for (int i = 0; i < argc; ++i) options.command_line += (i ? " " : "") + std::string(argv[i]);
  Status net = harness::PrivateNetwork::Enter();
  if (!net.ok()) {
    std::fprintf(stderr, "nfsedge-bench: skipped: %s\n", net.message().c_str());
    return 77;
  }
  InstallStopHandlers();

  BenchRecord record;
  record.options = options;
  record.started = Now();
  record.load_at_start = LoadAverage();
  record.revision = SourceRevision();
  auto start = std::chrono::steady_clock::now();
  Runner runner(options);
  Status s = runner.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "nfsedge-bench: cannot start the stack: %s\n", s.message().c_str());
    return 1;
  }
  for (const std::string& name : options.workloads) {
    const WorkloadInfo* w = FindWorkload(name);
    for (Mode mode : options.modes) {
      if (StopRequested()) break;
      std::fprintf(stderr, "[nfsedge-bench] %s %s ...\n", name.c_str(), ModeName(mode));
      record.runs.push_back(runner.Run(*w, mode));
      PrintRun(record.runs.back());
    }
  }
  runner.Stop();
  record.seconds = SecondsSince(start);

  s = WriteResults(record, options.out_dir);
  if (!s.ok()) std::fprintf(stderr, "nfsedge-bench: results: %s\n", s.message().c_str());
  if (s.ok() && options.write_docs && !StopRequested()) {
    s = WriteDocs(record, options.docs_dir);
    if (!s.ok()) std::fprintf(stderr, "nfsedge-bench: docs: %s\n", s.message().c_str());
  }
  std::printf("%s\n", ResultsMarkdown(record).c_str());
  bool passed = AllChecksPassed(record) && s.ok() && !StopRequested();
  std::printf("Results: %s/results.md, results.json%s\n%s\n", options.out_dir.c_str(),
              options.write_docs ? ("; docs: " + options.docs_dir + "/benchmarks.md").c_str() : "",
              passed ? "All checks passed." : "SOME CHECKS FAILED.");
  return passed ? 0 : 1;
}

}  // namespace
}  // namespace nfsedge::bench

int main(int argc, char** argv) { return nfsedge::bench::Main(argc, argv); }
