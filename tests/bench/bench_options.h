// BenchOptions: the command line of nfsedge-bench (and the settings the demo
// reuses), parsed and validated.
//
// Thread safety: plain values and a pure function.

#ifndef NFSEDGE_TESTS_BENCH_BENCH_OPTIONS_H_
#define NFSEDGE_TESTS_BENCH_BENCH_OPTIONS_H_

#include <string>
#include <vector>

#include "harness/status.h"
#include "workload.h"

namespace nfsedge::bench {

enum class Mode { kDirect, kProxied };
const char* ModeName(Mode mode);  // "direct", "proxied".

struct BenchOptions {
  bool quick = false;
  std::vector<std::string> workloads;  // Names, in run order.
  std::vector<Mode> modes = {Mode::kDirect, Mode::kProxied};
  LinkShape link;                                        // --rtt-ms, --rate-bps, --queue-bytes
  LinkShape congestion_link{40, 2'000'000, 256 * kKiB};  // --congestion-*
  // Rate of the bulk data workloads' link (its RTT and queue are --rtt-ms,
  // --queue-bytes): --bulk-rate-bps.
  uint64_t bulk_rate_bps = 200'000'000;
  // ganesha's emulated disk (harness::Ganesha::Options::disk_sync_us): the
  // fixed cost of each flush (fsync), 0 = the stock disk; and the rate of the
  // bytes flushed. --server-sync-ms, --server-disk-mbps.
  double server_sync_ms = 0;
  uint32_t server_disk_mbps = 200;
  // TOML appended to nfsedge's config in proxied runs (--proxy-config FILE:
  // the file's text), e.g. a [scheduler] table to try other settings.
  std::string proxy_config_file;
  std::string proxy_config_extra;
  // nfsedge's log level in proxied runs (--proxy-log-level): debug logs
  // every upstream WRITE and its answer, with times.
  std::string proxy_log_level = "info";
  BenchSizes sizes;
  uint64_t seed = 20240601;
  std::string build_dir;  // Where nfsedge and nfsedge-wan were built.
  std::string out_dir;    // Default <build_dir>/bench-results.
  bool write_docs = false;
  std::string docs_dir;  // Default <source>/docs.
  bool keep_files = false;
  bool help = false;
  std::string command_line;  // The whole command, for the report (set by main()).
};

extern const char kBenchUsage[];

// The sizes of --quick: a few minutes on 2 cores.
BenchSizes QuickSizes();

// Parses argv (without the program name); fills defaults that depend on
// --quick and --build-dir. Returns an error naming the bad argument.
harness::StatusOr<BenchOptions> ParseBenchArgs(const std::vector<std::string>& args);

// Returns <dir of this executable>/../.. (the build directory of an
// executable in build/tests/<folder>/), or "" if unknown.
std::string BuildDirOfExecutable();

// Returns the source tree's commit ("7d247e0"), with " with uncommitted
// changes" if tracked files outside docs/ differ from it; "?" if unknown.
std::string SourceRevision();

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_BENCH_OPTIONS_H_
