// LiveStack: the demo's long-running stack after the measured runs: a WAN
// emulator in front of the runner's ganesha and a fresh nfsedge in front of
// the emulator, left running for the user's own client until a stop signal.
//
// Thread safety: not thread-safe (owns Subprocesses); use from main().

#ifndef NFSEDGE_TESTS_TOOLS_LIVE_STACK_H_
#define NFSEDGE_TESTS_TOOLS_LIVE_STACK_H_

#include <memory>
#include <string>

#include "harness/proxy_process.h"
#include "runner.h"
#include "wan_emulator.h"

namespace nfsedge::tools {

class LiveStack {
 public:
  // Starts the emulator (link `link`) and nfsedge; logs go under `work_dir`.
  static harness::StatusOr<std::unique_ptr<LiveStack>> Start(bench::Runner& runner,
                                                             const bench::LinkShape& link,
                                                             const std::string& work_dir);
  ~LiveStack();

  // How to reach the stack from the host: printed for the user.
  std::string Instructions(const std::string& browse_dir) const;
  // Waits for SIGINT / SIGTERM (InstallStopHandlers() must have run) or for
  // a process of the stack to die. Returns why it returned.
  std::string WaitForStop();

 private:
  LiveStack() = default;

  bench::Runner* runner_ = nullptr;
  bench::LinkShape link_;
  std::string work_dir_;
  std::unique_ptr<bench::WanEmulator> wan_;
  std::unique_ptr<harness::ProxyProcess> proxy_;
};

}  // namespace nfsedge::tools

#endif  // NFSEDGE_TESTS_TOOLS_LIVE_STACK_H_
