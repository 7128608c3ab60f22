// ReadPath with a fake clock, an in-memory upstream (FakeUpstream) and an
// event loop driven by hand: when client READs are answered from blocks,
// when they go upstream as is, how blocks are fetched, shared, tied to the
// file's version and read ahead.

#include "read_path_fixture.h"

namespace nfsedge {
namespace {

using namespace read_path_test;  // NOLINT: test file, the fixture's names throughout.

// 1. Stale attributes: one GETATTR proves the blocks' version, then the data
// comes from a fetched block.
TEST_F(ReadPathTest, RevalidatesThenServesFromFetchedBlocks) {
  LearnAccess(user_, ACCESS3_READ | ACCESS3_LOOKUP, ACCESS3_READ);
  LearnGetattr(zero_);  // same attributes, now stale; the ACCESS evidence stays
  ASSERT_FALSE(meta_.FreshAttributes(file_));
  hold_ = true;
  Outcome out;
  Read(1000, 5000, &out);
  Drain();
  ASSERT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(up_.calls[0].proc, static_cast<uint32_t>(NFSPROC3_GETATTR));
  EXPECT_TRUE(up_.calls[0].cred.body == user_.body) << "the client's credential";
  EXPECT_EQ(out.replies + out.forwards, 0) << "nothing before the GETATTR's reply";

  up_.Answer(0, Respond(up_.calls[0]));
  Drain();
  ASSERT_EQ(up_.calls.size(), 2u);
  std::vector<SentRead> reads = Reads();
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].offset, 0u) << "fetches start at a block boundary";
  EXPECT_EQ(reads[0].offset + reads[0].count, 2u * kBlock) << "whole blocks covering the read";
  EXPECT_TRUE(up_.calls[1].cred.body == user_.body);
  EXPECT_EQ(out.replies, 0);

  up_.Answer(1, Respond(up_.calls[1]));
  Drain();
  ExpectData(out, 1000, 5000);
  EXPECT_EQ(rp_->stats().revalidations, 1u);
  EXPECT_EQ(rp_->stats().served, 1u);
  EXPECT_EQ(rp_->stats().forwarded, 0u);
}

// 2. Without ACCESS evidence for the credential the call goes upstream as is.
TEST_F(ReadPathTest, NoAccessEvidenceForwards) {
  LearnGetattr(exp_);  // fresh attributes, no ACCESS at all
  Outcome none = ReadNow(0, 100);
  EXPECT_EQ(none.forwards, 1);
  EXPECT_EQ(none.replies, 0);

  LearnAccess(other_, ACCESS3_READ, ACCESS3_READ);  // someone else's evidence
  Outcome others = ReadNow(0, 100);
  EXPECT_EQ(others.forwards, 1);
  EXPECT_EQ(others.replies, 0);

  LearnAccess(user_, ACCESS3_READ | ACCESS3_LOOKUP, ACCESS3_LOOKUP);  // READ denied
  Outcome denied = ReadNow(0, 100);
  EXPECT_EQ(denied.forwards, 1);
  EXPECT_EQ(denied.replies, 0);

  const OpaqueAuth third = SysCred(3000, 3000);
  LearnAccess(third, ACCESS3_LOOKUP, ACCESS3_LOOKUP);  // READ never asked
  Outcome unasked;
  Read(0, 100, third, &unasked);
  Drain();
  EXPECT_EQ(unasked.forwards, 1);
  EXPECT_EQ(unasked.replies, 0);

  EXPECT_EQ(CallsOf(NFSPROC3_READ), 0u) << "no data fetched for an unproven credential";
  EXPECT_EQ(rp_->stats().no_evidence, 4u);
  EXPECT_EQ(rp_->stats().served, 0u);

  // The other credential, which has evidence, is served.
  Outcome ok;
  Read(0, 100, other_, &ok);
  Drain();
  ExpectData(ok, 0, 100);
}

// 2b. Evidence is checked even for data already in memory.
TEST_F(ReadPathTest, CachedDataIsNotServedWithoutEvidence) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 4096), 0, 4096);
  const size_t calls = up_.calls.size();
  Outcome out;
  Read(0, 4096, other_, &out);
  Drain();
  EXPECT_EQ(out.forwards, 1);
  EXPECT_EQ(out.replies, 0);
  EXPECT_EQ(up_.calls.size(), calls);
}

