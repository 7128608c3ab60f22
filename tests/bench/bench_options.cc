#include "bench_options.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef NFSEDGE_SOURCE_DIR
#define NFSEDGE_SOURCE_DIR "."
#endif

namespace nfsedge::bench {
namespace {

using harness::Status;
using harness::StatusOr;

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool ToDouble(const std::string& s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && end && *end == '\0' && *out >= 0;
}

bool ToU64(const std::string& s, uint64_t* out) {
  double d;
  if (!ToDouble(s, &d) || d != static_cast<double>(static_cast<uint64_t>(d))) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

}  // namespace

const char* ModeName(Mode mode) { return mode == Mode::kDirect ? "direct" : "proxied"; }

const char kBenchUsage[] =
    "usage: nfsedge-bench [options]\n"
    "Runs NFSv3 workloads against nfs-ganesha behind the WAN emulator, directly and through\n"
    "nfsedge, in a private network namespace (needs root), and writes a report.\n"
    "\n"
    "  --quick                 small sizes and RTT 10 ms (a few minutes; the CI test)\n"
    "  --workloads A,B,...     treewalk,stablewrite,stablewrite-journal,unstablewrite,\n"
    "                          unstablewrite-small,smallfiles,\n"
    "                          seqread,strideread,congestion,lan (default: all)\n"
    "  --modes M,...           direct,proxied (default: both)\n"
    "  --rtt-ms D              round-trip time of the WAN (default 50; quick 10)\n"
    "  --rate-bps R            WAN rate each way, bit/s; 0 = unlimited (default 0)\n"
    "  --queue-bytes Q         WAN bottleneck queue (default 262144)\n"
    "  --bulk-rate-bps R       rate of the bulk data workloads' link (unstablewrite,\n"
    "                          unstablewrite-small, seqread, strideread), bit/s; 0 = unlimited\n"
    "                          (default 200000000)\n"
    "  --congestion-rtt-ms D, --congestion-rate-bps R, --congestion-queue-bytes Q\n"
    "                          the congestion workload's link (default 40 ms, 2000000, 262144)\n"
    "  --server-sync-ms D      ganesha's emulated disk: each flush (fsync of a FILE_SYNC or\n"
    "                          DATA_SYNC WRITE, or of a COMMIT) costs D ms, one at a time;\n"
    "                          fractional ok, up to 60000; 0 = the stock disk (default 0)\n"
    "  --server-disk-mbps R    with --server-sync-ms: a flush also writes the bytes written\n"
    "                          since the previous one at R MB/s (1..1000000, default 200)\n"
    "  --proxy-config FILE     TOML appended to nfsedge's config in proxied runs (e.g. a\n"
    "                          [scheduler] table), shown in the report; keys of a table\n"
    "                          the bench writes too ([log], [cache], [write]) join it\n"
    "  --proxy-log-level L     nfsedge's log level in proxied runs: error, warn, info\n"
    "                          (default), debug (every upstream WRITE), trace\n"
    "  --tree-files N, --tree-dirs N   treewalk tree (default 2100 / 150; quick 200 / 20)\n"
    "  --stride-depth N        reads in flight in strideread (default 8)\n"
    "  --seed N                content seed\n"
    "  --out-dir DIR           results (default <build-dir>/bench-results)\n"
    "  --write-docs            also write docs/benchmarks.md and docs/bench/*.png\n"
    "                          (default in full mode; --no-write-docs to skip)\n"
    "  --docs-dir DIR          where docs go (default <source>/docs)\n"
    "  --build-dir DIR         build tree holding proxy/nfsedge and tests/wan/nfsedge-wan\n"
    "  --keep-files            keep each run's files in the export (default: removed)\n";

BenchSizes QuickSizes() {
  BenchSizes s;
  s.tree_files = 200;
  s.tree_dirs = 20;
  s.stable_bytes = 1 * kMiB;
  s.unstable_bytes = 4 * kMiB;
  s.small_files = 8;
  s.seq_bytes = 4 * kMiB;
  s.stride_bytes = 4 * kMiB;
  s.congestion_bytes = 1 * kMiB;
  s.lan_calls = 20000;
  return s;
}

std::string BuildDirOfExecutable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string path(buf, n);
  for (int i = 0; i < 3; ++i) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) return "";
    path.resize(slash);
  }
  return path;
}

