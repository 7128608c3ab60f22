// Tree-walk prefetch follows the client's walk: a walk starts when a client
// lists a directory right below one it listed just before, goes on while the
// client keeps calling in it, and stops (its queued work dropped and
// forgotten) when the client has been silent in it for walk_idle.
#include "prefetcher_fixture.h"

namespace nfsedge {
namespace prefetcher_test {
namespace {

using ProcFh = std::pair<uint32_t, std::string>;

constexpr auto kIdle = std::chrono::seconds(5);

class WalkTest : public PrefetcherTest {
 protected:
  WalkTest() {
    // FH-SUB, below the root: a small file and a directory.
    std::vector<Entry> sub = {EntryOf("a", "FH-A", NF3REG, 10),
                              EntryOf("deep", "FH-DEEP", NF3DIR, 4096)};
    data_["FH-A"] = std::string(10, 'a');
    sub_ = std::make_unique<Page>(std::move(sub), true);
    pages_[{"FH-ROOT", 0}] = RootPage();
  }
  static PrefetchOptions Walking(uint32_t in_flight = 64) {
    PrefetchOptions o = Options();
    o.max_in_flight = in_flight;
    o.walk_idle = kIdle;
    return o;
  }
  // A client's listing of `dir` as the proxy sees it: learned, then shown
  // to the prefetcher.
  void ClientLists(const std::string& dir, const Page& page, const OpaqueAuth& cred) {
    READDIRPLUS3args a{};
    a.dir = Fh(dir);
    meta_.Learn(*FindNfsProc(NFSPROC3_READDIRPLUS), &a, page.Results(), exp_, CredKeyOf(cred));
    pf_->OnClientListing(dir, page.ok(), exp_, cred);
    Drain();
  }
  // The root, then FH-SUB below it: a walk.
  void Walk(const OpaqueAuth& cred) {
    ClientLists("FH-ROOT", *pages_[{"FH-ROOT", 0}], cred);
    ClientLists("FH-SUB", *sub_, cred);
  }
  // A walk of user_'s, answered, with a file in FH-DEEP (whose attributes
  // its listing needs fresh).
  void WalkedWithAFileInDeep() {
    Make(Walking());
    pages_[{"FH-DEEP", 0}] = std::make_unique<Page>(
        std::vector<Entry>{EntryOf("big", "FH-DEEP-BIG", NF3REG, 1 << 20)}, true);
    Walk(user_);
    AnswerAll();
  }
  size_t Lists(const char* fh) const { return Asked().count({NFSPROC3_READDIRPLUS, fh}); }

