#include "cache/readahead.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace nfsedge {
namespace {

constexpr uint64_t kRs = 64 << 10;       // the client's rsize
constexpr uint64_t kLimit = 8 << 20;     // the path's BDP
constexpr uint64_t kFar = 256ull << 20;  // well beyond match_window

class ReadaheadTest : public ::testing::Test {
 protected:
  ReadaheadAdvice Read(std::string_view fh, uint64_t offset, uint64_t limit = kLimit) {
    return table_.OnRead(fh, offset, kRs, limit);
  }

  FakeClock clock_;
  ReadaheadTable table_{clock_, ReadaheadOptions{}};
};

TEST_F(ReadaheadTest, SequentialDepthDoublesUpToTheLimit) {
  EXPECT_EQ(Read("fh", 0).length, 0u);  // count 1: not yet a stream
  uint64_t expected = kRs;
  for (uint64_t i = 1; i < 20; i++) {
    ReadaheadAdvice a = Read("fh", i * kRs);
    expected = std::min(2 * expected, kLimit);
    EXPECT_EQ(a.offset, (i + 1) * kRs) << i;
    EXPECT_EQ(a.length, expected) << i;
  }
  EXPECT_EQ(expected, kLimit);
  EXPECT_EQ(table_.cursors(), 1u);
  EXPECT_EQ(table_.stats().matched, 19u);
  EXPECT_EQ(table_.stats().advised, 19u);
  // The caller's limit follows the path: a smaller one caps the advice.
  EXPECT_EQ(Read("fh", 20 * kRs, 1 << 20).length, 1u << 20);
  EXPECT_EQ(Read("fh", 21 * kRs, 0).length, 0u);
}

TEST_F(ReadaheadTest, SwappedNeighboursKeepReadaheadGoing) {
  constexpr uint64_t kReads = 10000;
  std::vector<uint64_t> order(kReads);
  for (uint64_t i = 0; i < kReads; i++) order[i] = i;
  std::mt19937 rng(42);
  std::bernoulli_distribution swap(0.05);
  size_t swaps = 0;
  for (uint64_t i = 0; i + 1 < kReads; i++) {
    if (swap(rng)) {
      std::swap(order[i], order[i + 1]);
      swaps++;
      i++;
    }
  }
  ASSERT_GT(swaps, 300u);

  constexpr uint64_t kWarmUp = 10;
  uint64_t advised = 0;
  for (uint64_t i = 0; i < kReads; i++) {
    ReadaheadAdvice a = Read("fh", order[i] * kRs);
    if (i >= kWarmUp && a.length > 0) advised++;
  }
  EXPECT_GE(advised, (kReads - kWarmUp) * 99 / 100);
  EXPECT_EQ(table_.stats().slowdowns, 0u);
  EXPECT_EQ(table_.cursors(), 1u);
  EXPECT_EQ(Read("fh", kReads * kRs).length, kLimit);
}

TEST_F(ReadaheadTest, ReadsReorderedInFlightKeepReadaheadGoing) {
  // Eight reads in flight, served in a shuffled order (8 x 64 KiB < 1 MiB).
  // Only an exact continuation starts a stream, so under such reordering the
  // warm-up takes a few windows; once started, no read goes without advice.
  constexpr uint64_t kReads = 4096;
  constexpr uint64_t kWarmUp = 64;
  std::mt19937 rng(7);
  std::vector<uint64_t> order(kReads);
  for (uint64_t i = 0; i < kReads; i++) order[i] = i;
  for (uint64_t i = 0; i < kReads; i += 8) std::shuffle(&order[i], &order[i + 8], rng);
  uint64_t advised = 0;
  for (uint64_t i = 0; i < kReads; i++) {
    if (Read("fh", order[i] * kRs).length > 0 && i >= kWarmUp) advised++;
  }
  EXPECT_EQ(advised, kReads - kWarmUp);
  EXPECT_EQ(table_.stats().slowdowns, 0u);
  EXPECT_EQ(table_.cursors(), 1u);
}

// The same with 1 MiB reads (a Linux client's rsize against a proxy that
// offers 1 MiB), up to 16 reordered (a Linux client keeps up to 15 reads of
// a file in flight): the reordering spans more than match_window. Once
// started, no read goes without advice, and the stream never takes a late
// read for a jump.
class ReadaheadLargeReadsTest : public ::testing::TestWithParam<int> {};

TEST_P(ReadaheadLargeReadsTest, ReorderedLargeReadsKeepReadaheadGoing) {
  constexpr uint64_t kLarge = 1 << 20;
  constexpr uint64_t kReads = 1024;
  const uint64_t in_flight = GetParam();
  const uint64_t warm_up = 8 * in_flight;
  FakeClock clock;
  ReadaheadTable table(clock, ReadaheadOptions{});
  std::mt19937 rng(11);
  std::vector<uint64_t> order(kReads);
  for (uint64_t i = 0; i < kReads; i++) order[i] = i;
  for (uint64_t i = 0; i < kReads; i += in_flight) {
    std::shuffle(&order[i], &order[i + in_flight], rng);
  }
  uint64_t advised = 0, slowdowns_then = 0, cursors_then = 0;
  for (uint64_t i = 0; i < kReads; i++) {
    if (i == warm_up) {
      slowdowns_then = table.stats().slowdowns;
      cursors_then = table.cursors();
    }
    if (table.OnRead("fh", order[i] * kLarge, kLarge, 32 << 20).length > 0 && i >= warm_up) {
      advised++;
    }
  }
  EXPECT_EQ(advised, kReads - warm_up);
  // (While the stream's count grows, its window is four reads: a larger
  // reordering may leave a stray cursor or one slowdown then, not after.)
  EXPECT_EQ(table.stats().slowdowns, slowdowns_then);
  EXPECT_EQ(table.cursors(), cursors_then);
  EXPECT_LE(table.stats().slowdowns, 1u);
}

INSTANTIATE_TEST_SUITE_P(InFlight, ReadaheadLargeReadsTest, ::testing::Values(2, 4, 8, 16));

// A stride reader with 1 MiB reads whose four parts are 8 MiB apart keeps
// a stream per part: the window for 1 MiB reads does not reach across.
TEST(ReadaheadLargeStrideTest, PartsEightReadsApartKeepTheirOwnStreams) {
  constexpr uint64_t kLarge = 1 << 20, kPart = 8 << 20;
  FakeClock clock;
  ReadaheadTable table(clock, ReadaheadOptions{});
  uint64_t own = 0, reads = 0;
  for (uint64_t j = 0; j < 8; j++) {
    for (uint64_t k = 0; k < 4; k++) {
      reads++;
      const ReadaheadAdvice a = table.OnRead("fh", k * kPart + j * kLarge, kLarge, 32 << 20);
      own += a.length > 0 && a.offset == k * kPart + (j + 1) * kLarge;
    }
  }
  EXPECT_EQ(table.cursors(), 4u);
  EXPECT_GE(own, reads - 4) << "every read but each part's first advised at its own stream";
}

class ReadaheadStrideTest : public ReadaheadTest, public ::testing::WithParamInterface<int> {};

TEST_P(ReadaheadStrideTest, EachComponentGetsItsOwnCursor) {
  const uint64_t n = GetParam();
  for (uint64_t j = 0; j < 40; j++) {
    for (uint64_t k = 0; k < n; k++) {
      const uint64_t component = k * kFar;
      ReadaheadAdvice a = Read("fh", component + j * kRs);
      if (j == 0) {
        EXPECT_EQ(a.length, 0u);
        continue;
      }
      EXPECT_EQ(a.offset, component + (j + 1) * kRs) << "j=" << j << " k=" << k;
      EXPECT_EQ(a.length, std::min(kRs << j, kLimit)) << "j=" << j << " k=" << k;
    }
    EXPECT_EQ(table_.cursors(), n);
  }
  EXPECT_EQ(table_.stats().new_cursors, n);
  EXPECT_EQ(table_.stats().slowdowns, 0u);
  EXPECT_EQ(table_.stats().cursor_replacements, 0u);
}

INSTANTIATE_TEST_SUITE_P(ReadaheadStrides, ReadaheadStrideTest, ::testing::Values(2, 4, 8));

// Random reads get no read-ahead. The one exception cannot be told from a
// stream by anyone: a read that happens to continue one of the file's last
// few reads (starts within it, ends beyond it) is a two-read stream, and gets
// the shallowest advice. No other random read gets any.
TEST_F(ReadaheadTest, RandomReadsGetNoAdvice) {
  constexpr uint64_t kReads = 20000;
  const size_t recent_reads = ReadaheadOptions{}.max_cursors_per_file;
  std::mt19937_64 rng(1234);
  std::uniform_int_distribution<uint64_t> page(0, (1ull << 30) / 4096 - 1);  // a 1 GiB file
  std::deque<uint64_t> recent_ends;
  auto continues = [&](uint64_t offset) {
    return std::any_of(recent_ends.begin(), recent_ends.end(),
                       [&](uint64_t end) { return offset <= end && end < offset + kRs; });
  };
  auto remember = [&](uint64_t offset) {
    recent_ends.push_back(offset + kRs);
    if (recent_ends.size() > recent_reads) recent_ends.pop_front();
  };
  uint64_t continuations = 0;
  for (uint64_t i = 0; i < kReads; i++) {
    const uint64_t offset = page(rng) * 4096;
    const bool stream = continues(offset);
    continuations += stream;
    const ReadaheadAdvice a = Read("fh", offset);
    if (!stream) {
      ASSERT_EQ(a.length, 0u) << "read " << i << " at " << offset << " continues no recent read";
    } else {
      EXPECT_LE(a.length, 2 * kRs) << "a two-read stream gets the shallowest advice";
    }
    remember(offset);
  }
  EXPECT_LE(table_.stats().advised, continuations);
  EXPECT_LT(table_.stats().advised, kReads / 1000);
  EXPECT_LE(table_.cursors(), ReadaheadOptions{}.max_cursors_per_file);

  // The same random pattern without those chance continuations: no advice
  // at all.
  ReadaheadTable fresh(clock_, ReadaheadOptions{});
  recent_ends.clear();
  for (uint64_t i = 0; i < kReads; i++) {
    uint64_t offset = page(rng) * 4096;
    while (continues(offset)) offset = page(rng) * 4096;
    EXPECT_EQ(fresh.OnRead("fh", offset, kRs, kLimit).length, 0u) << "read " << i;
    remember(offset);
  }
  EXPECT_EQ(fresh.stats().advised, 0u);
  EXPECT_EQ(fresh.stats().advised_bytes, 0u);
}

TEST_F(ReadaheadTest, SlowDownHalvesTheCountInsteadOfResettingIt) {
  for (uint64_t i = 0; i < 6; i++) Read("fh", i * kRs);  // count 6
  EXPECT_EQ(Read("fh", 6 * kRs, 1ull << 40).length, kRs << 6);

  // Count 7 jumps: halved to 3 (a reset to 1 would give no advice).
  ReadaheadAdvice a = Read("fh", kFar, 1ull << 40);
  EXPECT_EQ(table_.stats().slowdowns, 1u);
  EXPECT_EQ(a.offset, kFar + kRs);
  EXPECT_EQ(a.length, kRs << 2);
  // The stream goes on from there.
  a = Read("fh", kFar + kRs, 1ull << 40);
  EXPECT_EQ(a.offset, kFar + 2 * kRs);
  EXPECT_EQ(a.length, kRs << 3);

  // A late read of the old position meets the cursor left there (count 1),
  // not the stream.
  EXPECT_EQ(Read("fh", 5 * kRs).length, 0u);
  EXPECT_EQ(table_.stats().slowdowns, 1u);
  EXPECT_EQ(table_.cursors(), 2u);

  // Each further jump halves again: 4 -> 2 -> 1.
  EXPECT_EQ(Read("fh", 3 * kFar, 1ull << 40).length, kRs << 1);
  EXPECT_EQ(Read("fh", 5 * kFar, 1ull << 40).length, 0u);
  EXPECT_EQ(table_.stats().slowdowns, 3u);
}

TEST_F(ReadaheadTest, RandomReadsAfterAStreamStopAfterLog2CountReads) {
  for (uint64_t i = 0; i < 100; i++) Read("fh", i * kRs);  // count capped at 64
  uint64_t advised = 0;
  for (uint64_t i = 1; i <= 20; i++) {
    if (Read("fh", (i * 37 % 101) * kFar).length > 0) advised++;
  }
  EXPECT_EQ(advised, 5u);  // 32, 16, 8, 4, 2
  EXPECT_EQ(table_.stats().slowdowns, 6u);
}

TEST_F(ReadaheadTest, TwoReadersOfOneFileSettleOnTwoCursors) {
  // One reader streams; a second starts elsewhere in the same file. The
  // first jump is taken as the stream's, after which each keeps its own.
  for (uint64_t i = 0; i < 10; i++) Read("fh", i * kRs);
  for (uint64_t i = 0; i < 20; i++) {
    Read("fh", kFar + i * kRs);
    Read("fh", (10 + i) * kRs);
  }
  EXPECT_EQ(table_.stats().slowdowns, 1u);
  EXPECT_GT(Read("fh", kFar + 20 * kRs).length, 0u);
  EXPECT_GT(Read("fh", 30 * kRs).length, 0u);
}

TEST_F(ReadaheadTest, PerFileCapReplacesTheFilesLeastRecentlyUsedCursor) {
  ReadaheadOptions o;
  o.max_cursors_per_file = 4;
  ReadaheadTable t(clock_, o);
  for (uint64_t k = 0; k < 4; k++) t.OnRead("fh", k * kFar, kRs, kLimit);    // A B C D
  for (uint64_t k : {0, 2, 3}) t.OnRead("fh", k * kFar + kRs, kRs, kLimit);  // A C D on
  EXPECT_EQ(t.cursors(), 4u);
  t.OnRead("fh", 9 * kFar, kRs, kLimit);  // E replaces B
  EXPECT_EQ(t.cursors(), 4u);
  EXPECT_EQ(t.stats().cursor_replacements, 1u);

  uint64_t matched = t.stats().matched;
  EXPECT_GT(t.OnRead("fh", 2 * kFar + 2 * kRs, kRs, kLimit).length, 0u);  // C
  EXPECT_GT(t.OnRead("fh", 3 * kFar + 2 * kRs, kRs, kLimit).length, 0u);  // D
  EXPECT_EQ(t.stats().matched, matched + 2);
  EXPECT_EQ(t.OnRead("fh", 1 * kFar + kRs, kRs, kLimit).length, 0u);  // B is gone
  EXPECT_EQ(t.stats().matched, matched + 2);
  EXPECT_EQ(t.stats().cursor_replacements, 2u);
  EXPECT_EQ(t.cursors(), 4u);
}

TEST_F(ReadaheadTest, PoolEvictsTheLeastRecentlyUsedCursorOfAnyFile) {
  ReadaheadOptions o;
  o.max_cursors = 4;
  ReadaheadTable t(clock_, o);
  for (const char* fh : {"f0", "f1", "f2", "f3"}) t.OnRead(fh, 0, kRs, kLimit);
  t.OnRead("f0", kRs, kRs, kLimit);  // f0 is now the most recent
  t.OnRead("f4", 0, kRs, kLimit);    // takes f1's cursor
  EXPECT_EQ(t.cursors(), 4u);
  EXPECT_EQ(t.files(), 4u);
  EXPECT_EQ(t.stats().cursor_evictions, 1u);
  EXPECT_GT(t.OnRead("f0", 2 * kRs, kRs, kLimit).length, 0u);
  uint64_t matched = t.stats().matched;
  t.OnRead("f1", kRs, kRs, kLimit);  // f1 starts over, taking f2's cursor
  EXPECT_EQ(t.stats().matched, matched);
  EXPECT_EQ(t.stats().cursor_evictions, 2u);
  EXPECT_EQ(t.files(), 4u);
}

TEST_F(ReadaheadTest, PoolMayTakeTheReadingFilesOwnCursor) {
  ReadaheadOptions o;
  o.max_cursors = 2;
  ReadaheadTable t(clock_, o);
  t.OnRead("a", 0, kRs, kLimit);
  t.OnRead("b", 0, kRs, kLimit);
  t.OnRead("a", kFar, kRs, kLimit);  // the pool's oldest cursor is a's own
  EXPECT_EQ(t.cursors(), 2u);
  EXPECT_EQ(t.files(), 2u);
  EXPECT_GT(t.OnRead("a", kFar + kRs, kRs, kLimit).length, 0u);
  EXPECT_GT(t.OnRead("b", kRs, kRs, kLimit).length, 0u);
}

TEST_F(ReadaheadTest, SlowDownWithRoomForOneCursorOnly) {
  ReadaheadOptions o;
  o.max_cursors = 1;
  ReadaheadTable t(clock_, o);
  for (uint64_t i = 0; i < 4; i++) t.OnRead("fh", i * kRs, kRs, kLimit);
  EXPECT_EQ(t.OnRead("fh", kFar, kRs, kLimit).length, kRs << 1);  // count 4 -> 2
  EXPECT_EQ(t.cursors(), 1u);
}

TEST_F(ReadaheadTest, DropFileForgetsItsCursors) {
  for (uint64_t i = 0; i < 5; i++) Read("a", i * kRs);
  Read("a", kFar);
  Read("b", 0);
  EXPECT_EQ(table_.cursors(), 3u);
  table_.DropFile("a");
  table_.DropFile("unknown");
  EXPECT_EQ(table_.cursors(), 1u);
  EXPECT_EQ(table_.files(), 1u);
  EXPECT_EQ(Read("a", 5 * kRs).length, 0u);  // starts over
  EXPECT_EQ(table_.cursors(), 2u);
}

TEST_F(ReadaheadTest, EmptyAndHugeReadsAreHandled) {
  EXPECT_EQ(table_.OnRead("fh", 0, 0, kLimit).length, 0u);
  EXPECT_EQ(table_.cursors(), 0u);
  const uint64_t top = std::numeric_limits<uint64_t>::max() - 3 * kRs;
  for (uint64_t i = 0; i < 3; i++) Read("fh", top + i * kRs);
  // The stream has reached the last offset: nothing left to read ahead.
  EXPECT_EQ(Read("fh", top + 3 * kRs).length, 0u);  // its end saturates
  EXPECT_EQ(table_.OnRead("fh", top, 1, kLimit).length, 0u);
  EXPECT_EQ(table_.cursors(), 1u);
}

}  // namespace
}  // namespace nfsedge
