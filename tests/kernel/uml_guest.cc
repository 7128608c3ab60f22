#include "kernel/uml_guest.h"

#include <gtest/gtest.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>

#include "harness/files.h"
#include "harness/private_network.h"

#ifndef NFSEDGE_UML_CLIENT_SCRIPT
#define NFSEDGE_UML_CLIENT_SCRIPT "tests/kernel/uml_client.sh"
#endif

namespace nfsedge::kernel_test {
namespace {

using harness::ExitStatus;
using harness::Millis;

// uml_client.sh exit codes other than the guest command's.
constexpr int kUmountFailed = 97;
constexpr int kGuestHung = 98;
constexpr int kMountFailed = 99;

// The script, including its own timeout (-T).
Millis ScriptTimeout() { return Millis(1000LL * (Env().guest_timeout_seconds + 50)); }

// Sets Env().guest_timeout_seconds from the environment variable `name` if that is set.
harness::Status ReadGuestTimeout(const char* name) {
  const char* env = name != nullptr ? std::getenv(name) : nullptr;
  if (env == nullptr || *env == '\0') return harness::Status::OK();
  const std::string_view text(env);
  int seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds <= 0) {
    return harness::Status::Error(std::string(name) + "=" + env +
                                  ": not a positive number of seconds");
  }
  Env().guest_timeout_seconds = seconds;
  return harness::Status::OK();
}

std::string ScriptPath() {
  const char* env = std::getenv("NFSEDGE_UML_CLIENT");
  return env && *env ? env : NFSEDGE_UML_CLIENT_SCRIPT;
}

// Called from main() after PrivateNetwork::Enter(): checks that a guest can run here,
// builds the cached initramfs and creates the tap device.
void PrepareGuest(const std::string& log_dir) {
  for (const char* step : {"-C", "-P"}) {
    auto run = RunScript({step, "-t", kTap}, log_dir + "/prepare.log");
    if (!run.ok()) {
      Env().error = run.status().message();
      return;
    }
    if (run->exit.exited && run->exit.code == kCannotRun) {
      Env().skip_reason = CannotRunReason(run->log);
      return;
    }
    if (!run->exit.success()) {
      Env().error =
          std::string("uml_client.sh ") + step + ": " + run->exit.ToString() + "\n" + run->log;
      return;
    }
  }
}

}  // namespace

Environment& Env() {
  static Environment env;
  return env;
}

std::string GuestOutput(const std::string& log) {
  std::string out;
  std::istringstream in(log);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "@@OUT-BEGIN") {
      inside = true;
    } else if (line == "@@OUT-END") {
      inside = false;
    } else if (inside) {
      out += line + "\n";
    }
  }
  return out;
}

std::string CannotRunReason(const std::string& log) {
  size_t at = log.find("cannot run: ");
  if (at == std::string::npos) return "uml_client.sh exited 77:\n" + log;
  size_t end = log.find('\n', at);
  return "no kernel-client guest here: " + log.substr(at + 12, end - at - 12);
}

std::string Explain(const ExitStatus& s) {
  if (!s.exited) return "uml_client.sh " + s.ToString();
  switch (s.code) {
    case 0:
      return "OK";
    case kMountFailed:
      return "exit 99: the guest's mount failed";
    case kGuestHung:
      return "exit 98: the guest hung or crashed";
    case kUmountFailed:
      return "exit 97: the guest's umount failed";
    default:
      return "exit " + std::to_string(s.code) + ": a step of the guest script failed";
  }
}

harness::StatusOr<ScriptRun> RunScript(const std::vector<std::string>& args,
                                       const std::string& log_path) {
  std::vector<std::string> argv = {"/bin/bash", ScriptPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto start = std::chrono::steady_clock::now();
  auto p = harness::Subprocess::Start({.argv = argv, .log_path = log_path, .env = {}});
  if (!p.ok()) return p.status();
  std::optional<ExitStatus> exit = (*p)->WaitForExit(ScriptTimeout());
  if (!exit) {
    (*p)->Stop(Millis(5000));
    return harness::Status::Error("uml_client.sh did not end in time:\n" +
                                  harness::TailOfFile(log_path, 40));
  }
  ScriptRun run;
  run.exit = *exit;
  run.log = harness::ReadFile(log_path);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

std::vector<std::string> GuestArgs(Target target, const std::string& export_dir,
                                   const std::string& in_dir, const std::string& mount_options,
                                   const std::string& command) {
  const bool proxy = target == Target::kProxy;
  std::vector<std::string> args = {
      "-s", kHostAddress,
      "-n", std::to_string(proxy ? kProxyNfsPort : kGaneshaNfsPort),
      "-m", std::to_string(proxy ? kProxyMountPort : kGaneshaMountPort),
      "-e", export_dir,
      "-t", kTap,
      "-T", std::to_string(Env().guest_timeout_seconds)};
  if (!in_dir.empty()) args.insert(args.end(), {"-i", in_dir});
  if (!mount_options.empty()) args.insert(args.end(), {"-o", mount_options});
  args.push_back(command);
  return args;
}

harness::Testbed::Options BedOptions(const std::string& name, const std::string& export_dir,
                                     const std::string& ganesha_address, bool proxy) {
  harness::Testbed::Options o;
  o.name = name;
  o.ganesha.exports = {{.path = export_dir}};
  o.ganesha.bind_address = ganesha_address;
  o.ganesha.nfs_port = kGaneshaNfsPort;
  o.ganesha.mount_port = kGaneshaMountPort;
  o.start_proxy = proxy;
  o.proxy.listen = kHostAddress;
  o.proxy.nfs_port = kProxyNfsPort;
  o.proxy.mount_port = kProxyMountPort;
  o.proxy.log_level = "info";
  harness::ProxyExport pe;
  pe.path = pe.upstream_path = export_dir;
  pe.clients = {kGuestNetwork};
  pe.root_squash = false;
  o.proxy.exports = {pe};
  return o;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += "  " + l + "\n";
  return out;
}

int GuestTestMain(int argc, char** argv, const GuestTestOptions& options) {
  ::testing::InitGoogleTest(&argc, argv);
  // Namespaces first: unshare(CLONE_NEWNS) needs a single-threaded process.
  harness::Status entered = harness::PrivateNetwork::Enter();
  static harness::TempDir setup_dir("kernel-setup");
  harness::Status timeout = ReadGuestTimeout(options.timeout_env);
  if (!entered.ok()) {
    Env().skip_reason = "cannot enter a private network namespace: " + entered.message();
  } else if (!timeout.ok()) {
    Env().error = timeout.message();
  } else if (!setup_dir.ok()) {
    Env().error = "cannot create a temporary directory";
  } else {
    PrepareGuest(setup_dir.path());
  }
  return RUN_ALL_TESTS();
}

}  // namespace nfsedge::kernel_test