  std::unique_ptr<Page> sub_;
};

TEST_F(WalkTest, OneListingIsNotAWalk) {
  Make(Walking());
  ClientLists("FH-ROOT", *pages_[{"FH-ROOT", 0}], user_);
  ClientLists("FH-SUB", *sub_, other_);  // below it, but another client
  EXPECT_TRUE(up_.calls.empty());
  EXPECT_EQ(pf_->stats().walks, 0u);
  EXPECT_EQ(pf_->walks(), 0u);
}

TEST_F(WalkTest, ListingBelowAListedDirectoryStartsAWalkFromTheUpperOne) {
  Make(Walking());
  Walk(user_);
  EXPECT_EQ(pf_->stats().walks, 1u);
  std::multiset<ProcFh> asked = Asked();
  EXPECT_EQ(asked.count({NFSPROC3_READDIRPLUS, "FH-ROOT"}), 1u) << "the rest of the subtree";
  EXPECT_EQ(asked.count({NFSPROC3_READDIRPLUS, "FH-DEEP"}), 1u);
  EXPECT_EQ(asked.count({NFSPROC3_READ, "FH-A"}), 1u);
  AnswerAll();
  asked = Asked();
  // The root's other entries, which the client has not reached yet.
  EXPECT_EQ(asked.count({NFSPROC3_READ, "FH-SMALL"}), 1u);
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-BIG"}), 1u);
  EXPECT_EQ(asked.count({NFSPROC3_READ, "FH-A"}), 1u) << "each object once";
  EXPECT_EQ(pf_->stats().walks_stopped, 0u);
}

// Another user's listing of a directory on a walk's frontier does not
// continue that walk as them (their own walk needs two listings of theirs).
TEST_F(WalkTest, AnotherUsersListingInAWalkedTreeStartsNothing) {
  Make(Walking());
  Walk(user_);
  AnswerAll();
  const size_t before = up_.calls.size();
  ClientLists("FH-DEEP", *sub_, other_);
  for (size_t i = before; i < up_.calls.size(); ++i) {
    EXPECT_NE(up_.calls[i].cred.body, other_.body) << "a prefetch as the other user";
  }
  EXPECT_EQ(pf_->stats().walks, 1u);
}

TEST_F(WalkTest, ParentListedTooLongAgoIsNotAWalk) {
  Make(Walking());
  ClientLists("FH-ROOT", *pages_[{"FH-ROOT", 0}], user_);
  clock_.Advance(kIdle + std::chrono::seconds(1));
  ClientLists("FH-SUB", *sub_, user_);
  EXPECT_TRUE(up_.calls.empty());
  EXPECT_EQ(pf_->stats().walks, 0u);
}

// One call in flight at a time: the walk's work waits in the queue. The
// client goes quiet; the walk's remaining work is dropped, not sent.
TEST_F(WalkTest, WalkStopsWhenTheClientStops) {
  Make(Walking(1));
  Walk(user_);
  ASSERT_EQ(up_.calls.size(), 1u);
  ASSERT_GT(pf_->queued(), 2u);
  clock_.Advance(kIdle + std::chrono::milliseconds(1));
  AnswerAll();
  EXPECT_EQ(up_.calls.size(), 1u) << "nothing sent after the walk stopped";
  EXPECT_EQ(pf_->queued(), 0u);
  EXPECT_EQ(pf_->stats().walks_stopped, 1u);
  EXPECT_GT(pf_->stats().discarded, 2u);
  EXPECT_EQ(pf_->walks(), 0u);
}

// A reload that changes the export rules (root squashed, say) stops a walk
// begun under the old ones, though the client keeps calling in it: its
// credential was mapped by the old rules. A walk begun after it goes on.
TEST_F(WalkTest, AReloadOfTheRulesStopsTheWalksBegunBeforeIt) {
  Make(Walking(1));
  uint64_t rules = 0;
  pf_->SetRulesVersion([&rules] { return rules; });
  Walk(user_);
  ASSERT_EQ(up_.calls.size(), 1u);
  ASSERT_GT(pf_->queued(), 2u);
  rules++;
  pf_->OnClientCall("FH-SUB");
  AnswerAll();
  EXPECT_EQ(up_.calls.size(), 1u) << "the old walk's work was sent after the reload";
  EXPECT_EQ(pf_->queued(), 0u);
  EXPECT_EQ(pf_->stats().walks_stopped, 1u);
  EXPECT_EQ(pf_->walks(), 0u);
  ClientLists("FH-SUB", *sub_, user_);
  EXPECT_EQ(pf_->stats().walks, 2u);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_READ, "FH-A"}), 1u);
}

// A listing of thousands of entries arriving while the queue is full of
// a walk still going does not search the whole queue for stopped walks'
// work once per entry turned away (that held the event loop for seconds).
TEST_F(WalkTest, AFullQueueIsNotSearchedForEveryJobItTurnsAway) {
  PrefetchOptions o = Walking(1);
  o.max_queue = 1000;
  Make(o);
  Walk(user_);
  std::vector<Entry> many;
  for (int i = 0; i < 3000; ++i) {
    many.push_back(EntryOf("f" + std::to_string(i), "FH-F" + std::to_string(i), NF3REG, 10));
  }
  const Page big(std::move(many), true);
  const uint64_t before = prefetch_clock_.reads;
  ClientLists("FH-DEEP", big, user_);
  EXPECT_EQ(pf_->queued(), 1000u);
  EXPECT_GT(pf_->stats().dropped, 1000u);
  EXPECT_LT(prefetch_clock_.reads - before, 100000u) << "the queue searched once per entry";
}

