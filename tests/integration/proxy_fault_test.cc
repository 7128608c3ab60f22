// proxy_fault_test: faults with real processes, short enough for CI.
// - ganesha killed (-9) and restarted while 16 writers write through the
//   proxy (FILE_SYNC, and UNSTABLE + COMMIT): every byte a client had
//   acknowledged as stable is in ganesha's files afterwards;
// - the proxy killed (-9) and restarted during the same writes: the
//   UNSTABLE writers see a new verifier and resend, nothing is lost; the
//   RocksDB data cache (cache.disk_dir) reopens cleanly and serves reads;
// - the WAN emulator between proxy and ganesha stopped (SIGSTOP) for a few
//   seconds: cached reads are answered during the cut, uncached calls wait
//   and complete once it returns, and a CREATE retransmitted by the client
//   (same XID, new connection) is not run twice;
// - the disk tier's file system full (a small tmpfs): reads stay correct,
//   the failed writes are logged and counted.
//
// The writers behave as NFSv3 clients must: a write is retried until it is
// answered; UNSTABLE data is kept until a COMMIT returns the verifier every
// WRITE of it returned, else it is all sent again (RFC 1813 section 3.3.7).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <thread>

#include "harness/files.h"
#include "harness/raw_rpc.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.
using std::chrono::steady_clock;

constexpr int kWriters = 16;
constexpr uint32_t kChunk = 32 << 10;
constexpr size_t kBatch = 8 * kChunk;  // UNSTABLE bytes per COMMIT.
constexpr size_t kFileBytes = 1 << 20;
// The WAN emulator's listening ports, relaying to ganesha.
constexpr uint16_t kWanNfsPort = 21490;
constexpr uint16_t kWanMountPort = 21048;
// Attribute lifetimes of an export, long (beyond every test) and short.
constexpr const char* kLifetimes60 = "acregmin = 60\nacregmax = 60\nacdirmin = 60\nacdirmax = 60\n";
constexpr const char* kLifetimes2 = "acregmin = 2\nacregmax = 2\nacdirmin = 2\nacdirmax = 2\n";

std::string Content(int seed, size_t size) { return Pattern(size, 1000u + seed); }
std::string WriterFile(int w) { return "w" + std::to_string(w); }

// Returns the value of ` key=N` on the last line of `log` starting with
// `prefix`, or -1.
int64_t Counter(const std::string& log, const std::string& prefix, const std::string& key) {
  const size_t line = log.rfind(prefix);
  if (line == std::string::npos) return -1;
  const size_t at = log.find(" " + key + "=", line);
  if (at == std::string::npos || at > log.find('\n', line)) return -1;
  return std::stoll(log.substr(at + key.size() + 2));
}

// Returns the last line of `log` starting with `prefix` (from the prefix on).
std::string LastLine(const std::string& log, const std::string& prefix) {
  const size_t at = log.rfind(prefix);
  if (at == std::string::npos) return "";
  return log.substr(at, log.find('\n', at) - at);
}

// One client writing its own file from offset 0 to the end, FILE_SYNC or
// UNSTABLE + COMMIT, through whatever faults the test makes. `stable()` is
// how many bytes from the start the server has acknowledged as stable; the
// writer never writes below it again.
class Writer {
 public:
  Writer(int id, Stable mode, uint16_t port) : id_(id), mode_(mode), port_(port) {}

