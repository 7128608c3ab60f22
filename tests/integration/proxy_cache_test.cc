// proxy_cache_test: the metadata cache through nfsedge in front of a real
// ganesha. A change made behind the proxy's back (directly in the exported
// directory) is seen within the export's lifetime and not before; lifetime 0
// always asks the upstream; a change made through the proxy is seen at once
// by a second client; cached answers never cross credentials (DESIGN rule 6).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "harness/files.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.
using std::chrono::steady_clock;

constexpr int kLifetimeSeconds = 2;

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    StartBed(0);
  }
  // Starts ganesha and nfsedge; refresh-ahead off unless `refresh_ahead_ms`.
  void StartBed(int refresh_ahead_ms) {
    bed_.reset();
    Testbed::Options o;
    o.name = "cache";
    for (const char* name : {"timed", "nocache", "long"}) {
      o.ganesha.exports.emplace_back();
      o.ganesha.exports.back().path = name;
      ProxyExport e;
      e.path = std::string("/") + name;  // what clients mount
      e.upstream_path = name;            // made absolute by Testbed
      o.proxy.exports.push_back(e);
    }
    const std::string t = std::to_string(kLifetimeSeconds);
    o.proxy.exports[0].extra_toml = "acregmin = " + t + "\nacregmax = " + t +
                                    "\nacdirmin = " + t + "\nacdirmax = " + t + "\n";
    o.proxy.exports[1].extra_toml = "acregmin = 0\nacregmax = 0\nacdirmin = 0\nacdirmax = 0\n";
    o.proxy.exports[2].extra_toml = "acregmin = 60\nacregmax = 60\nacdirmin = 60\nacdirmax = 60\n";
    o.proxy.extra_toml = "[cache]\nrefresh_ahead_ms = " + std::to_string(refresh_ahead_ms) + "\n";
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
  }
  void TearDown() override {
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
  }

  std::string Disk(int i) { return bed_->ganesha().export_path(i); }
  std::unique_ptr<RawNfs> Client(uint32_t uid = 0, uint32_t gid = 0) {
    return ConnectOrFail("127.0.0.1", bed_->proxy()->nfs_port(), Credential{uid, gid, {}, "t"});
  }
  // Mounts export `i` through the proxy and returns its root handle.
  std::string Root(RawNfs& c, int i) {
    static const char* kPaths[] = {"/timed", "/nocache", "/long"};
    MntResult m = c.Mnt(kPaths[i]);
    EXPECT_TRUE(m.ok());
    return m.fh;
  }
  uint64_t SizeOf(RawNfs& c, const std::string& fh) {
    GetattrResult g = c.Getattr(fh);
    EXPECT_TRUE(g.ok()) << g.StatusString();
    return g.attr.size;
  }

  std::unique_ptr<Testbed> bed_;
};

TEST_F(CacheTest, ChangeBehindTheProxyIsSeenWithinTheLifetimeAndNotBefore) {
  ASSERT_TRUE(WriteFile(Disk(0) + "/f", "12345").ok());
  auto c = Client();
  ASSERT_NE(c, nullptr);
  const std::string root = Root(*c, 0);
  // The proxy learns the attributes after this, and before `filled`: the
  // change may show from asked + lifetime on, and must by filled + lifetime.
  const auto asked = steady_clock::now();
  LookupResult f = c->Lookup(root, "f");
  ASSERT_TRUE(f.ok());
  // The LOOKUP starts a speculative ACCESS whose reply carries attributes; a
  // client ACCESS waits for it, so no upstream reply about `f` is still on
  // its way when the file changes behind the proxy (such a reply would
  // legitimately refresh the cache early).
  ASSERT_TRUE(c->Access(f.fh, 0x1f).ok());
  ASSERT_EQ(SizeOf(*c, f.fh), 5u);
  auto filled = steady_clock::now();

  ASSERT_TRUE(WriteFile(Disk(0) + "/f", "1234567890").ok());  // behind the proxy
  EXPECT_EQ(SizeOf(*c, f.fh), 5u) << "answered from cache within the lifetime";

  // Poll until the new size shows; it must show by the lifetime (plus slack)
  // and not before the lifetime has passed.
  uint64_t size = 5;
  auto deadline = filled + std::chrono::seconds(kLifetimeSeconds + 3);
  while (size == 5 && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    size = SizeOf(*c, f.fh);
  }
  auto seen = steady_clock::now() - asked;
  EXPECT_EQ(size, 10u) << "still stale after the lifetime";
  EXPECT_GE(seen, std::chrono::seconds(kLifetimeSeconds)) << "fresh value came before the lifetime";
}