// Client calls in the walked tree (a LOOKUP in FH-SUB, a GETATTR of one of
// its entries) keep it going, though each answer comes long after the last.
TEST_F(WalkTest, ClientCallsKeepTheWalkGoing) {
  Make(Walking(1));
  Walk(user_);
  const char* touched[] = {"FH-SUB", "FH-A"};
  for (int i = 0; i < 100 && Outstanding() > 0; ++i) {
    clock_.Advance(kIdle - std::chrono::seconds(1));
    pf_->OnClientCall(touched[i % 2]);
    AnswerNext();
  }
  EXPECT_EQ(Outstanding(), 0u);
  EXPECT_EQ(pf_->queued(), 0u);
  EXPECT_EQ(pf_->stats().walks_stopped, 0u);
  EXPECT_EQ(pf_->stats().discarded, 0u);
  EXPECT_EQ(Asked().count({NFSPROC3_READ, "FH-SMALL"}), 1u) << "the walk went to its end";
}

// What a stopped walk dropped is forgotten: when the client comes back to a
// directory of that walk, a new walk starts there and asks it.
TEST_F(WalkTest, ComingBackToAStoppedWalkStartsANewOne) {
  Make(Walking(1));
  Walk(user_);
  clock_.Advance(kIdle + std::chrono::milliseconds(1));
  AnswerAll();
  ASSERT_EQ(pf_->stats().walks_stopped, 1u);
  ASSERT_EQ(Asked().count({NFSPROC3_READ, "FH-A"}), 0u);
  ClientLists("FH-SUB", *sub_, user_);
  EXPECT_EQ(pf_->stats().walks, 2u);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_READ, "FH-A"}), 1u);
  EXPECT_EQ(Asked().count({NFSPROC3_READDIRPLUS, "FH-DEEP"}), 1u);
}

// A second walk of the whole tree (the first finished, all of it listed and
// seen): its start lists the walk's root again (whatever was seen), so that
// the new walk reaches the subdirectories of every page of it, not only of
// the last page the client's listing showed it; a directory listed then
// whose cached listing is stale is listed again too.
TEST_F(WalkTest, ASecondWalkListsItsRootAgain) {
  WalkedWithAFileInDeep();
  auto lists = [&](const char* fh) { return Lists(fh); };
  ASSERT_EQ(lists("FH-ROOT"), 1u) << "the first walk's start";
  ASSERT_EQ(lists("FH-DEEP"), 1u);
  clock_.Advance(std::chrono::seconds(61));  // the walk stopped, all expired
  Walk(user_);
  AnswerAll();
  EXPECT_EQ(pf_->stats().walks, 2u);
  EXPECT_EQ(lists("FH-ROOT"), 2u) << "the second walk's start";
  EXPECT_EQ(lists("FH-DEEP"), 2u) << "its entry's attributes expired: listed again";
  EXPECT_GE(pf_->stats().relists, 2u);
}

// Within one walk a directory is listed again at most once: met again as
// the client lists the directory above it (the walk's own listing of it no
// longer fresh), it is not listed anew, or every directory would be listed
// once per level above it.
TEST_F(WalkTest, AWalkListsADirectoryItListedOnlyOnce) {
  WalkedWithAFileInDeep();
  auto lists = [&](const char* fh) { return Lists(fh); };
  ASSERT_EQ(lists("FH-DEEP"), 1u);
  clock_.Advance(std::chrono::seconds(2));  // the walk goes on (walk_idle 5 s)
  meta_.Forget("FH-DEEP-BIG");              // its listing no longer fresh
  ASSERT_FALSE(meta_.ListingFresh("FH-DEEP"));
  ClientLists("FH-SUB", *sub_, user_);  // the client, in the directory above it
  AnswerAll();
  EXPECT_EQ(pf_->stats().walks, 1u);
  EXPECT_EQ(lists("FH-DEEP"), 1u) << "listed again within the walk that listed it";
  EXPECT_EQ(pf_->stats().relists, 0u);
}

