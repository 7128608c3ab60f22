// proxy_fault_test: faults with real processes, short enough for CI.
// - ganesha killed (-9) and restarted while 16 writers write through the
//   proxy (FILE_SYNC, and UNSTABLE + COMMIT): every byte a client had
//   acknowledged as stable is in ganesha's files afterwards;
// - the proxy killed (-9) and restarted during the same writes: the
//   UNSTABLE writers see a new verifier and resend, nothing is lost; the
//   RocksDB data cache (cache.disk_dir) reopens cleanly and serves reads;
// - the disk tier's file system full (a small tmpfs): reads stay correct,
//   the failed writes are logged and counted.
// The WAN outages and a slow upstream are in proxy_outage_test.

#include "fault_fixture.h"

namespace nfsedge::itest {
namespace {

using namespace fault;  // NOLINT: test file, the fixture's names throughout.

TEST_F(FaultTest, GaneshaKilledDuringWritesLosesNoAcknowledgedByte) {
  // Background WRITEs of 64 KiB: UNSTABLE upstream, then COMMIT, so that
  // ganesha's new verifier after its restart is met by the proxy.
  StartBed("gather_window_ms = 5\n", "[write]\nwrite_size = \"64K\"\n");
  ASSERT_NE(proxy_, nullptr);
  int verifier_changes = 0;
  WriteThrough(
      [&] {
        Status s = bed_->KillAndRestartGanesha(Millis(1500));
        ASSERT_TRUE(s.ok()) << s.message();
      },
      &verifier_changes);
  // The proxy's own verifier did not change: it sent what ganesha lost again
  // by itself.
  EXPECT_EQ(verifier_changes, 0);
  ExitStatus e = proxy_->Stop();
  EXPECT_TRUE(e.success()) << e.ToString();
  const std::string log = ReadFile(proxy_->log_path());
  std::printf("proxy: %s\nproxy: %s\n", LastLine(log, "stats write ").c_str(),
              LastLine(log, "stats upstream_bulk ").c_str());
  EXPECT_GT(Counter(log, "stats upstream_bulk ", "reconnects"), 0) << "ganesha's crash was seen";
  EXPECT_GT(Counter(log, "stats write ", "resent"), 0)
      << "written pieces met ganesha's new verifier and were sent again";
}

TEST_F(FaultTest, ProxyKilledDuringWritesClientsResendAndTheDiskCacheReopens) {
  StartBed("gather_window_ms = 5\n", "disk_dir = \"@DIR@/nfsedge-cache\"\n",
           "handle_store = \"@DIR@/nfsedge-handles\"\n");
  ASSERT_NE(proxy_, nullptr);

  // A file read through the proxy, so that its blocks are in the disk tier.
  const std::string cached = Content(99, 1 << 20);
  ASSERT_TRUE(WriteFile(Disk() + "/cached", cached).ok());
  std::string cached_fh;
  {
    auto c = Client();
    ASSERT_NE(c, nullptr);
    MntResult m = c->Mnt("/export");
    ASSERT_TRUE(m.ok());
    cached_fh = OpenAndRead(*c, m.fh, "cached", cached);
    ASSERT_FALSE(HasFailure());
  }
  const std::string log1 = WaitForCounter("stats data ", "puts", 16);
  ASSERT_GE(Counter(log1, "stats data ", "puts"), 16) << "blocks in the disk tier";
  // The store skips RocksDB's write-ahead log (docs/cache-format.md): blocks
  // still in its memtable die with a kill -9. A clean restart flushes them,
  // so that the kill below has blocks on disk to leave intact.
  ASSERT_TRUE(proxy_->Stop().success());
  StartProxy();

  int verifier_changes = 0;
  WriteThrough(
      [&] {
        KillProxy();
        StartProxy();
      },
      &verifier_changes);
  EXPECT_GT(verifier_changes, 0) << "UNSTABLE writers saw the proxy's new verifier";

  // The cached file, read after the kill: from the disk tier, correct.
  {
    auto c = Client();
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(c->Access(cached_fh, 0x3f).ok()) << "handle kept by the handle store";
    ReadResult r = c->ReadAll(cached_fh, 0, cached.size() + 1, 65536);
    ASSERT_TRUE(r.ok()) << r.StatusString();
    EXPECT_TRUE(r.data == cached) << "cached file read after the restart";
    r = c->ReadAll(cached_fh, 0, cached.size() + 1, 65536);
    ASSERT_TRUE(r.ok()) << r.StatusString();
    EXPECT_TRUE(r.data == cached) << "cached file read again";
  }
  ExitStatus e = proxy_->Stop();
  EXPECT_TRUE(e.success()) << e.ToString();
  const std::string log = ReadFile(proxy_->log_path());
  EXPECT_EQ(log.find("rebuilding it empty"), std::string::npos) << "disk tier rebuilt";
  EXPECT_EQ(log.find("corrupt"), std::string::npos);
  EXPECT_GT(Counter(log, "stats data ", "disk_hits"), 0) << "reads served by the disk tier";
  EXPECT_EQ(Counter(log, "stats data ", "errors"), 0);
}

TEST_F(FaultTest, FullDiskTierKeepsReadsCorrectAndRecoversWhenTheDiskHasRoom) {
  char small[] = "/tmp/nfsedge-full-XXXXXX";
  ASSERT_NE(mkdtemp(small), nullptr);
  ASSERT_EQ(mount("tmpfs", small, "tmpfs", 0, "size=4m"), 0) << std::strerror(errno);
  struct Unmount {
    std::string dir;
    ~Unmount() {
      umount2(dir.c_str(), MNT_DETACH);
      rmdir(dir.c_str());
    }
  } unmount{small};
  StartBed("", std::string("memory_bytes = \"4M\"\nreadahead_max_bytes = 0\ndisk_dir = \"") +
               small + "/cache\"\n");
  ASSERT_NE(proxy_, nullptr);
  const std::string big = Content(3, 72 << 20);
  const std::string other = Content(4, 4 << 20);
  ASSERT_TRUE(WriteFile(Disk() + "/big", big).ok());
  ASSERT_TRUE(WriteFile(Disk() + "/other", other).ok());
  auto c = Client();
  ASSERT_NE(c, nullptr);
  MntResult m = c->Mnt("/export");
  ASSERT_TRUE(m.ok());
  OpenAndRead(*c, m.fh, "big", big);
  // Keep reading (correctly) until the failed flush shows in the log.
  const std::string line = std::string("disk tier: ") + small + "/cache: a write failed";
  bool logged = false;
  for (int round = 0; round < 30 && !logged && !HasFailure(); ++round) {
    OpenAndRead(*c, m.fh, round % 2 ? "other" : "big", round % 2 ? other : big);
    logged = ReadFile(proxy_->log_path()).find(line) != std::string::npos;
  }
  EXPECT_TRUE(logged) << "no log line for the failed writes";
  OpenAndRead(*c, m.fh, "other", other);
  const std::string log = WaitForCounter("stats data ", "errors", 1);
  std::printf("proxy: %s\n", LastLine(log, "stats data ").c_str());
  EXPECT_GT(Counter(log, "stats data ", "errors"), 0) << "the failed writes are counted";
  // The disk gets room: the tier takes writes again without a restart (a
  // store RocksDB stopped would refuse them for good). A file first read
  // now is served from disk once the memory tier has let it go.
  ASSERT_EQ(mount(nullptr, small, nullptr, MS_REMOUNT, "size=256m"), 0) << std::strerror(errno);
  const std::string late = Content(5, 4 << 20);
  ASSERT_TRUE(WriteFile(Disk() + "/late", late).ok());
  for (int round = 0; round < 3 && !HasFailure(); ++round) {
    OpenAndRead(*c, m.fh, "other", other);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // a pending reopen
  }
  OpenAndRead(*c, m.fh, "late", late);
  OpenAndRead(*c, m.fh, "big", big);  // late's blocks leave memory
  const int64_t hits = Counter(WaitForCounter("stats data ", "disk_hits", 0), "stats data ",
                               "disk_hits");
  OpenAndRead(*c, m.fh, "late", late);
  const std::string after = WaitForCounter("stats data ", "disk_hits", hits + 1);
  std::printf("proxy: %s\n", LastLine(after, "stats data ").c_str());
  EXPECT_GT(Counter(after, "stats data ", "disk_hits"), hits)
      << "blocks kept after the disk got room are not served";
  ASSERT_TRUE(proxy_->IsRunning());
  ExitStatus e = proxy_->Stop();
  EXPECT_TRUE(e.success()) << e.ToString();
}

}  // namespace
}  // namespace nfsedge::itest