  void Run(steady_clock::time_point deadline) {
    const std::string data = Content(id_, kFileBytes);
    size_t stable = 0;
    std::string fh;
    std::string batch_verf;   // verifier of the UNSTABLE writes since `stable`
    bool batch_mixed = false;  // they did not all return the same one
    size_t sent = 0;           // UNSTABLE: end of what this batch has written
    while (stable < data.size()) {
      if (steady_clock::now() > deadline) {
        failure_ = "not done in time, stable at " + std::to_string(stable);
        return;
      }
      if (!client_ || !client_->connected() || fh.empty()) {
        if (!Connect(&fh)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
      }
      const size_t batch_end = std::min(data.size(), stable + kBatch);
      if (mode_ == Stable::kFileSync) {
        const size_t len = std::min<size_t>(kChunk, data.size() - stable);
        WriteResult r = client_->Write(fh, stable, data.substr(stable, len), Stable::kFileSync);
        if (!Retryable(r, &fh)) return;
        if (!r.ok()) continue;
        if (r.committed != static_cast<uint32_t>(Stable::kFileSync) || r.count == 0) {
          failure_ = "FILE_SYNC write answered committed=" + std::to_string(r.committed) +
                     " count=" + std::to_string(r.count);
          return;
        }
        stable += r.count;
        stable_.store(stable);
        continue;
      }
      if (sent < batch_end) {
        const size_t len = std::min<size_t>(kChunk, batch_end - sent);
        WriteResult r = client_->Write(fh, sent, data.substr(sent, len), Stable::kUnstable);
        if (!Retryable(r, &fh)) return;
        if (!r.ok()) continue;  // The same chunk again.
        if (r.count == 0) {
          failure_ = "UNSTABLE write of nothing";
          return;
        }
        if (batch_verf.empty()) batch_verf = r.verf;
        if (r.verf != batch_verf) batch_mixed = true;
        sent += r.count;
        continue;
      }
      CommitResult c = client_->Commit(fh, 0, 0);
      if (!Retryable(c, &fh)) return;
      if (!c.ok()) continue;
      if (batch_mixed || c.verf != batch_verf) {
        // The server lost uncommitted data: send the whole batch again.
        ++verifier_changes_;
        sent = stable;
        batch_verf.clear();
        batch_mixed = false;
        continue;
      }
      stable = batch_end;
      stable_.store(stable);
      sent = stable;
      batch_verf.clear();
    }
    client_.reset();
  }

  size_t stable() const { return stable_.load(); }
  const std::string& failure() const { return failure_; }
  int verifier_changes() const { return verifier_changes_; }
  int reconnects() const { return reconnects_; }
  int jukeboxes() const { return jukeboxes_; }

 private:
  // Connects (again), mounts and creates or looks up the writer's file.
  bool Connect(std::string* fh) {
    ++reconnects_;
    RawNfs::Options o;
    o.endpoint.port = port_;
    o.credential = Credential{0, 0, {}, "w" + std::to_string(id_)};
    o.timeout = Millis(20000);
    auto c = RawNfs::Connect(o);
    if (!c.ok()) return false;
    client_ = std::move(c).value();
    MntResult m = client_->Mnt("/export");
    if (!m.ok()) return false;
    if (fh->empty()) {
      LookupResult l = client_->Lookup(m.fh, WriterFile(id_));
      if (l.ok()) {
        *fh = l.fh;
      } else {
        CreateResult f = client_->Create(m.fh, WriterFile(id_), Sattr{});
        if (!f.ok()) return false;
        *fh = f.fh;
      }
    }
    return client_->Access(*fh, 0x3f).ok();
  }
  // Returns false (with failure_ set) iff `r` is an error a client would not
  // retry. Lost connections, JUKEBOX and stale handles (the file is looked up
  // again) are retried.
  bool Retryable(const NfsResult& r, std::string* fh) {
    if (r.ok()) return true;
    if (!r.rpc_ok) {
      client_.reset();
    } else if (r.status == kNfs3ErrJukebox) {
      ++jukeboxes_;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } else if (r.status == kNfs3ErrStale || r.status == kNfs3ErrBadhandle) {
      fh->clear();
    } else {
      failure_ = r.StatusString();
      return false;
    }
    return true;
  }

  const int id_;
  const Stable mode_;
  const uint16_t port_;
  std::unique_ptr<RawNfs> client_;
  std::atomic<size_t> stable_{0};
  std::string failure_;
  int verifier_changes_ = 0;
  int reconnects_ = 0;
  int jukeboxes_ = 0;
};

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override { NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK(); }
  void TearDown() override {
    if (HasFailure() && proxy_) std::cerr << "--- nfsedge log ---\n" << proxy_->LogTail(80);
    if (HasFailure() && wan_) std::cerr << "--- nfsedge-wan log ---\n" << wan_->LogTail(20);
    proxy_.reset();
    wan_.reset();
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
  }

