// proxy_walk_test: tree-walk prefetch through nfsedge in front of a real
// ganesha. A lone listing starts nothing; a client walking the tree (a
// directory, then one below it) has the rest of the tree fetched ahead of it,
// so its LOOKUPs and READs further on are answered locally; and the
// prefetch stops when the client's walk stops.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "harness/files.h"
#include "integration_env.h"
#include "proxy_counters.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.
using std::chrono::steady_clock;

// The tree: kDirs directories below the export's root, each with kFiles
// small files and one subdirectory of kSubFiles files.
constexpr int kDirs = 200;
constexpr int kFiles = 10;
constexpr int kSubFiles = 5;
constexpr int kTotalFiles = kDirs * (kFiles + kSubFiles);

std::string Content(const std::string& path) { return "data of " + path + "\n"; }

class WalkTest : public ::testing::Test {
 protected:
  // `prefetch_toml`: the [prefetch] keys of the proxy's config;
  // `export_toml`: keys of the export's table (lifetimes).
  void Start(const std::string& prefetch_toml, const std::string& export_toml = "") {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    Testbed::Options o;
    o.name = "walk";
    o.ganesha.exports.emplace_back();
    o.ganesha.exports.back().path = "tree";
    ProxyExport e;
    e.path = "/tree";
    e.upstream_path = "tree";
    e.extra_toml = export_toml;
    o.proxy.exports.push_back(e);
    o.proxy.extra_toml = "[cache]\nrefresh_ahead_ms = 0\n[prefetch]\n" + prefetch_toml;
    if (max_record_size_ != 0) o.proxy.max_record_size = max_record_size_;
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
    const std::string disk = bed_->ganesha().export_path(0);
    for (int d = 0; d < kDirs; ++d) {
      const std::string dir = "d" + std::to_string(d);
      ASSERT_TRUE(MakeDirs(disk + "/" + dir + "/sub").ok());
      for (int f = 0; f < kFiles; ++f) {
        const std::string rel = dir + "/f" + std::to_string(f);
        ASSERT_TRUE(WriteFile(disk + "/" + rel, Content(rel)).ok());
      }
      for (int f = 0; f < kSubFiles; ++f) {
        const std::string rel = dir + "/sub/g" + std::to_string(f);
        ASSERT_TRUE(WriteFile(disk + "/" + rel, Content(rel)).ok());
      }
    }
    for (int f = 0; f < extra_in_d150_; ++f) {
      const std::string rel = "d150/x" + std::to_string(f);
      ASSERT_TRUE(WriteFile(disk + "/" + rel, Content(rel)).ok());
    }
    client_ =
        ConnectOrFail("127.0.0.1", bed_->proxy()->nfs_port(), Credential{1000, 1000, {}, "t"});
    ASSERT_TRUE(client_);
    MntResult m = client_->Mnt("/tree");
    ASSERT_TRUE(m.ok());
    root_ = m.fh;
  }
  void TearDown() override {
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
  }

  // The proxy's counters, logged at once (SIGUSR1).
  std::string Stats() {
    const std::string before = ReadFile(bed_->proxy()->log_path());
    const size_t lines = Count(before);
    kill(bed_->proxy()->pid(), SIGUSR1);
    std::string log;
    for (int i = 0; i < 500; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      log = ReadFile(bed_->proxy()->log_path());
      if (Count(log) > lines) return log;
    }
    ADD_FAILURE() << "no stats after SIGUSR1";
    return log;
  }
  static size_t Count(const std::string& log) {
    size_t n = 0;
    for (size_t at = log.find("stats prefetch"); at != std::string::npos;
         at = log.find("stats prefetch", at + 1)) {
      n++;
    }
    return n;
  }
  int64_t Prefetch(const std::string& log, const std::string& key) {
    return Counter(log, "stats prefetch", key);
  }
  // READ calls the proxy answered from its cache so far (none: no READ yet).
  int64_t ReadsFromCache(const std::string& log) {
    const std::string line = LastLine(log, "stats nfs calls/cache_answers");
    EXPECT_FALSE(line.empty());
    const size_t at = line.find(" READ=");
    if (at == std::string::npos) return 0;
    return std::stoll(line.substr(line.find('/', at) + 1));
  }

