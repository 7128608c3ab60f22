#include "cache/dir_cache.h"

#include <gtest/gtest.h>

#include <tuple>

#include <optional>
#include <string>

namespace nfsedge {
namespace {

using std::chrono::seconds;

ChangeId Version(uint32_t t) {
  ChangeId c;
  c.size = 4096;
  c.mtime = {t, 0};
  c.ctime = {t, 0};
  return c;
}
const ChangeId A = Version(100);
const ChangeId B = Version(200);

DirPageKey Page(std::string dir, uint64_t cookie, char verf = 0, bool plus = true,
                uint32_t size_class = 8192) {
  DirPageKey k;
  k.dir = std::move(dir);
  k.plus = plus;
  k.cookie = cookie;
  k.verf.fill(verf);
  k.size_class = size_class;
  return k;
}

DirPage Bytes(std::string bytes, const ChangeId& c, char verf = 7) {
  DirPage p;
  p.bytes = std::move(bytes);
  p.dir_change = c;
  p.verf.fill(verf);
  return p;
}

class DirCacheTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  DirCache cache_{clock_, DirCacheOptions{}};
};

TEST_F(DirCacheTest, ServesAPageForExactlyItsKey) {
  cache_.Put(Page("dir", 0), Bytes("page0", A), kNoMaxAge);
  cache_.Put(Page("dir", 5, 7), Bytes("page5", A), kNoMaxAge);
  const DirPage* p = cache_.Lookup(Page("dir", 0), A);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->bytes, "page0");
  EXPECT_EQ(p->dir_change, A);
  EXPECT_EQ(p->verf[0], 7);
  EXPECT_EQ(cache_.Lookup(Page("dir", 5, 7), A)->bytes, "page5");
  EXPECT_EQ(cache_.Lookup(Page("dir", 5, 8), A), nullptr);         // other verifier
  EXPECT_EQ(cache_.Lookup(Page("dir", 6, 7), A), nullptr);         // other cookie
  EXPECT_EQ(cache_.Lookup(Page("dir", 0, 0, false), A), nullptr);  // READDIR
  EXPECT_EQ(cache_.Lookup(Page("dir", 0, 0, true, 4096), A), nullptr);
  EXPECT_EQ(cache_.Lookup(Page("dir2", 0), A), nullptr);
  EXPECT_EQ(cache_.stats().hits, 2u);
  EXPECT_EQ(cache_.stats().misses, 5u);
}

TEST_F(DirCacheTest, ADirectoryThatChangedDropsAllItsPages) {
  cache_.Put(Page("dir", 0), Bytes("p0", A), kNoMaxAge);
  cache_.Put(Page("dir", 5), Bytes("p5", A), kNoMaxAge);
  cache_.Put(Page("other", 0), Bytes("o0", A), kNoMaxAge);
  EXPECT_EQ(cache_.Lookup(Page("dir", 0), B), nullptr);
  EXPECT_EQ(cache_.stats().stale, 1u);
  EXPECT_EQ(cache_.Lookup(Page("dir", 5), A), nullptr);  // gone, not hidden
  EXPECT_NE(cache_.Lookup(Page("other", 0), A), nullptr);
  EXPECT_EQ(cache_.size(), 1u);
}

TEST_F(DirCacheTest, OlderPagesAreIgnoredNewerOnesReplace) {
  cache_.Put(Page("dir", 0), Bytes("new", B), kNoMaxAge);
  cache_.Put(Page("dir", 5), Bytes("late", A), kNoMaxAge);
  EXPECT_EQ(cache_.Lookup(Page("dir", 5), B), nullptr);
  EXPECT_NE(cache_.Lookup(Page("dir", 0), B), nullptr);
  cache_.Put(Page("dir", 5), Bytes("newer", Version(300)), kNoMaxAge);
  EXPECT_EQ(cache_.Lookup(Page("dir", 0), Version(300)), nullptr);
  EXPECT_EQ(cache_.Lookup(Page("dir", 5), Version(300))->bytes, "newer");
}

