// Rpcbind runs the system's rpcbind in the foreground inside the test's
// private network namespace. ganesha refuses to start unless it can register
// with rpcbind, so tests start Rpcbind before Ganesha (and may keep it
// running: it is private to the test process).
//
// Debian 12's `rpcbind -h 127.0.0.1` crashes (double free), so rpcbind
// listens on all addresses of the namespace: call only after
// PrivateNetwork::Enter(), never in the host's namespace.
//
// Thread safety: not thread-safe (owns a Subprocess).

#ifndef NFSEDGE_TESTS_HARNESS_RPCBIND_H_
#define NFSEDGE_TESTS_HARNESS_RPCBIND_H_

#include <memory>
#include <string>

#include "harness/status.h"
#include "harness/subprocess.h"
#include "harness/wait.h"

namespace nfsedge::harness {

class Rpcbind {
 public:
  struct Options {
    std::string log_path;  // REQUIRES: non-empty.
    std::string binary = "/usr/sbin/rpcbind";
    Millis start_timeout = Millis(10000);
  };
  static constexpr uint16_t kPort = 111;

  // Starts rpcbind and waits until 127.0.0.1:111 accepts TCP connections.
  // Returns an error if port 111 is already taken (not a private namespace?),
  // rpcbind exits, or the deadline passes.
  static StatusOr<std::unique_ptr<Rpcbind>> Start(const Options& options);

  bool IsRunning() { return process_->IsRunning(); }
  ExitStatus Stop() { return process_->Stop(); }
  Subprocess& process() { return *process_; }

 private:
  explicit Rpcbind(std::unique_ptr<Subprocess> p) : process_(std::move(p)) {}
  std::unique_ptr<Subprocess> process_;
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_RPCBIND_H_