// 3. Concurrent readers of one block share one fetch.
TEST_F(ReadPathTest, ConcurrentReadersShareOneFetch) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  hold_ = true;
  Outcome a, b;
  Read(0, 3000, &a);
  Read(1000, 2000, &b);
  Drain();
  ASSERT_EQ(up_.calls.size(), 1u) << "one upstream READ for both";
  EXPECT_EQ(up_.calls[0].proc, static_cast<uint32_t>(NFSPROC3_READ));
  up_.Answer(0, Respond(up_.calls[0]));
  Drain();
  ExpectData(a, 0, 3000);
  ExpectData(b, 1000, 2000);
  EXPECT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(rp_->stats().fetches, 1u);
}

// 3b. The same, when the attributes need a GETATTR first: one GETATTR, one READ.
TEST_F(ReadPathTest, ConcurrentReadersShareRevalidationAndFetch) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  LearnGetattr(zero_);
  hold_ = true;
  Outcome a, b, c;
  Read(0, 100, &a);
  Read(4000, 200, &b);  // blocks 0 and 1
  Read(200, 50, &c);
  Drain();
  ASSERT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(up_.calls[0].proc, static_cast<uint32_t>(NFSPROC3_GETATTR));
  up_.Answer(0, Respond(up_.calls[0]));
  Drain();
  for (size_t i = 1; i < up_.calls.size(); ++i) up_.Answer(i, Respond(up_.calls[i]));
  Drain();
  EXPECT_EQ(CallsOf(NFSPROC3_GETATTR), 1u);
  // Blocks 0 and 1 are each fetched once, whichever READ carries them.
  std::vector<int> fetched(4, 0);
  for (const SentRead& r : Reads()) {
    for (uint64_t i = r.offset / kBlock; i < (r.offset + r.count) / kBlock; ++i) fetched[i]++;
  }
  EXPECT_EQ(fetched[0], 1);
  EXPECT_EQ(fetched[1], 1);
  ExpectData(a, 0, 100);
  ExpectData(b, 4000, 200);
  ExpectData(c, 200, 50);
}

// 4. Cached blocks answer without the upstream while the file's version holds;
// a new version makes them useless.
TEST_F(ReadPathTest, CachedBlocksServeUntilTheFileChanges) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 6000), 0, 6000);
  const size_t calls = up_.calls.size();
  ASSERT_EQ(calls, 1u);

  Outcome hit = ReadNow(100, 5000);
  ExpectData(hit, 100, 5000);
  EXPECT_EQ(up_.calls.size(), calls) << "wholly in cache: no upstream call";
  EXPECT_GE(rp_->stats().memory_hits, 1u);

  // The file changes at the head office; a GETATTR (through anyone) shows it.
  SetFile(Content(9000, 5), kWall0 - 60);
  LearnGetattr(exp_);
  Outcome after = ReadNow(100, 5000);
  ExpectData(after, 100, 5000);  // the new bytes, never the old ones
  ASSERT_GT(up_.calls.size(), calls) << "the old blocks must not be served";
  EXPECT_EQ(up_.calls.back().proc, static_cast<uint32_t>(NFSPROC3_READ));
}

// 4b. A change of size alone (same times) is a new version too.
TEST_F(ReadPathTest, SizeChangeAloneInvalidatesBlocks) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 4096), 0, 4096);
  const size_t calls = up_.calls.size();
  std::string grown = Content(12000, 9);
  SetFile(grown, file().attr.mtime.seconds);
  LearnGetattr(exp_);
  ExpectData(ReadNow(0, 4096), 0, 4096);
  EXPECT_GT(up_.calls.size(), calls);
}

// 4c. The reply to a READ forwarded as is fills the cache.
TEST_F(ReadPathTest, ForwardedReplyIsLearned) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  READ3args a{};
  a.file = Fh(file_);
  a.offset = kBlock;
  a.count = 2 * kBlock;
  FakeUpstream::Seen seen{
      kNfsProgram, kNfsVersion, NFSPROC3_READ, user_, Xdr(Proc(xdr_READ3args), a), nullptr, std::nullopt};
  rp_->LearnForwarded(a, Respond(seen), 1, std::chrono::steady_clock::now(),
                      ChangeId::FromFattr(file().attr));
  ExpectData(ReadNow(kBlock + 10, kBlock), kBlock + 10, kBlock);
  EXPECT_EQ(up_.calls.size(), 0u);
}
// A block larger than one READ carries within the records the proxy takes
// (server.max_record_size) is never fetched: its reply would close the
// upstream connection, and be sent again, until its deadline. READs go
// upstream as they are.
TEST_F(ReadPathTest, ABlockLargerThanARecordCarriesIsNotFetched) {
  ReadPathOptions o;
  o.readahead_max = 0;
  o.max_transfer = kBlock / 2;
  MakeReadPath(o);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  const Outcome out = ReadNow(0, 1000);
  EXPECT_EQ(out.forwards, 1);
  EXPECT_EQ(out.replies, 0);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 0u);
}

