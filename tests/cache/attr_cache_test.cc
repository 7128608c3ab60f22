#include "cache/attr_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "test_attrs.h"

namespace nfsedge {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const Lifetime kReg{seconds(3), seconds(60)};

class AttrCacheTest : public ::testing::Test {
 protected:
  // A call sent after every entry so far was learned.
  static AttrCache::SentTime SentAfter() {
    std::this_thread::sleep_for(std::chrono::microseconds(10));
    return std::chrono::steady_clock::now();
  }
  // A file last changed `age` before now.
  fattr3 FileChanged(Duration age, uint64_t size = 100) {
    return MakeAttr(NF3REG, size, clock_.WallNow() - age);
  }

  FakeClock clock_;
  AttrCache cache_{clock_, AttrCacheOptions{}};
};

TEST_F(AttrCacheTest, LifetimeGrowsWithAgeSinceChange) {
  cache_.Put("recent", FileChanged(seconds(1)), kReg);    // 0.1 s -> min 3 s
  cache_.Put("middle", FileChanged(seconds(200)), kReg);  // 20 s
  cache_.Put("old", FileChanged(seconds(9000)), kReg);    // 900 s -> max 60 s

  clock_.Advance(seconds(3) - milliseconds(1));
  EXPECT_TRUE(cache_.Get("recent"));
  clock_.Advance(milliseconds(1));
  EXPECT_FALSE(cache_.Get("recent"));
  EXPECT_TRUE(cache_.Get("middle"));

  clock_.Advance(seconds(17) - milliseconds(1));  // t = 20 s - 1 ms
  EXPECT_TRUE(cache_.Get("middle"));
  clock_.Advance(milliseconds(1));
  EXPECT_FALSE(cache_.Get("middle"));
  EXPECT_TRUE(cache_.Get("old"));

  clock_.Advance(seconds(40) - milliseconds(1));  // t = 60 s - 1 ms
  EXPECT_TRUE(cache_.Get("old"));
  clock_.Advance(milliseconds(1));
  EXPECT_FALSE(cache_.Get("old"));
}

TEST_F(AttrCacheTest, ZeroLifetimeIsNeverAHit) {
  cache_.Put("fh", FileChanged(seconds(100000)), Lifetime{});
  EXPECT_FALSE(cache_.Get("fh"));
  EXPECT_EQ(cache_.stats().hits, 0u);
  EXPECT_EQ(cache_.stats().expired, 1u);
  // The entry is still there for revalidation.
  EXPECT_EQ(cache_.CachedChangeId("fh"), ChangeId::FromFattr(FileChanged(seconds(100000))));
}

TEST_F(AttrCacheTest, GetReturnsTheStoredAttributes) {
  fattr3 a = FileChanged(seconds(100), 1234);
  a.mode = 0751;
  cache_.Put("fh", a, kReg);
  std::optional<fattr3> got = cache_.Get("fh");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size, 1234u);
  EXPECT_EQ(got->mode, 0751u);
  EXPECT_FALSE(cache_.Get("other"));
}

TEST_F(AttrCacheTest, RevalidationWithTheSameChangeIdSaysUnchanged) {
  fattr3 a = FileChanged(seconds(100));
  EXPECT_EQ(cache_.Put("fh", a, kReg), PostOpResult::kInserted);
  clock_.Advance(seconds(11));
  EXPECT_FALSE(cache_.Get("fh"));
  EXPECT_EQ(cache_.CachedChangeId("fh"), ChangeId::FromFattr(a));
  fattr3 same = a;
  same.atime.seconds += 11;  // atime moved: not a change
  EXPECT_EQ(cache_.Put("fh", same, kReg), PostOpResult::kUnchanged);
  EXPECT_TRUE(cache_.Get("fh"));
  fattr3 grown = FileChanged(seconds(0), 200);
  EXPECT_EQ(cache_.Put("fh", grown, kReg), PostOpResult::kChanged);
  EXPECT_EQ(cache_.Get("fh")->size, 200u);
}

TEST_F(AttrCacheTest, PostOpUpdatesOnlyWhenAttributesFollow) {
  EXPECT_EQ(cache_.ApplyPostOp("fh", PostOp(nullptr), kReg), PostOpResult::kNoAttributes);
  EXPECT_FALSE(cache_.CachedChangeId("fh"));
  fattr3 a = FileChanged(seconds(100));
  EXPECT_EQ(cache_.ApplyPostOp("fh", PostOp(&a), kReg), PostOpResult::kInserted);
  EXPECT_TRUE(cache_.Get("fh"));
  EXPECT_EQ(cache_.ApplyPostOp("fh", PostOp(nullptr), kReg), PostOpResult::kNoAttributes);
  EXPECT_TRUE(cache_.Get("fh"));
}