  // Starts ganesha, then nfsedge (run by the test, so that it can kill it)
  // with one export "/export" of ganesha's export directory. Its upstream is
  // ganesha, or the WAN emulator's ports if `through_wan`. "@DIR@" in the
  // TOML texts stands for the bed's temporary directory.
  void StartBed(const std::string& export_toml, const std::string& cache_toml,
                const std::string& server_toml = "", bool through_wan = false) {
    Testbed::Options o;
    o.name = "fault";
    o.start_proxy = false;
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
    if (through_wan) {
      ASSERT_NO_FATAL_FAILURE(StartWan());
    }
    auto dirs = [&](std::string text) {
      for (size_t at; (at = text.find("@DIR@")) != std::string::npos;) {
        text.replace(at, 5, bed_->dir().path());
      }
      return text;
    };
    popts_.work_dir = bed_->dir().Sub("nfsedge");
    popts_.log_level = "info";
    if (through_wan) {
      popts_.upstream_nfs_port = kWanNfsPort;
      popts_.upstream_mount_port = kWanMountPort;
    }
    // Reconnect quickly to a server that comes back.
    popts_.extra_upstream_toml =
        "reconnect_min_ms = 50\nreconnect_max_ms = 500\n" + extra_upstream_toml_;
    popts_.extra_server_toml = dirs(server_toml);
    ProxyExport e;
    e.path = "/export";
    e.upstream_path = Disk();
    e.extra_toml = export_toml + "write_behind = true\n";  // the write-behind under fault
    popts_.exports = {e};
    popts_.extra_toml = "[cache]\nrefresh_ahead_ms = 0\n" + dirs(cache_toml);
    StartProxy();
  }
  void StartProxy() {
    auto p = ProxyProcess::Start(popts_);
    ASSERT_TRUE(p.ok()) << p.status().message();
    proxy_ = std::move(p).value();
  }
  void KillProxy() {
    ASSERT_EQ(kill(proxy_->pid(), SIGKILL), 0);
    ExitStatus e = proxy_->Stop();
    EXPECT_EQ(e.signal, SIGKILL) << e.ToString();
  }
  // The WAN emulator (5 ms each way) from kWan*Port to ganesha.
  void StartWan() {
    auto map = [](uint16_t listen, uint16_t target) {
      return "127.0.0.1:" + std::to_string(listen) + "=127.0.0.1:" + std::to_string(target);
    };
    const std::string log = bed_->dir().Sub("wan.log");
    auto p = Subprocess::Start({NFSEDGE_WAN_BINARY, "--map",
                                map(kWanNfsPort, bed_->ganesha().nfs_port()), "--map",
                                map(kWanMountPort, bed_->ganesha().mount_port()), "--delay-ms",
                                wan_delay_ms_, "--duration", "600"},
                               log);
    ASSERT_TRUE(p.ok()) << p.status().message();
    wan_ = std::move(p).value();
    ASSERT_TRUE(WaitUntil(
        [&] { return ReadFile(log).find("nfsedge-wan ready") != std::string::npos; },
        Millis(10000)))
        << wan_->LogTail();
  }
  std::string Disk() { return bed_->ganesha().export_path(0); }
  std::unique_ptr<RawNfs> Client() {
    return ConnectOrFail("127.0.0.1", proxy_->nfs_port(), Credential{0, 0, {}, "t"});
  }
  // LOOKUPs `name` under `dir`, asks ACCESS (as a client does at open) and
  // reads the whole file, which must be `want`. Returns its handle.
  std::string OpenAndRead(RawNfs& c, const std::string& dir, const std::string& name,
                          const std::string& want) {
    LookupResult l = c.Lookup(dir, name);
    EXPECT_TRUE(l.ok()) << name << ": " << l.StatusString();
    EXPECT_TRUE(c.Access(l.fh, 0x3f).ok());
    ReadResult r = c.ReadAll(l.fh, 0, want.size() + 1, 65536);
    EXPECT_TRUE(r.ok() && r.data == want) << name << ": " << r.StatusString();
    return l.fh;
  }
  // Puts "cached" (Content(1, 300000)) and "uncached" (Content(2, 200000))
  // on ganesha's disk, mounts /export with `c` and reads "cached" through
  // the proxy twice, so that its blocks and ACCESS evidence are in place.
  void PrepareCachedFile(RawNfs& c, MntResult* m, std::string* cached_fh) {
    const std::string cached = Content(1, 300000);
    ASSERT_TRUE(WriteFile(Disk() + "/cached", cached).ok());
    ASSERT_TRUE(WriteFile(Disk() + "/uncached", Content(2, 200000)).ok());
    *m = c.Mnt("/export");
    ASSERT_TRUE(m->ok());
    *cached_fh = OpenAndRead(c, m->fh, "cached", cached);
    OpenAndRead(c, m->fh, "cached", cached);  // again: blocks and evidence in place
    ASSERT_FALSE(HasFailure());
  }
  // StartBed through the WAN emulator with `export_toml`, then a client
  // `*c` (60 s time-out) and PrepareCachedFile.
  void StartWithCachedFile(const std::string& export_toml, std::unique_ptr<RawNfs>* c,
                           MntResult* m, std::string* cached_fh) {
    ASSERT_NO_FATAL_FAILURE(StartBed(export_toml, "", "", /*through_wan=*/true));
    ASSERT_NE(proxy_, nullptr);
    *c = Client();
    ASSERT_NE(*c, nullptr);
    (*c)->SetTimeout(Millis(60000));
    ASSERT_NO_FATAL_FAILURE(PrepareCachedFile(**c, m, cached_fh));
  }
  // In a new client with call time-out `timeout`: LOOKUP "uncached" in
  // `root` and READ it all, each retried on JUKEBOX as clients do. Returns
  // "ok" iff the data is PrepareCachedFile's, else what went wrong.
  std::string ReadUncached(const std::string& root, Millis timeout) {
    const std::string uncached = Content(2, 200000);
    auto u = RawNfs::Connect({TcpEndpoint{"127.0.0.1", proxy_->nfs_port(), "", false},
                              Credential{0, 0, {}, "u"}, timeout});
    if (!u.ok()) return "connect: " + u.status().message();
    LookupResult l;
    for (int i = 0; i < 20; ++i) {
      l = (*u)->Lookup(root, "uncached");
      if (l.rpc_ok && l.status != kNfs3ErrJukebox) break;
    }
    ReadResult d;
    for (int i = 0; l.ok() && i < 20; ++i) {
      d = (*u)->ReadAll(l.fh, 0, uncached.size() + 1, 65536);
      if (d.rpc_ok && d.status != kNfs3ErrJukebox) break;
    }
    return !l.ok()              ? "lookup: " + l.StatusString()
           : !d.ok()            ? "read: " + d.StatusString()
           : d.data != uncached ? "read: wrong data"
                                : "ok";
  }
  // SIGUSR1 makes the proxy log its counters; returns the log once a line
  // starting with `prefix` has `key` at least `at_least`.
  std::string WaitForCounter(const std::string& prefix, const std::string& key,
                             int64_t at_least) {
    std::string log;
    WaitUntil(
        [&] {
          kill(proxy_->pid(), SIGUSR1);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          log = ReadFile(proxy_->log_path());
          return Counter(log, prefix, key) >= at_least;
        },
        Millis(10000));
    return log;
  }