// A configured cache.read_size is held to what the server reads at once
// (FSINFO rtmax): larger, every fetch would come back short.
TEST_F(ReadPathTest, AConfiguredReadSizeIsHeldToTheServersMaximum) {
  ReadPathOptions o;
  o.read_size = 8 * kBlock;
  MakeReadPath(o);
  EXPECT_EQ(rp_->read_size(exp_.id()), 8 * kBlock);
  LearnFsinfo(2 * kBlock + 100, 2 * kBlock);  // rtmax, rtpref
  EXPECT_EQ(rp_->read_size(exp_.id()), 2 * kBlock);
  LearnFsinfo(64 * kBlock, 2 * kBlock);
  EXPECT_EQ(rp_->read_size(exp_.id()), 8 * kBlock) << "the configured size, within the maximum";
}

// A memory tier smaller than a few upstream READs (cache.memory_bytes set
// low): a fetch's first blocks would be evicted by its own last ones, or by
// the read-ahead's, and fetched again. Fetches and read-ahead stay within a
// share of it, and every block crosses the WAN once.
TEST_F(ReadPathTest, ASmallMemoryTierIsNotOverrunByItsOwnFetches) {
  ReadPathOptions o;
  o.read_size = 16 * kBlock;
  MakeReadPath(o);
  blocks_.SetMaxBytes(8 * kBlock);
  SetFile(Content(64 * kBlock, 5), kWall0 - 3600);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  for (uint64_t off = 0; off < 64 * kBlock; off += 2 * kBlock) {
    Outcome out = ReadNow(off, 2 * kBlock);
    ASSERT_EQ(out.replies, 1) << "at " << off;
    ExpectData(out, off, 2 * kBlock);
  }
  uint64_t fetched = 0;
  for (const SentRead& r : Reads()) {
    EXPECT_LE(r.count, 2 * kBlock) << "a fetch larger than a quarter of the memory tier";
    fetched += r.count;
  }
  EXPECT_EQ(fetched, 64 * kBlock) << "blocks fetched more than once";
}

TEST_F(ReadPathTest, FetchesUseTheServersPreferredSize) {
  LearnFsinfo(64 << 10, 4 * kBlock + 100);  // rtpref, rounded down to blocks
  EXPECT_EQ(rp_->read_size(exp_.id()), 4 * kBlock);
  SetFile(Content(100000, 3), kWall0 - 3600);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);

  // 40000 bytes from an unaligned offset: blocks 0..10 in fetches of at most
  // 4 blocks, the data assembled across 11 blocks.
  Outcome big = ReadNow(1000, 40000);
  ExpectData(big, 1000, 40000);
  std::vector<SentRead> reads = Reads();
  ASSERT_EQ(reads.size(), 3u);
  uint64_t next = 0;
  for (const SentRead& r : reads) {
    EXPECT_EQ(r.offset, next) << "consecutive runs of blocks";
    EXPECT_LE(r.count, 4 * kBlock);
    EXPECT_EQ(r.count % kBlock, 0u);
    next = r.offset + r.count;
  }
  EXPECT_EQ(reads[0].count, 4 * kBlock) << "the preferred size, not the client's";
  EXPECT_EQ(next, 11u * kBlock);

  // read_size set in the options wins over FSINFO.
  ReadPathOptions o;
  o.readahead_max = 0;
  o.read_size = 2 * kBlock + 1;
  MakeReadPath(o);
  LearnFsinfo(64 << 10, 8 * kBlock);
  EXPECT_EQ(rp_->read_size(exp_.id()), 2 * kBlock);
  // And it is clamped to max_transfer.
  o.read_size = 0;
  o.max_transfer = 3 * kBlock;
  MakeReadPath(o);
  EXPECT_EQ(rp_->read_size(exp_.id()), 3 * kBlock);
  LearnFsinfo(1 << 20, 1 << 20);
  EXPECT_EQ(rp_->read_size(exp_.id()), 3 * kBlock);
  LearnFsinfo(1 << 20, kBlock / 2);  // below one block: one block
  EXPECT_EQ(rp_->read_size(exp_.id()), kBlock);
}

