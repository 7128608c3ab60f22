// congestion: a bulk FILE_SYNC write (K in flight) over a slow link with a
// bottleneck queue, while two probes measure latency every 100 ms through the
// same link: a GETATTR on a second connection of the same client, and a plain
// TCP echo flow. A short idle phase first gives the probes' base latency.
//
// The GETATTRs must reach the upstream: the proxied run's export always
// revalidates (WorkloadInfo::always_revalidate), consecutive probes go to
// different files (kProbeFiles, more than can be in flight at once, so no
// two could be coalesced), and each phase checks that the emulator saw at
// least one GETATTR per probe.
//
// Besides the percentiles, the run records its time series (time origin:
// the idle phase's start): every probe's latency by send time, and the bulk
// write's progress (bytes acknowledged at each reply, and the throughput
// every kThroughputStep, measured from reply to reply over kThroughputWindow
// or more: ThroughputSeries()).

#include <algorithm>

#include "content.h"
#include "echo.h"
#include "workload.h"

namespace nfsedge::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kProbeFiles = 32;
// The bulk throughput series: a point every kThroughputStep, over the
// replies of the last kThroughputWindow (a proxied run's gathered 256 KiB
// WRITEs take about a second each on the 2 Mbit/s link).
constexpr std::chrono::duration<double> kThroughputStep(0.5);
constexpr std::chrono::duration<double> kThroughputWindow(2.0);  // Named in the series.

std::string ProbeFile(int i) { return "probe-" + std::to_string(i); }

// Sends a GETATTR probe and an echo probe every `interval` while active.
class Prober {
 public:
  Prober(NfsConnection& conn, std::vector<std::string> fhs, EchoProbe& echo, Millis interval)
      : conn_(conn), fhs_(std::move(fhs)), echo_(echo), interval_(interval) {}

  void set_active(bool active) {
    active_ = active;
    next_ = Clock::now();
  }
  // EventLoop tick: sends the probes when due; returns the time to the next.
  Millis Tick() {
    if (!active_) return Millis(100);
    Clock::time_point now = Clock::now();
    if (now >= next_) {
      Clock::time_point sent = now;
      const std::string& fh = fhs_[sent_ % fhs_.size()];
      ++sent_;
      Status s = conn_.Getattr(fh, [this, sent](const NfsReply& r) {
        --getattr_in_flight_;
        if (!r.ok()) error_ = Status::Error("GETATTR probe: " + r.Describe());
        getattr_done_.emplace_back(
            sent, std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
      });
      if (s.ok())
        ++getattr_in_flight_;
      else
        error_ = s;
      if (Status e = echo_.Send(); !e.ok()) error_ = e;
      next_ += interval_;
      if (next_ < now) next_ = now + interval_;  // Never burst to catch up.
    }
    return std::chrono::duration_cast<Millis>(next_ - now);
  }
  bool idle() const { return getattr_in_flight_ == 0 && echo_.outstanding() == 0; }
  // GETATTR probes sent so far.
  uint64_t sent() const { return sent_; }
  const Status& error() const { return error_; }
  // Every answered GETATTR probe: send time, latency (ms).
  const std::vector<LatencySample>& getattr_samples() const { return getattr_done_; }
  std::vector<double> GetattrMs(Clock::time_point from, Clock::time_point to) const {
    std::vector<double> out;
    for (const auto& [sent, ms] : getattr_done_) {
      if (sent >= from && sent < to) out.push_back(ms);
    }
    return out;
  }

 private:
  NfsConnection& conn_;
  const std::vector<std::string> fhs_;
  EchoProbe& echo_;
  const Millis interval_;
  bool active_ = false;
  Clock::time_point next_;
  int getattr_in_flight_ = 0;
  uint64_t sent_ = 0;
  std::vector<LatencySample> getattr_done_;
  Status error_;
};

// Returns OK iff the emulator saw at least `probes` GETATTRs in phase `p`.
Status CheckProbesReachedUpstream(const PhaseResult& p, uint64_t probes) {
  uint64_t seen = p.wan.calls.Get("NFS3.GETATTR");
  if (seen >= probes) return Status::OK();
  return Status::Error(p.name + ": " + std::to_string(probes) + " GETATTR probes but only " +
                       std::to_string(seen) + " GETATTRs crossed the WAN");
}

// Returns the run's series (time origin t0), or an error iff they miss a
// probe that was sent or a byte that was written.
StatusOr<std::vector<Series>> MakeSeries(const Prober& prober, const EchoProbe& echo,
                                         const std::vector<AckSample>& acks, uint64_t bytes,
                                         Clock::time_point t0, Clock::time_point bulk_start,
                                         Clock::time_point bulk_end) {
  uint64_t acked = 0;
  for (const auto& ack : acks) acked += ack.second;
  if (prober.sent() == 0 || prober.getattr_samples().size() != prober.sent() ||
      echo.samples().size() != echo.sent() || acked != bytes) {
    return Status::Error("series: " + std::to_string(prober.getattr_samples().size()) + " of " +
                         std::to_string(prober.sent()) + " GETATTR probes, " +
                         std::to_string(echo.samples().size()) + " of " +
                         std::to_string(echo.sent()) + " echo probes, " + std::to_string(acked) +
                         " of " + std::to_string(bytes) + " bytes acknowledged");
  }
  return std::vector<Series>{LatencySeries("GETATTR latency", prober.getattr_samples(), t0),
                             LatencySeries("echo latency", echo.samples(), t0),
                             ThroughputSeries("bulk throughput (2 s window)", acks, t0, bulk_start,
                                              bulk_end, kThroughputStep, kThroughputWindow),
                             AckedSeries("bulk acknowledged", acks, t0)};
}

void AddLatencies(const std::string& what, std::vector<double> ms, PhaseResult* p) {
  p->metrics.push_back({what + " p50", Quantile(&ms, 0.5), "ms", false});
  p->metrics.push_back({what + " p99", Quantile(&ms, 0.99), "ms", false});
}

}  // namespace

