// Kernel-client tests: the real Linux 6.1 NFS client, in a User-Mode Linux guest driven by
// uml_client.sh, mounts nfs-ganesha directly (DirectGanesha*, the reference) and through
// nfsedge (ThroughProxy*), runs a GuestWorkload, and checks what the guest printed and what
// ganesha holds on disk.
//
// main() moves the process into a private network namespace (harness::PrivateNetwork),
// creates the tap device there (host side 10.213.0.1/30, guest 10.213.0.2) and checks that a
// guest can run; if it cannot (exit 77 of uml_client.sh: linux.uml missing...), every test
// is skipped with the reason. ganesha listens on 10.213.0.1 for the direct cases and on
// 127.0.0.1 behind the proxy (so the guest cannot bypass it); nfsedge listens on 10.213.0.1.
//
// Single-threaded: the tests and main() run on one thread.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "harness/files.h"
#include "harness/private_network.h"
#include "harness/subprocess.h"
#include "harness/testbed.h"
#include "kernel/guest_workload.h"

#ifndef NFSEDGE_UML_CLIENT_SCRIPT
#define NFSEDGE_UML_CLIENT_SCRIPT "tests/kernel/uml_client.sh"
#endif

namespace nfsedge::kernel_test {
namespace {

using harness::ExitStatus;
using harness::Millis;

constexpr char kTap[] = "nfsedge-tap0";
constexpr char kHostAddress[] = "10.213.0.1";  // host side of the tap
constexpr char kGuestNetwork[] = "10.213.0.0/30";
constexpr uint16_t kGaneshaNfsPort = 20490;
constexpr uint16_t kGaneshaMountPort = 20048;
constexpr uint16_t kProxyNfsPort = 30490;
constexpr uint16_t kProxyMountPort = 30048;
constexpr int kGuestTimeoutSeconds = 150;          // uml_client.sh -T
constexpr Millis kScriptTimeout = Millis(200000);  // the script, including its own timeout

// uml_client.sh exit codes other than the guest command's.
constexpr int kCannotRun = 77;
constexpr int kUmountFailed = 97;
constexpr int kGuestHung = 98;
constexpr int kMountFailed = 99;

// What main() found out about this machine, read by every test.
struct Environment {
  std::string skip_reason;  // non-empty: no guest can run here
  std::string error;        // non-empty: setting up failed (a test failure, not a skip)
};
Environment& Env() {
  static Environment env;
  return env;
}

std::string ScriptPath() {
  const char* env = std::getenv("NFSEDGE_UML_CLIENT");
  return env && *env ? env : NFSEDGE_UML_CLIENT_SCRIPT;
}

// The lines of `log` (everything uml_client.sh printed) between its output markers.
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

// The reason uml_client.sh gave for exit 77.
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

struct ScriptRun {
  ExitStatus exit;
  std::string log;  // stdout and stderr of the script
  double seconds = 0;
};

// Runs uml_client.sh with `args`, logging to `log_path`. Returns an error iff the script
// could not be started or did not end in time (it is killed then).
harness::StatusOr<ScriptRun> RunScript(const std::vector<std::string>& args,
                                       const std::string& log_path) {
  std::vector<std::string> argv = {"/bin/bash", ScriptPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto start = std::chrono::steady_clock::now();
  auto p = harness::Subprocess::Start({.argv = argv, .log_path = log_path, .env = {}});
  if (!p.ok()) return p.status();
  std::optional<ExitStatus> exit = (*p)->WaitForExit(kScriptTimeout);
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

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += "  " + l + "\n";
  return out;
}

enum class Target { kGanesha, kProxy };

// ganesha exporting `export_dir` on `ganesha_address`, and (iff `proxy`)
// nfsedge on the guest's network in front of it.
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

class KernelClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Env().skip_reason.empty()) GTEST_SKIP() << Env().skip_reason;
    ASSERT_TRUE(Env().error.empty()) << Env().error;
  }