// 5b. Reads at, after and across the end of the file.
TEST_F(ReadPathTest, EndOfFile) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);  // size 10000
  for (uint64_t offset : {10000ull, 10001ull, 50000ull}) {
    Outcome out = ReadNow(offset, 100);
    ASSERT_EQ(out.replies, 1) << offset;
    ReadReply r = out.reply();
    EXPECT_EQ(r.status, NFS3_OK);
    EXPECT_EQ(r.count, 0u) << offset;
    EXPECT_TRUE(r.data.empty());
    EXPECT_TRUE(r.eof) << offset;
  }
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 0u) << "nothing to fetch beyond the end";

  Outcome tail = ReadNow(8000, 4096);
  ExpectData(tail, 8000, 4096);
  EXPECT_EQ(tail.reply().count, 2000u);
  EXPECT_TRUE(tail.reply().eof);
  // The fetch asks for whole blocks, but the scheduler counts in flight only
  // the bytes the file's known size leaves (its window is not filled with
  // bytes that never come).
  ASSERT_EQ(Reads().size(), 1u);
  EXPECT_EQ(Reads()[0].count % kBlock, 0u);
  EXPECT_GT(Reads()[0].offset + Reads()[0].count, 10000u);
  EXPECT_EQ(Reads()[0].expected, 10000 - Reads()[0].offset);

  ExpectData(ReadNow(0, 10000), 0, 10000);  // exactly to the end: eof
  EXPECT_TRUE(ReadNow(0, 10000).reply().eof);
  Outcome short_of_end = ReadNow(0, 9999);
  ExpectData(short_of_end, 0, 9999);
  EXPECT_FALSE(short_of_end.reply().eof);
  EXPECT_EQ(rp_->stats().forwarded, 0u);
}

// 5c. A file whose size is a whole number of blocks: the last block is full
// and carries eof.
TEST_F(ReadPathTest, FileOfWholeBlocks) {
  SetFile(Content(3 * kBlock, 1), kWall0 - 3600);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(2 * kBlock, kBlock), 2 * kBlock, kBlock);
  Outcome at_end = ReadNow(3 * kBlock, kBlock);
  ASSERT_EQ(at_end.replies, 1);
  EXPECT_TRUE(at_end.reply().eof);
  EXPECT_EQ(at_end.reply().count, 0u);
  ExpectData(ReadNow(0, 5 * kBlock), 0, 5 * kBlock);
}

// 6. A failed fetch sends the client's call upstream as is.
TEST_F(ReadPathTest, FetchErrorForwards) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  read_error_ = true;
  Outcome io = ReadNow(0, 100);
  EXPECT_EQ(io.forwards, 1);
  EXPECT_EQ(io.replies, 0);

  read_error_ = false;
  up_.set_fail_with(Timeout("test"));
  Outcome timeout = ReadNow(5000, 100);
  EXPECT_EQ(timeout.forwards, 1);
  EXPECT_EQ(timeout.replies, 0);
  EXPECT_GE(rp_->stats().fetch_errors, 2u);

  // The cache was not poisoned: once the upstream answers, the data is right.
  up_.set_fail_with(std::nullopt);
  ExpectData(ReadNow(0, 100), 0, 100);
}

// (rule 5) A fetch the upstream refuses still teaches the caches the
// attributes its reply carries: here the file changed (its size) and the
// READ failed (IO); the attributes cached are the new ones, not the old
// ones left fresh.
TEST_F(ReadPathTest, AFetchErrorsAttributesAreLearned) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  hold_ = true;
  Outcome out;
  Read(0, 100, &out);
  Drain();
  ASSERT_EQ(up_.calls.size(), 1u);
  ASSERT_EQ(up_.calls[0].proc, NFSPROC3_READ);
  SetFile(Content(20000, 5), file().attr.mtime.seconds + 10);
  READ3res res{};
  res.status = NFS3ERR_IO;
  res.READ3res_u.resfail.file_attributes = PostOp(file().attr);
  up_.Answer(0, Xdr(Proc(xdr_READ3res), res));
  hold_ = false;
  Drain();
  EXPECT_EQ(out.forwards, 1);
  std::optional<fattr3> now = meta_.FreshAttributes(file_);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->size, 20000u) << "the attributes the refused READ brought were not learned";
}