// With refresh-ahead, a file a client keeps using is revalidated before its
// attributes expire: every GETATTR is answered from cache, and a change
// behind the proxy still shows within the lifetime.
TEST_F(CacheTest, RefreshAheadKeepsUsedEntriesFresh) {
  StartBed(1000);
  ASSERT_TRUE(WriteFile(Disk(0) + "/f", "12345").ok());
  auto c = Client();
  ASSERT_NE(c, nullptr);
  LookupResult f = c->Lookup(Root(*c, 0), "f");
  ASSERT_TRUE(f.ok());
  int getattrs = 0;
  uint64_t size = 5;
  auto start = steady_clock::now();
  while (steady_clock::now() - start < std::chrono::seconds(3 * kLifetimeSeconds)) {
    if (steady_clock::now() - start > std::chrono::seconds(1) && size == 5) {
      ASSERT_TRUE(WriteFile(Disk(0) + "/f", "1234567890").ok());
    }
    size = SizeOf(*c, f.fh);
    getattrs++;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  EXPECT_EQ(size, 10u);
  ExitStatus exit = bed_->proxy()->Stop();
  ASSERT_TRUE(exit.success());
  // The counters the proxy logs at exit: GETATTR=calls/cache_answers/...
  std::string log = bed_->proxy()->LogTail(20);
  std::string want = "GETATTR=" + std::to_string(getattrs) + "/" + std::to_string(getattrs) + "/";
  EXPECT_NE(log.find(want), std::string::npos) << "wanted " << want << " in\n" << log;
  EXPECT_EQ(log.find("refresh_ahead=0"), std::string::npos) << log;
}

// A symlink's target is answered from cache to every client whose
// credential the upstream gave it to, while the link's attributes are
// fresh; another credential asks the upstream once.
TEST_F(CacheTest, SymlinkTargetsAreAnsweredFromCacheToTheCredentialsGivenThem) {
  ASSERT_EQ(symlink("assets/v3", (Disk(2) + "/current").c_str()), 0);
  auto first = Client(1000, 1000);
  auto second = Client(1000, 1000);  // another workstation, the same user
  auto other = Client(2000, 2000);
  ASSERT_TRUE(first && second && other);
  LookupResult l = first->Lookup(Root(*first, 2), "current");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(first->Readlink(l.fh).target, "assets/v3");   // upstream
  EXPECT_EQ(second->Readlink(l.fh).target, "assets/v3");  // cache
  EXPECT_EQ(other->Readlink(l.fh).target, "assets/v3");   // upstream: another credential
  EXPECT_EQ(other->Readlink(l.fh).target, "assets/v3");   // cache
  ExitStatus exit = bed_->proxy()->Stop();
  ASSERT_TRUE(exit.success());
  // READLINK=calls/cache_answers/...
  const std::string log = bed_->proxy()->LogTail(20);
  EXPECT_NE(log.find("READLINK=4/2/"), std::string::npos) << log;
}

TEST_F(CacheTest, LifetimeZeroAlwaysAsksTheUpstream) {
  ASSERT_TRUE(WriteFile(Disk(1) + "/f", "12345").ok());
  auto c = Client();
  ASSERT_NE(c, nullptr);
  LookupResult f = c->Lookup(Root(*c, 1), "f");
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(SizeOf(*c, f.fh), 5u);
  ASSERT_TRUE(WriteFile(Disk(1) + "/f", "1234567").ok());
  EXPECT_EQ(SizeOf(*c, f.fh), 7u);
  ASSERT_TRUE(WriteFile(Disk(1) + "/g", "x").ok());
  EXPECT_TRUE(c->Lookup(Root(*c, 1), "g").ok());
}

TEST_F(CacheTest, ChangeThroughTheProxyIsSeenAtOnceByAnotherClient) {
  ASSERT_TRUE(WriteFile(Disk(2) + "/f", "12345").ok());
  auto a = Client();
  auto b = Client();
  ASSERT_TRUE(a && b);
  std::string root = Root(*a, 2);
  LookupResult fa = a->Lookup(root, "f");
  LookupResult fb = b->Lookup(root, "f");
  ASSERT_TRUE(fa.ok() && fb.ok());
  ASSERT_EQ(SizeOf(*b, fb.fh), 5u);
  ASSERT_TRUE(a->Write(fa.fh, 5, "67890", Stable::kFileSync).ok());
  EXPECT_EQ(SizeOf(*b, fb.fh), 10u);

  EXPECT_EQ(b->Lookup(root, "new").status, kNfs3ErrNoent);  // cached negative
  ASSERT_TRUE(a->Create(root, "new", Sattr()).ok());
  EXPECT_TRUE(b->Lookup(root, "new").ok());
  ASSERT_TRUE(a->Remove(root, "new").ok());
  EXPECT_EQ(b->Lookup(root, "new").status, kNfs3ErrNoent);

  ASSERT_TRUE(a->Rename(root, "f", root, "g").ok());
  EXPECT_EQ(b->Lookup(root, "f").status, kNfs3ErrNoent);
  LookupResult g = b->Lookup(root, "g");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g.fh, fa.fh);
}

