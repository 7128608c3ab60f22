// UML guest runs for the kernel-client tests: uml_client.sh started from a test, the
// network the guest and the servers share, and the main() every such test binary uses.
//
// main() (GuestTestMain) moves the process into a private network namespace
// (harness::PrivateNetwork), creates the tap device there (host side 10.213.0.1/30, guest
// 10.213.0.2) and checks that a guest can run; if it cannot (exit 77 of uml_client.sh:
// linux.uml missing...), Env().skip_reason says why and every test skips with it.
//
// Not thread-safe: the tests and main() run on one thread.

#ifndef NFSEDGE_TESTS_KERNEL_UML_GUEST_H_
#define NFSEDGE_TESTS_KERNEL_UML_GUEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "harness/status.h"
#include "harness/subprocess.h"
#include "harness/testbed.h"

namespace nfsedge::kernel_test {

inline constexpr char kTap[] = "nfsedge-tap0";
inline constexpr char kHostAddress[] = "10.213.0.1";  // host side of the tap
inline constexpr char kGuestNetwork[] = "10.213.0.0/30";
inline constexpr uint16_t kGaneshaNfsPort = 20490;
inline constexpr uint16_t kGaneshaMountPort = 20048;
inline constexpr uint16_t kProxyNfsPort = 30490;
inline constexpr uint16_t kProxyMountPort = 30048;
// uml_client.sh -T unless GuestTestMain was given a timeout variable that is set.
inline constexpr int kDefaultGuestTimeoutSeconds = 150;

// uml_client.sh exit code: no guest can run here (the reason is in its output).
inline constexpr int kCannotRun = 77;

// What main() found out about this machine, read by every test.
struct Environment {
  std::string skip_reason;  // non-empty: no guest can run here
  std::string error;        // non-empty: setting up failed (a test failure, not a skip)
  // uml_client.sh -T of every guest run; RunScript allows the script 50 s more.
  int guest_timeout_seconds = kDefaultGuestTimeoutSeconds;
};
Environment& Env();

// The lines of `log` (everything uml_client.sh printed) between its output markers: what
// the guest command printed.
std::string GuestOutput(const std::string& log);

// The reason uml_client.sh gave for exit 77.
std::string CannotRunReason(const std::string& log);

// uml_client.sh's exit status in words (its own codes 97, 98, 99 explained).
std::string Explain(const harness::ExitStatus& s);

struct ScriptRun {
  harness::ExitStatus exit;
  std::string log;  // stdout and stderr of the script
  double seconds = 0;
};

// Runs uml_client.sh with `args`, logging to `log_path`. Returns an error iff the script
// could not be started or did not end in time (it is killed then).
harness::StatusOr<ScriptRun> RunScript(const std::vector<std::string>& args,
                                       const std::string& log_path);

enum class Target { kGanesha, kProxy };

// The uml_client.sh arguments for a guest mounting `export_dir` of `target` (with
// `in_dir` as /in unless empty, and the extra mount options `mount_options` unless
// empty) and running `command`.
std::vector<std::string> GuestArgs(Target target, const std::string& export_dir,
                                   const std::string& in_dir, const std::string& mount_options,
                                   const std::string& command);

// ganesha exporting `export_dir` on `ganesha_address`, and (iff `proxy`) nfsedge on the
// guest's network in front of it, exporting the same path to the guest (no root squash).
harness::Testbed::Options BedOptions(const std::string& name, const std::string& export_dir,
                                     const std::string& ganesha_address, bool proxy);

// "  line\n" for each of `lines`, for failure messages.
std::string Join(const std::vector<std::string>& lines);

// What differs between the binaries whose main() is GuestTestMain.
struct GuestTestOptions {
  // An environment variable that, when set and non-empty, gives the guest timeout in
  // seconds (a positive integer; anything else is a setup error), for longer runs by
  // hand. nullptr: always kDefaultGuestTimeoutSeconds.
  const char* timeout_env = nullptr;
};

// The main() of a kernel-client test binary: sets up Env() (see above), then runs the
// tests.
int GuestTestMain(int argc, char** argv, const GuestTestOptions& options = {});

}  // namespace nfsedge::kernel_test

#endif  // NFSEDGE_TESTS_KERNEL_UML_GUEST_H_