// 6a'. A server whose READs carry less than a block (FSINFO rtmax below
// cache.block_size) would answer every fetch short, nothing stored: the
// READ goes upstream as it is at once, not after a useless fetch.
TEST_F(ReadPathTest, AServerReadingLessThanABlockIsNotFetchedFrom) {
  LearnFsinfo(kBlock / 2, kBlock / 2);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  Outcome out = ReadNow(0, 100);
  EXPECT_EQ(out.forwards, 1);
  EXPECT_EQ(out.replies, 0);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 0u) << "a fetch the server can only answer short";
  LearnFsinfo(kBlock * 4, kBlock * 4);  // the server's limit raised
  ExpectData(ReadNow(0, 100), 0, 100);
}

// The same server may read less at once on one export than on another
// (nfs-ganesha's MaxRead per export): each export keeps its own sizes, so
// one export's small limit does not turn the cache off for the others, nor
// another's FSINFO make fetches on it too large to come back whole.
TEST_F(ReadPathTest, EachExportKeepsTheUpstreamsReadSizesOfItsOwn) {
  LearnFsinfo(kBlock / 2, kBlock / 2, &zero_);  // the other export reads little
  LearnFsinfo(kBlock * 4, kBlock * 4);
  EXPECT_EQ(rp_->read_size(exp_.id()), 4 * kBlock);
  EXPECT_TRUE(rp_->fsinfo_known(zero_.id()));
  EXPECT_FALSE(rp_->fsinfo_known(7));
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 100), 0, 100);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 1u) << "exp_'s READ not served from a fetch";
  blocks_.DropFile(file_);
  LearnGetattr(zero_);
  Outcome out;
  Read(0, 100, user_, &out, &zero_);
  Drain();
  EXPECT_EQ(out.forwards, 1) << "fetched on the export that reads less than a block";
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 1u);
}

// 6b. A failed revalidation forwards too.
TEST_F(ReadPathTest, FailedRevalidationForwards) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  LearnGetattr(zero_);
  up_.set_fail_with(Timeout("test"));
  Outcome out = ReadNow(0, 100);
  EXPECT_EQ(out.forwards, 1);
  EXPECT_EQ(out.replies, 0);
  EXPECT_EQ(CallsOf(NFSPROC3_GETATTR), 1u);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 0u);
}

// 6c. "A read ... whose fetch fails, is forwarded as is" (read_path.h): one
// failed fetch, then the forward, not the same fetch again and again.
TEST_F(ReadPathTest, FailedFetchIsForwardedWithoutRetrying) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  read_error_ = true;
  Outcome out = ReadNow(0, 100);
  EXPECT_EQ(out.forwards, 1);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 1u) << "the failed fetch was sent again before forwarding";
}

// 6d. A server whose READs return less than one block (rtmax below the block
// size): each client READ may cost one unusable fetch, not a burst of them.
TEST_F(ReadPathTest, ShortFetchBelowOneBlockIsNotRepeated) {
  LearnFsinfo(kBlock / 2, kBlock / 2);
  server_rtmax_ = kBlock / 2;
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  Outcome out = ReadNow(0, 100);
  EXPECT_EQ(out.replies + out.forwards, 1);
  if (out.replies == 1) ExpectData(out, 0, 100);
  EXPECT_LE(CallsOf(NFSPROC3_READ), 2u) << "upstream READs for one client READ of 100 bytes";
}

