// Subprocess runs a program as a child of the test: argv given explicitly (no
// shell), stdin from /dev/null, stdout and stderr appended to a log file. The
// child gets SIGKILL when the test process dies (PR_SET_PDEATHSIG), and the
// destructor stops it, so no server outlives its test even on a crash or a
// failed assertion.
//
// Thread safety: a Subprocess is not thread-safe; use it from the thread that
// started it (PR_SET_PDEATHSIG is tied to the thread that forked).

#ifndef NFSEDGE_TESTS_HARNESS_SUBPROCESS_H_
#define NFSEDGE_TESTS_HARNESS_SUBPROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/status.h"
#include "harness/wait.h"

namespace nfsedge::harness {

// How a child ended.
struct ExitStatus {
  bool exited = false;  // true: exit(code); false: killed by `signal`.
  int code = -1;
  int signal = 0;

  // Returns true iff the child called exit(0).
  bool success() const { return exited && code == 0; }
  std::string ToString() const;
};

class Subprocess {
 public:
  struct Options {
    std::vector<std::string> argv;  // argv[0] is the program's path.
    std::string log_path;           // REQUIRES: non-empty; appended to.
    std::vector<std::string> env;   // Extra "NAME=value" entries (replace inherited ones).
  };

  // Forks and execs. Returns an error iff the program could not be started
  // (fork failed, exec failed: e.g. no such file).
  static StatusOr<std::unique_ptr<Subprocess>> Start(const Options& options);
  static StatusOr<std::unique_ptr<Subprocess>> Start(std::vector<std::string> argv,
                                                     std::string log_path);

  // Stops the child (Stop()) if it still runs.
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  std::string LogTail(size_t max_lines = 40) const;

  // Returns true iff the child has not exited (reaps it if it has).
  bool IsRunning();
  // Sends `sig` to the child if it runs.
  void Signal(int sig);
  // Waits up to `timeout` for the child to exit. Returns its status iff it
  // exited in time.
  std::optional<ExitStatus> WaitForExit(Millis timeout);
  // SIGTERM, wait up to `grace`, then SIGKILL and wait. Returns how the child
  // ended (also if it had ended before). Idempotent.
  ExitStatus Stop(Millis grace = Millis(10000));

 private:
  Subprocess(pid_t pid, int pidfd, std::string log_path);
  // Reaps the child if it has exited; returns true iff it has.
  bool Reap(bool block);

  const pid_t pid_;
  int pidfd_;  // -1 if pidfd_open is unavailable: then waits poll waitpid.
  const std::string log_path_;
  std::optional<ExitStatus> exit_;
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_SUBPROCESS_H_