TEST_F(AttrCacheTest, OlderAttributesDoNotOverwriteAFreshEntry) {
  fattr3 older = FileChanged(seconds(50), 1);
  fattr3 newer = FileChanged(seconds(10), 2);
  cache_.Put("fh", newer, kReg);
  EXPECT_EQ(cache_.Put("fh", older, kReg), PostOpResult::kIgnored);
  EXPECT_EQ(cache_.Get("fh")->size, 2u);
  EXPECT_EQ(cache_.stats().ignored_older, 1u);
  // Once the entry is stale, an older reply is kept but not served: it may
  // be a late one, overtaken by the newer; so is the same again, for the
  // lifetime's max. After that the upstream is believed (a server clock
  // stepped back), so the cache does not freeze.
  clock_.Advance(seconds(4));
  EXPECT_EQ(cache_.Put("fh", older, kReg), PostOpResult::kChanged);
  EXPECT_FALSE(cache_.Get("fh"));
  EXPECT_FALSE(cache_.GetExpired("fh"));
  EXPECT_FALSE(cache_.Latest("fh"));
  EXPECT_EQ(cache_.stats().overtaken, 1u);
  clock_.Advance(seconds(30));
  cache_.Put("fh", older, kReg);
  EXPECT_FALSE(cache_.Get("fh")) << "a second late reply, within the floor";
  EXPECT_EQ(cache_.stats().overtaken, 2u);
  clock_.Advance(seconds(31));  // 61 s after the first late reply
  cache_.Put("fh", older, kReg);
  ASSERT_TRUE(cache_.Get("fh"));
  EXPECT_EQ(cache_.Get("fh")->size, 1u);
}

// A file unchanged for long is written through the proxy: the write's
// attributes get a short lifetime (a tenth of the time since the last
// change, at least acregmin). A READ or listing reply the upstream made
// before the write, arriving after that lifetime, must not bring back the
// old size for acregmax.
TEST_F(AttrCacheTest, AReplyOvertakenByAWriteIsNotServedAfterTheWritesLifetime) {
  fattr3 before = FileChanged(seconds(1000), 100);
  cache_.Put("fh", before, kReg);
  fattr3 written = FileChanged(seconds(0), 200);
  EXPECT_EQ(cache_.Put("fh", written, kReg), PostOpResult::kChanged);
  clock_.Advance(seconds(4));  // past the write's lifetime (acregmin 3 s)
  EXPECT_FALSE(cache_.Get("fh"));
  EXPECT_EQ(cache_.Put("fh", before, kReg), PostOpResult::kChanged);  // the late reply
  EXPECT_FALSE(cache_.Get("fh")) << "the size before the write, served as fresh";
  EXPECT_FALSE(cache_.GetExpired("fh"));
  cache_.Put("fh", before, kReg);  // another late reply from before the write
  EXPECT_FALSE(cache_.Get("fh")) << "the size before the write, served after a second late reply";
  // The revalidation's answer: the written file.
  EXPECT_EQ(cache_.Put("fh", written, kReg), PostOpResult::kChanged);
  ASSERT_TRUE(cache_.Get("fh"));
  EXPECT_EQ(cache_.Get("fh")->size, 200u);
}

// An entry evicted while it keeps older replies out (InvalidateBefore's
// floor, an overtaken reply's floor) is told of: its owner keeps the guard
// as a change mark. An entry with no floor is not (a full cache evicts
// thousands a second: marks for them would overflow to a floor for all).
TEST_F(AttrCacheTest, AnEvictedFloorIsToldOf) {
  AttrCache small(clock_, AttrCacheOptions{2});
  std::vector<std::string> told;
  small.SetFloorEvictObserver([&](std::string_view fh) { told.emplace_back(fh); });
  small.Put("plain", FileChanged(seconds(1000), 1), kReg);
  small.InvalidateBefore("floor", NfsTime::From(FileChanged(seconds(10)).ctime));
  small.Put("overtaken", FileChanged(seconds(1000), 100), kReg);
  small.Put("overtaken", FileChanged(seconds(0), 200), kReg);
  clock_.Advance(seconds(4));  // past the newer attributes' lifetime
  small.Put("overtaken", FileChanged(seconds(1000), 100), kReg);  // a late reply: a floor
  small.Put("a", FileChanged(seconds(1000), 1), kReg);
  small.Put("b", FileChanged(seconds(1000), 1), kReg);
  EXPECT_EQ(told, (std::vector<std::string>{"floor", "overtaken"}));
}