// 7. Sequential readers get read-ahead into prefetched blocks; random ones do not.
TEST_F(ReadPathTest, SequentialReadsReadAhead) {
  ReadPathOptions o;
  o.readahead_max = 256 << 10;
  MakeReadPath(o);
  SetFile(Content(1 << 20, 2), kWall0 - 3600);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  constexpr uint32_t kChunk = 16 << 10;
  uint64_t offset = 0;
  for (int i = 0; i < 2; ++i, offset += kChunk) ExpectData(ReadNow(offset, kChunk), offset, kChunk);
  EXPECT_GT(rp_->stats().readahead_fetches, 0u);
  uint64_t beyond = 0;
  for (const SentRead& r : Reads()) {
    if (r.offset >= offset) beyond = std::max<uint64_t>(beyond, r.offset + r.count);
  }
  EXPECT_GT(beyond, offset) << "an upstream READ beyond what the client read";

  // The next reads hit the read-ahead.
  const size_t calls_before = up_.calls.size();
  Outcome next = ReadNow(offset, kChunk);
  ExpectData(next, offset, kChunk);
  EXPECT_GT(blocks_.stats().readahead_used, 0u);
  EXPECT_EQ(rp_->stats().memory_hits, 1u) << "answered without waiting";
  // ... and read-ahead goes on, deeper, in the server's preferred size at most.
  EXPECT_GT(up_.calls.size(), calls_before);
  for (const SentRead& r : Reads()) EXPECT_LE(r.count, rp_->read_size(exp_.id()));
}

// A tree walk's file prefetches do not take read-ahead's budget
// (max_background): a sequential reader of another file still gets
// read-ahead while the walk's fetches are out. (They counted against it:
// a walk with 16 prefetches out left every other reader none.)
TEST_F(ReadPathTest, TreePrefetchesLeaveReadAheadItsBudget) {
  ReadPathOptions o;
  o.readahead_max = 256 << 10;
  o.max_background = 1;
  MakeReadPath(o);
  SetFile(Content(1 << 20, 2), kWall0 - 3600);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  const std::string walked = "WALKED-FILE";
  files_[walked] = FakeFile{Content(5000, 4), FileAttr(5000, kWall0 - 3600)};
  hold_ = true;  // the walk's fetch stays out
  ASSERT_TRUE(rp_->PrefetchFile(walked, 5000, ChangeId::FromFattr(files_[walked].attr), exp_,
                                user_, [] {}));
  Drain();
  hold_ = false;
  const uint64_t tree_fetches = rp_->stats().readahead_fetches;
  ASSERT_EQ(tree_fetches, 1u);

  constexpr uint32_t kChunk = 16 << 10;
  uint64_t offset = 0;
  for (int i = 0; i < 2; ++i, offset += kChunk) ExpectData(ReadNow(offset, kChunk), offset, kChunk);
  EXPECT_GT(rp_->stats().readahead_fetches, tree_fetches)
      << "no read-ahead while the walk's prefetch was out";
  up_.Answer(0, Respond(up_.calls[0]));  // the walk's fetch, held until now
  Drain();
}

TEST_F(ReadPathTest, RandomReadsDoNotReadAhead) {
  ReadPathOptions o;
  o.readahead_max = 256 << 10;
  MakeReadPath(o);
  SetFile(Content(1 << 20, 2), kWall0 - 3600);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  constexpr uint32_t kChunk = 16 << 10;
  for (uint64_t offset : {512u << 10, 128u << 10, 900u << 10, 300u << 10, 700u << 10, 0u}) {
    ExpectData(ReadNow(offset, kChunk), offset, kChunk);
  }
  EXPECT_EQ(rp_->stats().readahead_fetches, 0u);
  for (const SentRead& r : Reads()) EXPECT_EQ(r.count, kChunk) << "only what the client read";
}

// Tree-walk prefetch of a small file fills blocks that a later client READ uses.
TEST_F(ReadPathTest, PrefetchFileFillsTheCache) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  bool done = false;
  ASSERT_TRUE(rp_->PrefetchFile(file_, file().data.size(), ChangeId::FromFattr(file().attr), exp_,
                                user_, [&] { done = true; }));
  EXPECT_FALSE(rp_->PrefetchFile(file_, file().data.size(), ChangeId::FromFattr(file().attr), exp_,
                                 user_, [] {}))
      << "already in flight";
  Drain();
  EXPECT_TRUE(done);
  ASSERT_EQ(Reads().size(), 1u);
  EXPECT_EQ(Reads()[0].offset, 0u);
  EXPECT_EQ(Reads()[0].count, 3 * kBlock) << "the whole file, in whole blocks";
  EXPECT_EQ(Reads()[0].expected, 10000u) << "counted in flight at the file's size";
  EXPECT_FALSE(rp_->PrefetchFile(file_, file().data.size(), ChangeId::FromFattr(file().attr), exp_,
                                 user_, [] {}))
      << "already cached";
  ExpectData(ReadNow(0, 10000), 0, 10000);
  EXPECT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(blocks_.stats().readahead_used, 3u);
}

