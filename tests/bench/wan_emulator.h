// WanEmulator runs the nfsedge-wan program (tests/wan/) for one benchmark
// run: one listening port per target on 127.0.0.1, the run's link shape, and
// its stats file, read at phase ends (SIGUSR1) and at the end (SIGTERM).
//
// Thread safety: not thread-safe (owns a Subprocess).

#ifndef NFSEDGE_TESTS_BENCH_WAN_EMULATOR_H_
#define NFSEDGE_TESTS_BENCH_WAN_EMULATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "call_counts.h"
#include "harness/status.h"
#include "harness/subprocess.h"
#include "workload.h"

namespace nfsedge::bench {

// The emulator's cumulative counters.
struct WanStats {
  CallCounts calls;  // calls_by_name
  uint64_t up_bytes = 0;
  uint64_t down_bytes = 0;
  uint64_t connections = 0;
  uint64_t malformed_records = 0;
  uint64_t non_rpc_streams = 0;
  // Returns this minus `earlier`.
  WanDelta Minus(const WanStats& earlier) const;
};

// Parses the emulator's stats file (tests/wan/README.md).
harness::StatusOr<WanStats> ParseWanStats(const std::string& json);

class WanEmulator {
 public:
  struct Target {
    uint16_t port;    // On 127.0.0.1.
    bool rpc = true;  // false: a plain TCP flow (not parsed as ONC RPC).
  };
  struct Options {
    std::string binary;    // nfsedge-wan.
    std::string work_dir;  // Log and stats file. REQUIRES: exists.
    LinkShape link;
    std::vector<Target> targets;
  };

  // Starts the emulator and waits for its "ready" line.
  static harness::StatusOr<std::unique_ptr<WanEmulator>> Start(const Options& options);
  ~WanEmulator() { Stop().status().IgnoreError(); }

  // The port on 127.0.0.1 relaying to targets[i].
  uint16_t port(size_t i) const { return ports_.at(i); }
  // Asks for a stats file now (SIGUSR1) and returns it.
  harness::StatusOr<WanStats> Snapshot();
  // Stops the emulator (SIGTERM); returns its final stats. Idempotent.
  harness::StatusOr<WanStats> Stop();
  std::string LogTail() const { return process_->LogTail(20); }
  bool IsRunning() { return !stopped_ && process_->IsRunning(); }
  pid_t pid() const { return process_->pid(); }

 private:
  WanEmulator(std::unique_ptr<harness::Subprocess> p, std::string stats_path)
      : process_(std::move(p)), stats_path_(std::move(stats_path)) {}
  harness::StatusOr<WanStats> ReadStats() const;

  std::unique_ptr<harness::Subprocess> process_;
  const std::string stats_path_;
  std::vector<uint16_t> ports_;
  bool stopped_ = false;
  harness::StatusOr<WanStats> final_ = harness::Status::Error("not stopped");
};

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_WAN_EMULATOR_H_
