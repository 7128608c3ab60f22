// ganesha_slow_disk_test: the test bed's emulated server disk
// (Ganesha::Options::disk_sync_us, tests/harness/slow_disk.c) on a real
// ganesha, spoken to directly with RawNfs. With it, every FILE_SYNC WRITE and
// every COMMIT costs at least the sync time, the bytes of a flush cost their
// time at the disk's rate, flushes from concurrent clients never overlap, and
// the data still lands in the exported file. Without it nothing is preloaded.
// Asking for it without the library, or with a bad rate, fails Start() with a
// clear error; bad values in the environment are reported by the library at
// load. Durations are only checked from below (the emulated cost is a
// floor); the machine's speed is the benchmarks' business.

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "harness/files.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.
using Clock = std::chrono::steady_clock;

constexpr uint32_t kSyncUs = 20000;
constexpr uint32_t kBlock = 4096;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

class SlowDiskTest : public ::testing::Test {
 protected:
  void SetUp() override { NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK(); }
  void TearDown() override {
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
  }

  // Starts rpcbind and ganesha with this disk, and mounts its export.
  void StartBed(uint32_t sync_us, uint32_t mbps = 200) {
    Testbed::Options o;
    o.name = "slowdisk";
    o.start_proxy = false;
    o.ganesha.disk_sync_us = sync_us;
    o.ganesha.disk_mbps = mbps;
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
    auto m = ConnectOrFail("127.0.0.1", bed_->ganesha().mount_port());
    ASSERT_NE(m, nullptr);
    MntResult r = m->Mnt(Disk());
    ASSERT_TRUE(r.ok()) << "MNT " << Disk();
    root_ = r.fh;
  }
  std::string Disk() { return bed_->ganesha().export_path(); }
  std::unique_ptr<RawNfs> Client() {
    return ConnectOrFail("127.0.0.1", bed_->ganesha().nfs_port(), Credential{0, 0, {}, "t"});
  }
  std::string Create(RawNfs& c, const std::string& name) {
    CreateResult f = c.Create(root_, name, Sattr{});
    EXPECT_TRUE(f.ok()) << name << ": " << f.StatusString();
    return f.fh;
  }
  // Returns true iff ganesha's address space maps the emulated disk library.
  bool GaneshaMapsTheLibrary() {
    const std::string pid = ReadFile(bed_->ganesha().options().work_dir + "/ganesha.pid");
    EXPECT_FALSE(pid.empty()) << "no ganesha.pid";
    const std::string maps = ReadFile("/proc/" + std::to_string(std::atoi(pid.c_str())) + "/maps");
    EXPECT_FALSE(maps.empty());
    return maps.find("libnfsedge_slow_disk") != std::string::npos;
  }
  // Writes `n` blocks to a new file, one FILE_SYNC WRITE after another;
  // checks the replies and the file's bytes on the server's disk. Returns
  // the milliseconds the writes took.
  double WriteOneAfterAnother(const std::string& name, int n) {
    auto c = Client();
    if (c == nullptr) return 0;
    const std::string fh = Create(*c, name);
    const std::string data = Pattern(n * kBlock, 7);
    auto start = Clock::now();
    for (int i = 0; i < n; ++i) {
      WriteResult w = c->Write(fh, i * kBlock, data.substr(i * kBlock, kBlock), Stable::kFileSync);
      EXPECT_TRUE(w.ok() && w.count == kBlock && w.committed == 2) << i << ": " << w.StatusString();
    }
    const double ms = MillisSince(start);
    EXPECT_TRUE(ReadFile(Disk() + "/" + name) == data) << name << " differs from what was written";
    return ms;
  }

  std::unique_ptr<Testbed> bed_;
  std::string root_;
};

TEST_F(SlowDiskTest, EachStableWriteAndCommitPaysTheSyncTime) {
  StartBed(kSyncUs);
  EXPECT_TRUE(GaneshaMapsTheLibrary());
  constexpr int kWrites = 10;
  const double ms = WriteOneAfterAnother("sequential", kWrites);
  std::cout << kWrites << " FILE_SYNC WRITEs one after another: " << ms << " ms\n";
  EXPECT_GE(ms, kWrites * kSyncUs / 1000.0);

  // UNSTABLE writes do not flush; the COMMIT does.
  auto c = Client();
  ASSERT_NE(c, nullptr);
  const std::string fh = Create(*c, "committed");
  const std::string data = Pattern(4 * kBlock, 9);
  ASSERT_TRUE(c->WriteAll(fh, 0, data, Stable::kUnstable, kBlock).ok());
  auto start = Clock::now();
  CommitResult commit = c->Commit(fh, 0, 0);
  const double commit_ms = MillisSince(start);
  ASSERT_TRUE(commit.ok()) << commit.StatusString();
  EXPECT_GE(commit_ms, kSyncUs / 1000.0);
  EXPECT_TRUE(ReadFile(Disk() + "/committed") == data);
}

