#include "cache/block_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace nfsedge {
namespace {

constexpr uint32_t kBlockSize = 1024;

ChangeId Version(uint64_t size, uint32_t mtime) {
  ChangeId v;
  v.size = size;
  v.mtime = {mtime, 0};
  v.ctime = {mtime, 0};
  return v;
}

const ChangeId kV1 = Version(1 << 20, 100);
const ChangeId kV2 = Version(1 << 20, 200);

Block Full(const ChangeId& v, char fill, bool prefetched = false) {
  Block b;
  b.version = v;
  b.data.assign(kBlockSize, fill);
  b.prefetched = prefetched;
  return b;
}

struct Evicted {
  std::string handle;
  uint64_t index;
  std::string data;
};

class BlockCacheTest : public ::testing::Test {
 protected:
  // A cache holding at most `blocks` full blocks of one file.
  void Make(uint64_t blocks) {
    cache_ = std::make_unique<BlockCache>(
        BlockCacheOptions{blocks * (kBlockSize + kBlockOverhead) + kFileOverhead, kBlockSize});
    cache_->SetEvictionHandler([this](std::string_view h, uint64_t i, Block&& b) {
      evicted_.push_back({std::string(h), i, std::move(b.data)});
    });
  }

  std::unique_ptr<BlockCache> cache_;
  std::vector<Evicted> evicted_;
};

TEST(BlockKey, RoundTripsAndKeepsAFileContiguous) {
  const std::string handle(
      "\x00\xff"
      "fh",
      4);
  std::string_view h;
  uint64_t i = 0;
  const std::string key = BlockKey(handle, 0x0102030405060708);
  ASSERT_TRUE(ParseBlockKey(key, &h, &i));
  EXPECT_EQ(h, handle);
  EXPECT_EQ(i, 0x0102030405060708u);
  EXPECT_LT(BlockKey("ab", 1), BlockKey("ab", 256));
  EXPECT_LT(BlockKey("ab", ~0ull), BlockKey("abc", 0));
  EXPECT_LT(BlockKey("ab", ~0ull), BlockKey("ac", 0));
  EXPECT_FALSE(ParseBlockKey("short", &h, &i));
  EXPECT_FALSE(ParseBlockKey(BlockKey("ab", 1) + "x", &h, &i));
}

TEST_F(BlockCacheTest, HitAndMiss) {
  Make(4);
  EXPECT_EQ(cache_->block_size(), kBlockSize);
  EXPECT_EQ(cache_->Get("fh", 0, kV1), nullptr);
  cache_->Put("fh", 0, Full(kV1, 'a'));
  EXPECT_TRUE(cache_->Contains("fh", 0, kV1));
  EXPECT_FALSE(cache_->Contains("fh", 1, kV1));
  EXPECT_FALSE(cache_->Contains("other", 0, kV1));
  const Block* b = cache_->Get("fh", 0, kV1);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->data, std::string(kBlockSize, 'a'));
  EXPECT_FALSE(b->eof);
  EXPECT_EQ(cache_->stats().hits, 1u);
  EXPECT_EQ(cache_->stats().misses, 1u);
  EXPECT_EQ(cache_->stats().inserts, 1u);
  EXPECT_EQ(cache_->stats().blocks, 1u);
  EXPECT_EQ(cache_->stats().bytes, kBlockSize + kBlockOverhead + kFileOverhead);
}

TEST_F(BlockCacheTest, OtherVersionIsDroppedNotServed) {
  Make(4);
  cache_->Put("fh", 0, Full(kV1, 'a'));
  EXPECT_FALSE(cache_->Contains("fh", 0, kV2));
  EXPECT_EQ(cache_->stats().stale, 0u);  // Contains() is not a use
  EXPECT_EQ(cache_->Get("fh", 0, kV2), nullptr);
  EXPECT_EQ(cache_->stats().stale, 1u);
  EXPECT_EQ(cache_->stats().hits, 0u);
  // Gone, even for the old version.
  EXPECT_FALSE(cache_->Contains("fh", 0, kV1));
  EXPECT_EQ(cache_->stats().bytes, 0u);
  EXPECT_TRUE(evicted_.empty());  // stale data is not handed on
}