// A walk that stopped between two pages of a directory's listing (its
// first page answered after the client went quiet): the directory is not
// taken for listed, so a later walk, which finds that first page fresh,
// lists it again and goes on to its second page.
TEST_F(WalkTest, AListingLeftBetweenPagesIsListedByTheNextWalk) {
  Make(Walking(1));
  Entry x = EntryOf("x", "FH-X", NF3REG, 0);
  const uint64_t second_page = x.cookie;
  pages_[{"FH-DEEP", 0}] = std::make_unique<Page>(std::vector<Entry>{x}, false);
  pages_[{"FH-DEEP", second_page}] =
      std::make_unique<Page>(std::vector<Entry>{EntryOf("y", "FH-Y", NF3REG, 0)}, true);
  auto pages_asked = [&](uint64_t cookie) {
    size_t n = 0;
    for (const Sent& c : Calls()) n += c.proc == NFSPROC3_READDIRPLUS && c.fh == "FH-DEEP" &&
                                       c.cookie == cookie;
    return n;
  };
  Walk(user_);
  // Up to the listing of FH-DEEP, which the upstream answers after the
  // client went quiet.
  while (Outstanding() > 0 && pages_asked(0) == 0) AnswerNext();
  ASSERT_EQ(pages_asked(0), 1u);
  clock_.Advance(kIdle + std::chrono::milliseconds(1));
  AnswerAll();
  ASSERT_EQ(pages_asked(second_page), 0u) << "the test needs the walk to stop between pages";
  ASSERT_TRUE(meta_.ListingFresh("FH-DEEP"));
  clock_.Advance(std::chrono::seconds(2));
  Walk(user_);
  AnswerAll();
  EXPECT_EQ(pf_->stats().walks, 2u);
  EXPECT_EQ(pages_asked(second_page), 1u) << "the listing's second page was never asked";
}

// A directory the walk's user may not list (NFS3ERR_ACCES) is asked once
// per walk, not again at every listing of the directory above it.
TEST_F(WalkTest, ADirectoryItMayNotListIsAskedOncePerWalk) {
  Make(Walking());
  READDIRPLUS3res refused{};
  refused.status = NFS3ERR_ACCES;
  const std::string denied = Xdr(Proc(xdr_READDIRPLUS3res), refused);
  auto answer_all = [&] {
    for (size_t i = 0; i < up_.calls.size(); ++i) {
      if (answered_.count(i)) continue;
      answered_.insert(i);
      const Sent c = Decode(i);
      up_.Answer(i, c.proc == NFSPROC3_READDIRPLUS && c.fh == "FH-DEEP" ? denied : Respond(i));
      Drain();
    }
  };
  Walk(user_);
  answer_all();
  ASSERT_EQ(Lists("FH-DEEP"), 1u);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(std::chrono::seconds(2));  // the walk goes on (walk_idle 5 s)
    ClientLists("FH-SUB", *sub_, user_);
    answer_all();
  }
  EXPECT_EQ(pf_->stats().walks, 1u);
  EXPECT_EQ(Lists("FH-DEEP"), 1u);
}

// Work the upstream's full queue refused while nothing of the walk was in
// flight goes at the walk's next client call (nothing else would resume
// it: no call in flight finishes).
TEST_F(WalkTest, RefusedWorkGoesAtTheWalksNextClientCall) {
  Make(Walking());
  up_.set_refuse_with(ResourceExhausted("queue full"));
  Walk(user_);
  ASSERT_EQ(pf_->in_flight(), 0u);
  ASSERT_GT(pf_->queued(), 0u);
  up_.set_refuse_with(std::nullopt);
  pf_->OnClientCall("FH-SUB");
  Drain();
  EXPECT_GT(pf_->in_flight(), 0u) << "the refused work waits for a call that never comes";
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_READDIRPLUS, "FH-DEEP"}), 1u);
}

// Queue room for a new walk is taken from the work of stopped walks first.
TEST_F(WalkTest, StoppedWalksGiveTheirQueueRoomToANewOne) {
  PrefetchOptions o = Walking(1);
  o.max_queue = 6;
  Make(o);
  Walk(user_);
  ASSERT_GT(pf_->queued(), 0u);
  ASSERT_EQ(pf_->stats().dropped, 0u);
  clock_.Advance(kIdle + std::chrono::milliseconds(1));
  Walk(other_);  // another client, while the first walk's work still waits
  EXPECT_EQ(pf_->stats().dropped, 0u);
  EXPECT_GT(pf_->stats().discarded, 0u);
  EXPECT_EQ(pf_->stats().walks, 2u);
}

}  // namespace
}  // namespace prefetcher_test
}  // namespace nfsedge
