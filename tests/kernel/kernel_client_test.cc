// Kernel-client tests: the real Linux 6.1 NFS client, in a User-Mode Linux guest driven by
// uml_client.sh, mounts nfs-ganesha directly (DirectGanesha*, the reference) and through
// nfsedge (ThroughProxy*), runs a GuestWorkload, and checks what the guest printed and what
// ganesha holds on disk.
//
// main() and the guest setup are kernel/uml_guest.h's: without a guest (exit 77 of
// uml_client.sh: linux.uml missing...) every test is skipped with the reason. ganesha
// listens on 10.213.0.1 for the direct cases and on 127.0.0.1 behind the proxy (so the
// guest cannot bypass it); nfsedge listens on 10.213.0.1.
//
// Single-threaded: the tests and main() run on one thread.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "harness/files.h"
#include "harness/testbed.h"
#include "kernel/guest_workload.h"
#include "kernel/uml_guest.h"
#include "harness/required.h"

namespace nfsedge::kernel_test {
namespace {

using harness::ExitStatus;

class KernelClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Env().skip_reason.empty()) NFSEDGE_SKIP_OR_FAIL(Env().skip_reason);
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

    auto run =
        RunScript(GuestArgs(target, export_dir, in_dir, mount_options, workload.GuestCommand()),
                  dir.Sub("guest.log"));
    ASSERT_TRUE(run.ok()) << run.status().message() << "\n" << (*bed)->LogTails();
    if (run->exit.exited && run->exit.code == kCannotRun) {
      NFSEDGE_SKIP_OR_FAIL(CannotRunReason(run->log));
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
    auto run =
        RunScript(GuestArgs(proxy ? Target::kProxy : Target::kGanesha, export_dir, "", "", cmd),
                  dir.Sub(proxy ? "proxy.log" : "direct.log"));
    ASSERT_TRUE(run.ok()) << run.status().message();
    if (run->exit.exited && run->exit.code == kCannotRun) NFSEDGE_SKIP_OR_FAIL(CannotRunReason(run->log));
    ASSERT_TRUE(run->exit.success()) << Explain(run->exit) << "\n"
                                     << run->log << (*bed)->LogTails();
    outputs[i] = GuestOutput(run->log);
  }
  EXPECT_GT(outputs[0].size(), 1000u) << outputs[0];
  EXPECT_EQ(outputs[0], outputs[1]) << "direct and through nfsedge differ";
  EXPECT_TRUE((*bed)->Stop().success());
}

}  // namespace
}  // namespace nfsedge::kernel_test

int main(int argc, char** argv) { return nfsedge::kernel_test::GuestTestMain(argc, argv); }
