// fsx_kernel_test: nfsedge-fsx (its static POSIX build) in a User-Mode Linux guest, so
// that the real Linux 6.1 kernel NFS client runs the calls, mounting nfsedge or, for
// comparison, nfs-ganesha directly (the guest is driven by tests/kernel/uml_client.sh):
//   (a) fixed seeds through nfsedge with the mount options default, sync, actimeo=0,
//       rsize/wsize 32 KiB and 1 MiB, noac (one guest run each, two seeds at once);
//   (b) the default mount directly on ganesha with the same seeds: same fingerprints,
//       equal to the model's, and the same trees on ganesha's disk;
//   (d) in those two runs, two instances at once on separate directories; and
//       close-to-open between two mounts of the guest (two kernel NFS clients).
//
// main() (kernel_test::GuestTestMain, tests/kernel/uml_guest.h) moves the process into a
// private network namespace, creates the tap device there (host side 10.213.0.1/30, guest
// 10.213.0.2) and checks that a guest can run; if it cannot (uml_client.sh exits 77:
// linux.uml missing...), every test skips with the reason. ganesha and nfsedge both
// listen on 10.213.0.1; nfsedge's upstream is ganesha.
//
// Single-threaded: the tests and main() run on one thread.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "conformance/fsx_runner.h"
#include "conformance/tree_walk.h"
#include "harness/files.h"
#include "harness/testbed.h"
#include "kernel/uml_guest.h"
#include "harness/required.h"

namespace nfsedge::fsx_test {
namespace {

using kernel_test::CannotRunReason;
using kernel_test::Env;
using kernel_test::GuestArgs;
using kernel_test::GuestOutput;
using kernel_test::kCannotRun;
using kernel_test::kGaneshaMountPort;
using kernel_test::kGaneshaNfsPort;
using kernel_test::kHostAddress;
using kernel_test::kProxyMountPort;
using kernel_test::kProxyNfsPort;
using kernel_test::RunScript;
using kernel_test::Target;

// Options that shape every guest run's sequence (the --mem run takes the same ones).
// NFSEDGE_FSX_KERNEL_STEPS overrides the step count (longer runs by hand).
const std::vector<std::string>& Shape() {
  static const std::vector<std::string> shape = [] {
    const char* env = std::getenv("NFSEDGE_FSX_KERNEL_STEPS");
    const std::string steps = env != nullptr && *env != '\0' ? env : "2500";
    return std::vector<std::string>{
        "--steps",     steps,    "--verify-every",          "500", "--max-file-size", "1048576",
        "--max-write", "600000"};
  }();
  return shape;
}

// The guest script: nfsedge-fsx for each seed at once, each in /mnt/fsx-<seed>; prints
// every output and fails iff one of them failed.
std::string GuestScript(const std::vector<uint64_t>& seeds) {
  std::string shape;
  for (const std::string& a : Shape()) shape += " " + a;
  std::string script, waits, checks = "true";
  for (uint64_t seed : seeds) {
    const std::string s = std::to_string(seed);
    script += "/in/nfsedge-fsx --dir /mnt/fsx-" + s + " --seed " + s + shape + " >/tmp/out-" + s +
              " 2>&1 & p" + s + "=$!\n";
    waits += "wait $p" + s + "; r" + s + "=$?; cat /tmp/out-" + s + "; echo \"== exit " + s +
             " $r" + s + "\"\n";
    checks += " && [ $r" + s + " = 0 ]";
  }
  return script + waits + checks + "\n";
}

class FsxKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Env().skip_reason.empty()) NFSEDGE_SKIP_OR_FAIL(Env().skip_reason);
    ASSERT_TRUE(Env().error.empty()) << Env().error;
    if (FsxStaticBinary().empty()) {
      GTEST_SKIP() << "this build has no static nfsedge-fsx (sanitizers, or no static libc)";
    }
    ASSERT_TRUE(dir_.ok());
    export_dir_ = dir_.Sub("export");
    in_dir_ = dir_.Sub("in");
    ASSERT_TRUE(harness::MakeDirs(export_dir_, 0777).ok());
    ASSERT_TRUE(harness::MakeDirs(in_dir_).ok());
    std::error_code ec;
    std::filesystem::copy_file(FsxStaticBinary(), in_dir_ + "/nfsedge-fsx", ec);
    ASSERT_FALSE(ec) << "copy " << FsxStaticBinary() << ": " << ec.message();
    ASSERT_EQ(::chmod((in_dir_ + "/nfsedge-fsx").c_str(), 0755), 0);