namespace {

// Returns the output of `command` (a fixed string, run by the shell) without
// trailing newlines, or "" on failure.
std::string CommandOutput(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[256];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::string SourceRevision() {
  const std::string git = std::string("git -C '") + NFSEDGE_SOURCE_DIR + "' ";
  std::string rev = CommandOutput(git + "rev-parse --short HEAD 2>/dev/null");
  if (rev.empty()) return "?";
  // docs/ is what --write-docs rewrites: changes there say nothing about the code measured.
  std::string changed = CommandOutput(
      git + "status --porcelain --untracked-files=no -- . ':(exclude)docs' 2>/dev/null");
  return changed.empty() ? rev : rev + " with uncommitted changes";
}

StatusOr<BenchOptions> ParseBenchArgs(const std::vector<std::string>& args) {
  BenchOptions o;
  bool quick = false, docs_set = false, docs_value = false;
  std::vector<std::pair<std::string, std::string>> valued;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    size_t eq = name.find('=');
    if (name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      valued.emplace_back(name, value);
      continue;
    }
    if (name == "--quick")
      quick = true;
    else if (name == "--write-docs")
      docs_set = docs_value = true;
    else if (name == "--no-write-docs")
      docs_set = true, docs_value = false;
    else if (name == "--keep-files")
      o.keep_files = true;
    else if (name == "--help" || name == "-h")
      o.help = true;
    else if (name.rfind("--", 0) == 0 && i + 1 < args.size())
      valued.emplace_back(name, args[++i]);
    else
      return Status::Error("unknown or incomplete argument: " + name);
  }
  o.quick = quick;
  if (quick) {
    o.sizes = QuickSizes();
    o.link.rtt_ms = 10;
  }
  for (const auto& [name, value] : valued) {
    uint64_t u = 0;
    auto bad = [n = name, v = value] { return Status::Error("bad value for " + n + ": " + v); };
    if (name == "--workloads") {
      o.workloads = Split(value);
      for (const std::string& w : o.workloads) {
        if (!FindWorkload(w)) return Status::Error("unknown workload: " + w);
      }
    } else if (name == "--modes") {
      o.modes.clear();
      for (const std::string& m : Split(value)) {
        if (m == "direct")
          o.modes.push_back(Mode::kDirect);
        else if (m == "proxied")
          o.modes.push_back(Mode::kProxied);
        else
          return Status::Error("unknown mode: " + m);
      }
    } else if (name == "--rtt-ms") {
      if (!ToDouble(value, &o.link.rtt_ms)) return bad();
    } else if (name == "--rate-bps") {
      if (!ToU64(value, &o.link.rate_bps)) return bad();
    } else if (name == "--queue-bytes") {
      if (!ToU64(value, &o.link.queue_bytes) || o.link.queue_bytes == 0) return bad();
    } else if (name == "--bulk-rate-bps") {
      if (!ToU64(value, &o.bulk_rate_bps)) return bad();
    } else if (name == "--congestion-rtt-ms") {
      if (!ToDouble(value, &o.congestion_link.rtt_ms)) return bad();
    } else if (name == "--congestion-rate-bps") {
      if (!ToU64(value, &o.congestion_link.rate_bps)) return bad();
    } else if (name == "--congestion-queue-bytes") {
      if (!ToU64(value, &o.congestion_link.queue_bytes) || !o.congestion_link.queue_bytes) {
        return bad();
      }
    } else if (name == "--server-sync-ms") {
      // Whole microseconds, as the emulated disk takes them; a positive
      // value below 1 us would silently mean the stock disk.
      if (!ToDouble(value, &o.server_sync_ms) || o.server_sync_ms > 60000 ||
          (o.server_sync_ms > 0 && o.server_sync_ms < 0.001)) {
        return Status::Error("bad value for --server-sync-ms: " + value +
                             " (milliseconds: 0, or 0.001 to 60000)");
      }
    } else if (name == "--server-disk-mbps") {
      if (!ToU64(value, &u) || u == 0 || u > 1000000) {
        return Status::Error("bad value for --server-disk-mbps: " + value +
                             " (a whole number of MB/s, 1 to 1000000)");
      }
      o.server_disk_mbps = static_cast<uint32_t>(u);
    } else if (name == "--proxy-log-level") {
      if (value != "error" && value != "warn" && value != "info" && value != "debug" &&
          value != "trace") {
        return Status::Error("bad value for --proxy-log-level: " + value +
                             " (error, warn, info, debug or trace)");
      }
      o.proxy_log_level = value;
    } else if (name == "--proxy-config") {
      std::ifstream in(value);
      std::stringstream text;
      text << in.rdbuf();
      if (!in) return Status::Error("--proxy-config: cannot read " + value);
      o.proxy_config_file = value;
      o.proxy_config_extra = text.str();
    } else if (name == "--tree-files" || name == "--tree-dirs" || name == "--stride-depth") {
      if (!ToU64(value, &u) || u == 0 || u > 1000000) return bad();
      (name == "--tree-files"  ? o.sizes.tree_files
       : name == "--tree-dirs" ? o.sizes.tree_dirs
                               : o.sizes.stride_depth) = static_cast<int>(u);
    } else if (name == "--seed") {
      if (!ToU64(value, &o.seed)) return bad();
    } else if (name == "--out-dir") {
      o.out_dir = value;
    } else if (name == "--docs-dir") {
      o.docs_dir = value;
    } else if (name == "--build-dir") {
      o.build_dir = value;
    } else {
      return Status::Error("unknown argument: " + name);
    }
  }
  if (o.workloads.empty()) {
    for (const WorkloadInfo& w : AllWorkloads()) o.workloads.push_back(w.name);
  }
  if (o.modes.empty()) return Status::Error("--modes: none given");
  if (o.build_dir.empty()) o.build_dir = BuildDirOfExecutable();
  if (o.build_dir.empty()) return Status::Error("cannot tell the build directory: --build-dir");
  if (o.out_dir.empty()) o.out_dir = o.build_dir + "/bench-results";
  if (o.docs_dir.empty()) o.docs_dir = std::string(NFSEDGE_SOURCE_DIR) + "/docs";
  // The proxy's config takes absolute paths only (its cache, journal and
  // control socket go under the out dir): "--build-dir build" from the
  // source tree is the source tree's build.
  std::error_code ec;
  for (std::string* dir : {&o.build_dir, &o.out_dir, &o.docs_dir}) {
    const std::filesystem::path abs = std::filesystem::absolute(*dir, ec);
    if (ec) return Status::Error(*dir + ": " + ec.message());
    *dir = abs.lexically_normal().string();
    if (dir->size() > 1 && dir->back() == '/') dir->pop_back();
  }
  o.write_docs = docs_set ? docs_value : !quick;
  return o;
}

}  // namespace nfsedge::bench
