// proxy_write_test: the write path through nfsedge in front of a real
// ganesha. Many concurrent writers (stable and unstable) leave exactly the
// expected bytes in the upstream's files; stable writes are gathered (fewer
// upstream FILE_SYNC WRITEs and COMMITs than client writes, by the proxy's
// counters); buffered writes are seen by READ, GETATTR and SETATTR through
// the proxy; after kill -9 with write-behind data outstanding, the client's
// next COMMIT sees a new verifier, and once it writes again nothing is lost;
// with the edge journal (write_back), writes are acknowledged from the local
// journal, and after kill -9 and a restart every acknowledged byte reaches
// the upstream, under the same verifier.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <thread>

#include "harness/files.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

std::string Content(uint64_t seed, size_t size) { return Pattern(size, static_cast<uint32_t>(seed)); }

// Returns the value of `key=N` on the last "stats write" line of `log`, or -1.
int64_t Counter(const std::string& log, const std::string& key) {
  const size_t line = log.rfind("stats write ");
  if (line == std::string::npos) return -1;
  const size_t at = log.find(" " + key + "=", line);
  if (at == std::string::npos || at > log.find('\n', line)) return -1;
  return std::stoll(log.substr(at + key.size() + 2));
}

class WriteTest : public ::testing::Test {
 protected:
  void SetUp() override { NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK(); }
  void TearDown() override {
    if (HasFailure() && proxy_) std::cerr << proxy_->LogTail(80);
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
  }

  // Starts ganesha, then nfsedge with one export; `write_toml` goes in
  // nfsedge's [write] table. The test runs nfsedge itself so that it can
  // kill it and start it again.
  void StartBed(const std::string& write_toml = "", const std::string& export_toml = "") {
    Testbed::Options o;
    o.name = "write";
    o.start_proxy = false;
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
    popts_.work_dir = bed_->dir().Sub("nfsedge");
    popts_.log_level = "info";
    ProxyExport e;
    e.path = "/export";
    e.upstream_path = Disk();
    e.extra_toml = "gather_window_ms = 20\nwrite_behind = true\n" + export_toml;
    popts_.exports = {e};
    // The edge journal (used by write_back exports only) in the bed.
    popts_.extra_toml = "[cache]\nrefresh_ahead_ms = 0\n[write]\njournal_dir = \"" +
                        bed_->dir().Sub("journal") + "\"\n" + write_toml;
    StartProxy();
  }
  void StartProxy() {
    auto p = ProxyProcess::Start(popts_);
    ASSERT_TRUE(p.ok()) << p.status().message();
    proxy_ = std::move(p).value();
  }
  std::string Disk() { return bed_->ganesha().export_path(0); }
  std::unique_ptr<RawNfs> Client() {
    return ConnectOrFail("127.0.0.1", proxy_->nfs_port(), Credential{0, 0, {}, "t"});
  }
  // Mounts, creates `name` and asks ACCESS as a client does at open.
  std::string Open(RawNfs& c, const std::string& name) {
    MntResult m = c.Mnt("/export");
    EXPECT_TRUE(m.ok());
    CreateResult f = c.Create(m.fh, name, Sattr{});
    EXPECT_TRUE(f.ok()) << name << ": " << f.StatusString();
    EXPECT_TRUE(c.Access(f.fh, 0x3f).ok());
    return f.fh;
  }
  // With a write_back export (nothing flushed by itself for a minute),
  // writes `data` to a new file `name` in FILE_SYNC writes the journal
  // acknowledges, then kills nfsedge (-9): the bytes are in the journal only.
  void AcknowledgeFromTheJournalAndKill(const std::string& name, const std::string& data) {
    StartBed("flush_delay_ms = 60000\n", "write_back = true\n");
    auto c = Client();
    ASSERT_NE(c, nullptr);
    std::string fh = Open(*c, name);
    for (size_t off = 0; off < data.size(); off += 25000) {
      WriteResult r = c->Write(fh, off, data.substr(off, 25000), Stable::kFileSync);
      ASSERT_TRUE(r.ok()) << r.StatusString();
      ASSERT_EQ(r.committed, 2u) << "FILE_SYNC from the journal";
    }
    ASSERT_NE(ReadFile(Disk() + "/" + name), data) << "acknowledged, not yet upstream";
    ASSERT_EQ(kill(proxy_->pid(), SIGKILL), 0);
    EXPECT_FALSE(proxy_->Stop().exited);
  }
  std::string StopProxyLog() {
    ExitStatus exit = proxy_->Stop();
    EXPECT_TRUE(exit.success());
    return proxy_->LogTail(40);
  }