    auto bed = harness::Testbed::Start(
        kernel_test::BedOptions("fsx-kernel", export_dir_, kHostAddress, /*proxy=*/true));
    ASSERT_TRUE(bed.ok()) << bed.status().message();
    bed_ = std::move(bed).value();
  }
  void TearDown() override {
    if (bed_ && HasFailure()) std::fprintf(stderr, "%s", bed_->LogTails().c_str());
  }

  // Runs `seeds` at once in a guest mounting nfsedge (or ganesha) with `mount_options`
  // (the guest runs `script`, by default GuestScript(seeds)), then checks each seed's
  // fingerprint against the model's (--mem with Shape() and `model_options`) and
  // ganesha's disk. Returns the guest's output ("" if the guest could not run).
  std::string RunAndCheck(bool proxy, const std::string& mount_options,
                          const std::vector<uint64_t>& seeds, const std::string& name,
                          std::string script = "",
                          const std::vector<std::string>& model_options = {}) {
    std::vector<std::string> args =
        GuestArgs(proxy ? Target::kProxy : Target::kGanesha, export_dir_, in_dir_, mount_options,
                  script.empty() ? GuestScript(seeds) : script);
    if (const char* v = std::getenv("NFSEDGE_FSX_UML_VERBOSE"); v != nullptr && *v == '1') {
      args.insert(args.end() - 1, "-v");  // the whole guest console into the log
    }
    auto run = RunScript(args, dir_.Sub(name + ".log"));
    EXPECT_TRUE(run.ok()) << run.status().message();
    if (!run.ok()) return "";
    if (run->exit.exited && run->exit.code == kCannotRun) {
      ADD_FAILURE() << CannotRunReason(run->log);
      return "";
    }
    const std::string output = GuestOutput(run->log);
    std::printf("[ timing   ] %s (%s, mount options: %s): guest run %.1f s\n", name.c_str(),
                proxy ? "through nfsedge" : "directly on ganesha",
                mount_options.empty() ? "default" : mount_options.c_str(), run->seconds);
    EXPECT_TRUE(run->exit.success())
        << name << ": uml_client.sh " << run->exit.ToString() << "\n--- uml_client.sh output ---\n"
        << run->log;
    for (uint64_t seed : seeds) {
      const std::string s = std::to_string(seed);
      std::vector<std::string> shape = Shape();
      shape.insert(shape.end(), model_options.begin(), model_options.end());
      const std::string want = ModelFingerprint(seed, shape, dir_.Sub("mem-" + s + ".log"));
      EXPECT_FALSE(want.empty()) << "no fingerprint from nfsedge-fsx --mem";
      EXPECT_EQ(FingerprintOf(output, seed), want) << name << ": seed " << s;
      std::string error;
      const std::string disk = DiskCanonical(export_dir_ + "/fsx-" + s, &error);
      EXPECT_EQ(fsx::Fingerprint(disk), want)
          << name << ": seed " << s << " on ganesha's disk " << error;
    }
    if (proxy) {
      EXPECT_TRUE(bed_->proxy()->IsRunning()) << "nfsedge died";
    }
    return output;
  }

  // The guest leaves its trees behind; the next run of the same seeds needs them gone.
  void RemoveTrees(const std::vector<uint64_t>& seeds) {
    for (uint64_t seed : seeds) harness::RemoveTree(export_dir_ + "/fsx-" + std::to_string(seed));
  }

  harness::TempDir dir_{"fsx-kernel"};
  std::string export_dir_, in_dir_;
  std::unique_ptr<harness::Testbed> bed_;
};

