// lan: GETATTR through a link with no delay and no rate limit: the rate with
// many calls in flight, and the latency of one call at a time, so proxied vs
// direct shows what the proxy's own hop costs. Every GETATTR is forwarded:
// the proxied run's export always revalidates, and the calls rotate over
// more files than are in flight, so none can share an upstream call.

#include <algorithm>

#include "content.h"
#include "workload.h"

namespace nfsedge::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Callback = NfsConnection::Callback;

constexpr int kFiles = 64;  // More than ever in flight (lan_depth).
constexpr uint64_t kFileSize = 1234;

std::string FileName(int i) { return "target-" + std::to_string(i); }

// Runs `calls` GETATTRs over `fhs` in turn, `depth` in flight; returns each
// latency (ms).
StatusOr<std::vector<double>> Getattrs(Session& s, const std::vector<std::string>& fhs, int calls,
                                       int depth) {
  std::vector<double> ms;
  ms.reserve(calls);
  int issued = 0;
  Status st = s.Pipeline(depth, [&]() -> std::optional<Session::Op> {
    if (issued == calls) return std::nullopt;
    const std::string* fh = &fhs[issued++ % fhs.size()];
    auto sent = std::make_shared<Clock::time_point>();
    return Session::Op{
        "GETATTR",
        [fh, sent](NfsConnection& c, Callback cb) {
          *sent = Clock::now();
          return c.Getattr(*fh, std::move(cb));
        },
        [&, sent](const NfsReply& r) {
          ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - *sent).count());
          if (!r.attr || r.attr->size != kFileSize) {
            return Status::Error("GETATTR: wrong size");
          }
          return Status::OK();
        }};
  });
  if (!st.ok()) return st;
  return ms;
}

}  // namespace

Status PrepareLan(const WorkloadContext& ctx) {
  for (int i = 0; i < kFiles; ++i) {
    Status s =
        WriteContentFile(ctx.local_dir + "/" + FileName(i), SeedFor(ctx.seed, "lan"), kFileSize);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status RunLan(const WorkloadContext& ctx, WorkloadReport* report) {
  if (ctx.sizes.lan_depth >= kFiles) return Status::Error("lan: depth must be below the files");
  auto session = Session::Mount(ctx.mount);
  if (!session.ok()) return session.status();
  Session& s = **session;
  PhaseRecorder phases(ctx, s, report);
  auto dir = s.LookupPath(ctx.run_dir);
  if (!dir.ok()) return dir.status();
  std::vector<std::string> fhs;
  for (int i = 0; i < kFiles; ++i) {
    auto r = s.Lookup(*dir, FileName(i));
    if (!r.ok()) return r.status();
    fhs.push_back(r->fh);
  }
  auto mounted = phases.End("mount", false);
  if (!mounted.ok()) return mounted.status();

  struct Shape {
    int depth;
    int calls;
  };
  const int single = std::max(1, ctx.sizes.lan_calls / 10);
  for (Shape shape : {Shape{ctx.sizes.lan_depth, ctx.sizes.lan_calls}, Shape{1, single}}) {
    phases.Begin();
    auto ms = Getattrs(s, fhs, shape.calls, shape.depth);
    if (!ms.ok()) return ms.status();
    auto phase = phases.End(std::to_string(shape.depth) + " in flight");
    if (!phase.ok()) return phase.status();
    PhaseResult& p = **phase;
    p.metrics.push_back({"GETATTR rate", shape.calls / std::max(p.seconds, 1e-9), "calls/s", true});
    p.metrics.push_back({"latency p50", Quantile(&*ms, 0.5), "ms", false});
    p.metrics.push_back({"latency p99", Quantile(&*ms, 0.99), "ms", false});
  }
  report->verified = true;
  report->verification = "every GETATTR returned its file's size";
  return Status::OK();
}

}  // namespace nfsedge::bench
