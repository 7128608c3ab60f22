// Runner: the benchmark stack and one run of one workload in one mode.
//
// Start() brings up, in the current private network namespace, rpcbind and
// ONE nfs-ganesha for all runs (on the emulated disk of --server-sync-ms, if
// set), plus a TCP echo server. Run() then, for a
// workload and a mode:
//   1. writes the workload's fixture files into a fresh directory of the
//      export (<workload>-<mode>/), so the upstream has never served them;
//   2. starts a fresh WAN emulator (nfsedge-wan) in front of ganesha's NFS
//      and MOUNT ports and the echo server, with the workload's link;
//   3. proxied: starts a fresh nfsedge whose upstream is the emulator;
//   4. runs the workload against the emulator (direct) or nfsedge (proxied),
//      reading the emulator's stats at each phase end;
//   5. stops nfsedge and the emulator, compares (direct) the emulator's call
//      counts with the workload's own, and removes the run's files.
//
// "Cold" therefore means: a proxy process that has never seen the files and
// an upstream (ganesha) that has never served them. The files sit in the
// server's page cache (just written), in both modes alike.
//
// Thread safety: not thread-safe; call from main()'s thread (Subprocess).

#ifndef NFSEDGE_TESTS_BENCH_RUNNER_H_
#define NFSEDGE_TESTS_BENCH_RUNNER_H_

#include <memory>
#include <string>

#include "bench_options.h"
#include "echo.h"
#include "harness/proxy_process.h"
#include "harness/testbed.h"
#include "wan_emulator.h"
#include "workload.h"

namespace nfsedge::bench {

struct RunResult {
  std::string workload;
  Mode mode = Mode::kDirect;
  LinkShape link;
  bool ok = false;
  std::string error;  // Iff !ok.
  WorkloadReport report;
  CallCounts client_calls;  // Sum over the phases.
  CallCounts wan_calls;     // Emulator, from the workload's start to the end.
  CallCounts wan_startup;   // Emulator, while nfsedge started (proxied).
  uint64_t wan_up_bytes = 0, wan_down_bytes = 0;
  // Direct runs: the emulator counted exactly the workload's calls.
  bool counts_checked = false;
  bool counts_match = false;
  double wall_seconds = 0;
  std::string log_dir;
  // Proxied runs: the counter lines nfsedge logged at exit ("stats ...").
  std::vector<std::string> proxy_stats;
};

class Runner {
 public:
  explicit Runner(BenchOptions options) : options_(std::move(options)) {}
  ~Runner() { Stop(); }

  // REQUIRES: PrivateNetwork::Enter() succeeded.
  Status Start();
  RunResult Run(const WorkloadInfo& workload, Mode mode);
  // The link a workload runs over.
  LinkShape LinkFor(const WorkloadInfo& workload) const;
  // Appends the counter lines of `proxy`'s log (it logs them at exit).
  static void CollectProxyStats(harness::ProxyProcess& proxy, RunResult* result);
  void Stop();

  const BenchOptions& options() const { return options_; }
  harness::Ganesha& ganesha() { return testbed_->ganesha(); }
  std::string WanBinary() const { return options_.build_dir + "/tests/wan/nfsedge-wan"; }
  std::string ProxyBinary() const { return options_.build_dir + "/proxy/nfsedge"; }
  // ganesha's emulated disk (--server-sync-ms), preloaded into it.
  std::string SlowDiskLibrary() const {
    return options_.build_dir + "/tests/harness/libnfsedge_slow_disk.so";
  }
  // nfsedge's options for an upstream on 127.0.0.1 at these ports, one
  // export (ganesha's, same path) with the default cache lifetimes, or with
  // every lifetime 0 iff `always_revalidate`, and the edge journal iff
  // `write_back`.
  harness::ProxyProcess::Options ProxyOptions(const std::string& work_dir, uint16_t nfs_port,
                                              uint16_t mount_port, bool always_revalidate,
                                              bool write_back = false);
  // WAN emulator options: targets ganesha NFS, ganesha MOUNT, echo (rpc=0).
  WanEmulator::Options WanOptions(const std::string& work_dir, const LinkShape& link) const;

 private:
  Status RunWorkload(const WorkloadInfo& w, Mode mode, const std::string& log_dir,
                     RunResult* result);

  const BenchOptions options_;
  std::unique_ptr<harness::Testbed> testbed_;
  std::unique_ptr<EchoServer> echo_;
};

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_RUNNER_H_