// (a), (b), (d): two instances at once on the default mount, through nfsedge and then
// directly on ganesha; the outputs agree seed by seed.
TEST_F(FsxKernelTest, DefaultMountTwoInstancesThroughProxyAndDirect) {
  const std::vector<uint64_t> seeds = {11, 12};
  const std::string proxied = RunAndCheck(true, "", seeds, "proxy-default");
  RemoveTrees(seeds);
  const std::string direct = RunAndCheck(false, "", seeds, "direct-default");
  for (uint64_t seed : seeds) {
    EXPECT_EQ(FingerprintOf(proxied, seed), FingerprintOf(direct, seed)) << "seed " << seed;
  }
}

// The guest script for close-to-open between two kernel clients: the export mounted a
// second time at /mnt2 with nosharecache (its own superblock, attribute and page
// caches) and `options`, and one nfsedge-fsx driving both mounts (--dir and --dir2).
// /mnt2 stays mounted: unmounting it just before uml_client.sh unmounts /mnt made that
// umount fail with EBUSY now and then (directly on ganesha too); the guest is discarded.
std::string TwoMountScript(bool proxy, const std::string& options, const std::string& export_dir,
                           uint64_t seed) {
  const std::string host = kHostAddress;
  const std::string s = std::to_string(seed);
  std::string shape;
  for (const std::string& a : Shape()) shape += " " + a;
  return "mkdir -p /mnt2 && mount -t nfs -o vers=3,proto=tcp,nolock,port=" +
         std::to_string(proxy ? kProxyNfsPort : kGaneshaNfsPort) +
         ",mountport=" + std::to_string(proxy ? kProxyMountPort : kGaneshaMountPort) +
         ",mountproto=tcp,addr=" + host + ",mountaddr=" + host + "," + options + ",nosharecache " +
         host + ":" + export_dir + " /mnt2 || { echo 'second mount failed'; exit 1; }\n" +
         "/in/nfsedge-fsx --dir /mnt/fsx-" + s + " --dir2 /mnt2/fsx-" + s + " --seed " + s + shape +
         "\n";
}

// Close-to-open between two kernel clients (two mounts of the guest, both noac and
// lookupcache=none), directly on ganesha and through nfsedge.
TEST_F(FsxKernelTest, CloseToOpenBetweenTwoMounts) {
  const std::string opts = "noac,lookupcache=none";
  const uint64_t seed = 41;
  const std::string direct =
      RunAndCheck(false, opts, {seed}, "direct-two-mounts",
                  TwoMountScript(false, opts, export_dir_, seed), {"--clients", "2"});
  RemoveTrees({seed});
  const std::string proxied =
      RunAndCheck(true, opts, {seed}, "proxy-two-mounts",
                  TwoMountScript(true, opts, export_dir_, seed), {"--clients", "2"});
  EXPECT_EQ(FingerprintOf(proxied, seed), FingerprintOf(direct, seed));
}

struct MountVariant {
  const char* name;
  const char* options;
  uint64_t seed;  // and seed + 10, at once
};

class FsxKernelMountTest : public FsxKernelTest,
                           public ::testing::WithParamInterface<MountVariant> {};

// (a) Two seeds at once through nfsedge per mount option variant.
TEST_P(FsxKernelMountTest, ThroughProxy) {
  const MountVariant& v = GetParam();
  RunAndCheck(true, v.options, {v.seed, v.seed + 10}, std::string("proxy-") + v.name);
}

INSTANTIATE_TEST_SUITE_P(
    MountOptions, FsxKernelMountTest,
    ::testing::Values(MountVariant{"sync", "sync", 21}, MountVariant{"actimeo0", "actimeo=0", 22},
                      MountVariant{"rwsize32k", "rsize=32768,wsize=32768", 23},
                      MountVariant{"rwsize1m", "rsize=1048576,wsize=1048576", 24},
                      MountVariant{"noac", "noac", 25}),
    [](const ::testing::TestParamInfo<MountVariant>& info) { return info.param.name; });

}  // namespace
}  // namespace nfsedge::fsx_test

// NFSEDGE_FSX_KERNEL_TIMEOUT: the guest timeout in seconds for longer runs by hand.
int main(int argc, char** argv) {
  return nfsedge::kernel_test::GuestTestMain(argc, argv,
                                             {.timeout_env = "NFSEDGE_FSX_KERNEL_TIMEOUT"});
}