  // Starts rpcbind + ganesha (+ nfsedge), runs `kind` in a guest mounting `target` with
  // the extra mount options `mount_options`, and checks the results.
  void RunCase(Target target, GuestWorkload::Kind kind, const std::string& mount_options) {
    const bool proxy = target == Target::kProxy;
    harness::TempDir dir("kernel");
    ASSERT_TRUE(dir.ok());
    const std::string export_dir = dir.Sub("export");
    const std::string in_dir = dir.Sub("in");
    ASSERT_TRUE(harness::MakeDirs(export_dir, 0777).ok());
    ASSERT_TRUE(harness::MakeDirs(in_dir).ok());
    GuestWorkload workload(kind);
    ASSERT_EQ(workload.SeedServerDir(export_dir), "");
    ASSERT_EQ(workload.WriteInputs(in_dir), "");

    harness::Testbed::Options o =
        BedOptions("kernel-bed", export_dir, proxy ? "127.0.0.1" : kHostAddress, proxy);
    auto bed = harness::Testbed::Start(o);
    ASSERT_TRUE(bed.ok()) << bed.status().message();

    std::vector<std::string> args = {
        "-s", kHostAddress,
        "-n", std::to_string(proxy ? kProxyNfsPort : kGaneshaNfsPort),
        "-m", std::to_string(proxy ? kProxyMountPort : kGaneshaMountPort),
        "-e", export_dir,
        "-i", in_dir,
        "-t", kTap,
        "-T", std::to_string(kGuestTimeoutSeconds)};
    if (!mount_options.empty()) {
      args.push_back("-o");
      args.push_back(mount_options);
    }
    args.push_back(workload.GuestCommand());
    auto run = RunScript(args, dir.Sub("guest.log"));
    ASSERT_TRUE(run.ok()) << run.status().message() << "\n" << (*bed)->LogTails();
    if (run->exit.exited && run->exit.code == kCannotRun) {
      GTEST_SKIP() << CannotRunReason(run->log);
    }
    std::printf("[ timing   ] %s: guest run %.2f s (mount options: %s)\n",
                ::testing::UnitTest::GetInstance()->current_test_info()->name(), run->seconds,
                mount_options.empty() ? "default" : mount_options.c_str());
    RecordProperty("guest_seconds", std::to_string(run->seconds));

    const std::string context = "--- uml_client.sh output ---\n" + run->log + (*bed)->LogTails();
    const std::string output = GuestOutput(run->log);
    EXPECT_TRUE(run->exit.success()) << Explain(run->exit) << "\n" << context;
    std::vector<std::string> guest_problems = workload.CheckGuestOutput(output);
    EXPECT_TRUE(guest_problems.empty()) << "in the guest:\n" << Join(guest_problems) << context;
    std::vector<std::string> server_problems = workload.CheckServerDir(export_dir);
    EXPECT_TRUE(server_problems.empty()) << "on ganesha's disk (" << export_dir << "):\n"
                                         << Join(server_problems) << context;

    if (proxy) {
      EXPECT_TRUE((*bed)->proxy()->IsRunning()) << "nfsedge died during the run\n" << context;
      std::string tails = (*bed)->LogTails();
      ExitStatus proxy_exit = (*bed)->Stop();
      EXPECT_TRUE(proxy_exit.success())
          << "nfsedge did not shut down cleanly: " << proxy_exit.ToString() << "\n"
          << tails;
    }
  }
};

// The reference: the kernel client against ganesha itself.
TEST_F(KernelClientTest, DirectGanesha) {
  RunCase(Target::kGanesha, GuestWorkload::Kind::kFull, "");
}

// `sync` mount: every WRITE is FILE_SYNC.
TEST_F(KernelClientTest, DirectGaneshaSyncMount) {
  RunCase(Target::kGanesha, GuestWorkload::Kind::kShort, "sync");
}

TEST_F(KernelClientTest, ThroughProxy) { RunCase(Target::kProxy, GuestWorkload::Kind::kFull, ""); }