TEST_F(BlockCacheTest, PartialEofBlockRoundTrips) {
  Make(4);
  Block b;
  b.version = Version(kBlockSize + 10, 100);
  b.data = "0123456789";
  b.eof = true;
  cache_->Put("fh", 1, b);
  const Block* got = cache_->Get("fh", 1, b.version);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->data, "0123456789");
  EXPECT_TRUE(got->eof);
  EXPECT_EQ(cache_->stats().bytes, 10 + kBlockOverhead + kFileOverhead);

  Block empty;  // a file whose size is a multiple of the block size
  empty.version = Version(kBlockSize, 100);
  empty.eof = true;
  cache_->Put("fh2", 1, empty);
  got = cache_->Get("fh2", 1, empty.version);
  ASSERT_NE(got, nullptr);
  EXPECT_TRUE(got->data.empty());
  EXPECT_TRUE(got->eof);
}

TEST_F(BlockCacheTest, MalformedBlocksAreRejected) {
  Make(4);
  Block short_not_eof;
  short_not_eof.version = kV1;
  short_not_eof.data = "abc";
  cache_->Put("fh", 0, short_not_eof);
  Block too_long = Full(kV1, 'x');
  too_long.data.push_back('x');
  too_long.eof = true;
  cache_->Put("fh", 1, too_long);
  EXPECT_EQ(cache_->stats().rejected, 2u);
  EXPECT_EQ(cache_->stats().blocks, 0u);
  EXPECT_FALSE(cache_->Contains("fh", 0, kV1));
}

TEST_F(BlockCacheTest, LeastRecentlyUsedAreEvictedToTheHandler) {
  Make(3);
  cache_->Put("fh", 0, Full(kV1, '0'));
  cache_->Put("fh", 1, Full(kV1, '1'));
  cache_->Put("fh", 2, Full(kV1, '2'));
  ASSERT_NE(cache_->Get("fh", 0, kV1), nullptr);  // 1 is now the oldest
  cache_->Put("fh", 3, Full(kV1, '3'));
  ASSERT_EQ(evicted_.size(), 1u);
  EXPECT_EQ(evicted_[0].handle, "fh");
  EXPECT_EQ(evicted_[0].index, 1u);
  EXPECT_EQ(evicted_[0].data, std::string(kBlockSize, '1'));
  EXPECT_FALSE(cache_->Contains("fh", 1, kV1));
  EXPECT_TRUE(cache_->Contains("fh", 0, kV1));
  EXPECT_EQ(cache_->stats().evictions, 1u);
  EXPECT_EQ(cache_->stats().blocks, 3u);
  EXPECT_LE(cache_->stats().bytes, 3 * (kBlockSize + kBlockOverhead) + kFileOverhead);

  // Contains() does not protect a block from eviction.
  EXPECT_TRUE(cache_->Contains("fh", 2, kV1));
  // (A second file: its block and its entry in the per-file index, two
  // blocks' room.)
  cache_->Put("other", 0, Full(kV1, 'o'));
  ASSERT_EQ(evicted_.size(), 3u);
  EXPECT_EQ(evicted_[1].index, 2u);
  EXPECT_LE(cache_->stats().bytes, 3 * (kBlockSize + kBlockOverhead) + kFileOverhead);
}

TEST_F(BlockCacheTest, ReplacingKeepsTheCharge) {
  Make(2);
  cache_->Put("fh", 0, Full(kV1, 'a'));
  cache_->Put("fh", 0, Full(kV2, 'b'));
  EXPECT_EQ(cache_->stats().blocks, 1u);
  EXPECT_EQ(cache_->stats().bytes, kBlockSize + kBlockOverhead + kFileOverhead);
  EXPECT_FALSE(cache_->Contains("fh", 0, kV1));
  ASSERT_NE(cache_->Get("fh", 0, kV2), nullptr);
  EXPECT_EQ(cache_->Get("fh", 0, kV2)->data[0], 'b');
}

TEST_F(BlockCacheTest, ABlockOverTheWholeBoundGoesStraightToTheHandler) {
  cache_ = std::make_unique<BlockCache>(BlockCacheOptions{kBlockSize / 2, kBlockSize});
  cache_->SetEvictionHandler([this](std::string_view h, uint64_t i, Block&& b) {
    evicted_.push_back({std::string(h), i, std::move(b.data)});
  });
  cache_->Put("fh", 7, Full(kV1, 'a'));
  EXPECT_EQ(cache_->stats().bytes, 0u);
  ASSERT_EQ(evicted_.size(), 1u);
  EXPECT_EQ(evicted_[0].index, 7u);
}