  // Runs kWriters writers (even ones FILE_SYNC, odd ones UNSTABLE +
  // COMMIT); once a quarter of the bytes are stable, runs `fault`; waits for
  // the writers and checks every file on ganesha's disk.
  void WriteThrough(const std::function<void()>& fault, int* verifier_changes) {
    std::vector<std::unique_ptr<Writer>> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.push_back(std::make_unique<Writer>(
          w, w % 2 == 0 ? Stable::kFileSync : Stable::kUnstable, proxy_->nfs_port()));
    }
    const auto deadline = steady_clock::now() + std::chrono::seconds(60);
    std::vector<std::thread> threads;
    for (auto& w : writers) threads.emplace_back([&w, deadline] { w->Run(deadline); });
    auto stable_total = [&] {
      size_t sum = 0;
      for (auto& w : writers) sum += w->stable();
      return sum;
    };
    const size_t total = kWriters * kFileBytes;
    WaitUntil([&] { return stable_total() >= total / 4; }, Millis(30000));
    std::vector<size_t> before;
    for (auto& w : writers) before.push_back(w->stable());
    const size_t at_fault = stable_total();
    fault();
    for (auto& t : threads) t.join();
    std::printf("fault at %zu of %zu bytes stable\n", at_fault, total);
    EXPECT_LT(at_fault, total) << "the writers were done before the fault";
    *verifier_changes = 0;
    for (int w = 0; w < kWriters; ++w) {
      const Writer& wr = *writers[w];
      EXPECT_EQ(wr.failure(), "") << "writer " << w;
      std::printf("writer %2d %s: stable %7zu at the fault, reconnects %d, jukebox %d, verifier "
                  "changes %d\n",
                  w, w % 2 == 0 ? "FILE_SYNC" : "UNSTABLE ", before[w], wr.reconnects(),
                  wr.jukeboxes(), wr.verifier_changes());
      *verifier_changes += wr.verifier_changes();
      const std::string disk = ReadFile(Disk() + "/" + WriterFile(w));
      const std::string want = Content(w, kFileBytes);
      // What was acknowledged stable before the fault, then everything.
      EXPECT_TRUE(disk.size() >= before[w] && disk.compare(0, before[w], want, 0, before[w]) == 0)
          << "writer " << w << ": bytes acknowledged before the fault are not upstream";
      EXPECT_EQ(disk.size(), want.size()) << "writer " << w;
      EXPECT_TRUE(disk == want) << "writer " << w << ": file differs upstream";
    }
  }

  // Set before StartBed: more [upstream] keys, the link's one-way delay.
  std::string extra_upstream_toml_;
  std::string wan_delay_ms_ = "5";
  std::unique_ptr<Testbed> bed_;
  ProxyProcess::Options popts_;
  std::unique_ptr<ProxyProcess> proxy_;
  std::unique_ptr<Subprocess> wan_;
};

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

