// stablewrite: copies a file with FILE_SYNC writes, K in flight, for each K
// (Juszczak's biods). unstablewrite: sequential UNSTABLE writes, a few in
// flight, then one COMMIT, as a Linux client does at close. The data is
// checked in the upstream's exported directory afterwards.

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "content.h"
#include "workload.h"

namespace nfsedge::bench {
namespace {

using Callback = NfsConnection::Callback;
using harness::Stable;

}  // namespace

Status WriteData(Session& s, const std::string& fh, const std::string& data, uint32_t chunk,
                 int depth, Stable stable, std::vector<std::string>* verfs,
                 const std::function<Millis()>& tick, std::vector<AckSample>* acks) {
  uint64_t offset = 0;
  return s.Pipeline(
      depth,
      [&]() -> std::optional<Session::Op> {
        if (offset >= data.size()) return std::nullopt;
        const uint64_t off = offset;
        const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(chunk, data.size() - off));
        offset += len;
        return Session::Op{"WRITE",
                           [&, off, len](NfsConnection& c, Callback cb) {
                             return c.Write(fh, off, data.data() + off, len, stable, std::move(cb));
                           },
                           [=](const NfsReply& r) {
                             if (r.count != len) {
                               return Status::Error("WRITE at " + std::to_string(off) + ": " +
                                                    std::to_string(r.count) + " of " +
                                                    std::to_string(len) + " bytes");
                             }
                             if (r.committed < static_cast<uint32_t>(stable)) {
                               return Status::Error("WRITE at " + std::to_string(off) +
                                                    ": committed " + std::to_string(r.committed) +
                                                    " < asked " +
                                                    std::to_string(static_cast<uint32_t>(stable)));
                             }
                             if (verfs) verfs->push_back(r.verf);
                             if (acks) acks->emplace_back(SteadyClock::now(), len);
                             return Status::OK();
                           }};
      },
      tick);
}

std::string Content(uint64_t seed, uint64_t size) {
  std::string data(size, '\0');
  FillContent(seed, 0, data.data(), data.size());
  return data;
}

namespace {

// A write workload's start: mounted, the run's directory looked up, that
// set-up recorded as the hidden phase "mount".
struct WriteRun {
  std::unique_ptr<Session> session;
  std::unique_ptr<PhaseRecorder> phases;
  std::string dir;
};

StatusOr<WriteRun> StartRun(const WorkloadContext& ctx, WorkloadReport* report) {
  auto session = Session::Mount(ctx.mount);
  if (!session.ok()) return session.status();
  WriteRun run;
  run.session = std::move(session).value();
  run.phases = std::make_unique<PhaseRecorder>(ctx, *run.session, report);
  auto dir = run.session->LookupPath(ctx.run_dir);
  if (!dir.ok()) return dir.status();
  run.dir = std::move(dir).value();
  auto mounted = run.phases->End("mount", false);
  if (!mounted.ok()) return mounted.status();
  return run;
}

}  // namespace

Status RunStableWrite(const WorkloadContext& ctx, WorkloadReport* report) {
  const uint64_t seed = SeedFor(ctx.seed, "stablewrite");
  const std::string data = Content(seed, ctx.sizes.stable_bytes);
  auto run = StartRun(ctx, report);
  if (!run.ok()) return run.status();
  Session& s = *run->session;
  PhaseRecorder& phases = *run->phases;
  const std::string& dir = run->dir;

  const uint32_t chunk = std::min(ctx.sizes.stable_write, s.wsize());
  for (int k : ctx.sizes.stable_depths) {
    const std::string name = "copy-k" + std::to_string(k);
    phases.Begin();
    auto fh = s.CreateFile(dir, name);
    if (!fh.ok()) return fh.status();
    Status st = WriteData(s, *fh, data, chunk, k, Stable::kFileSync, nullptr);
    if (!st.ok()) return Status::Error(name + ": " + st.message());
    auto phase = phases.End("K=" + std::to_string(k));
    if (!phase.ok()) return phase.status();
    (*phase)->metrics.push_back(
        {"throughput", MiBPerSecond(data.size(), (*phase)->seconds), "MiB/s", true});
    (*phase)->metrics.push_back({"copy time", (*phase)->seconds, "s", false});
    const auto copied = std::chrono::steady_clock::now();
    st = VerifyContentFile(ctx.local_dir + "/" + name, seed, data.size());
    if (ctx.upstream_arrival) {
      // The edge journal answered; the upstream gets the data after the
      // proxy's flush delay: how long until it has all of it (direct: one
      // check of the upstream's copy, as here), and the throughput counted
      // to then. The WAN calls of that flush count in this K's phase.
      while (!st.ok() && std::chrono::steady_clock::now() - copied < std::chrono::seconds(60)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        st = VerifyContentFile(ctx.local_dir + "/" + name, seed, data.size());
      }
      const double after =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - copied).count();
      (*phase)->metrics.push_back({"upstream has it after", after, "s", false});
      (*phase)->metrics.push_back({"throughput to the upstream",
                                   MiBPerSecond(data.size(), (*phase)->seconds + after), "MiB/s",
                                   true});
      Status late = phases.AddLateWan(*phase);
      if (!late.ok()) return late;
    }
    if (!st.ok()) return Status::Error("upstream copy: " + st.message());
  }
  report->verified = true;
  report->verification = "each copy (" + std::to_string(data.size()) + " bytes, " +
                         std::to_string(chunk) +
                         "-byte FILE_SYNC writes) compared in the upstream's directory" +
                         (ctx.write_back ? " (edge journal: once it got there)" : "");
  return Status::OK();
}