// Two replies with one ctime (the server's clock did not tick between two
// WRITEs) but other sizes cannot be ordered: the entry does not answer
// until newer attributes come, or ones whose call left after it was
// learned (the GETATTR that the miss sends).
TEST_F(AttrCacheTest, SameCtimeOtherSizeIsAmbiguousUntilConfirmed) {
  fattr3 big = FileChanged(seconds(10), 2000);
  fattr3 small = big;
  small.size = 1000;
  cache_.Put("fh", big, kReg);
  EXPECT_EQ(cache_.Put("fh", small, kReg), PostOpResult::kChanged);  // a late reply
  EXPECT_FALSE(cache_.Get("fh")) << "which size is the latest is unknown";
  EXPECT_EQ(cache_.Get("fh", true)->size, 1000u) << "type, owner and mode are known";
  EXPECT_EQ(cache_.stats().ambiguous, 1u);
  // A second late reply, agreeing with the first, settles nothing: both
  // may be older than the entry they replaced.
  EXPECT_EQ(cache_.Put("fh", small, kReg), PostOpResult::kUnchanged);
  EXPECT_FALSE(cache_.Get("fh")) << "a second late reply settled the older size";
  // The GETATTR that the miss sends, after the late replies were learned.
  cache_.Put("fh", big, kReg, SentAfter());
  ASSERT_TRUE(cache_.Get("fh"));
  EXPECT_EQ(cache_.Get("fh")->size, 2000u);
  // Newer attributes settle it at once.
  cache_.Put("fh", small, kReg);
  EXPECT_FALSE(cache_.Get("fh"));
  fattr3 later = FileChanged(seconds(5), 3000);
  cache_.Put("fh", later, kReg);
  EXPECT_EQ(cache_.Get("fh")->size, 3000u);
}

TEST_F(AttrCacheTest, SameCtimeOtherModeIsStaleUntilAReplySentAfter) {
  fattr3 a = FileChanged(seconds(10));
  fattr3 b = a;
  b.mode = 0600;
  cache_.Put("fh", a, kReg);
  cache_.Put("fh", b, kReg);
  EXPECT_FALSE(cache_.Get("fh", true));
  EXPECT_EQ(cache_.CachedChangeId("fh"), ChangeId::FromFattr(b));
  cache_.Put("fh", b, kReg);  // another late reply, or a copy of one
  EXPECT_FALSE(cache_.Get("fh", true)) << "a second late reply settled the mode";
  cache_.Put("fh", a, kReg, SentAfter());
  ASSERT_TRUE(cache_.Get("fh"));
  EXPECT_EQ(cache_.Get("fh")->mode, a.mode);
}

// An entry past its lifetime still orders replies of its ctime: a late
// one with another size is not taken as the latest.
TEST_F(AttrCacheTest, AnExpiredEntryDoesNotTakeALateReplyOfItsCtimeAsFresh) {
  fattr3 big = FileChanged(seconds(1), 2000);
  fattr3 small = big;
  small.size = 1000;
  cache_.Put("fh", big, kReg);
  clock_.Advance(seconds(4));  // past the 3 s of a file changed just now
  cache_.Put("fh", small, kReg);
  EXPECT_FALSE(cache_.Get("fh")) << "a late reply of the same ctime answered from cache";
  cache_.Put("fh", small, kReg, SentAfter());
  ASSERT_TRUE(cache_.Get("fh"));
  EXPECT_EQ(cache_.Get("fh")->size, 1000u) << "a reply sent after the entry is the latest";
  EXPECT_EQ(cache_.stats().ambiguous, 1u);
}

TEST_F(AttrCacheTest, WccWithMatchingBeforeIsTheProxysOwnChange) {
  fattr3 a = FileChanged(seconds(100), 10);
  fattr3 b = FileChanged(seconds(0), 20);
  cache_.Put("fh", a, kReg);
  EXPECT_EQ(cache_.ApplyWcc("fh", MakeWcc(&a, &b), kReg), WccResult::kOwnChange);
  EXPECT_EQ(cache_.Get("fh")->size, 20u);
}

