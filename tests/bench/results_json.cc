// The results file: every figure of every run, phase by phase.

#include "report.h"

namespace nfsedge::bench {
namespace {

Json CountsJson(const CallCounts& c) {
  Json j = Json::Object();
  for (const auto& [name, n] : c.by_name()) j[name] = n;
  return j;
}

Json LinkJson(const LinkShape& l) {
  Json j = Json::Object();
  j["rtt_ms"] = l.rtt_ms;
  j["rate_bps"] = l.rate_bps;
  j["queue_bytes"] = l.queue_bytes;
  return j;
}

Json PhaseJson(const PhaseResult& p) {
  Json j = Json::Object();
  j["name"] = p.name;
  j["shown"] = p.shown;
  j["seconds"] = p.seconds;
  Json metrics = Json::Array();
  for (const Metric& m : p.metrics) {
    Json mj = Json::Object();
    mj["name"] = m.name;
    mj["value"] = m.value;
    mj["unit"] = m.unit;
    mj["higher_is_better"] = m.higher_is_better;
    metrics.Push(std::move(mj));
  }
  j["metrics"] = std::move(metrics);
  j["client_calls"] = CountsJson(p.client_calls);
  Json wan = Json::Object();
  wan["calls"] = CountsJson(p.wan.calls);
  wan["up_bytes"] = p.wan.up_bytes;
  wan["down_bytes"] = p.wan.down_bytes;
  j["wan"] = std::move(wan);
  return j;
}

// {"name", "unit", "points": [[t_s, value], ...]}.
Json SeriesJson(const Series& s) {
  Json j = Json::Object();
  j["name"] = s.name;
  j["unit"] = s.unit;
  Json points = Json::Array();
  for (const auto& [t, v] : s.points) {
    Json point = Json::Array();
    point.Push(t);
    point.Push(v);
    points.Push(std::move(point));
  }
  j["points"] = std::move(points);
  return j;
}

Json SizesJson(const BenchSizes& s) {
  Json j = Json::Object();
  j["tree_files"] = s.tree_files;
  j["tree_dirs"] = s.tree_dirs;
  j["stable_bytes"] = s.stable_bytes;
  j["stable_write"] = static_cast<uint64_t>(s.stable_write);
  j["unstable_bytes"] = s.unstable_bytes;
  j["unstable_write"] = static_cast<uint64_t>(s.unstable_write);
  j["unstable_depth"] = s.unstable_depth;
  j["unstable_small_write"] = static_cast<uint64_t>(s.unstable_small_write);
  j["unstable_small_depth"] = s.unstable_small_depth;
  j["small_files"] = s.small_files;
  j["small_file_bytes"] = s.small_file_bytes;
  j["seq_bytes"] = s.seq_bytes;
  j["seq_read"] = static_cast<uint64_t>(s.seq_read);
  j["seq_depth"] = s.seq_depth;
  j["stride_bytes"] = s.stride_bytes;
  j["stride_block"] = static_cast<uint64_t>(s.stride_block);
  j["stride_depth"] = s.stride_depth;
  j["congestion_bytes"] = s.congestion_bytes;
  j["congestion_depth"] = s.congestion_depth;
  j["probe_interval_ms"] = s.probe_interval_ms;
  j["lan_calls"] = s.lan_calls;
  j["lan_depth"] = s.lan_depth;
  return j;
}

}  // namespace

Json ResultsJson(const BenchRecord& record) {
  Json j = Json::Object();
  j["command"] = record.options.command_line;
  j["started"] = record.started;
  j["source_revision"] = record.revision;
  j["load_at_start"] = record.load_at_start;
  j["load_at_end"] = LoadAverage();
  j["seconds"] = record.seconds;
  Json machine = Json::Object();
  for (const auto& [k, v] : MachineInfo()) machine[k] = v;
  j["machine"] = std::move(machine);
  Json o = Json::Object();
  o["quick"] = record.options.quick;
  o["link"] = LinkJson(record.options.link);
  o["congestion_link"] = LinkJson(record.options.congestion_link);
  o["bulk_rate_bps"] = record.options.bulk_rate_bps;
  Json disk = Json::Object();  // ganesha's emulated disk; sync_ms 0 = the stock disk.
  disk["sync_ms"] = record.options.server_sync_ms;
  disk["mbps"] = static_cast<uint64_t>(record.options.server_disk_mbps);
  o["server_disk"] = std::move(disk);
  if (!record.options.proxy_config_file.empty()) o["proxy_config"] = record.options.proxy_config_extra;
  o["sizes"] = SizesJson(record.options.sizes);
  o["seed"] = record.options.seed;
  j["options"] = std::move(o);
  j["all_checks_passed"] = AllChecksPassed(record);
  Json runs = Json::Array();
  for (const RunResult& r : record.runs) {
    Json rj = Json::Object();
    rj["workload"] = r.workload;
    rj["mode"] = ModeName(r.mode);
    rj["link"] = LinkJson(r.link);
    rj["ok"] = r.ok;
    rj["error"] = r.error;
    rj["verified"] = r.report.verified;
    rj["verification"] = r.report.verification;
    rj["wall_seconds"] = r.wall_seconds;
    rj["counts_checked"] = r.counts_checked;
    rj["counts_match"] = r.counts_match;
    rj["client_calls"] = CountsJson(r.client_calls);
    rj["wan_calls"] = CountsJson(r.wan_calls);
    rj["wan_startup_calls"] = CountsJson(r.wan_startup);
    rj["wan_up_bytes"] = r.wan_up_bytes;
    rj["wan_down_bytes"] = r.wan_down_bytes;
    rj["log_dir"] = r.log_dir;
    Json stats = Json::Array();
    for (const std::string& line : r.proxy_stats) stats.Push(Json(line));
    rj["proxy_stats"] = std::move(stats);
    Json phases = Json::Array();
    for (const PhaseResult& p : r.report.phases) phases.Push(PhaseJson(p));
    rj["phases"] = std::move(phases);
    // Seconds since the run's time origin (congestion: the probes' start).
    Json series = Json::Array();
    for (const Series& s : r.report.series) series.Push(SeriesJson(s));
    rj["series"] = std::move(series);
    runs.Push(std::move(rj));
  }
  j["runs"] = std::move(runs);
  return j;
}

}  // namespace nfsedge::bench