  std::unique_ptr<Testbed> bed_;
  ProxyProcess::Options popts_;
  std::unique_ptr<ProxyProcess> proxy_;
};

TEST_F(WriteTest, ConcurrentWritersLeaveTheExpectedBytesAndStableWritesAreGathered) {
  StartBed();
  constexpr int kWriters = 7;
  constexpr uint32_t kChunk = 32 << 10;
  constexpr size_t kPerWriter = 1 << 20;
  // One shared file written FILE_SYNC by every writer (each its own region,
  // chunks interleaved in time), and one file each written UNSTABLE, then
  // committed.
  std::string shared_fh;
  {
    auto c = Client();
    ASSERT_NE(c, nullptr);
    shared_fh = Open(*c, "shared");
  }
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto c = Client();
      if (!c) {
        failures[w] = "cannot connect";
        return;
      }
      const std::string mine = Content(w, kPerWriter);
      for (size_t off = 0; off < kPerWriter; off += kChunk) {
        WriteResult r = c->Write(shared_fh, w * kPerWriter + off, mine.substr(off, kChunk),
                                 Stable::kFileSync);
        if (!r.ok() || r.count != kChunk || r.committed != 2) {
          failures[w] = "shared write at " + std::to_string(off) + ": " + r.StatusString();
          return;
        }
      }
      std::string fh = Open(*c, "own" + std::to_string(w));
      const std::string own = Content(100 + w, kPerWriter + 12345);
      std::string verf;
      for (size_t off = 0; off < own.size(); off += kChunk) {
        WriteResult r = c->Write(fh, off, own.substr(off, kChunk), Stable::kUnstable);
        if (!r.ok()) {
          failures[w] = "own write: " + r.StatusString();
          return;
        }
        if (!verf.empty() && r.verf != verf) failures[w] = "verifier changed between writes";
        verf = r.verf;
      }
      CommitResult cr = c->Commit(fh, 0, 0);
      if (!cr.ok() || cr.verf != verf) failures[w] = "commit: " + cr.StatusString();
    });
  }
  for (auto& t : threads) t.join();
  for (int w = 0; w < kWriters; ++w) EXPECT_EQ(failures[w], "") << "writer " << w;

  const std::string shared = ReadFile(Disk() + "/shared");
  ASSERT_EQ(shared.size(), kWriters * kPerWriter);
  for (int w = 0; w < kWriters; ++w) {
    EXPECT_TRUE(shared.compare(w * kPerWriter, kPerWriter, Content(w, kPerWriter)) == 0)
        << "writer " << w << "'s region of the shared file";
    EXPECT_EQ(ReadFile(Disk() + "/own" + std::to_string(w)), Content(100 + w, kPerWriter + 12345)) << "writer " << w << "'s own file";
  }
  const std::string log = StopProxyLog();
  for (const char* key : {"stable", "sync_writes", "upstream_commits", "buffered", "max_write"}) {
    ASSERT_GE(Counter(log, key), 0) << "no " << key << "= in the stats line\n" << log;
  }
  const int64_t stable = Counter(log, "stable");
  const int64_t syncing = Counter(log, "sync_writes") + Counter(log, "upstream_commits");
  EXPECT_EQ(stable, kWriters * static_cast<int64_t>(kPerWriter / kChunk)) << log;
  EXPECT_GT(Counter(log, "buffered"), 0) << log;
  // Gathering: the stable writes share server commits.
  EXPECT_LT(syncing, stable / 2) << log;
  EXPECT_GT(Counter(log, "max_write"), static_cast<int64_t>(kChunk)) << "merged writes\n" << log;
}