// CREATE GUARDED of `name` in `dir` with no attributes set.
RpcCall GuardedCreate(uint32_t xid, const std::string& dir, const std::string& name) {
  RpcCall call;
  call.xid = xid;
  call.procedure = 8;  // NFSPROC3_CREATE
  XdrWriter args;
  args.Opaque(dir).Opaque(name).U32(1);  // GUARDED
  for (int i = 0; i < 6; ++i) args.U32(0);  // sattr3: nothing set
  call.args = args.data();
  return call;
}

TEST_F(FaultTest, WanCutServesCachedReadsAndUncachedCallsCompleteOnce) {
  const std::string cached = Content(1, 300000);
  std::unique_ptr<RawNfs> c;
  MntResult m;
  std::string cached_fh;
  ASSERT_NO_FATAL_FAILURE(StartWithCachedFile(kLifetimes60, &c, &m, &cached_fh));

  // Cut the link: the emulator relays nothing until SIGCONT.
  wan_->Signal(SIGSTOP);
  const auto cut = steady_clock::now();

  // Uncached calls, in another client: they wait for the link.
  std::atomic<bool> uncached_done{false};
  std::string uncached_result;
  std::thread reader([&] {
    uncached_result = ReadUncached(m.fh, Millis(30000));
    uncached_done = true;
  });

  // A CREATE sent during the cut, then retransmitted (same XID) over a new
  // connection, as a client does after a time-out.
  TcpEndpoint ep{"127.0.0.1", proxy_->nfs_port(), "", false};
  const RpcCall create = GuardedCreate(0x5eed0001, m.fh, "made-during-cut");
  auto first = RawConnection::Connect(ep);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Send(FrameRecord(EncodeCall(create))).ok());

  // Cached data and metadata are answered while the link is cut.
  c->SetTimeout(Millis(3000));
  LookupResult l = c->Lookup(m.fh, "cached");
  EXPECT_TRUE(l.ok()) << "LOOKUP during the cut: " << l.StatusString();
  GetattrResult g = c->Getattr(cached_fh);
  EXPECT_TRUE(g.ok() && g.attr.size == cached.size()) << "GETATTR during the cut";
  ReadResult r = c->ReadAll(cached_fh, 0, cached.size() + 1, 65536);
  EXPECT_TRUE(r.ok() && r.data == cached) << "READ during the cut: " << r.StatusString();

  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  auto second = RawConnection::Connect(ep);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE((*second)->Send(FrameRecord(EncodeCall(create))).ok());
  first->reset();  // The client gave up on the first connection.

  std::this_thread::sleep_until(cut + std::chrono::seconds(4));
  EXPECT_FALSE(uncached_done.load()) << "uncached calls were answered during the cut: "
                                     << uncached_result;
  wan_->Signal(SIGCONT);

  std::string record;
  ASSERT_EQ((*second)->ReadRecord(&record, Millis(30000)), RawConnection::Outcome::kRecord);
  auto reply = ParseReply(record);
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  ASSERT_EQ(reply->accept_stat, kAcceptSuccess) << reply->ToString();
  XdrReader res(reply->results);
  uint32_t status = 0;
  ASSERT_TRUE(res.U32(&status));
  EXPECT_EQ(status, kNfs3Ok) << "retransmitted CREATE: " << NfsStatName(status);

  reader.join();
  EXPECT_EQ(uncached_result, "ok");
  c->SetTimeout(Millis(15000));
  ReaddirResult d = c->ReaddirAll(m.fh, false);
  ASSERT_TRUE(d.ok()) << d.StatusString();
  int made = 0;
  for (const auto& e : d.entries) made += e.name == "made-during-cut";
  EXPECT_EQ(made, 1);
  struct stat st {};
  EXPECT_EQ(stat((Disk() + "/made-during-cut").c_str(), &st), 0);

  ExitStatus e = proxy_->Stop();
  EXPECT_TRUE(e.success()) << e.ToString();
  const std::string log = ReadFile(proxy_->log_path());
  std::printf("proxy: %s\nproxy: %s\nproxy: %s\n", LastLine(log, "stats nfs ").c_str(),
              LastLine(log, "stats drc ").c_str(), LastLine(log, "stats upstream ").c_str());
  EXPECT_GE(Counter(log, "stats drc ", "replayed") + Counter(log, "stats drc ", "joined"), 1)
      << "the retransmission was answered from the duplicate request cache";
}