namespace {

// Writes `ctx.sizes.unstable_bytes` to a fresh file named `name` in UNSTABLE
// writes of `write_size` (at most the mount's wsize), `depth` in flight,
// then one COMMIT.
Status UnstableWrite(const WorkloadContext& ctx, const std::string& name, uint32_t write_size,
                     int depth, WorkloadReport* report) {
  const uint64_t seed = SeedFor(ctx.seed, name);
  const std::string data = Content(seed, ctx.sizes.unstable_bytes);
  auto run = StartRun(ctx, report);
  if (!run.ok()) return run.status();
  Session& s = *run->session;
  PhaseRecorder& phases = *run->phases;
  const std::string& dir = run->dir;

  const uint32_t chunk = std::min(write_size, s.wsize());
  phases.Begin();
  auto fh = s.CreateFile(dir, name);
  if (!fh.ok()) return fh.status();
  std::vector<std::string> verfs;
  Status st = WriteData(s, *fh, data, chunk, depth, Stable::kUnstable, &verfs);
  if (!st.ok()) return st;
  auto commit = s.Call({"COMMIT", [&](NfsConnection& c, Callback cb) {
                          return c.Commit(*fh, 0, 0, std::move(cb));
                        }});
  if (!commit.ok()) return commit.status();
  auto phase = phases.End("write+commit");
  if (!phase.ok()) return phase.status();
  (*phase)->metrics.push_back(
      {"throughput", MiBPerSecond(data.size(), (*phase)->seconds), "MiB/s", true});
  (*phase)->metrics.push_back({"time", (*phase)->seconds, "s", false});
  for (const std::string& v : verfs) {
    // A verifier change means the server may have lost written data: a real
    // client would write again. Here it is a failure to report.
    if (v != commit->verf) return Status::Error("a WRITE verifier differs from COMMIT's");
  }
  st = VerifyContentFile(ctx.local_dir + "/" + name, seed, data.size());
  if (!st.ok()) return Status::Error("upstream file: " + st.message());
  report->verified = true;
  report->verification = std::to_string(data.size()) + " bytes in " + std::to_string(chunk) +
                         "-byte UNSTABLE writes, " + std::to_string(depth) +
                         " in flight: verifiers equal COMMIT's; file compared in the upstream's "
                         "directory";
  return Status::OK();
}

}  // namespace

Status RunUnstableWrite(const WorkloadContext& ctx, WorkloadReport* report) {
  return UnstableWrite(ctx, "unstablewrite", ctx.sizes.unstable_write, ctx.sizes.unstable_depth,
                       report);
}

Status RunUnstableWriteSmall(const WorkloadContext& ctx, WorkloadReport* report) {
  return UnstableWrite(ctx, "unstablewrite-small", ctx.sizes.unstable_small_write,
                       ctx.sizes.unstable_small_depth, report);
}

Status RunSmallFiles(const WorkloadContext& ctx, WorkloadReport* report) {
  const uint64_t seed = SeedFor(ctx.seed, "smallfiles");
  const std::string data = Content(seed, ctx.sizes.small_file_bytes);
  auto run = StartRun(ctx, report);
  if (!run.ok()) return run.status();
  Session& s = *run->session;
  PhaseRecorder& phases = *run->phases;
  const std::string& dir = run->dir;

  const uint32_t chunk = std::min(ctx.sizes.unstable_small_write, s.wsize());
  phases.Begin();
  for (int i = 0; i < ctx.sizes.small_files; ++i) {
    const std::string name = "small-" + std::to_string(i);
    auto fh = s.CreateFile(dir, name);
    if (!fh.ok()) return fh.status();
    std::vector<std::string> verfs;
    Status st = WriteData(s, *fh, data, chunk, ctx.sizes.unstable_small_depth, Stable::kUnstable,
                          &verfs);
    if (!st.ok()) return Status::Error(name + ": " + st.message());
    auto commit = s.Call({"COMMIT", [&](NfsConnection& c, Callback cb) {
                            return c.Commit(*fh, 0, 0, std::move(cb));
                          }});
    if (!commit.ok()) return commit.status();
    for (const std::string& v : verfs) {
      if (v != commit->verf) {
        return Status::Error(name + ": a WRITE verifier differs from COMMIT's");
      }
    }
  }
  auto phase = phases.End("create+write+commit");
  if (!phase.ok()) return phase.status();
  const double files = ctx.sizes.small_files;
  (*phase)->metrics.push_back({"files/s", files / (*phase)->seconds, "files/s", true});
  (*phase)->metrics.push_back({"time", (*phase)->seconds, "s", false});
  for (int i = 0; i < ctx.sizes.small_files; ++i) {
    Status st = VerifyContentFile(ctx.local_dir + "/small-" + std::to_string(i), seed, data.size());
    if (!st.ok()) return Status::Error("upstream small-" + std::to_string(i) + ": " + st.message());
  }
  report->verified = true;
  report->verification = std::to_string(ctx.sizes.small_files) + " files of " +
                         std::to_string(data.size()) + " bytes, " + std::to_string(chunk) +
                         "-byte UNSTABLE writes: verifiers equal COMMIT's; each compared in the "
                         "upstream's directory";
  return Status::OK();
}

}  // namespace nfsedge::bench