TEST_F(KernelClientTest, ThroughProxySyncMount) {
  RunCase(Target::kProxy, GuestWorkload::Kind::kShort, "sync");
}

// Builds a small source-like tree directly in `root`.
void SeedTree(const std::string& root) {
  for (int d = 0; d < 12; ++d) {
    std::string dir = root + "/tree/d" + std::to_string(d) + "/sub" + std::to_string(d % 3);
    ASSERT_TRUE(harness::MakeDirs(dir).ok());
    for (int f = 0; f < 8; ++f) {
      std::string body(100 + 997 * ((d * 8 + f) % 23), static_cast<char>('a' + (d + f) % 26));
      ASSERT_TRUE(harness::WriteFile(dir + "/file" + std::to_string(f) + ".h", body).ok());
    }
    ASSERT_EQ(symlink("sub0", (root + "/tree/d" + std::to_string(d) + "/link").c_str()), 0);
  }
}

// `ls -lR`, `find` and `tar c` through the kernel client give the same output
// through nfsedge (with its metadata cache) as directly against ganesha, and
// again on a second, warm pass.
TEST_F(KernelClientTest, TreeCommandsSameThroughProxyAsDirect) {
  harness::TempDir dir("kernel-tree");
  ASSERT_TRUE(dir.ok());
  const std::string export_dir = dir.Sub("export");
  ASSERT_TRUE(harness::MakeDirs(export_dir, 0777).ok());
  SeedTree(export_dir);
  harness::Testbed::Options o = BedOptions("kernel-tree", export_dir, kHostAddress, true);
  auto bed = harness::Testbed::Start(o);
  ASSERT_TRUE(bed.ok()) << bed.status().message();

  const std::string cmd =
      "cd tree && for pass in 1 2; do echo \"== pass $pass\"; ls -lR; find . | sort; "
      "tar cf - . | md5sum; find . -type f | sort | xargs cat | md5sum; done";
  std::string outputs[2];
  for (int i = 0; i < 2; ++i) {
    const bool proxy = i == 1;
    std::vector<std::string> args = {
        "-s", kHostAddress,
        "-n", std::to_string(proxy ? kProxyNfsPort : kGaneshaNfsPort),
        "-m", std::to_string(proxy ? kProxyMountPort : kGaneshaMountPort),
        "-e", export_dir,
        "-t", kTap,
        "-T", std::to_string(kGuestTimeoutSeconds),
        cmd};
    auto run = RunScript(args, dir.Sub(proxy ? "proxy.log" : "direct.log"));
    ASSERT_TRUE(run.ok()) << run.status().message();
    if (run->exit.exited && run->exit.code == kCannotRun) GTEST_SKIP() << CannotRunReason(run->log);
    ASSERT_TRUE(run->exit.success()) << Explain(run->exit) << "\n" << run->log
                                     << (*bed)->LogTails();
    outputs[i] = GuestOutput(run->log);
  }
  EXPECT_GT(outputs[0].size(), 1000u) << outputs[0];
  EXPECT_EQ(outputs[0], outputs[1]) << "direct and through nfsedge differ";
  EXPECT_TRUE((*bed)->Stop().success());
}

}  // namespace
}  // namespace nfsedge::kernel_test

int main(int argc, char** argv) {
  using nfsedge::kernel_test::Env;
  ::testing::InitGoogleTest(&argc, argv);
  // Namespaces first: unshare(CLONE_NEWNS) needs a single-threaded process.
  nfsedge::harness::Status entered = nfsedge::harness::PrivateNetwork::Enter();
  static nfsedge::harness::TempDir setup_dir("kernel-setup");
  if (!entered.ok()) {
    Env().skip_reason = "cannot enter a private network namespace: " + entered.message();
  } else if (!setup_dir.ok()) {
    Env().error = "cannot create a temporary directory";
  } else {
    nfsedge::kernel_test::PrepareGuest(setup_dir.path());
  }
  return RUN_ALL_TESTS();
}