TEST_F(AttrCacheTest, WccWithOtherBeforeMeansChangedElsewhere) {
  fattr3 a = FileChanged(seconds(100), 10);
  fattr3 x = FileChanged(seconds(50), 15);  // someone else's change, unseen
  fattr3 b = FileChanged(seconds(0), 20);
  cache_.Put("fh", a, kReg);
  EXPECT_EQ(cache_.ApplyWcc("fh", MakeWcc(&x, &b), kReg), WccResult::kChangedElsewhere);
  EXPECT_EQ(cache_.Get("fh")->size, 20u);
  // A stale entry still tells: what the proxy last knew is what counts.
  clock_.Advance(seconds(10));
  EXPECT_FALSE(cache_.Get("fh"));
  fattr3 c = FileChanged(seconds(0), 30);
  EXPECT_EQ(cache_.ApplyWcc("fh", MakeWcc(&b, &c), kReg), WccResult::kOwnChange);
}

TEST_F(AttrCacheTest, WccWithoutEntryOrBeforeIsUnknown) {
  fattr3 a = FileChanged(seconds(100), 10);
  fattr3 b = FileChanged(seconds(0), 20);
  EXPECT_EQ(cache_.ApplyWcc("fh", MakeWcc(&a, &b), kReg), WccResult::kUnknown);
  EXPECT_EQ(cache_.Get("fh")->size, 20u);  // "after" is still learnt
  EXPECT_EQ(cache_.ApplyWcc("fh", MakeWcc(nullptr, &a), kReg), WccResult::kUnknown);
}

TEST_F(AttrCacheTest, WccWithoutAfterDropsTheEntry) {
  fattr3 a = FileChanged(seconds(100), 10);
  cache_.Put("fh", a, kReg);
  EXPECT_EQ(cache_.ApplyWcc("fh", MakeWcc(&a, nullptr), kReg), WccResult::kOwnChange);
  EXPECT_FALSE(cache_.CachedChangeId("fh"));
  EXPECT_FALSE(cache_.Get("fh"));
}

TEST_F(AttrCacheTest, Invalidate) {
  cache_.Put("fh", FileChanged(seconds(100)), kReg);
  cache_.Invalidate("fh");
  cache_.Invalidate("never-there");
  EXPECT_FALSE(cache_.Get("fh"));
  EXPECT_EQ(cache_.stats().invalidations, 1u);
  EXPECT_EQ(cache_.size(), 0u);
}

// ChangedSince (single flight's joins): attributes new for their handle
// count, the same ones again do not; a floor counts; an entry forgotten
// counts for a handle without one only if it was learned after the count.
TEST_F(AttrCacheTest, ChangedSinceCountsNewAttributesAndForgottenOnes) {
  const fattr3 v1 = FileChanged(seconds(100));
  cache_.Put("a", v1, kReg);
  const uint64_t s0 = cache_.change_seq();
  EXPECT_FALSE(cache_.ChangedSince("a", s0));
  cache_.Put("a", v1, kReg);  // the same again
  EXPECT_FALSE(cache_.ChangedSince("a", s0));
  cache_.Put("a", FileChanged(seconds(50), 200), kReg);  // newer
  EXPECT_TRUE(cache_.ChangedSince("a", s0));
  EXPECT_FALSE(cache_.ChangedSince("b", s0)) << "nothing was forgotten";
  const uint64_t s1 = cache_.change_seq();
  cache_.InvalidateBefore("a", NfsTime::From(FileChanged(seconds(10)).ctime));
  EXPECT_TRUE(cache_.ChangedSince("a", s1)) << "a floor set after s1";
  // Forgotten: "a" (changed after s1) counts for a handle without an entry.
  const uint64_t s2 = cache_.change_seq();
  cache_.Invalidate("a");
  EXPECT_TRUE(cache_.ChangedSince("a", s1));
  EXPECT_FALSE(cache_.ChangedSince("a", s2));
  // Evicted by the bound: an entry learned before the count does not.
  AttrCache small(clock_, AttrCacheOptions{1});
  small.Put("old", v1, kReg);
  const uint64_t t = small.change_seq();
  small.Put("new", v1, kReg);  // evicts "old", learned before t
  EXPECT_FALSE(small.ChangedSince("old", t));
  const uint64_t t2 = small.change_seq();
  small.Put("newer", v1, kReg);  // evicts "new", learned after t
  EXPECT_TRUE(small.ChangedSince("new", t));
  EXPECT_FALSE(small.ChangedSince("new", t2));
}

