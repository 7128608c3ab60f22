#include "workload.h"

#include <algorithm>
#include <cmath>

namespace nfsedge::bench {

StatusOr<PhaseResult*> PhaseRecorder::End(const std::string& name, bool shown) {
  PhaseResult phase;
  phase.name = name;
  phase.shown = shown;
  phase.seconds = SecondsSince(start_);
  CallCounts now = session_.counts();
  phase.client_calls = now.Minus(counted_);
  counted_ = now;
  if (ctx_.mark_wan) {
    auto wan = ctx_.mark_wan();
    if (!wan.ok()) return Status::Error("WAN stats after " + name + ": " + wan.status().message());
    phase.wan = std::move(wan).value();
  }
  report_->phases.push_back(std::move(phase));
  start_ = std::chrono::steady_clock::now();
  return &report_->phases.back();
}

Status PhaseRecorder::AddLateWan(PhaseResult* phase) {
  if (!ctx_.mark_wan) return Status::OK();
  auto wan = ctx_.mark_wan();
  if (!wan.ok()) {
    return Status::Error("WAN stats after " + phase->name + ": " + wan.status().message());
  }
  phase->wan.calls.AddAll(wan->calls);
  phase->wan.up_bytes += wan->up_bytes;
  phase->wan.down_bytes += wan->down_bytes;
  return Status::OK();
}

const std::vector<WorkloadInfo>& AllWorkloads() {
  static const std::vector<WorkloadInfo> kAll = {
      {"treewalk",
       "tar c of a source tree: READDIRPLUS, then LOOKUP, GETATTR, ACCESS, READ "
       "per entry, one call at a time; cold, warm, then once the cache's lifetimes have passed",
       LinkKind::kDefault, false, &PrepareTreewalk, &RunTreewalk},
      {"stablewrite", "copy a file with FILE_SYNC writes, K in flight (Juszczak's biods)",
       LinkKind::kDefault, false, nullptr, &RunStableWrite},
      {"stablewrite-journal",
       "stablewrite with the edge journal (write_back): FILE_SYNC answered from the proxy's "
       "disk",
       LinkKind::kDefault, false, nullptr, &RunStableWrite, true},
      {"unstablewrite", "sequential UNSTABLE writes, 8 in flight, then COMMIT", LinkKind::kBulk,
       false, nullptr, &RunUnstableWrite},
      {"unstablewrite-small",
       "sequential 64 KiB UNSTABLE writes, 4 in flight, then COMMIT (a small-window client)",
       LinkKind::kBulk, false, nullptr, &RunUnstableWriteSmall},
      {"smallfiles",
       "small files one after another: CREATE, 64 KiB UNSTABLE writes (4 in flight), COMMIT "
       "(a copy of small files)",
       LinkKind::kDefault, false, nullptr, &RunSmallFiles},
      {"seqread",
       "sequential reads, 4 in flight; cold, warm, and again after a proxy restart (disk tier)",
       LinkKind::kBulk, false,
       &PrepareSeqRead, &RunSeqRead},
      {"strideread", "2-, 4-, 8-stride reads of 8 KiB blocks (Ellard & Seltzer), cold",
       LinkKind::kBulk, false, &PrepareStrideRead, &RunStrideRead},
      {"congestion",
       "bulk FILE_SYNC write over a slow link with GETATTR (forwarded) and TCP echo "
       "probes",
       LinkKind::kCongestion, true, &PrepareCongestion, &RunCongestion},
      {"lan", "GETATTR rate and latency with no WAN delay (every GETATTR forwarded)",
       LinkKind::kLan, true, &PrepareLan, &RunLan},
  };
  return kAll;
}

const WorkloadInfo* FindWorkload(const std::string& name) {
  for (const WorkloadInfo& w : AllWorkloads()) {
    if (name == w.name) return &w;
  }
  return nullptr;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double MiBPerSecond(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / kMiB / seconds : 0;
}

double Quantile(std::vector<double>* samples, double q) {
  if (samples->empty()) return 0;
  std::sort(samples->begin(), samples->end());
  size_t i = static_cast<size_t>(std::ceil(q * samples->size()));
  return (*samples)[std::clamp<size_t>(i, 1, samples->size()) - 1];
}

}  // namespace nfsedge::bench