TEST_F(DirCacheTest, PagesWithAMaxAgeExpire) {
  cache_.Put(Page("dir", 0), Bytes("plus", A), seconds(3));
  cache_.Put(Page("dir", 0, 0, false), Bytes("names", A), kNoMaxAge);
  clock_.Advance(seconds(3) - Duration(1));
  EXPECT_NE(cache_.Lookup(Page("dir", 0), A), nullptr);
  clock_.Advance(Duration(1));
  EXPECT_EQ(cache_.Lookup(Page("dir", 0), A), nullptr);
  clock_.Advance(std::chrono::hours(24 * 365));
  EXPECT_NE(cache_.Lookup(Page("dir", 0, 0, false), A), nullptr);
  cache_.Put(Page("dir", 9), Bytes("zero", A), Duration(0));
  EXPECT_EQ(cache_.Lookup(Page("dir", 9), A), nullptr);
}

TEST_F(DirCacheTest, InvalidateDir) {
  cache_.Put(Page("dir", 0), Bytes("p0", A), kNoMaxAge);
  cache_.Put(Page("other", 0), Bytes("o0", A), kNoMaxAge);
  cache_.InvalidateDir("dir");
  EXPECT_EQ(cache_.Lookup(Page("dir", 0), A), nullptr);
  EXPECT_NE(cache_.Lookup(Page("other", 0), A), nullptr);
}

DirPage WithParent(std::string bytes, const ChangeId& c, std::optional<uint64_t> parent) {
  DirPage p = Bytes(std::move(bytes), c);
  p.parent_fileid = parent;
  return p;
}

TEST_F(DirCacheTest, InvalidateChildrenOfDropsTheDirectoriesWhosePagesNameThatParent) {
  cache_.Put(Page("x", 0), WithParent("x0", A, 11), kNoMaxAge);
  cache_.Put(Page("x", 9), WithParent("x9", A, std::nullopt), kNoMaxAge);  // no ".." in it
  cache_.Put(Page("y", 0), WithParent("y0", A, 11), kNoMaxAge);
  cache_.Put(Page("z", 0), WithParent("z0", A, 12), kNoMaxAge);
  cache_.Put(Page("w", 0), WithParent("w0", A, std::nullopt), kNoMaxAge);
  cache_.InvalidateChildrenOf(99);
  EXPECT_EQ(cache_.size(), 5u);
  cache_.InvalidateChildrenOf(11);
  EXPECT_EQ(cache_.Lookup(Page("x", 0), A), nullptr);
  EXPECT_EQ(cache_.Lookup(Page("x", 9), A), nullptr) << "every page of the directory";
  EXPECT_EQ(cache_.Lookup(Page("y", 0), A), nullptr);
  EXPECT_NE(cache_.Lookup(Page("z", 0), A), nullptr);
  EXPECT_NE(cache_.Lookup(Page("w", 0), A), nullptr);
  cache_.InvalidateAllChildren();
  EXPECT_EQ(cache_.Lookup(Page("z", 0), A), nullptr);
  EXPECT_NE(cache_.Lookup(Page("w", 0), A), nullptr) << "no page of w holds a \"..\"";
}

// The index follows the pages: a directory gone (evicted, changed, dropped)
// and listed again under another parent is found under the new one only.
TEST_F(DirCacheTest, TheParentIndexFollowsThePages) {
  cache_.Put(Page("x", 0), WithParent("x0", A, 11), kNoMaxAge);
  cache_.InvalidateDir("x");
  cache_.Put(Page("x", 0), WithParent("x0", A, 12), kNoMaxAge);
  cache_.InvalidateChildrenOf(11);
  EXPECT_NE(cache_.Lookup(Page("x", 0), A), nullptr);
  // A newer page of the directory (it changed) names another parent.
  cache_.Put(Page("x", 0), WithParent("x0", B, 13), kNoMaxAge);
  cache_.InvalidateChildrenOf(12);
  EXPECT_NE(cache_.Lookup(Page("x", 0), B), nullptr);
  cache_.InvalidateChildrenOf(13);
  EXPECT_EQ(cache_.Lookup(Page("x", 0), B), nullptr);
  // Evicted by the byte bound.
  cache_.Put(Page("x", 0), WithParent("x0", B, 14), kNoMaxAge);
  cache_.SetMaxBytes(1);
  EXPECT_EQ(cache_.size(), 0u);
  cache_.SetMaxBytes(1 << 20);
  cache_.Put(Page("x", 0), WithParent("x0", B, 15), kNoMaxAge);
  cache_.InvalidateChildrenOf(14);
  EXPECT_NE(cache_.Lookup(Page("x", 0), B), nullptr);
}

