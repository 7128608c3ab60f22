// The benchmark workloads: what each one needs from the runner (a place to
// mount, its directory on the upstream's disk, a way to mark the end of a
// phase and learn what crossed the emulated WAN meanwhile) and what it hands
// back (timed phases with metrics and call counts, whether its data checked
// out). Each workload is one function over one client mount (Session).
//
// Thread safety: plain values; a workload runs on one thread.

#ifndef NFSEDGE_TESTS_BENCH_WORKLOAD_H_
#define NFSEDGE_TESTS_BENCH_WORKLOAD_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "call_counts.h"
#include "series.h"
#include "session.h"

namespace nfsedge::bench {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

// Sizes and shapes of every workload (defaults: the full run of the issue).
struct BenchSizes {
  int tree_files = 2100;
  int tree_dirs = 150;
  uint64_t stable_bytes = 10 * kMiB;
  uint32_t stable_write = 32 * kKiB;
  std::vector<int> stable_depths = {1, 3, 7, 11, 15};
  uint64_t unstable_bytes = 64 * kMiB;
  uint32_t unstable_write = 1 * kMiB;
  int unstable_depth = 8;
  // unstablewrite-small: the same bytes from a small-window client.
  uint32_t unstable_small_write = 64 * kKiB;
  int unstable_small_depth = 4;
  // smallfiles: files created, written and committed one after another.
  int small_files = 32;
  uint64_t small_file_bytes = 256 * kKiB;
  uint64_t seq_bytes = 64 * kMiB;
  uint32_t seq_read = 128 * kKiB;
  int seq_depth = 4;
  uint64_t stride_bytes = 64 * kMiB;
  uint32_t stride_block = 8 * kKiB;
  std::vector<int> strides = {2, 4, 8};
  int stride_depth = 8;
  uint64_t congestion_bytes = 10 * kMiB;
  int congestion_depth = 8;
  int probe_interval_ms = 100;
  double idle_probe_seconds = 1.0;  // Probing before the bulk write starts.
  int lan_calls = 200000;
  int lan_depth = 32;
};

// The emulated link of one run, per direction.
struct LinkShape {
  double rtt_ms = 50;
  uint64_t rate_bps = 0;  // 0: unlimited.
  uint64_t queue_bytes = 256 * kKiB;
};

// What crossed the emulated WAN during one phase (a difference of two
// snapshots of the emulator's stats).
struct WanDelta {
  CallCounts calls;
  uint64_t up_bytes = 0;    // Client to server.
  uint64_t down_bytes = 0;  // Server to client.
};

struct Metric {
  std::string name;  // "time", "throughput", "GETATTR p99"...
  double value = 0;
  std::string unit;  // "s", "MiB/s", "ms", "calls/s", "%".
  bool higher_is_better = false;
};

struct PhaseResult {
  std::string name;   // "cold", "K=7", "2-stride"...
  bool shown = true;  // false: set-up (mount, lookups), only in the JSON.
  double seconds = 0;
  std::vector<Metric> metrics;  // metrics[0] is the headline (charted).
  CallCounts client_calls;      // What the workload sent in this phase.
  WanDelta wan;                 // What crossed the WAN in this phase.
};

struct WorkloadContext {
  Session::Options mount;  // Where to mount: the emulator (direct) or nfsedge.
  std::string run_dir;     // This run's directory, relative to the export root.
  std::string local_dir;   // The same directory on the upstream's disk.
  uint64_t seed = 1;
  BenchSizes sizes;
  LinkShape link;
  harness::TcpEndpoint echo;  // An echo service reached through the WAN.
  // Ends a phase: returns what crossed the WAN since the previous call.
  std::function<StatusOr<WanDelta>()> mark_wan;
  // Proxied runs: stops nfsedge and starts it again with the same config
  // (its disk cache survives; clients must mount again). Empty when direct.
  std::function<Status()> restart_proxy;
  // Proxied through an export with the edge journal: stable writes reach the
  // upstream after the proxy's flush delay, not before their reply.
  bool write_back = false;
  // The workload measures, in both modes, when the data is on the upstream
  // as well as when the client was answered (the edge journal's workload).
  bool upstream_arrival = false;
};

struct WorkloadReport {
  std::vector<PhaseResult> phases;
  bool verified = false;     // Every byte read or written was checked.
  std::string verification;  // What was checked, for the report.
  // Values over time (congestion: probe latencies, bulk progress), time
  // origin the same for every series of the run; empty for most workloads.
  std::vector<Series> series;
};

// Times phases of one workload run and collects their call counts.
class PhaseRecorder {
 public:
  PhaseRecorder(const WorkloadContext& ctx, const Session& session, WorkloadReport* report)
      : ctx_(ctx), session_(session), report_(report) {}

