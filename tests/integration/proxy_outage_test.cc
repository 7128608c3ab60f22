// proxy_outage_test: the WAN link between nfsedge and ganesha cut (the
// emulator stopped with SIGSTOP), and an upstream answering slowly:
// - a short cut: cached reads are answered during it, uncached calls wait
//   and complete once it returns, and a CREATE retransmitted by the client
//   (same XID, new connection) is not run twice;
// - a 30 s cut with serve_stale_on_outage: cached entries are answered past
//   their lifetime; without it, they wait for the link;
// - a slow upstream: cached calls stay fast, uncached ones complete once.

#include <cstdlib>

#include "fault_fixture.h"

namespace nfsedge::itest {
namespace {

using namespace fault;  // NOLINT: test file, the fixture's names throughout.

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

// How long the long cut lasts: 30 s, or NFSEDGE_LONG_CUT_S seconds (the
// documented long run cuts for 300).
std::chrono::seconds LongCut() {
  const char* env = std::getenv("NFSEDGE_LONG_CUT_S");
  const int s = env ? std::atoi(env) : 0;
  return std::chrono::seconds(s >= 10 ? s : 30);
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
  const auto back_at = cut + LongCut();
  const Millis wait_for_link = std::chrono::duration_cast<Millis>(LongCut()) + Millis(30000);
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
    uncached_result = ReadUncached(m.fh, wait_for_link);
    uncached_done = true;
  });
  int64_t create_status = -2;
  std::thread creator([&] {
    create_status = CreateOnce(proxy_->nfs_port(), 0x5eed0002, m.fh, "made-during-long-cut",
                               wait_for_link);
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
}  // namespace
}  // namespace nfsedge::itest
