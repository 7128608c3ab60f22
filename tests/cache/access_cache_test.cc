#include "cache/access_cache.h"

#include <gtest/gtest.h>

#include "test_attrs.h"

namespace nfsedge {
namespace {

using std::chrono::seconds;

const Lifetime kDir{seconds(30), seconds(60)};
constexpr uint32_t kRead = ACCESS3_READ;
constexpr uint32_t kLookup = ACCESS3_LOOKUP;
constexpr uint32_t kModify = ACCESS3_MODIFY;
constexpr uint32_t kExecute = ACCESS3_EXECUTE;

class AccessCacheTest : public ::testing::Test {
 protected:
  fattr3 Dir(uint32_t mode = 0700, uint32_t uid = 1000) {
    return MakeAttr(NF3DIR, 4096, clock_.WallNow() - seconds(3600), mode, uid, uid);
  }

  FakeClock clock_;
  AccessCache cache_{clock_, AccessCacheOptions{}};
  const CredKey alice_ = CredKey::FromIds(1000, 1000, {1000, 27});
  const CredKey bob_ = CredKey::FromIds(1001, 1001, {1001});
};

TEST(CredKey, GroupsAreASet) {
  EXPECT_EQ(CredKey::FromIds(1, 2, {5, 6, 7}), CredKey::FromIds(1, 2, {7, 5, 6}));
  EXPECT_EQ(CredKey::FromIds(1, 2, {5, 6, 7}), CredKey::FromIds(1, 2, {6, 7, 5, 5}));
  EXPECT_FALSE(CredKey::FromIds(1, 2, {5, 6, 7}) == CredKey::FromIds(1, 2, {5, 6}));
  EXPECT_FALSE(CredKey::FromIds(1, 2, {}) == CredKey::FromIds(2, 1, {}));
  EXPECT_FALSE(CredKey::FromIds(1, 2, {3}) == CredKey::FromIds(1, 3, {2}));
  EXPECT_FALSE(CredKey::FromIds(0, 0, {}) == CredKey::AuthNone());
  AuthSys sys;
  sys.machine = "client1";
  sys.uid = 1;
  sys.gid = 2;
  sys.gids = {7, 5, 6};
  EXPECT_EQ(CredKey::FromAuthSys(sys), CredKey::FromIds(1, 2, {5, 6, 7}));
  sys.machine = "client2";  // the machine name grants nothing
  EXPECT_EQ(CredKey::FromAuthSys(sys), CredKey::FromIds(1, 2, {5, 6, 7}));
}

// A reload lowers the lifetimes: an entry learned under the longer ones
// expires within the new from then on, so that a change its object's
// attributes show (an ACL: ctime only) is seen within the new lifetime.
TEST_F(AccessCacheTest, ClampedEntriesExpireWithinTheNewLifetime) {
  fattr3 d = Dir();
  cache_.Put("dir", alice_, kRead, kRead, d, kDir);  // 60 s (unchanged for an hour)
  cache_.Put("other", bob_, kRead, kRead, d, Lifetime{seconds(1), seconds(3)});
  cache_.ClampExpiry(seconds(5));
  fattr3 changed = d;
  changed.ctime.seconds += 10;
  clock_.Advance(seconds(4));
  EXPECT_EQ(cache_.Lookup("dir", alice_, kRead, changed), kRead) << "within the new lifetime";
  clock_.Advance(seconds(2));
  EXPECT_FALSE(cache_.Lookup("dir", alice_, kRead, changed)) << "fresh past the new lifetime";
  EXPECT_EQ(cache_.Lookup("dir", alice_, kRead, d), kRead) << "expired, ctime unchanged: kept";
  EXPECT_FALSE(cache_.Lookup("other", bob_, kRead, changed)) << "a shorter expiry stays";
}

// Two ACCESS replies crossed: the one from before an ACL change at the
// server (a grant; ctime only changed) came after the refusal that followed
// the change. The refusal stays.
TEST_F(AccessCacheTest, AReplyOfAnOlderStateDoesNotReplaceANewerOne) {
  fattr3 before = Dir();
  fattr3 after = before;
  after.ctime.seconds += 10;
  cache_.Put("dir", alice_, kRead, 0, after, kDir);
  cache_.Put("dir", alice_, kRead, kRead, before, kDir);
  EXPECT_EQ(cache_.Lookup("dir", alice_, kRead, PermId::FromFattr(after)), 0u);
  // A newer state replaces it as before.
  fattr3 later = after;
  later.ctime.seconds += 10;
  cache_.Put("dir", alice_, kRead, kRead, later, kDir);
  EXPECT_EQ(cache_.Lookup("dir", alice_, kRead, PermId::FromFattr(later)), kRead);
}

// The same past the newer entry's lifetime: it still answers while the
// object's ctime is its own (revalidated attributes show it), so a late
// grant from before must not take its place.
TEST_F(AccessCacheTest, AReplyOfAnOlderStateDoesNotReplaceAnExpiredNewerOne) {
  fattr3 before = Dir();
  fattr3 after = before;
  after.ctime.seconds += 10;
  cache_.Put("dir", alice_, kRead, 0, after, kDir);
  clock_.Advance(seconds(61));
  ASSERT_EQ(cache_.Lookup("dir", alice_, kRead, after), 0u) << "expired, ctime unchanged: kept";
  cache_.Put("dir", alice_, kRead, kRead, before, kDir);
  EXPECT_EQ(cache_.Lookup("dir", alice_, kRead, after), 0u)
      << "the grant from before the change answers";
}

TEST_F(AccessCacheTest, AnswersSubsetsOfWhatWasAsked) {
  fattr3 d = Dir();
  PermId p = PermId::FromFattr(d);
  cache_.Put("dir", alice_, kRead | kLookup | kExecute, kRead | kLookup | kModify, d, kDir);
  EXPECT_EQ(cache_.Lookup("dir", alice_, kRead, p), kRead);
  EXPECT_EQ(cache_.Lookup("dir", alice_, kRead | kLookup, p), kRead | kLookup);
  EXPECT_EQ(cache_.Lookup("dir", alice_, kExecute, p), 0u);  // asked, denied
  EXPECT_FALSE(cache_.Lookup("dir", alice_, kModify, p));    // never asked (grant ignored)
  EXPECT_FALSE(cache_.Lookup("dir", alice_, kRead | kModify, p));
  EXPECT_TRUE(cache_.Allows("dir", alice_, kLookup, p));
  EXPECT_TRUE(cache_.Allows("dir", alice_, kLookup | kRead, p));
  EXPECT_FALSE(cache_.Allows("dir", alice_, kExecute, p));
  EXPECT_FALSE(cache_.Allows("dir", alice_, kLookup | kExecute, p));
  EXPECT_FALSE(cache_.Allows("dir", alice_, kModify, p));
  EXPECT_FALSE(cache_.Allows("dir", alice_, 0, p));
}

TEST_F(AccessCacheTest, TwoUsersNeverSeeEachOthersEntries) {
  fattr3 d = Dir(0700, 1000);  // alice's private directory
  PermId p = PermId::FromFattr(d);
  cache_.Put("dir", alice_, kRead | kLookup, kRead | kLookup, d, kDir);
  EXPECT_FALSE(cache_.Lookup("dir", bob_, kLookup, p));
  EXPECT_FALSE(cache_.Allows("dir", bob_, kLookup, p));
  cache_.Put("dir", bob_, kRead | kLookup, 0, d, kDir);
  EXPECT_EQ(cache_.Lookup("dir", bob_, kLookup, p), 0u);
  EXPECT_TRUE(cache_.Allows("dir", alice_, kLookup, p));
  EXPECT_FALSE(cache_.Allows("dir", bob_, kLookup, p));
  // Same uid, different groups: a different credential.
  CredKey alice_other_groups = CredKey::FromIds(1000, 1000, {1000});
  EXPECT_FALSE(cache_.Lookup("dir", alice_other_groups, kLookup, p));
  // Same groups in another order: the same credential.
  EXPECT_TRUE(cache_.Allows("dir", CredKey::FromIds(1000, 1000, {27, 1000}), kLookup, p));
  EXPECT_EQ(cache_.size(), 2u);
}

TEST_F(AccessCacheTest, ChmodOrChownInvalidates) {
  fattr3 d = Dir(0755);
  cache_.Put("dir", bob_, kLookup, kLookup, d, kDir);
  fattr3 chmod = d;
  chmod.mode = 0700;
  EXPECT_FALSE(cache_.Lookup("dir", bob_, kLookup, PermId::FromFattr(chmod)));
  EXPECT_EQ(cache_.stats().stale, 1u);
  // The entry is gone, not merely hidden.
  EXPECT_FALSE(cache_.Lookup("dir", bob_, kLookup, PermId::FromFattr(d)));

  cache_.Put("dir", bob_, kLookup, kLookup, d, kDir);
  fattr3 chown = d;
  chown.uid = 1001;
  EXPECT_FALSE(cache_.Lookup("dir", bob_, kLookup, PermId::FromFattr(chown)));
  cache_.Put("dir", bob_, kLookup, kLookup, d, kDir);
  fattr3 chgrp = d;
  chgrp.gid = 27;
  EXPECT_FALSE(cache_.Lookup("dir", bob_, kLookup, PermId::FromFattr(chgrp)));
}

TEST_F(AccessCacheTest, ContentChangesKeepTheEntry) {
  fattr3 d = Dir(0755);
  cache_.Put("dir", bob_, kLookup, kLookup, d, kDir);
  fattr3 created_in = d;  // a CREATE in the directory moves mtime, ctime, size
  created_in.size = 8192;
  created_in.mtime.seconds += 5;
  created_in.ctime.seconds += 5;
  EXPECT_TRUE(cache_.Allows("dir", bob_, kLookup, PermId::FromFattr(created_in)));
}

TEST_F(AccessCacheTest, EntriesExpireWithTheLifetime) {
  fattr3 d = Dir();  // changed an hour ago: 360 s -> max 60 s
  PermId p = PermId::FromFattr(d);
  cache_.Put("dir", alice_, kLookup, kLookup, d, kDir);
  clock_.Advance(seconds(59));
  EXPECT_TRUE(cache_.Allows("dir", alice_, kLookup, p));
  clock_.Advance(seconds(1));
  EXPECT_FALSE(cache_.Allows("dir", alice_, kLookup, p));
  EXPECT_EQ(cache_.stats().stale, 1u);
}

// An upstream outage: an expired entry is kept and, when asked for with
// allow_expired, still proves what it proved; never for another credential
// or after the permissions changed.
TEST_F(AccessCacheTest, ExpiredEntriesAnswerOnlyWhenAllowed) {
  fattr3 d = Dir();
  PermId p = PermId::FromFattr(d);
  cache_.Put("dir", alice_, kLookup, kLookup, d, kDir);
  clock_.Advance(seconds(120));
  EXPECT_FALSE(cache_.Allows("dir", alice_, kLookup, p));
  EXPECT_TRUE(cache_.Allows("dir", alice_, kLookup, p, true)) << "kept, not dropped";
  EXPECT_FALSE(cache_.Allows("dir", bob_, kLookup, p, true));
  EXPECT_FALSE(cache_.Allows("dir", alice_, kRead, p, true)) << "bits never asked";
  fattr3 chmod = d;
  chmod.mode = 0755;
  EXPECT_FALSE(cache_.Allows("dir", alice_, kLookup, PermId::FromFattr(chmod), true));
  EXPECT_FALSE(cache_.Allows("dir", alice_, kLookup, p, true)) << "dropped on the change";
}

TEST_F(AccessCacheTest, ZeroLifetimeIsNeverAHit) {
  fattr3 d = Dir();
  cache_.Put("dir", alice_, kLookup, kLookup, d, Lifetime{});
  EXPECT_FALSE(cache_.Allows("dir", alice_, kLookup, PermId::FromFattr(d)));
  EXPECT_EQ(cache_.stats().hits, 0u);
}

TEST_F(AccessCacheTest, AsksForOtherBitsMergeButNeverOutliveTheFirst) {
  fattr3 d = Dir();
  PermId p = PermId::FromFattr(d);
  cache_.Put("dir", alice_, kRead, kRead, d, kDir);  // expires at 60 s
  clock_.Advance(seconds(30));
  cache_.Put("dir", alice_, kModify, 0, d, kDir);  // would expire at 90 s
  EXPECT_EQ(cache_.Lookup("dir", alice_, kRead | kModify, p), kRead);
  clock_.Advance(seconds(30));
  EXPECT_FALSE(cache_.Lookup("dir", alice_, kModify, p));
  // A superset ask replaces the entry with its own lifetime.
  cache_.Put("dir", alice_, kRead, kRead, d, kDir);
  clock_.Advance(seconds(30));
  cache_.Put("dir", alice_, kRead | kModify, kModify, d, kDir);
  clock_.Advance(seconds(45));
  EXPECT_EQ(cache_.Lookup("dir", alice_, kRead | kModify, p), kModify);
}

TEST_F(AccessCacheTest, InvalidateOneCredential) {
  fattr3 d = Dir(0755);
  PermId p = PermId::FromFattr(d);
  cache_.Put("dir", alice_, kLookup, kLookup, d, kDir);
  cache_.Put("dir", bob_, kLookup, kLookup, d, kDir);
  cache_.Invalidate("dir", bob_);
  EXPECT_FALSE(cache_.Allows("dir", bob_, kLookup, p));
  EXPECT_TRUE(cache_.Allows("dir", alice_, kLookup, p));
}

TEST_F(AccessCacheTest, BoundedWithLeastRecentlyUsedEviction) {
  AccessCache small(clock_, AccessCacheOptions{2});
  fattr3 d = Dir(0755);
  PermId p = PermId::FromFattr(d);
  small.Put("d1", alice_, kLookup, kLookup, d, kDir);
  small.Put("d1", bob_, kLookup, kLookup, d, kDir);
  EXPECT_TRUE(small.Allows("d1", alice_, kLookup, p));  // bob's is now the oldest
  small.Put("d2", alice_, kLookup, kLookup, d, kDir);
  EXPECT_EQ(small.size(), 2u);
  EXPECT_EQ(small.stats().evictions, 1u);
  EXPECT_FALSE(small.Allows("d1", bob_, kLookup, p));
  EXPECT_TRUE(small.Allows("d1", alice_, kLookup, p));
  EXPECT_TRUE(small.Allows("d2", alice_, kLookup, p));
}

TEST_F(AccessCacheTest, Counters) {
  fattr3 d = Dir(0755);
  PermId p = PermId::FromFattr(d);
  cache_.Put("dir", alice_, kLookup, kLookup, d, kDir);
  EXPECT_TRUE(cache_.Lookup("dir", alice_, kLookup, p));
  EXPECT_FALSE(cache_.Lookup("dir", bob_, kLookup, p));
  EXPECT_FALSE(cache_.Lookup("dir", alice_, kRead, p));
  EXPECT_EQ(cache_.stats().hits, 1u);
  EXPECT_EQ(cache_.stats().misses, 2u);
}

// Past its lifetime, an ACCESS result still answers for attributes that
// were revalidated and show the ctime the object had when the upstream
// answered: nothing about the object changed. Not with another ctime, and
// not without the attributes (PermId alone).
TEST_F(AccessCacheTest, ExpiredResultAnswersWhileTheCtimeIsUnchanged) {
  const fattr3 dir = Dir(0755);
  cache_.Put("d", alice_, kLookup | kRead, kLookup | kRead, dir, kDir);
  clock_.Advance(seconds(120));
  EXPECT_FALSE(cache_.Lookup("d", alice_, kLookup, PermId::FromFattr(dir)));
  EXPECT_EQ(cache_.Lookup("d", alice_, kLookup, dir), kLookup);
  EXPECT_TRUE(cache_.Allows("d", alice_, kLookup | kRead, dir));
  fattr3 changed = dir;
  changed.ctime.seconds += 1;  // e.g. a chmod and back, or an ACL change
  EXPECT_FALSE(cache_.Lookup("d", alice_, kLookup, changed));
  EXPECT_FALSE(cache_.Lookup("d", bob_, kLookup, dir)) << "per credential still";
}

}  // namespace
}  // namespace nfsedge