  // Starts timing the next phase (calls made since the last End() count in
  // it, time only from here).
  void Begin() { start_ = std::chrono::steady_clock::now(); }
  // Ends the phase: records its time, calls and WAN delta; returns it so the
  // caller can add metrics. The pointer is valid until the next End().
  StatusOr<PhaseResult*> End(const std::string& name, bool shown = true);
  // Adds to `phase` (the last ended) the WAN calls and bytes since its End():
  // what the proxy sent for it after its clock stopped (the edge journal's
  // flush of the writes it acknowledged).
  Status AddLateWan(PhaseResult* phase);

 private:
  const WorkloadContext& ctx_;
  const Session& session_;
  WorkloadReport* report_;
  CallCounts counted_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Which link a workload runs over.
enum class LinkKind {
  kDefault,     // The run's --rtt-ms / --rate-bps.
  kCongestion,  // The congestion link (--congestion-*).
  kBulk,        // --rtt-ms and --queue-bytes at --bulk-rate-bps.
  kLan,         // No delay, no rate limit.
};

struct WorkloadInfo {
  const char* name;
  const char* summary;
  LinkKind link;
  // Proxied runs: the export always revalidates (acregmin, acregmax,
  // acdirmin, acdirmax = 0), so every GETATTR is forwarded upstream. For
  // workloads that measure forwarding, not caching.
  bool always_revalidate;
  // Writes fixture files under ctx.local_dir (not timed, no NFS calls);
  // nullptr: none.
  Status (*prepare)(const WorkloadContext& ctx);
  Status (*run)(const WorkloadContext& ctx, WorkloadReport* report);
  // Proxied runs: the export has the edge journal (write_back = true).
  bool write_back = false;
};

// All workloads, in run order.
const std::vector<WorkloadInfo>& AllWorkloads();
// Returns nullptr iff there is no workload `name`.
const WorkloadInfo* FindWorkload(const std::string& name);

// Workload entry points (one file each).
Status PrepareTreewalk(const WorkloadContext& ctx);
Status RunTreewalk(const WorkloadContext& ctx, WorkloadReport* report);
Status RunStableWrite(const WorkloadContext& ctx, WorkloadReport* report);
Status RunUnstableWrite(const WorkloadContext& ctx, WorkloadReport* report);
Status RunUnstableWriteSmall(const WorkloadContext& ctx, WorkloadReport* report);
Status RunSmallFiles(const WorkloadContext& ctx, WorkloadReport* report);
Status PrepareSeqRead(const WorkloadContext& ctx);
Status RunSeqRead(const WorkloadContext& ctx, WorkloadReport* report);
Status PrepareStrideRead(const WorkloadContext& ctx);
Status RunStrideRead(const WorkloadContext& ctx, WorkloadReport* report);
Status PrepareCongestion(const WorkloadContext& ctx);
Status RunCongestion(const WorkloadContext& ctx, WorkloadReport* report);
Status PrepareLan(const WorkloadContext& ctx);
Status RunLan(const WorkloadContext& ctx, WorkloadReport* report);

// Helpers shared by the workloads.
// Returns the first `size` bytes of stream `seed`.
std::string Content(uint64_t seed, uint64_t size);
// Writes `data` to `fh` in `chunk`-byte writes with `depth` in flight. Every
// reply must report the whole count written with at least `stable`; their
// verifiers go to `verfs` (if set). `tick`: see Session::Pipeline(). Each
// reply's arrival time and byte count go to `acks` (if set).
Status WriteData(Session& s, const std::string& fh, const std::string& data, uint32_t chunk,
                 int depth, harness::Stable stable, std::vector<std::string>* verfs,
                 const std::function<Millis()>& tick = {}, std::vector<AckSample>* acks = nullptr);
double SecondsSince(std::chrono::steady_clock::time_point start);
double MiBPerSecond(uint64_t bytes, double seconds);
// Returns the q-quantile (0..1) of `samples` (sorted in place); 0 if empty.
double Quantile(std::vector<double>* samples, double q);

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_WORKLOAD_H_