TEST_F(DirCacheTest, BoundedByBytesWithLeastRecentlyUsedEviction) {
  const std::string page(1000, 'x');
  // Room for three such pages (with their bookkeeping), not four.
  cache_.Put(Page("d1", 0), Bytes(page, A), kNoMaxAge);
  const size_t budget = 3 * cache_.bytes() + cache_.bytes() / 2;
  DirCache small(clock_, DirCacheOptions{budget});
  small.Put(Page("d1", 0), Bytes(page, A), kNoMaxAge);
  small.Put(Page("d2", 0), Bytes(page, A), kNoMaxAge);
  small.Put(Page("d1", 1), Bytes(page, A), kNoMaxAge);
  EXPECT_EQ(small.size(), 3u);
  EXPECT_LE(small.bytes(), budget);
  EXPECT_NE(small.Lookup(Page("d1", 0), A), nullptr);  // d2 is now the oldest
  small.Put(Page("d3", 0), Bytes(page, A), kNoMaxAge);
  EXPECT_LE(small.bytes(), budget);
  EXPECT_EQ(small.stats().evictions, 1u);
  EXPECT_EQ(small.Lookup(Page("d2", 0), A), nullptr);
  EXPECT_NE(small.Lookup(Page("d1", 0), A), nullptr);
  EXPECT_NE(small.Lookup(Page("d1", 1), A), nullptr);
  EXPECT_NE(small.Lookup(Page("d3", 0), A), nullptr);
  // A page larger than the whole budget is not stored and evicts nothing.
  small.Put(Page("d4", 0), Bytes(std::string(budget, 'y'), A), kNoMaxAge);
  EXPECT_EQ(small.Lookup(Page("d4", 0), A), nullptr);
  EXPECT_EQ(small.size(), 3u);
}

TEST_F(DirCacheTest, ReplacingAPageKeepsTheByteCountRight) {
  cache_.Put(Page("dir", 0), Bytes(std::string(1000, 'a'), A), kNoMaxAge);
  const size_t one = cache_.bytes();
  cache_.Put(Page("dir", 0), Bytes(std::string(10, 'b'), A), kNoMaxAge);
  EXPECT_EQ(cache_.bytes(), one - 990);
  EXPECT_EQ(cache_.size(), 1u);
  cache_.InvalidateDir("dir");
  EXPECT_EQ(cache_.bytes(), 0u);
}

// A listing goes on from a cookie inside a page: found through the
// directory's cookie index, with the page's reply verifier, while the page
// and the directory are as they were; the last entry of a page that does
// not end the listing leads to the next page, not this one.
TEST_F(DirCacheTest, ContinueFindsThePageHoldingACookie) {
  DirPage first = Bytes("page-1", A);
  first.cookies = {10, 11, 12};
  DirPage second = Bytes("page-2", A);
  second.cookies = {13, 14};
  second.eof = true;
  cache_.Put(Page("d", 0), std::move(first), kNoMaxAge);
  cache_.Put(Page("d", 12, 7), std::move(second), kNoMaxAge);
  CookieVerf v;
  v.fill(7);
  auto [page, next] = cache_.Continue("d", 11, v, A);
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(page->bytes, "page-1");
  EXPECT_EQ(next, 2u);
  EXPECT_EQ(cache_.Continue("d", 12, v, A).first, nullptr) << "the next page's";
  std::tie(page, next) = cache_.Continue("d", 14, v, A);
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(page->bytes, "page-2");
  EXPECT_EQ(next, 2u) << "the end of the listing: nothing after it";
  EXPECT_EQ(cache_.stats().continued, 2u);
  CookieVerf other;
  other.fill(8);
  EXPECT_EQ(cache_.Continue("d", 11, other, A).first, nullptr) << "another verifier";
  EXPECT_EQ(cache_.Continue("d", 99, v, A).first, nullptr) << "no such cookie";
  // The page gone, its cookies lead nowhere.
  cache_.InvalidateDir("d");
  EXPECT_EQ(cache_.Continue("d", 11, v, A).first, nullptr);
  DirPage again = Bytes("page-1b", A);
  again.cookies = {20, 21};
  cache_.Put(Page("d", 0), std::move(again), kNoMaxAge);
  EXPECT_EQ(cache_.Continue("d", 11, v, A).first, nullptr);
  EXPECT_NE(cache_.Continue("d", 20, v, A).first, nullptr);
  // The directory changed: nothing, and its pages are dropped.
  EXPECT_EQ(cache_.Continue("d", 20, v, B).first, nullptr);
  EXPECT_EQ(cache_.size(), 0u);
}

}  // namespace
}  // namespace nfsedge
