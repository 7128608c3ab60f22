// nfsedge-demo: what `./dev.sh demo` runs. In a private network namespace it
// starts nfs-ganesha behind the emulated WAN (RTT 50 ms), runs the quick
// treewalk directly and through nfsedge, prints the table, then leaves
// ganesha, the emulator and a fresh nfsedge running and prints how to reach
// the proxy with one's own client, until SIGINT / SIGTERM.
//
//   nfsedge-demo [--build-dir DIR] [--rtt-ms D] [--tree-files N] [--tree-dirs N]
//                [--out-dir DIR] [--no-wait]

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_options.h"
#include "event_loop.h"
#include "harness/private_network.h"
#include "live_stack.h"
#include "report.h"
#include "runner.h"

namespace nfsedge::tools {
namespace {

using bench::BenchOptions;
using bench::Mode;

constexpr char kUsage[] =
    "usage: nfsedge-demo [--build-dir DIR] [--rtt-ms D] [--tree-files N] [--tree-dirs N]\n"
    "                    [--out-dir DIR] [--no-wait]\n"
    "Runs the quick treewalk against nfs-ganesha behind an emulated WAN, directly and through\n"
    "nfsedge, prints the table, then keeps the stack running for your own client until Ctrl-C\n"
    "(--no-wait: exit after the table). Needs root (private network namespace).\n";

bool ParseArgs(int argc, char** argv, BenchOptions* o, bool* wait) {
  o->quick = true;
  o->sizes = bench::QuickSizes();
  o->link.rtt_ms = 50;
  o->workloads = {"treewalk"};
  o->keep_files = true;  // The trees stay for the user to browse.
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--no-wait") {
      *wait = false;
    } else if (a == "--build-dir" && (v = value())) {
      o->build_dir = v;
    } else if (a == "--out-dir" && (v = value())) {
      o->out_dir = v;
    } else if (a == "--rtt-ms" && (v = value())) {
      o->link.rtt_ms = std::atof(v);
    } else if (a == "--tree-files" && (v = value()) && std::atoi(v) > 0) {
      o->sizes.tree_files = std::atoi(v);
    } else if (a == "--tree-dirs" && (v = value()) && std::atoi(v) > 0) {
      o->sizes.tree_dirs = std::atoi(v);
    } else {
      return false;
    }
  }
  if (o->build_dir.empty()) o->build_dir = bench::BuildDirOfExecutable();
  if (o->out_dir.empty()) o->out_dir = o->build_dir + "/demo-results";
  for (int i = 0; i < argc; ++i) o->command_line += (i ? " " : "") + std::string(argv[i]);
  return !o->build_dir.empty();
}

int Main(int argc, char** argv) {
  BenchOptions options;
  bool wait = true;
  if (!ParseArgs(argc, argv, &options, &wait)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  harness::Status net = harness::PrivateNetwork::Enter();
  if (!net.ok()) {
    std::fprintf(stderr, "nfsedge-demo: needs root for a private network namespace: %s\n",
                 net.message().c_str());
    return 1;
  }
  bench::InstallStopHandlers();
  bench::Runner runner(options);
  harness::Status s = runner.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "nfsedge-demo: cannot start ganesha: %s\n", s.message().c_str());
    return 1;
  }
  const double calls = 4.0 * (options.sizes.tree_files + options.sizes.tree_dirs);
  std::printf(
      "nfs-ganesha is up. Walking a tree of %d files in %d directories (tar-like, one "
      "call at a time, cold then warm)\nover an emulated WAN of RTT %g ms, directly and "
      "through nfsedge: at most about %.0f s.\n\n",
      options.sizes.tree_files, options.sizes.tree_dirs, options.link.rtt_ms,
      4 * calls * options.link.rtt_ms / 1000);
  std::fflush(stdout);
  bench::BenchRecord record;
  record.options = options;
  for (Mode mode : options.modes) {
    if (bench::StopRequested()) break;
    record.runs.push_back(runner.Run(*bench::FindWorkload("treewalk"), mode));
    const bench::RunResult& r = record.runs.back();
    std::printf("  %-8s %s in %.1f s%s%s\n", bench::ModeName(mode), r.ok ? "done" : "FAILED",
                r.wall_seconds, r.ok ? "" : ": ", r.error.c_str());
    std::fflush(stdout);
  }
  std::printf("\n%s\n", bench::ResultsMarkdown(record).c_str());
  bool passed = bench::AllChecksPassed(record);
  if (!passed) std::printf("Some runs failed: logs under %s/logs\n", options.out_dir.c_str());
  if (!wait || bench::StopRequested()) return passed ? 0 : 1;

  auto live = LiveStack::Start(runner, options.link, options.out_dir + "/live");
  if (!live.ok()) {
    std::fprintf(stderr, "nfsedge-demo: %s\n", live.status().message().c_str());
    return 1;
  }
  std::printf("%s", (*live)->Instructions("treewalk-proxied/tree").c_str());
  std::fflush(stdout);
  std::string why = (*live)->WaitForStop();
  std::printf("\nStopping (%s).\n", why.c_str());
  live->reset();
  runner.Stop();
  return why == "stop signal" ? 0 : 1;
}

}  // namespace
}  // namespace nfsedge::tools

int main(int argc, char** argv) { return nfsedge::tools::Main(argc, argv); }
