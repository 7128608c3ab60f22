// The bound setters used by a config reload: a lower bound evicts the least
// recently used entries at once and holds for later inserts; a higher one
// evicts nothing and lets the cache fill up to it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cache/access_cache.h"
#include "cache/attr_cache.h"
#include "cache/block_cache.h"
#include "cache/dir_cache.h"
#include "cache/name_cache.h"
#include "test_attrs.h"

namespace nfsedge {
namespace {

using std::chrono::seconds;

const Lifetime kLife{seconds(30), seconds(60)};

std::string Name(int i) { return "n" + std::to_string(i); }

ChangeId Stamp() {
  ChangeId c;
  c.size = 4096;
  c.mtime = {100, 0};
  c.ctime = {100, 0};
  return c;
}

TEST(CacheBounds, AttrCacheShrinksToTheNewBoundKeepingTheMostRecent) {
  FakeClock clock;
  AttrCache cache(clock, AttrCacheOptions{10});
  const fattr3 a = MakeAttr(NF3REG, 1, clock.WallNow() - seconds(3600));
  for (int i = 0; i < 10; ++i) cache.Put(Name(i), a, kLife);
  ASSERT_TRUE(cache.Get(Name(0)));  // now the most recently used
  cache.SetMaxEntries(4);
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(cache.stats().evictions, 6u);
  EXPECT_TRUE(cache.Get(Name(0)));
  for (int i = 7; i < 10; ++i) EXPECT_TRUE(cache.Get(Name(i))) << i;
  for (int i = 1; i < 7; ++i) EXPECT_FALSE(cache.Get(Name(i))) << i;
  cache.Put("new", a, kLife);
  EXPECT_EQ(cache.size(), 4u) << "the lower bound holds for later inserts";

  cache.SetMaxEntries(8);
  EXPECT_EQ(cache.size(), 4u) << "growth evicts nothing";
  for (int i = 20; i < 30; ++i) cache.Put(Name(i), a, kLife);
  EXPECT_EQ(cache.size(), 8u);
}

TEST(CacheBounds, AccessCacheShrinksAndGrows) {
  FakeClock clock;
  AccessCache cache(clock, AccessCacheOptions{6});
  const fattr3 d = MakeAttr(NF3DIR, 4096, clock.WallNow() - seconds(3600), 0755);
  const CredKey alice = CredKey::FromIds(1000, 1000, {});
  for (int i = 0; i < 6; ++i) cache.Put(Name(i), alice, ACCESS3_READ, ACCESS3_READ, d, kLife);
  cache.SetMaxEntries(2);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.stats().evictions, 4u);
  const PermId perm = PermId::FromFattr(d);
  EXPECT_TRUE(cache.Allows(Name(5), alice, ACCESS3_READ, perm));
  EXPECT_FALSE(cache.Allows(Name(0), alice, ACCESS3_READ, perm));
  cache.SetMaxEntries(5);
  for (int i = 10; i < 20; ++i) cache.Put(Name(i), alice, ACCESS3_READ, ACCESS3_READ, d, kLife);
  EXPECT_EQ(cache.size(), 5u);
}

TEST(CacheBounds, NameCacheShrinksAndGrows) {
  NameCache cache(NameCacheOptions{8, 255});
  for (int i = 0; i < 8; ++i) cache.PutPositive("dir", Name(i), "fh" + Name(i), Stamp());
  cache.SetMaxEntries(3);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.stats().evictions, 5u);
  EXPECT_TRUE(cache.Lookup("dir", Name(7), Stamp()));
  EXPECT_FALSE(cache.Lookup("dir", Name(0), Stamp()));
  cache.SetMaxEntries(0);
  EXPECT_EQ(cache.size(), 0u);
  cache.PutPositive("dir", "x", "fhx", Stamp());
  EXPECT_EQ(cache.size(), 0u) << "a bound of 0 keeps nothing";
  cache.SetMaxEntries(4);
  for (int i = 0; i < 8; ++i) cache.PutPositive("dir", Name(i), "fh" + Name(i), Stamp());
  EXPECT_EQ(cache.size(), 4u);
}

TEST(CacheBounds, DirCacheShrinksByBytes) {
  FakeClock clock;
  DirCache cache(clock, DirCacheOptions{1 << 20});
  auto put = [&](int i) {
    DirPageKey k;
    k.dir = (i < 10 ? "dir0" : "dir") + std::to_string(i);  // one charge for all
    DirPage p;
    p.bytes.assign(1000, 'x');
    p.dir_change = Stamp();
    cache.Put(k, std::move(p), kNoMaxAge);
  };
  for (int i = 0; i < 10; ++i) put(i);
  ASSERT_EQ(cache.size(), 10u);
  const size_t per_page = cache.bytes() / 10;
  cache.SetMaxBytes(3 * per_page);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_LE(cache.bytes(), 3 * per_page);
  EXPECT_EQ(cache.stats().evictions, 7u);
  cache.SetMaxBytes(5 * per_page);
  for (int i = 10; i < 20; ++i) put(i);
  EXPECT_EQ(cache.size(), 5u);
}

TEST(CacheBounds, BlockCacheShrinkHandsEvictedBlocksToTheHandler) {
  BlockCacheOptions o;
  o.block_size = 4096;
  o.max_bytes = 10 * (4096 + kBlockOverhead) + kFileOverhead;
  BlockCache cache(o);
  std::vector<uint64_t> evicted;
  cache.SetEvictionHandler(
      [&](std::string_view, uint64_t index, Block&&) { evicted.push_back(index); });
  for (uint64_t i = 0; i < 10; ++i) {
    Block b;
    b.version = Stamp();
    b.data.assign(4096, 'a');
    cache.Put("fh", i, std::move(b));
  }
  ASSERT_EQ(cache.stats().blocks, 10u);
  cache.SetMaxBytes(4 * (4096 + kBlockOverhead) + kFileOverhead);
  EXPECT_EQ(cache.stats().blocks, 4u);
  EXPECT_EQ(cache.stats().bytes, 4 * (4096 + kBlockOverhead) + kFileOverhead);
  EXPECT_EQ(evicted, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_FALSE(cache.Contains("fh", 5, Stamp()));
  EXPECT_TRUE(cache.Contains("fh", 6, Stamp()));
  cache.SetMaxBytes(20 * (4096 + kBlockOverhead));
  EXPECT_EQ(cache.stats().blocks, 4u);
  EXPECT_EQ(evicted.size(), 6u) << "growth evicts nothing";
}

// A tree of tiny files (one short block each) costs the per-file index's
// entries too: they count against max_bytes, so the cache's memory stays
// near its bound however small the files.
TEST(CacheBounds, BlockCacheCountsEachFileItHolds) {
  BlockCacheOptions o;
  o.block_size = 4096;
  o.max_bytes = 64 << 10;
  BlockCache cache(o);
  for (int i = 0; i < 1000; ++i) {
    Block b;
    b.version = Stamp();
    b.data = "x";
    b.eof = true;
    cache.Put("file-" + std::to_string(i), 0, std::move(b));
    ASSERT_LE(cache.stats().bytes, o.max_bytes);
  }
  EXPECT_LE(cache.stats().blocks, o.max_bytes / (1 + kBlockOverhead + kFileOverhead));
  EXPECT_EQ(cache.stats().bytes, cache.stats().blocks * (1 + kBlockOverhead + kFileOverhead));
}

}  // namespace
}  // namespace nfsedge