TEST_F(BlockCacheTest, DropFileDropsOnlyThatFile) {
  Make(100);
  for (uint64_t i = 0; i < 50; i++) cache_->Put("big", i, Full(kV1, 'b'));
  cache_->Put("small", 0, Full(kV1, 's'));
  cache_->DropFile("big");
  for (uint64_t i = 0; i < 50; i++) EXPECT_FALSE(cache_->Contains("big", i, kV1));
  EXPECT_TRUE(cache_->Contains("small", 0, kV1));
  EXPECT_EQ(cache_->stats().dropped, 50u);
  EXPECT_EQ(cache_->stats().blocks, 1u);
  EXPECT_EQ(cache_->stats().bytes, kBlockSize + kBlockOverhead + kFileOverhead);
  EXPECT_TRUE(evicted_.empty());
  cache_->DropFile("big");  // nothing left: no effect
  cache_->DropFile("unknown");
  EXPECT_EQ(cache_->stats().dropped, 50u);
}

TEST_F(BlockCacheTest, DropOtherVersionsKeepsTheCurrentOne) {
  Make(10);
  cache_->Put("fh", 0, Full(kV1, 'a'));
  cache_->Put("fh", 1, Full(kV2, 'b'));
  cache_->Put("fh", 2, Full(kV1, 'c'));
  cache_->Put("other", 0, Full(kV1, 'd'));
  cache_->DropOtherVersions("fh", kV2);
  EXPECT_FALSE(cache_->Contains("fh", 0, kV1));
  EXPECT_TRUE(cache_->Contains("fh", 1, kV2));
  EXPECT_FALSE(cache_->Contains("fh", 2, kV1));
  EXPECT_TRUE(cache_->Contains("other", 0, kV1));
  EXPECT_EQ(cache_->stats().dropped, 2u);
  EXPECT_EQ(cache_->stats().blocks, 2u);
  cache_->DropOtherVersions("fh", kV1);
  EXPECT_EQ(cache_->stats().blocks, 1u);
  cache_->DropFile("fh");  // the file index is consistent afterwards
  EXPECT_EQ(cache_->stats().dropped, 3u);
}

TEST_F(BlockCacheTest, PrefetchedBlocksCountUsedOrWasted) {
  Make(3);
  cache_->Put("fh", 0, Full(kV1, '0', /*prefetched=*/true));
  cache_->Put("fh", 1, Full(kV1, '1', /*prefetched=*/true));
  cache_->Put("fh", 2, Full(kV1, '2', /*prefetched=*/true));

  const Block* b = cache_->Get("fh", 0, kV1);
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(b->prefetched);
  ASSERT_NE(cache_->Get("fh", 0, kV1), nullptr);  // a second hit is not counted again
  EXPECT_EQ(cache_->stats().readahead_used, 1u);
  EXPECT_TRUE(cache_->Contains("fh", 1, kV1));  // not a use
  EXPECT_EQ(cache_->stats().readahead_used, 1u);

  // Evicted without a hit: block 1 (the oldest now).
  cache_->Put("fh", 3, Full(kV1, '3'));
  EXPECT_EQ(cache_->stats().readahead_wasted, 1u);
  // Dropped as stale without a hit: block 2.
  EXPECT_EQ(cache_->Get("fh", 2, kV2), nullptr);
  EXPECT_EQ(cache_->stats().readahead_wasted, 2u);
  // Dropped with its file after its hit: not wasted.
  cache_->DropFile("fh");
  EXPECT_EQ(cache_->stats().readahead_wasted, 2u);
  EXPECT_EQ(cache_->stats().readahead_used, 1u);

  // Dropped with its file before any hit: wasted.
  cache_->Put("g", 0, Full(kV1, 'g', true));
  cache_->DropOtherVersions("g", kV2);
  EXPECT_EQ(cache_->stats().readahead_wasted, 3u);
}

}  // namespace
}  // namespace nfsedge