TEST_F(CacheTest, CachedAnswersNeverCrossCredentials) {
  const std::string secret = Disk(2) + "/secret";
  ASSERT_TRUE(MakeDirs(secret).ok());
  ASSERT_TRUE(WriteFile(secret + "/inside", "private").ok());
  ASSERT_EQ(chown(secret.c_str(), 1000, 1000), 0);
  ASSERT_EQ(chmod(secret.c_str(), 0700), 0);
  ASSERT_EQ(chown((secret + "/inside").c_str(), 1000, 1000), 0);
  ASSERT_EQ(chmod((secret + "/inside").c_str(), 0600), 0);

  auto owner = Client(1000, 1000);
  auto other = Client(2000, 2000);
  ASSERT_TRUE(owner && other);
  std::string root = Root(*owner, 2);
  LookupResult dir = owner->Lookup(root, "secret");
  ASSERT_TRUE(dir.ok());
  // The owner fills every cache: ACCESS on the directory and the file,
  // LOOKUP of the file (twice: the second is a cache answer).
  AccessResult acc = owner->Access(dir.fh, kAccessAll);
  ASSERT_TRUE(acc.ok());
  EXPECT_TRUE(acc.access & kAccessLookup);
  ASSERT_TRUE(owner->Lookup(dir.fh, "inside").ok());
  LookupResult inside = owner->Lookup(dir.fh, "inside");
  ASSERT_TRUE(inside.ok());
  ASSERT_TRUE(owner->Access(inside.fh, kAccessRead).ok());

  // Another user gets what the upstream gives it, not the owner's answers.
  EXPECT_EQ(other->Lookup(dir.fh, "inside").status, kNfs3ErrAcces);
  AccessResult theirs = other->Access(dir.fh, kAccessAll);
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(theirs.access & (kAccessRead | kAccessLookup | kAccessModify), 0u);
  AccessResult file = other->Access(inside.fh, kAccessRead);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file.access & kAccessRead, 0u);
  EXPECT_FALSE(other->Read(inside.fh, 0, 100).ok());
  // And the owner still gets its own.
  EXPECT_TRUE(owner->Lookup(dir.fh, "inside").ok());
}

TEST_F(CacheTest, RemovedObjectIsStaleAtOnce) {
  ASSERT_TRUE(WriteFile(Disk(2) + "/doomed", "x").ok());
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::string root = Root(*c, 2);
  LookupResult f = c->Lookup(root, "doomed");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(c->Getattr(f.fh).ok());
  ASSERT_TRUE(c->Remove(root, "doomed").ok());
  EXPECT_EQ(c->Getattr(f.fh).status, kNfs3ErrStale);
  EXPECT_EQ(c->Lookup(root, "doomed").status, kNfs3ErrNoent);
}

}  // namespace
}  // namespace nfsedge::itest
