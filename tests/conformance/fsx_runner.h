// Helpers shared by the conformance tests: run the nfsedge-fsx binaries as processes,
// read their verdict, and fingerprint what the server holds on its disk.
//
// Thread safety: functions; FsxProcess is not thread-safe (it owns a Subprocess).

#ifndef NFSEDGE_TESTS_CONFORMANCE_FSX_RUNNER_H_
#define NFSEDGE_TESTS_CONFORMANCE_FSX_RUNNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/status.h"
#include "harness/subprocess.h"
#include "harness/wait.h"

namespace nfsedge::fsx_test {

// The nfsedge-fsx binary (with libnfs): $NFSEDGE_FSX_BINARY, else the one CMake built.
std::string FsxBinary();
// The static POSIX-only build for the guest: $NFSEDGE_FSX_STATIC_BINARY, else the one
// CMake built; empty if this build has none.
std::string FsxStaticBinary();

// nfs://host/export?version=3&nfsport=N&mountport=M
std::string NfsUrl(const std::string& host, uint16_t nfs_port, uint16_t mount_port,
                   const std::string& export_path);

// What one nfsedge-fsx run printed.
struct FsxOutcome {
  harness::ExitStatus exit;
  std::string output;       // All it printed (stdout and stderr).
  std::string fingerprint;  // From its "OK" line; empty if none.
  double seconds = 0;
};

// Returns the fingerprint from the "nfsedge-fsx: OK seed=<seed> ..." line of `output`,
// or "" if there is none.
std::string FingerprintOf(const std::string& output, uint64_t seed);

// An nfsedge-fsx process running in the background (several may run at once).
class FsxProcess {
 public:
  // Starts `binary` with `args`; output goes to `log_path`.
  static harness::StatusOr<std::unique_ptr<FsxProcess>> Start(const std::string& binary,
                                                              std::vector<std::string> args,
                                                              const std::string& log_path,
                                                              uint64_t seed);
  // Waits up to `timeout`; kills it after that. Returns the outcome.
  FsxOutcome Wait(harness::Millis timeout);

 private:
  FsxProcess() = default;
  std::unique_ptr<harness::Subprocess> process_;
  std::string log_path_;
  uint64_t seed_ = 0;
  double start_ = 0;
};

// Runs nfsedge-fsx with `args` to completion.
FsxOutcome RunFsx(const std::vector<std::string>& args, const std::string& log_path, uint64_t seed,
                  harness::Millis timeout);

// The fingerprint the model gives for `seed`: nfsedge-fsx --mem with `options` (the
// options that shape the sequence: --steps, --verify-every, --clients, sizes). Returns
// "" and adds nothing else on failure (the caller's comparison then fails).
std::string ModelFingerprint(uint64_t seed, const std::vector<std::string>& options,
                             const std::string& log_path);

// The canonical text (see tree_walk.h) of `dir` on the local disk, e.g. a directory
// ganesha exports; sets *error and returns "" if it cannot be read.
std::string DiskCanonical(const std::string& dir, std::string* error);

}  // namespace nfsedge::fsx_test

#endif  // NFSEDGE_TESTS_CONFORMANCE_FSX_RUNNER_H_
