#include "report.h"

#include <algorithm>
#include <cstdio>

#include "harness/files.h"

namespace nfsedge::bench {
namespace {

std::string Fmt(double v) {
  char buf[32];
  double a = v < 0 ? -v : v;
  const char* f = a == 0 ? "%.0f" : a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f";
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

const RunResult* FindRun(const BenchRecord& r, const std::string& workload, Mode mode) {
  for (const RunResult& run : r.runs) {
    if (run.workload == workload && run.mode == mode) return &run;
  }
  return nullptr;
}

const PhaseResult* FindPhase(const RunResult* run, const std::string& name) {
  if (run == nullptr || !run->ok) return nullptr;
  for (const PhaseResult& p : run->report.phases) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const Metric* FindMetric(const PhaseResult* p, const std::string& name) {
  if (p == nullptr) return nullptr;
  for (const Metric& m : p->metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string CallsCell(const PhaseResult* p) {
  if (p == nullptr) return "";
  return std::to_string(p->wan.calls.Total()) + " (" + p->wan.calls.Compact() + ")";
}

std::string LinkText(const LinkShape& l) {
  char rtt[32];
  std::snprintf(rtt, sizeof(rtt), "%g", l.rtt_ms);
  std::string s = "RTT " + std::string(rtt) + " ms";
  if (l.rate_bps > 0) {
    s += ", " + Fmt(l.rate_bps / 1e6) + " Mbit/s each way, " +
         std::to_string(l.queue_bytes / kKiB) + " KiB queue";
  }
  return s;
}

// ganesha's emulated disk, "5 ms per flush + 200 MB/s"; "" for the stock disk.
std::string ServerDiskText(const BenchOptions& o) {
  if (o.server_sync_ms <= 0) return "";
  char sync[32];
  std::snprintf(sync, sizeof(sync), "%g", o.server_sync_ms);
  return std::string(sync) + " ms per flush + " + std::to_string(o.server_disk_mbps) + " MB/s";
}

}  // namespace

bool AllChecksPassed(const BenchRecord& record) {
  if (record.runs.empty()) return false;
  for (const RunResult& r : record.runs) {
    if (!r.ok || !r.report.verified) return false;
    if (r.counts_checked && !r.counts_match) return false;
  }
  return true;
}

std::string ResultsMarkdown(const BenchRecord& record) {
  std::string md =
      "| workload | phase | metric | direct | via nfsedge | nfsedge / direct | "
      "calls across the WAN, direct | calls across the WAN, via nfsedge |\n"
      "|---|---|---|---:|---:|---:|---|---|\n";
  const std::string disk =
      record.options.server_sync_ms > 0 ? ", server disk " + ServerDiskText(record.options) : "";
  for (const std::string& w : record.options.workloads) {
    const RunResult* direct = FindRun(record, w, Mode::kDirect);
    const RunResult* proxied = FindRun(record, w, Mode::kProxied);
    const RunResult* any = direct && direct->ok     ? direct
                           : proxied && proxied->ok ? proxied
                                                    : nullptr;
    if (any == nullptr) {
      md += "| " + w + " | - | failed | | | | | |\n";
      continue;
    }
    bool first_row = true;
    for (const PhaseResult& phase : any->report.phases) {
      if (!phase.shown) continue;
      const PhaseResult* pd = FindPhase(direct, phase.name);
      const PhaseResult* pp = FindPhase(proxied, phase.name);
      // Every metric either run reported (one may measure what the other
      // has no need to; a ratio needs both).
      std::vector<Metric> metrics = phase.metrics;
      for (const PhaseResult* ph : {pd, pp}) {
        if (ph == nullptr) continue;
        for (const Metric& m : ph->metrics) {
          if (std::none_of(metrics.begin(), metrics.end(),
                           [&m](const Metric& x) { return x.name == m.name; })) {
            metrics.push_back(m);
          }
        }
      }
      bool first_metric = true;
      for (const Metric& m : metrics) {
        const Metric* dm = FindMetric(pd, m.name);
        const Metric* pm = FindMetric(pp, m.name);
        std::string ratio = dm && pm && dm->value != 0 ? Fmt(pm->value / dm->value) : "-";
        md += "| " + (first_row ? w + " (" + LinkText(any->link) + disk + ")" : "") + " | " +
              (first_metric ? phase.name : "") + " | " + m.name + " (" + m.unit + ", " +
              (m.higher_is_better ? "higher" : "lower") + " is better) | " +
              (dm ? Fmt(dm->value) : "-") + " | " + (pm ? Fmt(pm->value) : "-") + " | " + ratio +
              " | " + (first_metric ? CallsCell(pd) : "") + " | " +
              (first_metric ? CallsCell(pp) : "") + " |\n";
        first_row = first_metric = false;
      }
    }
  }
  md +=
      "\n| workload | mode | result | data check | calls sent by the client | calls across the "
      "WAN | emulator count = client count |\n|---|---|---|---|---:|---:|---|\n";
  for (const RunResult& r : record.runs) {
    md += "| " + r.workload + " | " + ModeName(r.mode) + " | " +
          (r.ok ? "ok (" + Fmt(r.wall_seconds) + " s)" : "FAILED: " + r.error.substr(0, 200)) +
          " | " + (r.report.verified ? r.report.verification : "not verified") + " | " +
          std::to_string(r.client_calls.Total()) + " | " + std::to_string(r.wan_calls.Total()) +
          " | " +
          (r.counts_checked          ? (r.counts_match ? "yes" : "**NO**")
           : r.mode == Mode::kDirect ? "not checked (run failed)"
                                     : "n/a (proxied)") +
          " |\n";
  }
  bool any_stats = false;
  for (const RunResult& r : record.runs) {
    if (r.proxy_stats.empty()) continue;
    if (!any_stats) {
      md += "\nnfsedge's own counters at the end of each proxied run (cache hits and misses, "
            "read-ahead used and wasted, upstream READ size; a restart logs them twice):\n\n";
      any_stats = true;
    }
    md += "- **" + r.workload + "**\n\n```\n";
    for (const std::string& line : r.proxy_stats) md += line + "\n";
    md += "```\n";
  }
  return md;
}

std::string Highlights(const BenchRecord& record) {
  std::string out;
  for (const std::string& w : record.options.workloads) {
    const RunResult* d = FindRun(record, w, Mode::kDirect);
    const RunResult* p = FindRun(record, w, Mode::kProxied);
    if (!d || !p || !d->ok || !p->ok) continue;
    for (const PhaseResult& phase : d->report.phases) {
      const PhaseResult* pp = FindPhase(p, phase.name);
      if (!phase.shown || phase.metrics.empty() || pp == nullptr) continue;
      const Metric& m = phase.metrics[0];
      const Metric* pm = FindMetric(pp, m.name);
      if (pm == nullptr) continue;
      out += "- **" + w + ", " + phase.name + "**: " + m.name + " " + Fmt(m.value) + " " + m.unit +
             " direct, " + Fmt(pm->value) + " " + m.unit + " via nfsedge" +
             (m.value != 0 ? " (x" + Fmt(pm->value / m.value) + ")" : "") +
             "; calls across the WAN " + std::to_string(phase.wan.calls.Total()) + " direct, " +
             std::to_string(pp->wan.calls.Total()) + " via nfsedge.\n";
    }
  }
  const PhaseResult* lan_d = FindPhase(FindRun(record, "lan", Mode::kDirect), "1 in flight");
  const PhaseResult* lan_p = FindPhase(FindRun(record, "lan", Mode::kProxied), "1 in flight");
  const Metric* lat_d = FindMetric(lan_d, "latency p50");
  const Metric* lat_p = FindMetric(lan_p, "latency p50");
  if (lat_d && lat_p) {
    out +=
        "- lan: with no WAN delay and every GETATTR forwarded, one call at a time, the median "
        "latency is " +
        Fmt(lat_d->value * 1000) + " us direct and " + Fmt(lat_p->value * 1000) +
        " us via nfsedge: the proxy's hop adds " + Fmt((lat_p->value - lat_d->value) * 1000) +
        " us.\n";
  }
  for (Mode mode : {Mode::kDirect, Mode::kProxied}) {
    const RunResult* run = FindRun(record, "congestion", mode);
    const Metric* idle = FindMetric(FindPhase(run, "idle"), "GETATTR p99");
    const Metric* bulk = FindMetric(FindPhase(run, "bulk"), "GETATTR p99");
    const Metric* util = FindMetric(FindPhase(run, "bulk"), "up-link utilisation");
    if (!idle || !bulk) continue;
    out += std::string("- congestion, ") + (mode == Mode::kDirect ? "direct" : "via nfsedge") +
           ": the GETATTR probe's p99 goes from " + Fmt(idle->value) + " ms idle to " +
           Fmt(bulk->value) + " ms beside the bulk write" +
           (util ? " (up-link utilisation " + Fmt(util->value) + "%)" : "") + ".\n";
  }
  return out;
}

std::string SizesText(const BenchOptions& o) {
  const BenchSizes& s = o.sizes;
  auto mib = [](uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g MiB", static_cast<double>(b) / kMiB);
    return std::string(buf);
  };
  auto kib = [&](uint64_t b) { return b >= kMiB ? mib(b) : std::to_string(b / kKiB) + " KiB"; };
  std::string depths;
  for (int k : s.stable_depths) depths += (depths.empty() ? "" : ", ") + std::to_string(k);
  std::string strides;
  for (int n : s.strides) strides += (strides.empty() ? "" : ", ") + std::to_string(n);
  return "- treewalk: " + std::to_string(s.tree_files) + " files in " +
         std::to_string(s.tree_dirs) + " directories; READDIRPLUS maxcount 32 KiB, READ of " +
         "rsize (min of 1 MiB and the server's rtmax)\n" + "- stablewrite: " + mib(s.stable_bytes) +
         " in " + kib(s.stable_write) + " FILE_SYNC writes, K = " + depths + "\n" +
         "- unstablewrite: " + mib(s.unstable_bytes) + " in " + kib(s.unstable_write) +
         " UNSTABLE writes, " + std::to_string(s.unstable_depth) + " in flight, then COMMIT\n" +
         "- unstablewrite-small: " + mib(s.unstable_bytes) + " in " + kib(s.unstable_small_write) +
         " UNSTABLE writes, " + std::to_string(s.unstable_small_depth) +
         " in flight, then COMMIT\n" + "- smallfiles: " + std::to_string(s.small_files) +
         " files of " + kib(s.small_file_bytes) + ", one after another: CREATE, " +
         kib(s.unstable_small_write) + " UNSTABLE writes (" +
         std::to_string(s.unstable_small_depth) + " in flight), COMMIT\n" +
         "- seqread: " + mib(s.seq_bytes) + " in " + kib(s.seq_read) + " reads, " +
         std::to_string(s.seq_depth) + " in flight\n" + "- strideread: " + mib(s.stride_bytes) +
         " per pattern (a fresh file each), " + kib(s.stride_block) + " reads, " +
         std::to_string(s.stride_depth) + " in flight, strides " + strides + "\n" +
         "- congestion: " + mib(s.congestion_bytes) + " in " + kib(s.stable_write) +
         " FILE_SYNC writes, " + std::to_string(s.congestion_depth) + " in flight; probes every " +
         std::to_string(s.probe_interval_ms) + " ms (" + LinkText(o.congestion_link) + ")\n" +
         "- lan: " + std::to_string(s.lan_calls) + " GETATTRs " + std::to_string(s.lan_depth) +
         " in flight, then " + std::to_string(std::max(1, s.lan_calls / 10)) +
         " one at a time (no delay)\n" + "- other workloads' link: " + LinkText(o.link) + "\n" +
         "- server disk: " +
         (o.server_sync_ms > 0
              ? "emulated, " + ServerDiskText(o) +
                    " for the bytes written since the previous one, one flush at a time (a "
                    "flush is the fsync behind each FILE_SYNC or DATA_SYNC WRITE and COMMIT)\n"
              : "stock (ganesha's fsync on the test machine's disk)\n") +
         (o.proxy_config_file.empty()
              ? ""
              : "- nfsedge's config: the defaults and " + o.proxy_config_file + ":\n\n```\n" +
                    o.proxy_config_extra + "\n```\n");
}

}  // namespace nfsedge::bench