TEST_F(AttrCacheTest, RefreshCandidatesAreUsedEntriesAboutToExpire) {
  cache_.Put("used-soon", FileChanged(seconds(200)), kReg);    // expires at 20 s
  cache_.Put("unused-soon", FileChanged(seconds(200)), kReg);  // expires at 20 s
  cache_.Put("used-later", FileChanged(seconds(500)), kReg);   // expires at 50 s
  cache_.Put("zero", FileChanged(seconds(500)), Lifetime{});   // never fresh
  EXPECT_TRUE(cache_.Get("used-soon"));
  EXPECT_TRUE(cache_.Get("used-later"));
  EXPECT_FALSE(cache_.Get("zero"));

  clock_.Advance(seconds(15));
  EXPECT_TRUE(cache_.RefreshCandidates(seconds(4), 10).empty());  // 20 s is 5 s away
  clock_.Advance(seconds(2));
  EXPECT_EQ(cache_.RefreshCandidates(seconds(4), 10), std::vector<std::string>{"used-soon"});
  // Handed out once: a use while the refresh is in flight does not repeat it.
  EXPECT_TRUE(cache_.Get("used-soon"));
  EXPECT_TRUE(cache_.RefreshCandidates(seconds(4), 10).empty());
  EXPECT_EQ(cache_.stats().refreshes, 1u);

  // The refresh's reply re-arms it; it must be used again to be refreshed.
  cache_.Put("used-soon", FileChanged(seconds(217)), kReg);  // expires at 17 + 21.7 s
  EXPECT_TRUE(cache_.RefreshCandidates(seconds(60), 10) == std::vector<std::string>{"used-later"});
  EXPECT_TRUE(cache_.Get("used-soon"));
  EXPECT_EQ(cache_.RefreshCandidates(seconds(60), 10), std::vector<std::string>{"used-soon"});
  EXPECT_EQ(cache_.stats().refreshes, 3u);
}

