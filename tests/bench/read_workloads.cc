// seqread: one file read sequentially in large reads, a few in flight; cold
// (first read through a fresh mount and proxy), then warm (again).
// strideread: files read in N-stride patterns (Ellard & Seltzer): the file is
// cut into N equal components read in interleaved fashion (block j of
// component 0, block j of component 1, ..., then block j + 1), with a fresh
// file per pattern so each pattern is cold. Every block read is checked.

#include <algorithm>

#include "content.h"
#include "workload.h"

namespace nfsedge::bench {
namespace {

using Callback = NfsConnection::Callback;

std::string StrideFile(int n) { return "stride-" + std::to_string(n) + ".dat"; }

// Reads the blocks of `fh` at the offsets `offset_of(i)` for i in [0, count),
// `len` bytes each, `depth` in flight, checking the data against `seed`.
Status ReadBlocks(Session& s, const std::string& fh, uint64_t seed, uint64_t count, uint32_t len,
                  int depth, const std::function<uint64_t(uint64_t)>& offset_of) {
  uint64_t next = 0;
  return s.Pipeline(depth, [&]() -> std::optional<Session::Op> {
    if (next >= count) return std::nullopt;
    const uint64_t off = offset_of(next++);
    return Session::Op{
        "READ",
        [&, off](NfsConnection& c, Callback cb) { return c.Read(fh, off, len, std::move(cb)); },
        [=](const NfsReply& r) {
          if (r.count != len) {
            return Status::Error("READ at " + std::to_string(off) + ": " + std::to_string(r.count) +
                                 " of " + std::to_string(len) + " bytes");
          }
          if (FirstMismatch(seed, off, r.data, r.count) >= 0) {
            return Status::Error("READ at " + std::to_string(off) + ": wrong data");
          }
          return Status::OK();
        }};
  });
}

}  // namespace

Status PrepareSeqRead(const WorkloadContext& ctx) {
  return WriteContentFile(ctx.local_dir + "/seq.dat", SeedFor(ctx.seed, "seq.dat"),
                          ctx.sizes.seq_bytes);
}

Status RunSeqRead(const WorkloadContext& ctx, WorkloadReport* report) {
  const uint64_t seed = SeedFor(ctx.seed, "seq.dat");
  auto session = Session::Mount(ctx.mount);
  if (!session.ok()) return session.status();
  Session& s = **session;
  PhaseRecorder phases(ctx, s, report);
  auto fh = s.LookupPath(ctx.run_dir + "/seq.dat");
  if (!fh.ok()) return fh.status();
  auto mounted = phases.End("mount", false);
  if (!mounted.ok()) return mounted.status();

  const uint32_t len = std::min(ctx.sizes.seq_read, s.rsize());
  const uint64_t bytes = ctx.sizes.seq_bytes / len * len;
  for (const char* name : {"cold", "warm"}) {
    phases.Begin();
    Status st = ReadBlocks(s, *fh, seed, bytes / len, len, ctx.sizes.seq_depth,
                           [&](uint64_t i) { return i * len; });
    if (!st.ok()) return Status::Error(std::string(name) + " read: " + st.message());
    auto phase = phases.End(name);
    if (!phase.ok()) return phase.status();
    (*phase)->metrics.push_back(
        {"throughput", MiBPerSecond(bytes, (*phase)->seconds), "MiB/s", true});
    (*phase)->metrics.push_back({"time", (*phase)->seconds, "s", false});
  }
  // "restart": proxied, nfsedge restarts (memory cache gone, disk tier
  // kept) and a new client mount reads the file again; direct, a new mount
  // reads it again (the same work without a proxy).
  if (ctx.restart_proxy) {
    Status st = ctx.restart_proxy();
    if (!st.ok()) return st;
  }
  auto again = Session::Mount(ctx.mount);
  if (!again.ok()) return again.status();
  Session& s2 = **again;
  PhaseRecorder phases2(ctx, s2, report);
  auto fh2 = s2.LookupPath(ctx.run_dir + "/seq.dat");
  if (!fh2.ok()) return fh2.status();
  auto remounted = phases2.End("remount", false);
  if (!remounted.ok()) return remounted.status();
  phases2.Begin();
  Status st = ReadBlocks(s2, *fh2, seed, bytes / len, len, ctx.sizes.seq_depth,
                         [&](uint64_t i) { return i * len; });
  if (!st.ok()) return Status::Error("read after restart: " + st.message());
  auto phase = phases2.End("after restart");
  if (!phase.ok()) return phase.status();
  (*phase)->metrics.push_back({"throughput", MiBPerSecond(bytes, (*phase)->seconds), "MiB/s", true});
  (*phase)->metrics.push_back({"time", (*phase)->seconds, "s", false});
  report->verified = true;
  report->verification = std::to_string(bytes) + " bytes in " + std::to_string(len) +
                         "-byte reads compared, three times";
  return Status::OK();
}

Status PrepareStrideRead(const WorkloadContext& ctx) {
  for (int n : ctx.sizes.strides) {
    const std::string name = StrideFile(n);
    Status st = WriteContentFile(ctx.local_dir + "/" + name, SeedFor(ctx.seed, name),
                                 ctx.sizes.stride_bytes);
    if (!st.ok()) return st;
  }
  return Status::OK();
}

Status RunStrideRead(const WorkloadContext& ctx, WorkloadReport* report) {
  auto session = Session::Mount(ctx.mount);
  if (!session.ok()) return session.status();
  Session& s = **session;
  PhaseRecorder phases(ctx, s, report);
  std::vector<std::string> fhs;
  for (int n : ctx.sizes.strides) {
    auto fh = s.LookupPath(ctx.run_dir + "/" + StrideFile(n));
    if (!fh.ok()) return fh.status();
    fhs.push_back(*fh);
  }
  auto mounted = phases.End("mount", false);
  if (!mounted.ok()) return mounted.status();

  const uint32_t len = std::min(ctx.sizes.stride_block, s.rsize());
  uint64_t total = 0;
  for (size_t f = 0; f < fhs.size(); ++f) {
    const int n = ctx.sizes.strides[f];
    const uint64_t per_component = ctx.sizes.stride_bytes / len / n;
    const uint64_t blocks = per_component * n;
    phases.Begin();
    Status st = ReadBlocks(s, fhs[f], SeedFor(ctx.seed, StrideFile(n)), blocks, len,
                           ctx.sizes.stride_depth, [&](uint64_t i) {
                             uint64_t component = i % n, step = i / n;
                             return (component * per_component + step) * len;
                           });
    if (!st.ok()) return Status::Error(std::to_string(n) + "-stride: " + st.message());
    auto phase = phases.End(std::to_string(n) + "-stride");
    if (!phase.ok()) return phase.status();
    (*phase)->metrics.push_back(
        {"throughput", MiBPerSecond(blocks * len, (*phase)->seconds), "MiB/s", true});
    (*phase)->metrics.push_back({"time", (*phase)->seconds, "s", false});
    total += blocks * len;
  }
  report->verified = true;
  report->verification =
      std::to_string(total) + " bytes in " + std::to_string(len) + "-byte reads compared";
  return Status::OK();
}

}  // namespace nfsedge::bench