TEST_F(WriteTest, ReadsGetattrAndSetattrSeeBufferedWrites) {
  // Nothing leaves the buffer on its own during the test.
  StartBed("flush_delay_ms = 60000\nwrite_size = \"1M\"\n");
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::string fh = Open(*c, "f");
  const std::string data = Content(5, 100000);
  ASSERT_TRUE(c->WriteAll(fh, 0, data, Stable::kUnstable, 32768).ok());
  struct stat st {};
  ASSERT_EQ(stat((Disk() + "/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0) << "the writes are still in the proxy's buffer";
  GetattrResult g = c->Getattr(fh);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g.attr.size, data.size()) << "GETATTR reflects the buffered writes";
  ReadResult r = c->ReadAll(fh, 0, data.size() + 10, 65536);
  ASSERT_TRUE(r.ok()) << r.StatusString();
  EXPECT_EQ(r.data, data);
  // More buffered data, then a truncation: the truncation wins.
  ASSERT_TRUE(c->Write(fh, 200000, "tail", Stable::kUnstable).ok());
  Sattr trunc;
  trunc.size = 50000;
  ASSERT_TRUE(c->Setattr(fh, trunc).ok());
  r = c->ReadAll(fh, 0, 300000, 65536);
  ASSERT_TRUE(r.ok()) << r.StatusString();
  EXPECT_EQ(r.data, data.substr(0, 50000));
  CommitResult cr = c->Commit(fh, 0, 0);
  ASSERT_TRUE(cr.ok());
  EXPECT_EQ(ReadFile(Disk() + "/f"), data.substr(0, 50000));
}

// Every answer that carries a file's attributes shows its buffered writes:
// LOOKUP (from the name cache, or from the upstream), READDIRPLUS and ACCESS
// (DESIGN rule 4; found by the conformance long run as a stat after a
// LOOKUP that showed the size before the writes).
TEST_F(WriteTest, LookupReaddirplusAndAccessSeeBufferedWrites) {
  StartBed("flush_delay_ms = 60000\nwrite_size = \"1M\"\n");
  auto c = Client();
  ASSERT_NE(c, nullptr);
  MntResult m = c->Mnt("/export");
  ASSERT_TRUE(m.ok());
  std::string fh = Open(*c, "g");
  const std::string data = Content(6, 70000);
  ASSERT_TRUE(c->WriteAll(fh, 0, data, Stable::kUnstable, 32768).ok());
  struct stat st {};
  ASSERT_EQ(stat((Disk() + "/g").c_str(), &st), 0);
  ASSERT_EQ(st.st_size, 0) << "the writes are still in the proxy's buffer";
  LookupResult l = c->Lookup(m.fh, "g");
  ASSERT_TRUE(l.ok()) << l.StatusString();
  ASSERT_TRUE(l.attr.has_value());
  EXPECT_EQ(l.attr->size, data.size()) << "LOOKUP's attributes show the buffered writes";

  ASSERT_TRUE(c->Write(fh, data.size(), "more", Stable::kUnstable).ok());
  ReaddirResult d = c->Readdirplus(m.fh, 0, std::string(8, '\0'), 4096, 32768);
  ASSERT_TRUE(d.ok()) << d.StatusString();
  bool found = false;
  for (const DirEntry& e : d.entries) {
    if (e.name != "g") continue;
    found = true;
    ASSERT_TRUE(e.attr.has_value());
    EXPECT_EQ(e.attr->size, data.size() + 4) << "READDIRPLUS shows the buffered writes";
  }
  EXPECT_TRUE(found);

  ASSERT_TRUE(c->Write(fh, data.size() + 4, "end", Stable::kUnstable).ok());
  AccessResult a = c->Access(fh, 0x3f);
  ASSERT_TRUE(a.ok()) << a.StatusString();
  ASSERT_TRUE(a.attr.has_value());
  EXPECT_EQ(a.attr->size, data.size() + 7) << "ACCESS's attributes show the buffered writes";
}

TEST_F(WriteTest, KillNineWithBufferedDataGivesANewVerifierAndResendLosesNothing) {
  StartBed("flush_delay_ms = 60000\nwrite_size = \"1M\"\n");
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::string fh = Open(*c, "k");
  const std::string data = Content(9, 300000);
  std::string verf;
  for (size_t off = 0; off < data.size(); off += 32768) {
    WriteResult r = c->Write(fh, off, data.substr(off, 32768), Stable::kUnstable);
    ASSERT_TRUE(r.ok()) << r.StatusString();
    EXPECT_EQ(r.committed, 0u);
    verf = r.verf;
  }
  struct stat st {};
  ASSERT_EQ(stat((Disk() + "/k").c_str(), &st), 0);
  ASSERT_LT(static_cast<size_t>(st.st_size), data.size()) << "data outstanding in the proxy";

  ASSERT_EQ(kill(proxy_->pid(), SIGKILL), 0);
  EXPECT_FALSE(proxy_->Stop().exited);
  StartProxy();
  c = Client();
  ASSERT_NE(c, nullptr);
  CommitResult cr = c->Commit(fh, 0, 0);
  if (!cr.ok()) {
    // Handles not kept across restarts: the client looks the file up again.
    MntResult m = c->Mnt("/export");
    ASSERT_TRUE(m.ok());
    LookupResult l = c->Lookup(m.fh, "k");
    ASSERT_TRUE(l.ok());
    fh = l.fh;
    ASSERT_TRUE(c->Access(fh, 0x3f).ok());
    cr = c->Commit(fh, 0, 0);
  }
  ASSERT_TRUE(cr.ok()) << cr.StatusString();
  EXPECT_NE(cr.verf, verf) << "a new verifier: the client must send its writes again";
  // The client resends its uncommitted writes, then commits.
  for (size_t off = 0; off < data.size(); off += 32768) {
    WriteResult r = c->Write(fh, off, data.substr(off, 32768), Stable::kUnstable);
    ASSERT_TRUE(r.ok()) << r.StatusString();
    verf = r.verf;
  }
  cr = c->Commit(fh, 0, 0);
  ASSERT_TRUE(cr.ok());
  EXPECT_EQ(cr.verf, verf);
  EXPECT_EQ(ReadFile(Disk() + "/k"), data);
}

TEST_F(WriteTest, EdgeJournalAcknowledgesLocallyAndReplaysAfterKillNine) {
  // Nothing goes upstream by itself for a minute: what the client was told
  // is stable is, when the proxy dies, only in the journal.
  StartBed("flush_delay_ms = 60000\nwrite_size = \"1M\"\n", "write_back = true\n");
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::string fh = Open(*c, "j");
  const std::string data = Content(11, 300000);
  std::string verf;
  // FILE_SYNC writes, then UNSTABLE ones and a COMMIT.
  for (size_t off = 0; off < 200000; off += 20000) {
    WriteResult r = c->Write(fh, off, data.substr(off, 20000), Stable::kFileSync);
    ASSERT_TRUE(r.ok()) << r.StatusString();
    EXPECT_EQ(r.committed, 2u) << "FILE_SYNC from the journal";
    if (!verf.empty()) {
      EXPECT_EQ(r.verf, verf);
    }
    verf = r.verf;
  }
  for (size_t off = 200000; off < data.size(); off += 25000) {
    WriteResult r = c->Write(fh, off, data.substr(off, 25000), Stable::kUnstable);
    ASSERT_TRUE(r.ok()) << r.StatusString();
    EXPECT_EQ(r.verf, verf);
  }
  CommitResult cr = c->Commit(fh, 0, 0);
  ASSERT_TRUE(cr.ok()) << cr.StatusString();
  EXPECT_EQ(cr.verf, verf);
  struct stat st {};
  ASSERT_EQ(stat((Disk() + "/j").c_str(), &st), 0);
  ASSERT_LT(static_cast<size_t>(st.st_size), data.size()) << "acknowledged, not yet upstream";

  ASSERT_EQ(kill(proxy_->pid(), SIGKILL), 0);
  EXPECT_FALSE(proxy_->Stop().exited);
  StartProxy();
  // The journal goes upstream at start, before the flush delay.
  EXPECT_TRUE(WaitUntil([&] { return ReadFile(Disk() + "/j") == data; }, Millis(20000)))
      << "the acknowledged bytes must reach the upstream";
  EXPECT_NE(ReadFile(proxy_->log_path()).find("acknowledged writes found"), std::string::npos);
  c = Client();
  ASSERT_NE(c, nullptr);
  MntResult m = c->Mnt("/export");
  ASSERT_TRUE(m.ok());
  LookupResult l = c->Lookup(m.fh, "j");
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(c->Access(l.fh, 0x3f).ok());
  cr = c->Commit(l.fh, 0, 0);
  ASSERT_TRUE(cr.ok()) << cr.StatusString();
  EXPECT_EQ(cr.verf, verf) << "the journal's verifier survives: nothing acknowledged was lost";
  ReadResult rr = c->Read(l.fh, 0, 65536);
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(rr.data, data.substr(0, 65536));
}

TEST_F(WriteTest, AJournalIsReplayedAfterWriteBackIsTurnedOff) {
  const std::string data = Content(12, 100000);
  ASSERT_NO_FATAL_FAILURE(AcknowledgeFromTheJournalAndKill("off", data));
  // The administrator turns write_back off with the proxy down: what the
  // journal acknowledged still goes upstream at the next start.
  popts_.exports[0].extra_toml = "gather_window_ms = 20\nwrite_behind = true\n";
  StartProxy();
  EXPECT_TRUE(WaitUntil([&] { return ReadFile(Disk() + "/off") == data; }, Millis(20000)))
      << "the acknowledged bytes must reach the upstream";
  EXPECT_NE(ReadFile(proxy_->log_path()).find("no export has write_back now"),
            std::string::npos);
}

// The journal's disk is not mounted at a start (its directory an empty
// mount point), and write_back was turned off meanwhile: the start stops,
// saying why, rather than going on without the journal (whose records
// would be replayed over newer data once the disk was back). With the
// disk back, the acknowledged bytes go upstream.
TEST_F(WriteTest, AStartWithTheJournalsDiskMissingStops) {
  const std::string data = Content(13, 30000);
  ASSERT_NO_FATAL_FAILURE(AcknowledgeFromTheJournalAndKill("unmounted", data));
  const std::string journal = bed_->dir().Sub("journal");
  ASSERT_EQ(rename(journal.c_str(), (journal + ".disk").c_str()), 0);
  ASSERT_EQ(mkdir(journal.c_str(), 0700), 0);  // the empty mount point
  popts_.exports[0].extra_toml = "gather_window_ms = 20\nwrite_behind = true\n";
  auto p = ProxyProcess::Start(popts_);
  ASSERT_FALSE(p.ok()) << "nfsedge started without its journal";
  EXPECT_NE(p.status().message().find("not mounted"), std::string::npos) << p.status().message();

  ASSERT_EQ(rmdir(journal.c_str()), 0);
  ASSERT_EQ(rename((journal + ".disk").c_str(), journal.c_str()), 0);
  StartProxy();
  EXPECT_TRUE(WaitUntil([&] { return ReadFile(Disk() + "/unmounted") == data; }, Millis(20000)))
      << "the acknowledged bytes must reach the upstream";
}

TEST_F(WriteTest, NfsedgeFlushSendsBufferedWritesUpstreamAndReports) {
  StartBed("flush_delay_ms = 60000\nwrite_size = \"1M\"\n");
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::string fh = Open(*c, "f");
  const std::string data = Content(12, 100000);
  for (size_t off = 0; off < data.size(); off += 25000) {
    ASSERT_TRUE(c->Write(fh, off, data.substr(off, 25000), Stable::kUnstable).ok());
  }
  ASSERT_NE(ReadFile(Disk() + "/f"), data) << "buffered for a minute";
  auto [code, out] = RunNfsedge("flush --socket " + popts_.work_dir + "/control.sock");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("flushed 1 files, 100000 bytes"), std::string::npos) << out;
  EXPECT_EQ(ReadFile(Disk() + "/f"), data) << "stable upstream once flush returns";
}

TEST_F(WriteTest, FirstWritesAfterCreateAreBufferedWithoutAnAccessOfTheClients) {
  // The client writes right after CREATE, without an ACCESS of its own (as
  // the Linux client does after an exclusive or unchecked create): the
  // proxy asked ACCESS when the CREATE was answered, and the first writes
  // are buffered (the creator as the owner at once, others once that
  // evidence is in: create_write_test) instead of going upstream as stable
  // writes.
  StartBed("flush_delay_ms = 60000\nwrite_size = \"1M\"\n");
  auto c = Client();
  ASSERT_NE(c, nullptr);
  MntResult m = c->Mnt("/export");
  ASSERT_TRUE(m.ok());
  CreateResult f = c->Create(m.fh, "fresh", Sattr{});
  ASSERT_TRUE(f.ok()) << f.StatusString();
  const std::string data = Content(14, 3 * 32768);
  std::string verf;
  for (size_t off = 0; off < data.size(); off += 32768) {
    WriteResult r = c->Write(f.fh, off, data.substr(off, 32768), Stable::kUnstable);
    ASSERT_TRUE(r.ok()) << r.StatusString();
    EXPECT_EQ(r.committed, 0u) << "at " << off << ": buffered, not sent as a stable write";
    if (!verf.empty()) {
      EXPECT_EQ(r.verf, verf);
    }
    verf = r.verf;
  }
  EXPECT_EQ(ReadFile(Disk() + "/fresh"), "") << "in the proxy's buffer for a minute";
  CommitResult cr = c->Commit(f.fh, 0, 0);
  ASSERT_TRUE(cr.ok()) << cr.StatusString();
  EXPECT_EQ(cr.verf, verf);
  EXPECT_EQ(ReadFile(Disk() + "/fresh"), data);
}

TEST_F(WriteTest, CleanShutdownFlushesBufferedWritesFirst) {
  StartBed("flush_delay_ms = 60000\nwrite_size = \"1M\"\n");
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::string fh = Open(*c, "s");
  const std::string data = Content(13, 80000);
  for (size_t off = 0; off < data.size(); off += 20000) {
    ASSERT_TRUE(c->Write(fh, off, data.substr(off, 20000), Stable::kUnstable).ok());
  }
  ASSERT_NE(ReadFile(Disk() + "/s"), data) << "buffered for a minute";
  EXPECT_TRUE(proxy_->Stop().success());
  EXPECT_EQ(ReadFile(Disk() + "/s"), data) << "SIGTERM sends buffered writes upstream first";
  EXPECT_NE(ReadFile(proxy_->log_path()).find("flushing 80000 bytes"), std::string::npos);
}

}  // namespace
}  // namespace nfsedge::itest