  // Lists `dir` in full; ASSERTs it listed.
  void List(const std::string& dir) {
    ReaddirResult r = client_->ReaddirAll(dir, /*plus=*/true, 32768);
    ASSERT_TRUE(r.ok()) << r.StatusString();
  }
  std::string Lookup(const std::string& dir, const std::string& name) {
    LookupResult l = client_->Lookup(dir, name);
    EXPECT_TRUE(l.ok()) << name << ": " << l.StatusString();
    return l.fh;
  }

  // The client lists the root and d0 (a walk starts), then stays at work in
  // the tree until the prefetcher has fetched `files` files (ASSERTed,
  // within 60 s); `*log` ends with the stats that showed it.
  void WalkUntilPrefetched(int files, std::string* log) {
    ASSERT_NO_FATAL_FAILURE(List(root_));
    const std::string d0 = Lookup(root_, "d0");
    ASSERT_NO_FATAL_FAILURE(List(d0));
    const auto deadline = steady_clock::now() + std::chrono::seconds(60);
    do {
      client_->Getattr(d0);  // the client is still at work in the tree
      *log = Stats();
    } while (Prefetch(*log, "files") < files && steady_clock::now() < deadline);
    ASSERT_EQ(Prefetch(*log, "files"), files) << LastLine(*log, "stats prefetch");
  }

  // The client goes on to d150 and reads its files: every READ is answered
  // from the cache (`before`: READs answered from it so far).
  void ExpectD150FromCache(int64_t before) {
    const std::string d = Lookup(root_, "d150");
    ASSERT_NO_FATAL_FAILURE(List(d));
    for (int f = 0; f < kFiles; ++f) {
      const std::string name = "f" + std::to_string(f);
      ReadResult r = client_->Read(Lookup(d, name), 0, 4096);
      ASSERT_TRUE(r.ok()) << r.StatusString();
      EXPECT_EQ(r.data, Content("d150/" + name));
    }
    const std::string log = Stats();
    EXPECT_EQ(ReadsFromCache(log) - before, kFiles) << LastLine(log, "stats nfs");
  }

  // Set before Start(): the proxy's server.max_record_size (0: default),
  // and files added to d150 beyond the tree's.
  uint64_t max_record_size_ = 0;
  int extra_in_d150_ = 0;
  std::unique_ptr<Testbed> bed_;
  std::unique_ptr<RawNfs> client_;
  std::string root_;
};

TEST_F(WalkTest, ALoneListingStartsNoWalk) {
  ASSERT_NO_FATAL_FAILURE(Start("max_in_flight = 64\n"));
  if (IsSkipped()) return;
  ASSERT_NO_FATAL_FAILURE(List(root_));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string log = Stats();
  EXPECT_EQ(Prefetch(log, "walks"), 0) << LastLine(log, "stats prefetch");
  EXPECT_EQ(Prefetch(log, "lists"), 0);
  EXPECT_EQ(Prefetch(log, "files"), 0);
}

// The client lists the root and d0, then goes on to d150 after the prefetch
// has gone through the tree: every file it reads there comes from the cache.
TEST_F(WalkTest, AWalkingClientFindsTheTreeAhead) {
  ASSERT_NO_FATAL_FAILURE(Start("max_in_flight = 64\nwalk_idle_ms = 5000\n"));
  if (IsSkipped()) return;
  std::string log;
  ASSERT_NO_FATAL_FAILURE(WalkUntilPrefetched(kTotalFiles, &log));
  EXPECT_EQ(Prefetch(log, "walks"), 1);
  EXPECT_GE(Prefetch(log, "lists"), 2 * kDirs + 1) << "every directory and the root again";
  ASSERT_NO_FATAL_FAILURE(ExpectD150FromCache(ReadsFromCache(log)));
}

