// proxy_listing_test: directory listings through nfsedge in front of a real
// ganesha. A listing asked twice is the same, the second time from the
// directory cache (the proxy's counters show no second upstream call); a
// file created through the proxy shows at once, one created behind it within
// the export's lifetime; another user without access to a 0700 directory
// never gets the cached listing (DESIGN rule 6); a READDIR through the proxy
// (served by an upstream READDIRPLUS) lists what a READDIR direct does.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "harness/files.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.
using std::chrono::steady_clock;

constexpr int kLifetimeSeconds = 2;

// One line per entry with every field the client sees.
std::string Render(const ReaddirResult& r) {
  std::ostringstream out;
  for (const DirEntry& e : r.entries) {
    out << e.name << " fileid=" << e.fileid << " cookie=" << e.cookie << " fh=" << e.fh.size()
        << ":" << e.fh;
    if (e.attr) {
      out << " " << e.attr->Summary() << " mtime=" << e.attr->mtime.seconds << "."
          << e.attr->mtime.nseconds << " ctime=" << e.attr->ctime.seconds << "."
          << e.attr->ctime.nseconds << " fileid=" << e.attr->fileid;
    }
    out << "\n";
  }
  return out.str();
}

std::set<std::string> Names(const ReaddirResult& r) {
  std::set<std::string> out;
  for (const DirEntry& e : r.entries) out.insert(e.name);
  return out;
}

class ListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    Testbed::Options o;
    o.name = "listing";
    for (const char* name : {"timed", "long"}) {
      o.ganesha.exports.emplace_back();
      o.ganesha.exports.back().path = name;
      ProxyExport e;
      e.path = std::string("/") + name;
      e.upstream_path = name;
      o.proxy.exports.push_back(e);
    }
    const std::string t = std::to_string(kLifetimeSeconds);
    o.proxy.exports[0].extra_toml = "acregmin = " + t + "\nacregmax = " + t +
                                    "\nacdirmin = " + t + "\nacdirmax = " + t + "\n";
    o.proxy.exports[1].extra_toml = "acregmin = 60\nacregmax = 60\nacdirmin = 60\nacdirmax = 60\n";
    // No refresh-ahead and no tree-walk prefetch: only the client's calls.
    o.proxy.extra_toml = "[cache]\nrefresh_ahead_ms = 0\n[prefetch]\nenabled = false\n";
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
  }
  void TearDown() override {
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
  }

  std::string Disk(int i) { return bed_->ganesha().export_path(i); }
  // Makes directory `name` in export `i` (behind the proxy) holding `files`
  // files named `prefix`0, `prefix`1, ...
  void MakeDirWithFiles(int i, const std::string& name, int files, const std::string& prefix) {
    ASSERT_TRUE(MakeDirs(Disk(i) + "/" + name).ok());
    for (int f = 0; f < files; ++f) {
      ASSERT_TRUE(WriteFile(Disk(i) + "/" + name + "/" + prefix + std::to_string(f), "x").ok());
    }
  }
  std::unique_ptr<RawNfs> Client(uint32_t uid = 0, uint32_t gid = 0) {
    return ConnectOrFail("127.0.0.1", bed_->proxy()->nfs_port(), Credential{uid, gid, {}, "t"});
  }
  std::unique_ptr<RawNfs> Direct() {
    return ConnectOrFail("127.0.0.1", bed_->ganesha().nfs_port(), Credential{0, 0, {}, "t"});
  }
  std::string Root(RawNfs& c, int i) {
    static const char* kPaths[] = {"/timed", "/long"};
    MntResult m = c.Mnt(kPaths[i]);
    EXPECT_TRUE(m.ok());
    return m.fh;
  }
  std::string DirectRoot(int i) {
    auto m = ConnectOrFail("127.0.0.1", bed_->ganesha().mount_port(), {}, "");
    if (!m) return "";
    MntResult r = m->Mnt(Disk(i));
    EXPECT_TRUE(r.ok()) << "MNT " << Disk(i);
    return r.fh;
  }

  // The proxy's counters for `proc` ("READDIRPLUS=calls/cache_answers/..."),
  // from the stats it logs on SIGUSR1: {calls, cache answers}.
  std::pair<uint64_t, uint64_t> Counters(const std::string& proc) {
    const std::string kKey = "stats nfs calls/cache_answers";
    auto last_line = [&] {
      std::ifstream in(bed_->proxy()->log_path());
      std::string line, last;
      size_t n = 0;
      while (std::getline(in, line)) {
        if (line.find(kKey) != std::string::npos) {
          n++;
          last = line;
        }
      }
      return std::make_pair(n, last);
    };
    const size_t before = last_line().first;
    kill(bed_->proxy()->pid(), SIGUSR1);
    for (int i = 0; i < 200; ++i) {
      auto [n, line] = last_line();
      if (n > before) {
        size_t at = line.find(" " + proc + "=");
        if (at == std::string::npos) return {0, 0};
        uint64_t calls = 0, answers = 0;
        std::sscanf(line.c_str() + at + proc.size() + 2, "%lu/%lu", &calls, &answers);
        return {calls, answers};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "no stats line after SIGUSR1";
    return {0, 0};
  }

  std::unique_ptr<Testbed> bed_;
};

TEST_F(ListingTest, SecondListingComesFromCacheAndOwnCreateShowsAtOnce) {
  ASSERT_NO_FATAL_FAILURE(MakeDirWithFiles(1, "d", 40, "file-"));
  auto c = Client();
  auto other = Client();
  ASSERT_TRUE(c && other);
  LookupResult d = c->Lookup(Root(*c, 1), "d");
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(c->Access(d.fh, kAccessAll).ok());  // as a client opening it does

  ReaddirResult first = c->ReaddirAll(d.fh, /*plus=*/true, 1024);
  ASSERT_TRUE(first.ok()) << first.StatusString();
  ASSERT_GT(first.pages, 1);
  auto [calls1, answers1] = Counters("READDIRPLUS");
  EXPECT_EQ(calls1, static_cast<uint64_t>(first.pages));
  EXPECT_EQ(answers1, 0u);

  ReaddirResult second = other->ReaddirAll(d.fh, /*plus=*/true, 1024);
  ASSERT_TRUE(second.ok()) << second.StatusString();
  EXPECT_EQ(Render(second), Render(first));
  EXPECT_EQ(second.cookieverf, first.cookieverf);
  auto [calls2, answers2] = Counters("READDIRPLUS");
  EXPECT_EQ(calls2 - calls1, static_cast<uint64_t>(second.pages));
  EXPECT_EQ(answers2, static_cast<uint64_t>(second.pages)) << "every page from the cache";

  // A READDIR of the same directory is answered from the same pages.
  ReaddirResult plain = other->ReaddirAll(d.fh, /*plus=*/false, 8192);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(Names(plain), Names(first));
  EXPECT_GT(Counters("READDIR").second, 0u);

  // Created through the proxy: in the next listing at once.
  ASSERT_TRUE(c->Create(d.fh, "made-here", Sattr()).ok());
  ReaddirResult after = other->ReaddirAll(d.fh, /*plus=*/true, 1024);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(Names(after).count("made-here"), 1u);
  EXPECT_EQ(after.entries.size(), first.entries.size() + 1);
}

TEST_F(ListingTest, CreateBehindTheProxyShowsWithinTheLifetime) {
  ASSERT_NO_FATAL_FAILURE(MakeDirWithFiles(0, "d", 1, "old-"));
  auto c = Client();
  ASSERT_TRUE(c);
  LookupResult d = c->Lookup(Root(*c, 0), "d");
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(c->Access(d.fh, kAccessAll).ok());
  ASSERT_TRUE(c->ReaddirAll(d.fh, true).ok());
  auto filled = steady_clock::now();
  ASSERT_TRUE(WriteFile(Disk(0) + "/d/new", "x").ok());  // behind the proxy
  bool seen = false;
  while (!seen && steady_clock::now() < filled + std::chrono::seconds(kLifetimeSeconds + 3)) {
    ReaddirResult r = c->ReaddirAll(d.fh, true);
    ASSERT_TRUE(r.ok());
    seen = Names(r).count("new") == 1;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(seen) << "still not listed after the lifetime";
}

TEST_F(ListingTest, UserWithoutAccessNeverGetsTheCachedListing) {
  const std::string secret = Disk(1) + "/secret";
  ASSERT_TRUE(MakeDirs(secret).ok());
  ASSERT_TRUE(WriteFile(secret + "/inside", "private").ok());
  ASSERT_EQ(chown(secret.c_str(), 1000, 1000), 0);
  ASSERT_EQ(chmod(secret.c_str(), 0700), 0);
  auto owner = Client(1000, 1000);
  auto other = Client(2000, 2000);
  ASSERT_TRUE(owner && other);
  LookupResult dir = owner->Lookup(Root(*owner, 1), "secret");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(owner->Access(dir.fh, kAccessAll).ok());
  ReaddirResult mine = owner->ReaddirAll(dir.fh, true);
  ASSERT_TRUE(mine.ok());
  ASSERT_TRUE(owner->ReaddirAll(dir.fh, true).ok());  // cached now
  ASSERT_TRUE(owner->ReaddirAll(dir.fh, false).ok());
  EXPECT_GT(Counters("READDIRPLUS").second, 0u) << "the owner's second listing was cached";

  ReaddirResult theirs = other->Readdirplus(dir.fh, 0, "", 4096, 16384);
  EXPECT_EQ(theirs.status, kNfs3ErrAcces) << theirs.StatusString();
  EXPECT_TRUE(theirs.entries.empty());
  ASSERT_TRUE(other->Access(dir.fh, kAccessAll).ok());  // an ACCESS result that refuses
  theirs = other->Readdirplus(dir.fh, 0, "", 4096, 16384);
  EXPECT_EQ(theirs.status, kNfs3ErrAcces);
  ReaddirResult plain = other->Readdir(dir.fh, 0, "", 4096);
  EXPECT_EQ(plain.status, kNfs3ErrAcces);
  EXPECT_TRUE(plain.entries.empty());
}

TEST_F(ListingTest, ReaddirThroughTheProxyEqualsReaddirDirect) {
  ASSERT_NO_FATAL_FAILURE(MakeDirWithFiles(1, "many", 120, "entry-"));
  auto p = Client();
  auto direct = Direct();
  ASSERT_TRUE(p && direct);
  LookupResult pd = p->Lookup(Root(*p, 1), "many");
  LookupResult dd = direct->Lookup(DirectRoot(1), "many");
  ASSERT_TRUE(pd.ok() && dd.ok());
  for (uint32_t count : {512u, 1024u, 8192u}) {
    for (int round = 0; round < 2; ++round) {  // the second from cache
      ReaddirResult via = p->ReaddirAll(pd.fh, /*plus=*/false, count);
      ReaddirResult ref = direct->ReaddirAll(dd.fh, /*plus=*/false, count);
      ASSERT_TRUE(via.ok() && ref.ok()) << via.StatusString() << " " << ref.StatusString();
      EXPECT_EQ(Render(via), Render(ref)) << "count " << count << " round " << round;
      EXPECT_EQ(via.cookieverf, ref.cookieverf);
    }
  }
  auto [calls, answers] = Counters("READDIR");
  EXPECT_GT(calls, 0u);
  EXPECT_GT(answers, 0u) << "the second rounds came from the cache";
}

}  // namespace
}  // namespace nfsedge::itest
