#include "runner.h"

#include <cmath>
#include <cstdio>

#include "harness/files.h"

namespace nfsedge::bench {
namespace {

harness::TcpEndpoint Loopback(uint16_t port) {
  harness::TcpEndpoint ep;
  ep.host = "127.0.0.1";
  ep.port = port;
  return ep;
}

}  // namespace

Status Runner::Start() {
  harness::Testbed::Options t;
  t.name = "bench";
  t.start_proxy = false;
  t.ganesha.disk_sync_us = static_cast<uint32_t>(std::llround(options_.server_sync_ms * 1000));
  t.ganesha.disk_mbps = options_.server_disk_mbps;
  t.ganesha.slow_disk_library = SlowDiskLibrary();
  auto testbed = harness::Testbed::Start(t);
  if (!testbed.ok()) return Status::Error("ganesha: " + testbed.status().message());
  testbed_ = std::move(testbed).value();
  auto echo = EchoServer::Start();
  if (!echo.ok()) return echo.status();
  echo_ = std::move(echo).value();
  return harness::MakeDirs(options_.out_dir + "/logs");
}

void Runner::Stop() {
  echo_.reset();
  if (testbed_) testbed_->Stop();
}

LinkShape Runner::LinkFor(const WorkloadInfo& w) const {
  switch (w.link) {
    case LinkKind::kCongestion:
      return options_.congestion_link;
    case LinkKind::kBulk:
      return LinkShape{options_.link.rtt_ms, options_.bulk_rate_bps, options_.link.queue_bytes};
    case LinkKind::kLan:
      return LinkShape{0, 0, options_.link.queue_bytes};
    case LinkKind::kDefault:
      break;
  }
  return options_.link;
}

harness::ProxyProcess::Options Runner::ProxyOptions(const std::string& work_dir, uint16_t nfs_port,
                                                    uint16_t mount_port, bool always_revalidate,
                                                    bool write_back) {
  harness::ProxyProcess::Options p;
  p.work_dir = work_dir;
  p.binary = ProxyBinary();
  p.upstream_host = "127.0.0.1";
  p.upstream_nfs_port = nfs_port;
  p.upstream_mount_port = mount_port;
  // info: start-up and the counters at exit; per-call logging is debug.
  p.log_level = options_.proxy_log_level;
  // The export is written here rather than by ProxyProcess (p.exports stays
  // empty) so that it can carry the cache lifetimes.
  const std::string path = ganesha().export_path();
  p.extra_toml = "[[export]]\npath = \"" + path + "\"\nupstream_path = \"" + path +
                 "\"\nclients = [\"127.0.0.0/8\"]\naccess = \"rw\"\nroot_squash = false\n";
  if (always_revalidate) p.extra_toml += "acregmin = 0\nacregmax = 0\nacdirmin = 0\nacdirmax = 0\n";
  if (write_back) p.extra_toml += "write_back = true\n";
  if (!options_.proxy_config_extra.empty()) p.extra_toml += "\n" + options_.proxy_config_extra + "\n";
  // The disk tier of the data cache and the edge journal, fresh for every run.
  p.extra_toml = "[cache]\ndisk_dir = \"" + work_dir + "/cache\"\n[write]\njournal_dir = \"" +
                 work_dir + "/journal\"\n\n" + p.extra_toml;
  return p;
}

WanEmulator::Options Runner::WanOptions(const std::string& work_dir, const LinkShape& link) const {
  WanEmulator::Options w;
  w.binary = WanBinary();
  w.work_dir = work_dir;
  w.link = link;
  w.targets = {{testbed_->ganesha().nfs_port(), true},
               {testbed_->ganesha().mount_port(), true},
               {echo_->port(), false}};
  return w;
}

RunResult Runner::Run(const WorkloadInfo& w, Mode mode) {
  RunResult r;
  r.workload = w.name;
  r.mode = mode;
  r.link = LinkFor(w);
  const std::string run_name = std::string(w.name) + "-" + ModeName(mode);
  r.log_dir = options_.out_dir + "/logs/" + run_name;
  harness::RemoveTree(r.log_dir);
  auto start = std::chrono::steady_clock::now();
  Status s = harness::MakeDirs(r.log_dir);
  if (s.ok()) s = RunWorkload(w, mode, r.log_dir, &r);
  r.wall_seconds = SecondsSince(start);
  r.ok = s.ok();
  if (!s.ok()) r.error = s.message();
  for (const PhaseResult& p : r.report.phases) r.client_calls.AddAll(p.client_calls);
  if (r.ok && mode == Mode::kDirect) {
    r.counts_checked = true;
    r.counts_match = r.client_calls == r.wan_calls;
  }
  if (!options_.keep_files) harness::RemoveTree(ganesha().export_path() + "/" + run_name);
  return r;
}

void Runner::CollectProxyStats(harness::ProxyProcess& proxy, RunResult* result) {
  // The log is appended to across restarts: take the lines after the last
  // start only.
  std::vector<std::string> lines;
  std::string tail = proxy.LogTail(60);
  for (size_t pos = 0; pos < tail.size();) {
    size_t end = tail.find('\n', pos);
    if (end == std::string::npos) end = tail.size();
    std::string line = tail.substr(pos, end - pos);
    if (line.find("nfsedge ready") != std::string::npos) lines.clear();
    size_t at = line.find("stats ");
    if (at != std::string::npos) lines.push_back(line.substr(at));
    pos = end + 1;
  }
  result->proxy_stats.insert(result->proxy_stats.end(), lines.begin(), lines.end());
}

Status Runner::RunWorkload(const WorkloadInfo& w, Mode mode, const std::string& log_dir,
                           RunResult* result) {
  WorkloadContext ctx;
  ctx.run_dir = std::string(w.name) + "-" + ModeName(mode);
  ctx.local_dir = ganesha().export_path() + "/" + ctx.run_dir;
  ctx.seed = options_.seed;
  ctx.sizes = options_.sizes;
  ctx.link = result->link;
  ctx.upstream_arrival = w.write_back;
  harness::RemoveTree(ctx.local_dir);
  Status s = harness::MakeDirs(ctx.local_dir, 0777);
  if (!s.ok()) return s;
  if (w.prepare) {
    s = w.prepare(ctx);
    if (!s.ok()) return Status::Error("preparing files: " + s.message());
  }

  auto wan = WanEmulator::Start(WanOptions(log_dir, ctx.link));
  if (!wan.ok()) return wan.status();
  WanEmulator& emu = **wan;
  std::unique_ptr<harness::ProxyProcess> proxy;
  harness::TcpEndpoint nfs = Loopback(emu.port(0)), mount = Loopback(emu.port(1));
  const harness::ProxyProcess::Options proxy_options =
      ProxyOptions(log_dir + "/nfsedge", emu.port(0), emu.port(1), w.always_revalidate,
                   w.write_back);
  if (mode == Mode::kProxied) {
    auto p = harness::ProxyProcess::Start(proxy_options);
    if (!p.ok()) return Status::Error("nfsedge: " + p.status().message());
    proxy = std::move(p).value();
    nfs.port = proxy->nfs_port();
    mount.port = proxy->mount_port();
    ctx.write_back = w.write_back;
    ctx.restart_proxy = [&]() -> Status {
      harness::ExitStatus exit = proxy->Stop();
      CollectProxyStats(*proxy, result);
      if (!exit.success()) return Status::Error("nfsedge exited with " + exit.ToString());
      auto again = harness::ProxyProcess::Start(proxy_options);
      if (!again.ok()) return Status::Error("nfsedge restart: " + again.status().message());
      proxy = std::move(again).value();
      return Status::OK();
    };
  }
  auto base = emu.Snapshot();
  if (!base.ok()) return base.status();
  result->wan_startup = base->calls;
  WanStats last = *base;
  ctx.mark_wan = [&]() -> StatusOr<WanDelta> {
    auto now = emu.Snapshot();
    if (!now.ok()) return now.status();
    WanDelta d = now->Minus(last);
    last = *now;
    return d;
  };
  ctx.mount.nfs = nfs;
  ctx.mount.mount = mount;
  ctx.mount.export_path = ganesha().export_path();
  ctx.echo = Loopback(emu.port(2));

  Status run = w.run(ctx, &result->report);
  if (proxy) {
    harness::ExitStatus exit = proxy->Stop();
    CollectProxyStats(*proxy, result);
    if (run.ok() && !exit.success()) {
      run = Status::Error("nfsedge exited with " + exit.ToString() + ":\n" + proxy->LogTail(20));
    }
  }
  auto final_stats = emu.Stop();
  if (!final_stats.ok()) return run.ok() ? final_stats.status() : run;
  WanDelta total = final_stats->Minus(*base);
  result->wan_calls = total.calls;
  result->wan_up_bytes = total.up_bytes;
  result->wan_down_bytes = total.down_bytes;
  if (run.ok() && final_stats->malformed_records > 0) {
    run = Status::Error("the emulator saw malformed RPC records");
  }
  if (run.ok() && !result->report.verified) run = Status::Error("data not verified");
  return run;
}

}  // namespace nfsedge::bench