TEST_F(AttrCacheTest, RefreshCandidatesSoonestFirstUpToMax) {
  cache_.Put("c", FileChanged(seconds(300)), kReg);  // 30 s
  cache_.Put("a", FileChanged(seconds(100)), kReg);  // 10 s
  cache_.Put("b", FileChanged(seconds(200)), kReg);  // 20 s
  for (const char* h : {"a", "b", "c"}) EXPECT_TRUE(cache_.Get(h));
  EXPECT_EQ(cache_.RefreshCandidates(seconds(60), 2), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(cache_.RefreshCandidates(seconds(60), 2), (std::vector<std::string>{"c"}));
}

// Candidates the refresher had no room for are handed back, and out again
// at the next round while fresh (they used to wait for an expiry and a
// foreground fetch).
TEST_F(AttrCacheTest, RefreshCandidatesHandedBackComeOutAgain) {
  cache_.Put("a", FileChanged(seconds(100)), kReg);  // 10 s
  cache_.Put("b", FileChanged(seconds(200)), kReg);  // 20 s
  for (const char* h : {"a", "b"}) EXPECT_TRUE(cache_.Get(h));
  EXPECT_EQ(cache_.RefreshCandidates(seconds(60), 10), (std::vector<std::string>{"a", "b"}));
  cache_.ReturnRefreshCandidates({"b"});
  EXPECT_EQ(cache_.RefreshCandidates(seconds(60), 10), std::vector<std::string>{"b"});
  EXPECT_EQ(cache_.stats().refreshes, 2u);
  // Refreshed meanwhile (a Put), or expired: not handed out again.
  cache_.Put("b", FileChanged(seconds(150)), kReg);  // changed since: expires at 15 s
  cache_.ReturnRefreshCandidates({"a", "b"});
  clock_.Advance(seconds(10));
  EXPECT_TRUE(cache_.RefreshCandidates(seconds(60), 10).empty());
}

TEST_F(AttrCacheTest, ExpiredEntriesAreNotRefreshCandidates) {
  cache_.Put("fh", FileChanged(seconds(100)), kReg);  // 10 s
  EXPECT_TRUE(cache_.Get("fh"));
  clock_.Advance(seconds(10));
  EXPECT_TRUE(cache_.RefreshCandidates(seconds(60), 10).empty());
}

TEST_F(AttrCacheTest, InvalidatedOrEvictedEntriesLeaveTheRefreshIndex) {
  AttrCache small(clock_, AttrCacheOptions{2});
  small.Put("a", FileChanged(seconds(100)), kReg);
  small.Put("b", FileChanged(seconds(100)), kReg);
  EXPECT_TRUE(small.Get("a"));
  EXPECT_TRUE(small.Get("b"));
  small.Invalidate("b");
  small.Put("c", FileChanged(seconds(100)), kReg);
  small.Put("d", FileChanged(seconds(100)), kReg);  // evicts a
  EXPECT_TRUE(small.RefreshCandidates(seconds(60), 10).empty());
}

TEST_F(AttrCacheTest, BoundedWithLeastRecentlyUsedEviction) {
  AttrCache small(clock_, AttrCacheOptions{3});
  for (const char* h : {"a", "b", "c"}) small.Put(h, FileChanged(seconds(100)), kReg);
  EXPECT_TRUE(small.Get("a"));  // b is now the least recently used
  small.Put("d", FileChanged(seconds(100)), kReg);
  EXPECT_EQ(small.size(), 3u);
  EXPECT_EQ(small.stats().evictions, 1u);
  EXPECT_FALSE(small.CachedChangeId("b"));
  EXPECT_TRUE(small.Get("a"));
  EXPECT_TRUE(small.Get("c"));
  EXPECT_TRUE(small.Get("d"));
}

TEST_F(AttrCacheTest, ZeroEntriesStoresNothing) {
  AttrCache none(clock_, AttrCacheOptions{0});
  none.Put("a", FileChanged(seconds(100)), kReg);
  EXPECT_EQ(none.size(), 0u);
  EXPECT_FALSE(none.Get("a"));
}

TEST_F(AttrCacheTest, Counters) {
  cache_.Put("fh", FileChanged(seconds(100)), kReg);
  EXPECT_TRUE(cache_.Get("fh"));
  EXPECT_TRUE(cache_.Get("fh"));
  EXPECT_FALSE(cache_.Get("nope"));
  clock_.Advance(seconds(10));
  EXPECT_FALSE(cache_.Get("fh"));
  EXPECT_EQ(cache_.stats().hits, 2u);
  EXPECT_EQ(cache_.stats().misses, 1u);
  EXPECT_EQ(cache_.stats().expired, 1u);
}

// GetExpired (an upstream outage with serve_stale_on_outage): the entry
// answers past its lifetime, but never an ambiguous one, one made stale on
// purpose, or one that was invalidated.
TEST_F(AttrCacheTest, GetExpiredAnswersPastTheLifetimeButNotWhatIsUnsure) {
  cache_.Put("old", FileChanged(seconds(100), 7), kReg);  // 10 s
  clock_.Advance(seconds(30));
  EXPECT_FALSE(cache_.Get("old"));
  ASSERT_TRUE(cache_.GetExpired("old"));
  EXPECT_EQ(cache_.GetExpired("old")->size, 7u);
  EXPECT_EQ(cache_.stats().expired_served, 2u);
  EXPECT_FALSE(cache_.GetExpired("none"));

  fattr3 big = FileChanged(seconds(10), 2000);
  fattr3 small = big;
  small.size = 1000;
  cache_.Put("ambiguous", big, kReg);
  cache_.Put("ambiguous", small, kReg);
  EXPECT_FALSE(cache_.GetExpired("ambiguous"));

  fattr3 a = FileChanged(seconds(10));
  fattr3 chmod = a;
  chmod.mode = 0600;
  cache_.Put("conflict", a, kReg);
  cache_.Put("conflict", chmod, kReg);  // same ctime, other mode: stale at once
  EXPECT_FALSE(cache_.GetExpired("conflict"));

  cache_.Put("removed", a, kReg);
  cache_.InvalidateBefore("removed", NfsTime::From(a.ctime));
  EXPECT_FALSE(cache_.GetExpired("removed"));
  cache_.Put("written", a, kReg);
  cache_.Invalidate("written");
  EXPECT_FALSE(cache_.GetExpired("written"));
  EXPECT_EQ(cache_.stats().expired_served, 2u) << "fresh answers are not counted either";
  cache_.Put("fresh", a, kReg);
  EXPECT_TRUE(cache_.GetExpired("fresh"));
  EXPECT_EQ(cache_.stats().expired_served, 2u);
}

TEST_F(AttrCacheTest, HandlesAreExactBytes) {
  cache_.Put(std::string("\0\1", 2), FileChanged(seconds(100), 1), kReg);
  cache_.Put(std::string("\0\1\0", 3), FileChanged(seconds(100), 2), kReg);
  EXPECT_EQ(cache_.Get(std::string("\0\1", 2))->size, 1u);
  EXPECT_EQ(cache_.Get(std::string("\0\1\0", 3))->size, 2u);
  EXPECT_FALSE(cache_.Get(std::string("\0", 1)));
}

}  // namespace
}  // namespace nfsedge