// Counts the entries named `name` in the export's root listing.
int CountNamed(RawNfs& c, const std::string& root, const std::string& name) {
  ReaddirResult d = c.ReaddirAll(root, false);
  EXPECT_TRUE(d.ok()) << d.StatusString();
  int n = 0;
  for (const auto& e : d.entries) n += e.name == name;
  return n;
}

// A GUARDED CREATE sent once on its own connection; returns its NFS status
// once answered (within `wait`), or -1.
int64_t CreateOnce(uint16_t port, uint32_t xid, const std::string& dir, const std::string& name,
                   Millis wait) {
  auto conn = RawConnection::Connect(TcpEndpoint{"127.0.0.1", port, "", false});
  if (!conn.ok()) return -1;
  if (!(*conn)->Send(FrameRecord(EncodeCall(GuardedCreate(xid, dir, name)))).ok()) return -1;
  std::string record;
  if ((*conn)->ReadRecord(&record, wait) != RawConnection::Outcome::kRecord) return -1;
  auto reply = ParseReply(record);
  if (!reply.ok() || reply->accept_stat != kAcceptSuccess) return -1;
  XdrReader res(reply->results);
  uint32_t status = 0;
  return res.U32(&status) ? status : -1;
}

// The link cut for 30 s with attribute lifetimes of 2 s, on an export with
// serve_stale_on_outage (upstream.outage_after_ms = 1000): the cached file
// is answered (LOOKUP, GETATTR, ACCESS, READ, its data as cached) all
// through the cut, long after its lifetime ended, even though it changed on
// the server meanwhile; a GETATTR that went upstream just before the
// outage was recognised is answered when it is; uncached calls and a
// GUARDED CREATE complete once the link is back, once; then the change made
// on the server is seen.
TEST_F(FaultTest, LongWanCutServesExpiredCacheWithServeStaleOnOutage) {
  extra_upstream_toml_ = "outage_after_ms = 1000\n";
  const std::string cached = Content(1, 300000);
  const std::string changed = Content(3, 123456);
  std::unique_ptr<RawNfs> c;
  MntResult m;
  std::string cached_fh;
  const std::string stale = std::string(kLifetimes2) + "serve_stale_on_outage = true\n";
  ASSERT_NO_FATAL_FAILURE(StartWithCachedFile(stale, &c, &m, &cached_fh));

  wan_->Signal(SIGSTOP);
  const auto cut = steady_clock::now();
  const auto back_at = cut + std::chrono::seconds(30);
  // Past every lifetime, before any outage is known (nothing waited yet).
  std::this_thread::sleep_until(cut + std::chrono::milliseconds(2500));
  c->SetTimeout(Millis(10000));
  GetattrResult first = c->Getattr(cached_fh);
  EXPECT_TRUE(first.ok() && first.attr.size == cached.size())
      << "GETATTR waiting when the outage began: " << first.StatusString();
  EXPECT_LT(steady_clock::now(), cut + std::chrono::seconds(10));
  // The file changes on the server during the cut: the proxy cannot know.
  ASSERT_TRUE(WriteFile(Disk() + "/cached", changed).ok());

  std::atomic<bool> uncached_done{false};
  std::string uncached_result;
  std::thread reader([&] {
    uncached_result = ReadUncached(m.fh, Millis(60000));
    uncached_done = true;
  });
  int64_t create_status = -2;
  std::thread creator([&] {
    create_status = CreateOnce(proxy_->nfs_port(), 0x5eed0002, m.fh, "made-during-long-cut",
                               Millis(60000));
  });

  c->SetTimeout(Millis(3000));
  int rounds = 0;
  while (steady_clock::now() + std::chrono::seconds(3) < back_at) {
    LookupResult l = c->Lookup(m.fh, "cached");
    EXPECT_TRUE(l.ok() && l.fh == cached_fh) << "LOOKUP, round " << rounds << ": "
                                             << l.StatusString();
    GetattrResult g = c->Getattr(cached_fh);
    EXPECT_TRUE(g.ok() && g.attr.size == cached.size()) << "GETATTR, round " << rounds;
    EXPECT_TRUE(c->Access(cached_fh, 0x3f).ok()) << "ACCESS, round " << rounds;
    ReadResult r = c->ReadAll(cached_fh, 0, cached.size() + 1, 65536);
    EXPECT_TRUE(r.ok() && r.data == cached) << "READ, round " << rounds << ": "
                                            << r.StatusString();
    if (HasFailure()) break;
    rounds++;
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  EXPECT_GE(rounds, 5);
  std::this_thread::sleep_until(back_at);
  EXPECT_FALSE(uncached_done.load()) << "uncached calls answered during the cut: "
                                     << uncached_result;
  wan_->Signal(SIGCONT);
  reader.join();
  creator.join();
  EXPECT_EQ(uncached_result, "ok");
  EXPECT_EQ(create_status, static_cast<int64_t>(kNfs3Ok)) << "a second execution says EXIST";
  c->SetTimeout(Millis(15000));
  EXPECT_EQ(CountNamed(*c, m.fh, "made-during-long-cut"), 1);
  // Back to the lifetimes: the server's change is seen.
  EXPECT_TRUE(WaitUntil(
      [&] {
        GetattrResult g = c->Getattr(cached_fh);
        return g.ok() && g.attr.size == changed.size();
      },
      Millis(15000)))
      << "the change made on the server during the cut";
  ReadResult now = c->ReadAll(cached_fh, 0, changed.size() + 1, 65536);
  EXPECT_TRUE(now.ok() && now.data == changed) << now.StatusString();

  ExitStatus e = proxy_->Stop();
  EXPECT_TRUE(e.success()) << e.ToString();
  const std::string log = ReadFile(proxy_->log_path());
  std::printf("proxy: %s\nproxy: %s\n", LastLine(log, "stats outage ").c_str(),
              LastLine(log, "upstream outage: ").c_str());
  EXPECT_NE(log.find("upstream outage began"), std::string::npos);
  EXPECT_NE(log.find("upstream outage ended"), std::string::npos);
  EXPECT_NE(log.find("upstream outage: 1 of 1 waiting"), std::string::npos)
      << "the GETATTR sent before the outage was known";
  EXPECT_GE(Counter(log, "stats outage ", "getattr"), rounds);
  EXPECT_GE(Counter(log, "stats outage ", "lookup"), rounds);
  EXPECT_GE(Counter(log, "stats outage ", "read"), rounds);
  EXPECT_EQ(Counter(log, "stats outage ", "out"), 0);
}

// The same cut, shorter (6 s), without serve_stale_on_outage: the cached
// file's expired entries answer nothing; its GETATTR and READ come only
// after the link returns, correctly.
TEST_F(FaultTest, WanCutWithoutServeStaleWaitsForTheLink) {
  extra_upstream_toml_ = "outage_after_ms = 1000\n";
  const std::string cached = Content(1, 300000);
  std::unique_ptr<RawNfs> c;
  MntResult m;
  std::string cached_fh;
  ASSERT_NO_FATAL_FAILURE(StartWithCachedFile(kLifetimes2, &c, &m, &cached_fh));

  wan_->Signal(SIGSTOP);
  const auto cut = steady_clock::now();
  std::this_thread::sleep_until(cut + std::chrono::milliseconds(2500));
  std::atomic<int> answered{0};
  steady_clock::time_point getattr_at{}, read_at{};
  bool getattr_ok = false, read_ok = false;
  auto client = [&] {
    return RawNfs::Connect({TcpEndpoint{"127.0.0.1", proxy_->nfs_port(), "", false},
                            Credential{0, 0, {}, "w"}, Millis(60000)});
  };
  std::thread getattr([&] {
    auto u = client();
    if (u.ok()) {
      GetattrResult g = (*u)->Getattr(cached_fh);
      getattr_ok = g.ok() && g.attr.size == cached.size();
    }
    getattr_at = steady_clock::now();
    answered++;
  });
  std::thread read([&] {
    auto u = client();
    if (u.ok()) {
      ReadResult r = (*u)->ReadAll(cached_fh, 0, cached.size() + 1, 65536);
      read_ok = r.ok() && r.data == cached;
    }
    read_at = steady_clock::now();
    answered++;
  });
  std::this_thread::sleep_until(cut + std::chrono::seconds(6));
  EXPECT_EQ(answered.load(), 0) << "answered from expired entries without serve_stale_on_outage";
  const auto back = steady_clock::now();
  wan_->Signal(SIGCONT);
  getattr.join();
  read.join();
  EXPECT_TRUE(getattr_ok);
  EXPECT_TRUE(read_ok);
  EXPECT_GE(getattr_at, back);
  EXPECT_GE(read_at, back);

  ExitStatus e = proxy_->Stop();
  EXPECT_TRUE(e.success()) << e.ToString();
  const std::string log = ReadFile(proxy_->log_path());
  std::printf("proxy: %s\n", LastLine(log, "stats outage ").c_str());
  EXPECT_NE(log.find("upstream outage began"), std::string::npos) << "seen, though not used";
  EXPECT_EQ(Counter(log, "stats outage ", "getattr"), 0);
  EXPECT_EQ(Counter(log, "stats outage ", "read"), 0);
}

// A slow upstream (the link delays 1 s each way): cached calls are answered
// without waiting for it (the client's time-out is shorter than one round
// trip), uncached ones and a GUARDED CREATE correctly and once; a slow
// upstream that answers is not an outage (outage_after_ms 5000).
TEST_F(FaultTest, SlowUpstreamServesCachedCallsAtOnceAndUncachedOnesOnce) {
  wan_delay_ms_ = "1000";
  const std::string cached = Content(1, 300000);
  const std::string uncached = Content(2, 200000);
  std::unique_ptr<RawNfs> c;
  MntResult m;
  std::string cached_fh;
  ASSERT_NO_FATAL_FAILURE(StartWithCachedFile(kLifetimes60, &c, &m, &cached_fh));

  c->SetTimeout(Millis(1500));  // below one round trip (2 s)
  for (int i = 0; i < 3; ++i) {
    LookupResult l = c->Lookup(m.fh, "cached");
    EXPECT_TRUE(l.ok() && l.fh == cached_fh) << "LOOKUP: " << l.StatusString();
    GetattrResult g = c->Getattr(cached_fh);
    EXPECT_TRUE(g.ok() && g.attr.size == cached.size()) << "GETATTR: " << g.StatusString();
    ReadResult r = c->ReadAll(cached_fh, 0, cached.size() + 1, 65536);
    EXPECT_TRUE(r.ok() && r.data == cached) << "READ: " << r.StatusString();
  }
  c->SetTimeout(Millis(60000));
  const auto t0 = steady_clock::now();
  LookupResult l = c->Lookup(m.fh, "uncached");
  ASSERT_TRUE(l.ok()) << l.StatusString();
  EXPECT_GE(steady_clock::now() - t0, std::chrono::seconds(2)) << "it crossed the link";
  ReadResult r = c->ReadAll(l.fh, 0, uncached.size() + 1, 65536);
  EXPECT_TRUE(r.ok() && r.data == uncached) << r.StatusString();
  EXPECT_EQ(CreateOnce(proxy_->nfs_port(), 0x5eed0003, m.fh, "made-slowly", Millis(60000)),
            static_cast<int64_t>(kNfs3Ok));
  EXPECT_EQ(CountNamed(*c, m.fh, "made-slowly"), 1);

  ExitStatus e = proxy_->Stop();
  EXPECT_TRUE(e.success()) << e.ToString();
  const std::string log = ReadFile(proxy_->log_path());
  std::printf("proxy: %s\nproxy: %s\nproxy: %s\n", LastLine(log, "stats nfs ").c_str(),
              LastLine(log, "stats upstream ").c_str(), LastLine(log, "stats outage ").c_str());
  EXPECT_EQ(log.find("upstream outage began"), std::string::npos) << "slow is not out";
  EXPECT_EQ(Counter(log, "stats upstream ", "timeouts"), 0);
}

// The disk tier's directory on a full file system (a 4 MiB tmpfs mounted by
// the test, in its private mount namespace): RocksDB keeps blocks in its
// memtable until that is 64 MiB, so 72 MiB are read to make a flush fail;
// from then on the store refuses writes. Reads stay correct, the failure is
// logged and counted (`stats data ... errors`), the proxy keeps running.
TEST_F(FaultTest, FullDiskTierKeepsReadsCorrectAndCountsErrors) {
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
  const std::string line = "disk tier: cannot write a block";
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
  ASSERT_TRUE(proxy_->IsRunning());
  ExitStatus e = proxy_->Stop();
  EXPECT_TRUE(e.success()) << e.ToString();
}

}  // namespace
}  // namespace nfsedge::itest