TEST_F(SlowDiskTest, FlushesOfConcurrentClientsNeverOverlap) {
  StartBed(kSyncUs);
  constexpr int kClients = 8;
  std::vector<std::unique_ptr<RawNfs>> clients;
  std::vector<std::string> fhs;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(Client());
    ASSERT_NE(clients.back(), nullptr);
    fhs.push_back(Create(*clients.back(), "parallel" + std::to_string(i)));
  }
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> threads;
  auto start = Clock::now();
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      WriteResult w = clients[i]->Write(fhs[i], 0, Pattern(kBlock, 100 + i), Stable::kFileSync);
      if (!w.ok() || w.count != kBlock || w.committed != 2) failures[i] = w.StatusString();
    });
  }
  for (std::thread& t : threads) t.join();
  const double ms = MillisSince(start);
  std::cout << kClients << " FILE_SYNC WRITEs at once: " << ms << " ms\n";
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(failures[i], "") << "client " << i;
    EXPECT_TRUE(ReadFile(Disk() + "/parallel" + std::to_string(i)) == Pattern(kBlock, 100 + i))
        << "client " << i;
  }
  // One flush at a time: K flushes take at least K sync times, however many
  // of ganesha's workers run them.
  EXPECT_GE(ms, kClients * kSyncUs / 1000.0);
}

TEST_F(SlowDiskTest, BytesOfAFlushCostTheirTimeAtTheRate) {
  constexpr uint32_t kShortSyncUs = 1000;
  StartBed(kShortSyncUs, /*mbps=*/1);
  auto c = Client();
  ASSERT_NE(c, nullptr);
  const std::string fh = Create(*c, "big");
  constexpr uint32_t kBytes = 256 << 10;
  const std::string data = Pattern(kBytes, 11);
  auto start = Clock::now();
  WriteResult w = c->Write(fh, 0, data, Stable::kFileSync);
  const double ms = MillisSince(start);
  ASSERT_TRUE(w.ok() && w.count == kBytes) << w.StatusString();
  std::cout << "one FILE_SYNC WRITE of 256 KiB at 1 MB/s: " << ms << " ms\n";
  // 262144 bytes at 10^6 bytes/s: 262 ms, plus the sync time.
  EXPECT_GE(ms, kShortSyncUs / 1000.0 + kBytes / 1000.0);
  EXPECT_TRUE(ReadFile(Disk() + "/big") == data);
}

TEST_F(SlowDiskTest, WithoutItNothingIsPreloaded) {
  StartBed(0);
  EXPECT_FALSE(GaneshaMapsTheLibrary());
  std::cout << "10 FILE_SYNC WRITEs on the real disk: " << WriteOneAfterAnother("plain", 10)
            << " ms\n";
}

TEST_F(SlowDiskTest, AskingWithoutTheLibraryOrWithABadRateFailsClearly) {
  TempDir dir("slowdisk-bad");
  ASSERT_TRUE(dir.ok());
  Ganesha::Options o;
  o.work_dir = dir.Sub("ganesha");
  o.disk_sync_us = kSyncUs;
  o.slow_disk_library = dir.Sub("no-such-library.so");
  auto g = Ganesha::Start(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("emulated disk library was not found"), std::string::npos)
      << g.status().message();
  o.slow_disk_library = "";
  o.disk_mbps = 0;
  g = Ganesha::Start(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("disk_mbps 0 is out of range"), std::string::npos)
      << g.status().message();
}

// The library's own reading of its environment, in a small program.
TEST_F(SlowDiskTest, TheLibrarySaysAtLoadWhatItDoes) {
  TempDir dir("slowdisk-load");
  ASSERT_TRUE(dir.ok());
  auto run = [&](const std::string& name, const std::string& sync_us) {
    Subprocess::Options o;
    o.argv = {"/bin/true"};
    o.log_path = dir.Sub(name + ".log");
    o.env = {"LD_PRELOAD=" + Ganesha::DefaultSlowDiskLibrary(), "NFSEDGE_DISK_SYNC_US=" + sync_us,
             "NFSEDGE_DISK_MBPS=50"};
    auto p = Subprocess::Start(o);
    EXPECT_TRUE(p.ok()) << p.status().message();
    if (!p.ok()) return std::string();
    std::optional<ExitStatus> e = (*p)->WaitForExit(Millis(10000));
    EXPECT_TRUE(e && e->success()) << name;
    return ReadFile(o.log_path);
  };
  EXPECT_EQ(run("off", "0"), "");
  EXPECT_EQ(run("active", "20000"),
            "nfsedge_slow_disk: active: each flush costs 20000 us + the bytes written since the "
            "previous one at 50 MB/s, one flush at a time\n");
  const std::string bad = run("bad", "20ms");
  EXPECT_EQ(
      bad.find("nfsedge_slow_disk: ignoring NFSEDGE_DISK_SYNC_US=\"20ms\": not a whole number"), 0u)
      << bad;
  EXPECT_EQ(bad.find("active"), std::string::npos) << bad;
}

}  // namespace
}  // namespace nfsedge::itest