// A file prefetch after a client's READ started fetching a block past the
// first one does not fetch that block again: it stops before it.
TEST_F(ReadPathTest, PrefetchFileDoesNotFetchBlocksOnTheirWay) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  hold_ = true;
  Outcome out;
  Read(2 * kBlock, 100, &out);  // block 2 on its way
  Drain();
  ASSERT_EQ(Reads().size(), 1u);
  ASSERT_TRUE(rp_->PrefetchFile(file_, file().data.size(), ChangeId::FromFattr(file().attr), exp_,
                                user_, [] {}));
  ASSERT_EQ(Reads().size(), 2u);
  EXPECT_EQ(Reads()[1].offset, 0u);
  EXPECT_EQ(Reads()[1].count, 2 * kBlock) << "blocks 0 and 1, not block 2 again";
  hold_ = false;
  for (size_t i = 0; i < up_.calls.size(); ++i) up_.Answer(i, Respond(up_.calls[i]));
  Drain();
  ExpectData(out, 2 * kBlock, 100);
}

// A file prefetch fetches the blocks it lacks up to the first one the disk
// tier holds (after a restart, say), not that one and the rest again.
TEST_F(ReadPathTest, PrefetchFileDoesNotFetchBlocksOnDisk) {
  SetFile(Content(8 * kBlock, 5), kWall0 - 3600);
  WithDiskTier([&](DiskTier& disk, PostQueue& posted) {
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    ExpectData(ReadNow(2 * kBlock, 6 * kBlock), 2 * kBlock, 6 * kBlock);
    ASSERT_TRUE(posted.RunUntil([&] { return disk.MayContain(file_, 7); }, [&] { Drain(); }));
    blocks_.DropFile(file_);  // blocks 2 to 7 on disk only; 0 and 1 nowhere
    const size_t reads = Reads().size();
    ASSERT_TRUE(rp_->PrefetchFile(file_, file().data.size(), ChangeId::FromFattr(file().attr),
                                  exp_, user_, [] {}));
    Drain();
    ASSERT_EQ(Reads().size(), reads + 1);
    EXPECT_EQ(Reads().back().offset, 0u);
    EXPECT_EQ(Reads().back().count, 2 * kBlock) << "blocks the disk tier holds fetched again";
  });
}

// With a disk tier, blocks written through to disk answer a READ after the
// memory tier lost them, without the upstream.
TEST_F(ReadPathTest, DiskTierAnswersAfterMemoryLostTheBlocks) {
  WithDiskTier([&](DiskTier& disk, PostQueue& posted) {
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    ExpectData(ReadNow(0, 10000), 0, 10000);
    const size_t calls = up_.calls.size();
    EXPECT_TRUE(disk.MayContain(file_, 0));
    EXPECT_TRUE(disk.MayContain(file_, 2));

    blocks_.DropFile(file_);
    Outcome out;
    Read(100, 9000, &out);
    Drain();
    ASSERT_TRUE(posted.RunUntil([&] { return out.replies + out.forwards > 0; }, [&] { Drain(); }));
    ExpectData(out, 100, 9000);
    EXPECT_EQ(up_.calls.size(), calls) << "answered from disk";
    EXPECT_EQ(rp_->stats().disk_hits, 3u);
    EXPECT_EQ(rp_->stats().disk_misses, 0u);
  });
}

// A READ of many blocks that are all on disk is answered from disk: the
// disk tier reads them one after the other, and each that comes wakes the
// READ, which is progress, not a failed attempt (after five such wake-ups
// a READ of 16 blocks went upstream as well, every time).
TEST_F(ReadPathTest, AReadOfManyBlocksOnDiskIsAnsweredFromDisk) {
  SetFile(Content(16 * kBlock, 3), kWall0 - 3600);
  WithDiskTier([&](DiskTier& disk, PostQueue& posted) {
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    ExpectData(ReadNow(0, 16 * kBlock), 0, 16 * kBlock);
    ASSERT_TRUE(posted.RunUntil([&] { return disk.MayContain(file_, 15); }, [&] { Drain(); }));
    blocks_.DropFile(file_);
    const size_t calls = up_.calls.size();

    Outcome out;
    Read(0, 16 * kBlock, &out);
    Drain();
    ASSERT_TRUE(posted.RunUntil([&] { return out.replies + out.forwards > 0; }, [&] { Drain(); }));
    ExpectData(out, 0, 16 * kBlock);
    EXPECT_EQ(out.forwards, 0);
    EXPECT_EQ(up_.calls.size(), calls) << "answered from disk, nothing upstream";
    EXPECT_EQ(rp_->stats().disk_hits, 16u);
  });
}

