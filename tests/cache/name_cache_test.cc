#include "cache/name_cache.h"

#include <gtest/gtest.h>

#include <string>

#include "test_attrs.h"

namespace nfsedge {
namespace {

using std::chrono::seconds;

// Directory versions: A, then B, then C (ctime increasing); X is a version
// the proxy never saw.
ChangeId Version(uint32_t t, uint64_t size = 4096) {
  ChangeId c;
  c.size = size;
  c.mtime = {t, 0};
  c.ctime = {t, 0};
  return c;
}
const ChangeId A = Version(100);
const ChangeId B = Version(200);
const ChangeId C = Version(300);
const ChangeId X = Version(150, 1);

DirChange Change(std::optional<ChangeId> before, std::optional<ChangeId> after) {
  return DirChange{before, after};
}

NameHit Positive(std::string child) { return NameHit{false, std::move(child)}; }

bool SameHit(const std::optional<NameHit>& got, const NameHit& want) {
  return got && got->negative == want.negative && got->child == want.child;
}

class NameCacheTest : public ::testing::Test {
 protected:
  NameCache cache_{NameCacheOptions{}};
};

TEST_F(NameCacheTest, PositiveAndNegativeEntries) {
  cache_.PutPositive("dir", "a", "fh-a", A);
  cache_.PutNegative("dir", "missing", A);
  EXPECT_TRUE(SameHit(cache_.Lookup("dir", "a", A), Positive("fh-a")));
  std::optional<NameHit> neg = cache_.Lookup("dir", "missing", A);
  ASSERT_TRUE(neg);
  EXPECT_TRUE(neg->negative);
  EXPECT_FALSE(cache_.Lookup("dir", "other", A));
  EXPECT_FALSE(cache_.Lookup("dir2", "a", A));
  EXPECT_EQ(cache_.stats().positive_hits, 1u);
  EXPECT_EQ(cache_.stats().negative_hits, 1u);
  EXPECT_EQ(cache_.stats().misses, 2u);
}

TEST_F(NameCacheTest, ADirectoryThatChangedDropsItsNames) {
  cache_.PutPositive("dir", "a", "fh-a", A);
  cache_.PutNegative("dir", "b", A);
  cache_.PutPositive("other", "a", "fh-oa", A);
  EXPECT_FALSE(cache_.Lookup("dir", "b", X));  // the directory is now at X
  EXPECT_EQ(cache_.stats().dirs_dropped, 1u);
  EXPECT_FALSE(cache_.Lookup("dir", "a", A));  // dropped, not hidden
  EXPECT_EQ(cache_.size(), 1u);
  EXPECT_TRUE(SameHit(cache_.Lookup("other", "a", A), Positive("fh-oa")));
}

TEST_F(NameCacheTest, NewerResultsReplaceOlderOnesAreIgnored) {
  cache_.PutPositive("dir", "a", "fh-a", B);
  cache_.PutNegative("dir", "b", A);  // a reply from before B, arriving late
  EXPECT_FALSE(cache_.Lookup("dir", "b", B));
  EXPECT_TRUE(cache_.Lookup("dir", "a", B));
  cache_.PutNegative("dir", "c", C);  // the directory moved on: names of B go
  EXPECT_TRUE(cache_.Lookup("dir", "c", C));
  EXPECT_FALSE(cache_.Lookup("dir", "a", C));
}

TEST_F(NameCacheTest, OwnCreateKeepsTheOtherNames) {
  cache_.PutPositive("dir", "a", "fh-a", A);
  cache_.PutNegative("dir", "new", A);
  cache_.OnCreate("dir", "new", "fh-new", Change(A, B));
  EXPECT_TRUE(SameHit(cache_.Lookup("dir", "a", B), Positive("fh-a")));
  EXPECT_TRUE(SameHit(cache_.Lookup("dir", "new", B), Positive("fh-new")));
  EXPECT_EQ(cache_.stats().dirs_dropped, 0u);
}

TEST_F(NameCacheTest, CreateAfterAForeignChangeDropsTheOtherNames) {
  cache_.PutPositive("dir", "a", "fh-a", A);
  cache_.OnCreate("dir", "new", "fh-new", Change(X, B));  // someone changed it first
  EXPECT_FALSE(cache_.Lookup("dir", "a", B));
  EXPECT_TRUE(SameHit(cache_.Lookup("dir", "new", B), Positive("fh-new")));
}

TEST_F(NameCacheTest, CreateWithoutWccForgetsTheDirectory) {
  cache_.PutPositive("dir", "a", "fh-a", A);
  cache_.OnCreate("dir", "new", "fh-new", Change(std::nullopt, std::nullopt));
  EXPECT_EQ(cache_.size(), 0u);
  cache_.PutPositive("dir", "a", "fh-a", A);
  cache_.OnCreate("dir", "new", "fh-new", Change(A, std::nullopt));
  EXPECT_EQ(cache_.size(), 0u);
}

TEST_F(NameCacheTest, RemoveMakesANegativeEntry) {
  cache_.PutPositive("dir", "a", "fh-a", A);
  cache_.PutPositive("dir", "b", "fh-b", A);
  cache_.OnRemove("dir", "a", Change(A, B));
  std::optional<NameHit> hit = cache_.Lookup("dir", "a", B);
  ASSERT_TRUE(hit);
  EXPECT_TRUE(hit->negative);
  EXPECT_TRUE(SameHit(cache_.Lookup("dir", "b", B), Positive("fh-b")));
}

TEST_F(NameCacheTest, RenameWithinADirectory) {
  cache_.PutPositive("dir", "old", "fh-x", A);
  cache_.PutPositive("dir", "keep", "fh-k", A);
  cache_.OnRename("dir", "old", "dir", "new", Change(A, B), Change(A, B));
  EXPECT_TRUE(cache_.Lookup("dir", "old", B)->negative);
  EXPECT_TRUE(SameHit(cache_.Lookup("dir", "new", B), Positive("fh-x")));
  EXPECT_TRUE(SameHit(cache_.Lookup("dir", "keep", B), Positive("fh-k")));
}

// rename(2) onto another link of the same file succeeds and changes nothing:
// the directory's wcc before equals after, and both names stay.
TEST_F(NameCacheTest, RenameOntoAnotherLinkOfTheSameFileKeepsBothNames) {
  cache_.PutPositive("dir", "a", "fh-x", A);
  cache_.PutPositive("dir", "b", "fh-x", A);
  cache_.OnRename("dir", "a", "dir", "b", Change(A, A), Change(A, A));
  EXPECT_TRUE(SameHit(cache_.Lookup("dir", "a", A), Positive("fh-x")));
  EXPECT_TRUE(SameHit(cache_.Lookup("dir", "b", A), Positive("fh-x")));
}

// The same rename when the proxy does not know the target name (another
// directory, whose names went with a change): nothing tells it from a move
// made within one server clock tick, so the source name is forgotten, not
// made negative (it is still there).
TEST_F(NameCacheTest, RenameOntoAnUnknownTargetWithoutAVisibleChangeForgetsTheSource) {
  cache_.PutPositive("src", "e", "fh-x", A);
  cache_.OnRename("src", "e", "dst", "f", Change(A, A), Change(B, B));
  EXPECT_FALSE(cache_.Lookup("src", "e", A)) << "answered NOENT for a name that may be there";
  EXPECT_TRUE(SameHit(cache_.Lookup("dst", "f", B), Positive("fh-x")));
  // A target known to be absent: the move is sure, the source negative.
  cache_.PutPositive("src", "g", "fh-g", A);
  cache_.PutNegative("dst", "h", B);
  cache_.OnRename("src", "g", "dst", "h", Change(A, A), Change(B, B));
  std::optional<NameHit> hit = cache_.Lookup("src", "g", A);
  ASSERT_TRUE(hit);
  EXPECT_TRUE(hit->negative);
}

TEST_F(NameCacheTest, RenameAcrossDirectories) {
  cache_.PutPositive("src", "f", "fh-f", A);
  cache_.PutPositive("dst", "f", "fh-overwritten", A);
  cache_.PutPositive("dst", "g", "fh-g", A);
  cache_.OnRename("src", "f", "dst", "f", Change(A, B), Change(A, C));
  EXPECT_TRUE(cache_.Lookup("src", "f", B)->negative);
  EXPECT_TRUE(SameHit(cache_.Lookup("dst", "f", C), Positive("fh-f")));
  EXPECT_TRUE(SameHit(cache_.Lookup("dst", "g", C), Positive("fh-g")));
}

TEST_F(NameCacheTest, RenameOfAnUnknownChildForgetsTheTarget) {
  cache_.PutPositive("dst", "t", "fh-old-target", A);
  cache_.PutPositive("dst", "u", "fh-u", A);
  cache_.OnRename("src", "f", "dst", "t", Change(A, B), Change(A, C));
  EXPECT_FALSE(cache_.Lookup("dst", "t", C));
  EXPECT_TRUE(SameHit(cache_.Lookup("dst", "u", C), Positive("fh-u")));
  EXPECT_TRUE(cache_.Lookup("src", "f", B)->negative);
}

TEST_F(NameCacheTest, SetattrOnTheDirectoryRestampsItsNames) {
  cache_.PutPositive("dir", "a", "fh-a", A);
  cache_.OnSetattr("dir", Change(A, B));
  EXPECT_TRUE(cache_.Lookup("dir", "a", B));
  cache_.OnSetattr("dir", Change(X, C));
  EXPECT_FALSE(cache_.Lookup("dir", "a", C));
}

TEST_F(NameCacheTest, InvalidateDir) {
  cache_.PutPositive("dir", "a", "fh-a", A);
  cache_.PutPositive("dir2", "a", "fh-a2", A);
  cache_.InvalidateDir("dir");
  EXPECT_FALSE(cache_.Lookup("dir", "a", A));
  EXPECT_TRUE(cache_.Lookup("dir2", "a", A));
}

TEST_F(NameCacheTest, DotNamesAndOverlongNamesAreNotCached) {
  cache_.PutPositive("dir", ".", "fh-dir", A);
  cache_.PutPositive("dir", "..", "fh-parent", A);
  cache_.PutNegative("dir", "", A);
  cache_.PutNegative("dir", std::string(256, 'n'), A);
  cache_.PutNegative("dir", std::string(255, 'n'), A);
  EXPECT_EQ(cache_.size(), 1u);
  EXPECT_FALSE(cache_.Lookup("dir", "..", A));
}

TEST_F(NameCacheTest, KeysDoNotCollide) {
  cache_.PutPositive("ab", "c", "fh-1", A);
  cache_.PutPositive("a", "bc", "fh-2", A);
  EXPECT_TRUE(SameHit(cache_.Lookup("ab", "c", A), Positive("fh-1")));
  EXPECT_TRUE(SameHit(cache_.Lookup("a", "bc", A), Positive("fh-2")));
}

TEST_F(NameCacheTest, BoundedWithLeastRecentlyUsedEviction) {
  NameCache small(NameCacheOptions{3, 255});
  small.PutPositive("d1", "a", "fh-a", A);
  small.PutPositive("d2", "b", "fh-b", A);
  small.PutPositive("d1", "c", "fh-c", A);
  EXPECT_TRUE(small.Lookup("d1", "a", A));  // d2/b is now the oldest
  small.PutPositive("d3", "d", "fh-d", A);
  EXPECT_EQ(small.size(), 3u);
  EXPECT_EQ(small.stats().evictions, 1u);
  EXPECT_FALSE(small.Lookup("d2", "b", A));
  // d2's bookkeeping went with its last name: a new version of d2 is not a
  // "directory changed" drop.
  small.PutPositive("d2", "b", "fh-b", B);
  EXPECT_EQ(small.stats().dirs_dropped, 0u);
  EXPECT_EQ(small.size(), 3u);
  EXPECT_TRUE(small.Lookup("d2", "b", B));
}

}  // namespace
}  // namespace nfsedge