// Small records from the proxy's clients (68 KiB: READs of one 64 KiB
// block) do not bound the listings the proxy fetches itself: d150's pages
// of 256 KiB come back whole, and the walk finds d150 ahead of it.
TEST_F(WalkTest, SmallClientRecordsDoNotBoundTheProxysOwnListings) {
  max_record_size_ = 68 << 10;
  extra_in_d150_ = 1500;
  ASSERT_NO_FATAL_FAILURE(Start("max_in_flight = 64\nwalk_idle_ms = 5000\n"));
  if (IsSkipped()) return;
  std::string log;
  ASSERT_NO_FATAL_FAILURE(WalkUntilPrefetched(kTotalFiles + extra_in_d150_, &log));
  EXPECT_EQ(ReadFile(bed_->proxy()->log_path()).find("reply record larger"), std::string::npos)
      << "a listing reply was too large for the upstream connection";
  ASSERT_NO_FATAL_FAILURE(ExpectD150FromCache(ReadsFromCache(log)));
}

// A second walk of the tree once everything cached has outlived its
// lifetime (2 s here): the prefetcher lists every directory again, in
// parallel, so that the client again finds the tree ahead of it: the files'
// data, their ACCESS evidence (same ctime) and names answer again once the
// new listings bring fresh attributes.
TEST_F(WalkTest, ASecondWalkAfterTheLifetimesFindsTheTreeAheadAgain) {
  ASSERT_NO_FATAL_FAILURE(Start("max_in_flight = 64\nwalk_idle_ms = 300\n",
                                "acregmin = 2\nacregmax = 2\nacdirmin = 2\nacdirmax = 2\n"));
  if (IsSkipped()) return;
  // Walks the root and d0, then keeps at work in the tree until `done`.
  auto walk = [&](const std::function<bool(const std::string&)>& done) {
    ASSERT_NO_FATAL_FAILURE(List(root_));
    const std::string d0 = Lookup(root_, "d0");
    ASSERT_NO_FATAL_FAILURE(List(d0));
    const auto deadline = steady_clock::now() + std::chrono::seconds(60);
    do {
      client_->Getattr(d0);
    } while (!done(Stats()) && steady_clock::now() < deadline);
  };
  ASSERT_NO_FATAL_FAILURE(
      walk([&](const std::string& l) { return Prefetch(l, "files") >= kTotalFiles; }));
  std::string log = Stats();
  ASSERT_EQ(Prefetch(log, "files"), kTotalFiles) << LastLine(log, "stats prefetch");
  EXPECT_EQ(Prefetch(log, "relists"), 0);

  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // the walk stopped, all expired
  ASSERT_NO_FATAL_FAILURE(
      walk([&](const std::string& l) { return Prefetch(l, "relists") >= 2 * kDirs; }));
  log = Stats();
  EXPECT_GE(Prefetch(log, "relists"), 2 * kDirs) << LastLine(log, "stats prefetch");
  EXPECT_EQ(Prefetch(log, "files"), kTotalFiles) << "the data cached is still good";
  ASSERT_NO_FATAL_FAILURE(ExpectD150FromCache(ReadsFromCache(log)));
}

// One prefetch call at a time: the tree takes far longer to prefetch (over
// half a second here) than the walk may idle. The client stops after two
// directories; the prefetch stops walk_idle later, with part of the tree
// not fetched, and stays stopped.
TEST_F(WalkTest, PrefetchStopsWhenTheWalkStops) {
  ASSERT_NO_FATAL_FAILURE(Start("max_in_flight = 1\nwalk_idle_ms = 100\n"));
  if (IsSkipped()) return;
  ASSERT_NO_FATAL_FAILURE(List(root_));
  ASSERT_NO_FATAL_FAILURE(List(Lookup(root_, "d0")));
  std::string log;
  const auto deadline = steady_clock::now() + std::chrono::seconds(30);
  do {
    log = Stats();
  } while (Prefetch(log, "walks_stopped") < 1 && steady_clock::now() < deadline);
  ASSERT_EQ(Prefetch(log, "walks_stopped"), 1) << LastLine(log, "stats prefetch");
  EXPECT_EQ(Prefetch(log, "walks"), 1);
  EXPECT_GT(Prefetch(log, "discarded"), 0);
  const int64_t lists = Prefetch(log, "lists"), files = Prefetch(log, "files");
  EXPECT_LT(files, kTotalFiles) << "stopped before the end";
  std::this_thread::sleep_for(std::chrono::seconds(1));
  log = Stats();
  EXPECT_EQ(Prefetch(log, "lists"), lists) << "nothing more after the stop";
  EXPECT_EQ(Prefetch(log, "files"), files);
}

}  // namespace
}  // namespace nfsedge::itest