// A disk block a write answered while the disk read it dropped (or
// overtook) is a miss, counted when the disk's answer comes (a lookup on its way is
// neither), and the READ is answered from the upstream.
TEST_F(ReadPathTest, ADiskReadOvertakenByAWriteIsAMiss) {
  WithDiskTier([&](DiskTier& disk, PostQueue& posted) {
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    ExpectData(ReadNow(0, 10000), 0, 10000);
    ASSERT_TRUE(posted.RunUntil([&] { return disk.MayContain(file_, 2); }, [&] { Drain(); }));
    blocks_.DropFile(file_);
    const size_t calls = up_.calls.size();

    Outcome out;
    Read(0, 100, &out);
    EXPECT_EQ(rp_->stats().disk_reads, 1u);
    EXPECT_EQ(rp_->stats().disk_misses, 0u) << "its answer has not come";
    rp_->NoteWrite(file_);
    ASSERT_TRUE(posted.RunUntil([&] { return out.replies + out.forwards > 0; }, [&] { Drain(); }));
    EXPECT_EQ(rp_->stats().disk_hits, 0u);
    EXPECT_EQ(rp_->stats().disk_misses, 1u);
    EXPECT_GT(up_.calls.size(), calls) << "fetched from the upstream";
    ExpectData(out, 0, 100);
  });
}

// During an outage (serve_stale_on_outage) a READ whose blocks are partly on
// disk and partly nowhere is forwarded once: not at once and again when the
// disk read it started comes back.
TEST_F(ReadPathTest, AStaleReadWithBlocksMissingIsForwardedOnce) {
  WithDiskTier([&](DiskTier& disk, PostQueue& posted) {
    ExportConfig c = MakeExportConfig(60);
    c.serve_stale_on_outage = true;
    const Export stale(2, c);
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    ExpectData(ReadNow(0, kBlock), 0, kBlock);  // block 0 only
    ASSERT_TRUE(posted.RunUntil([&] { return disk.MayContain(file_, 0); }, [&] { Drain(); }));
    blocks_.DropFile(file_);  // on disk only

    OutageDetector outage(clock_, std::chrono::seconds(5));
    meta_.SetOutage(&outage);
    clock_.Advance(std::chrono::seconds(61));  // the attributes' lifetime is over
    outage.CallStarted();
    clock_.Advance(std::chrono::seconds(5));
    ASSERT_TRUE(outage.Poll());
    ASSERT_TRUE(meta_.ServeStale(stale));

    Outcome out;
    Read(0, 10000, user_, &out, &stale);  // blocks 0 (on disk), 1 and 2 (nowhere)
    Drain();
    ASSERT_TRUE(posted.RunUntil([&] { return rp_->stats().disk_hits > 0; }, [&] { Drain(); }));
    Drain();  // the READ attempted again with block 0 back in memory
    EXPECT_EQ(out.forwards, 1);
    EXPECT_EQ(out.replies, 0);
    meta_.SetOutage(nullptr);
  });
}

// A READ of more blocks than memory holds: storing one block evicts
// another the READ needs, so it never has them all. Each block's first
// arrival is progress, a block that comes again is not: the READ is
// forwarded after the three arrivals and five fruitless wake-ups (8
// fetches), not kept fetching up to its hard bound on attempts (13).
TEST_F(ReadPathTest, AReadLargerThanMemoryIsForwardedAfterFewFetches) {
  blocks_.SetMaxBytes(2 * kBlock);  // the file is three blocks
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  Outcome out = ReadNow(0, 10000);
  EXPECT_EQ(out.forwards, 1);
  EXPECT_EQ(out.replies, 0);
  EXPECT_GE(Reads().size(), 3u) << "forwarded before its blocks came once each";
  EXPECT_LE(Reads().size(), 8u) << "blocks fetched again counted as progress";
}

}  // namespace
}  // namespace nfsedge