Status PrepareCongestion(const WorkloadContext& ctx) {
  for (int i = 0; i < kProbeFiles; ++i) {
    Status s =
        WriteContentFile(ctx.local_dir + "/" + ProbeFile(i), SeedFor(ctx.seed, "probe"), 4096);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status RunCongestion(const WorkloadContext& ctx, WorkloadReport* report) {
  const uint64_t seed = SeedFor(ctx.seed, "congestion");
  const std::string data = Content(seed, ctx.sizes.congestion_bytes);
  auto session = Session::Mount(ctx.mount);
  if (!session.ok()) return session.status();
  Session& s = **session;
  PhaseRecorder phases(ctx, s, report);
  auto dir = s.LookupPath(ctx.run_dir);
  if (!dir.ok()) return dir.status();
  std::vector<std::string> probe_fhs;
  for (int i = 0; i < kProbeFiles; ++i) {
    auto r = s.Lookup(*dir, ProbeFile(i));
    if (!r.ok()) return r.status();
    probe_fhs.push_back(r->fh);
  }
  auto probe_conn = s.OpenConnection();
  if (!probe_conn.ok()) return probe_conn.status();
  auto echo = EchoProbe::Connect(ctx.echo);
  if (!echo.ok()) return Status::Error("echo probe: " + echo.status().message());
  Prober prober(**probe_conn, probe_fhs, **echo, Millis(ctx.sizes.probe_interval_ms));
  Status echo_error;
  s.loop().AddFd((*echo)->fd(), [&] {
    if (Status e = (*echo)->OnReadable(); !e.ok()) echo_error = e;
  });
  auto tick = [&] { return prober.Tick(); };
  auto drain = [&] {
    prober.set_active(false);
    return s.loop().Run([&] { return prober.idle() || !echo_error.ok(); }, s.idle_timeout());
  };
  auto mounted = phases.End("mount", false);
  if (!mounted.ok()) return mounted.status();

  // Idle: the probes alone.
  phases.Begin();
  uint64_t probes_before = prober.sent();
  Clock::time_point idle_start = Clock::now();
  auto idle_end = idle_start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(ctx.sizes.idle_probe_seconds));
  prober.set_active(true);
  Status st = s.loop().Run([&] { return Clock::now() >= idle_end; }, s.idle_timeout(), tick);
  if (st.ok()) st = drain();
  if (st.ok()) st = echo_error.ok() ? prober.error() : echo_error;
  if (!st.ok()) return Status::Error("idle probes: " + st.message());
  auto idle = phases.End("idle");
  if (!idle.ok()) return idle.status();
  st = CheckProbesReachedUpstream(**idle, prober.sent() - probes_before);
  if (!st.ok()) return st;
  AddLatencies("GETATTR", prober.GetattrMs(idle_start, idle_end), *idle);
  AddLatencies("echo", (*echo)->LatenciesMs(idle_start, idle_end), *idle);

  // Bulk: the write with the probes beside it.
  phases.Begin();
  auto fh = s.CreateFile(*dir, "bulk");
  if (!fh.ok()) return fh.status();
  const uint32_t chunk = std::min(ctx.sizes.stable_write, s.wsize());
  probes_before = prober.sent();
  prober.set_active(true);
  Clock::time_point bulk_start = Clock::now();
  std::vector<AckSample> acks;
  st = WriteData(s, *fh, data, chunk, ctx.sizes.congestion_depth, harness::Stable::kFileSync,
                 nullptr, tick, &acks);
  Clock::time_point bulk_end = Clock::now();
  if (st.ok()) st = drain();
  if (st.ok()) st = echo_error.ok() ? prober.error() : echo_error;
  if (!st.ok()) return Status::Error("bulk write: " + st.message());
  auto bulk = phases.End("bulk");
  if (!bulk.ok()) return bulk.status();
  PhaseResult& p = **bulk;
  st = CheckProbesReachedUpstream(p, prober.sent() - probes_before);
  if (!st.ok()) return st;
  AddLatencies("GETATTR", prober.GetattrMs(bulk_start, bulk_end), &p);
  AddLatencies("echo", (*echo)->LatenciesMs(bulk_start, bulk_end), &p);
  const double bulk_seconds = std::chrono::duration<double>(bulk_end - bulk_start).count();
  p.metrics.push_back({"throughput", MiBPerSecond(data.size(), bulk_seconds), "MiB/s", true});
  if (ctx.link.rate_bps > 0 && bulk_seconds > 0) {
    p.metrics.push_back({"up-link utilisation",
                         100.0 * p.wan.up_bytes * 8 / (ctx.link.rate_bps * bulk_seconds), "%",
                         true});
  }
  s.loop().RemoveFd((*echo)->fd());
  auto series = MakeSeries(prober, **echo, acks, data.size(), idle_start, bulk_start, bulk_end);
  if (!series.ok()) return series.status();
  report->series = std::move(series).value();

  st = VerifyContentFile(ctx.local_dir + "/bulk", seed, data.size());
  if (!st.ok()) return Status::Error("upstream file: " + st.message());
  report->verified = true;
  report->verification = std::to_string(data.size()) +
                         " bytes written, compared in the upstream's directory; every probe "
                         "answered and reached the upstream";
  return Status::OK();
}

}  // namespace nfsedge::bench
