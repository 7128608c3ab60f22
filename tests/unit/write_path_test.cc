// WritePath as a state machine: a fake upstream that holds every call until
// the test answers it, a fake clock and timers run by hand. Checks DESIGN
// rules 1-4 and 8 on the write path: FIFO replies, no reply before the data
// is stable upstream, resend on a verifier change, lone writers not
// delayed, bounded buffers, flush errors reported, reads held for writes.
#include <limits>

#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

TEST_F(WritePathTest, GatheredStableWritesGoAsOneFileSyncWriteAndAreAnsweredInOrder) {
  const std::string a(4096, 'a'), b(4096, 'b'), c(4096, 'c'), d(4096, 'd');
  Write(1, 0, a, FILE_SYNC);  // a new file's first write goes at once
  ASSERT_EQ(up_.calls.size(), 1u);
  Write(2, 4096, b, DATA_SYNC);  // a write is upstream: these wait (a window)
  Write(3, 8192, c, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 1u);
  EXPECT_TRUE(replies_.empty()) << "no reply before the upstream made the data stable";

  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 77)));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  // The answered writer's next write is awaited (a window), then the batch
  // of three contiguous writes goes as one FILE_SYNC WRITE.
  EXPECT_EQ(up_.calls.size(), 1u);
  Write(4, 12288, d, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), 2u);
  SentWrite w = DecodeWriteArgs(up_.calls[1].args);
  EXPECT_EQ(w.offset, 4096u);
  EXPECT_EQ(w.stable, FILE_SYNC);
  EXPECT_EQ(w.data, b + c + d);
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
  up_.Answer(1, WriteOk(12288, FILE_SYNC, kV1, Attr(16384, 78)));
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3, 4}));
  for (const auto& [tag, r] : replies_) {
    EXPECT_EQ(r.status, NFS3_OK);
    EXPECT_EQ(r.committed, FILE_SYNC);
    EXPECT_EQ(r.count, 4096u);
    ASSERT_TRUE(r.after.has_value());
  }
  EXPECT_EQ(replies_[3].second.after->size, 16384u)
      << "post-op attributes are the ones after the commit";
  EXPECT_EQ(wp_->stats().sync_writes, 2u);
  EXPECT_EQ(wp_->stats().gathered, 4u);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_TRUE(bg_.calls.empty());
}

TEST_F(WritePathTest, RepliesStayInArrivalOrderWhenLaterDataIsStableFirst) {
  options_.lone_after = 0;  // every batch opens a window
  Make();
  const std::string a(4096, 'a'), b(4096, 'b');
  Write(1, 65536, a, FILE_SYNC);
  Write(2, 0, b, FILE_SYNC);  // not contiguous: UNSTABLE writes, then COMMIT
  ASSERT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[0].args).stable, UNSTABLE);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[1].args).stable, UNSTABLE);
  up_.Answer(1, WriteOk(4096, UNSTABLE, kV1, Attr(1, 1)));
  up_.Answer(0, WriteOk(4096, UNSTABLE, kV1, Attr(1, 2)));
  EXPECT_TRUE(replies_.empty()) << "UNSTABLE upstream replies are not stability";
  ASSERT_EQ(up_.calls.size(), 3u);
  ASSERT_EQ(up_.calls[2].proc, NFSPROC3_COMMIT);
  up_.Answer(2, CommitOk(kV1, Attr(69632, 3)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(replies_[0].second.committed, FILE_SYNC);
  EXPECT_EQ(wp_->stats().upstream_commits, 1u);
}

TEST_F(WritePathTest, VerifierMismatchResendsAndHoldsTheReply) {
  const std::string a(4096, 'a'), b(4096, 'b');
  ASSERT_NO_FATAL_FAILURE(TwoApartAnsweredUnstable(a, b, kV1, kV1));
  // The server restarted between the writes and the commit.
  up_.Answer(2, CommitOk(kV2, Attr(1, 2)));
  EXPECT_TRUE(replies_.empty()) << "a COMMIT with another verifier proves nothing";
  ASSERT_EQ(up_.calls.size(), 5u) << "both writes sent again";
  EXPECT_EQ(DecodeWriteArgs(up_.calls[3].args).data, a);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[4].args).data, b);
  up_.Answer(3, WriteOk(4096, UNSTABLE, kV2, Attr(1, 3)));
  up_.Answer(4, WriteOk(4096, UNSTABLE, kV2, Attr(1, 3)));
  ASSERT_EQ(up_.calls.size(), 6u);
  EXPECT_TRUE(replies_.empty());
  up_.Answer(5, CommitOk(kV2, Attr(1, 4)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(wp_->stats().resent, 8192u);
}

TEST_F(WritePathTest, LoneWriterIsNotDelayed) {
  const std::string d(4096, 'x');
  for (int i = 0; i < 3; ++i) {
    Write(i, i * 4096, d, FILE_SYNC);
    ASSERT_EQ(up_.calls.size(), static_cast<size_t>(i + 1)) << "sent at once";
    up_.Answer(i, WriteOk(4096, FILE_SYNC, kV1, Attr(1, 1)));
  }
  EXPECT_EQ(Tags(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(wp_->stats().windows, 0u);
  EXPECT_EQ(wp_->stats().procrastination_us, 0u);
  // A write that finds company makes the file wait for writers again.
  Write(3, 12288, d, FILE_SYNC);
  Write(4, 16384, d, FILE_SYNC);
  up_.Answer(3, WriteOk(4096, FILE_SYNC, kV1, Attr(1, 1)));
  EXPECT_EQ(up_.calls.size(), 4u) << "waits for the answered writer's next write";
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 5u);
  up_.Answer(4, WriteOk(4096, FILE_SYNC, kV1, Attr(1, 1)));
  // Alone again: that window and the next found no company; then no more
  // waiting.
  Write(5, 5 * 4096, d, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 5u) << "held by a window";
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 6u);
  up_.Answer(5, WriteOk(4096, FILE_SYNC, kV1, Attr(1, 1)));
  Write(6, 6 * 4096, d, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 7u);
  // Write 4's company window (ended by write 3's answer), the window after
  // that answer, and write 5's.
  EXPECT_EQ(wp_->stats().windows, 3u);
}

// A window that does not know how many writes come (here: writes behind a
// lone one) ends a quarter of the window (1.25 ms) after the last write, and
// at the window's end (5 ms) however many still come.
TEST_F(WritePathTest, AnOpenEndedWindowEndsWhenWritesStopComing) {
  const std::string d(4096, 'd');
  Write(1, 0, d, FILE_SYNC);  // lone: sent at once
  Write(2, 4096, d, FILE_SYNC);  // company behind it: an open-ended window
  for (int i = 3; i <= 4; ++i) {
    Advance(std::chrono::milliseconds(1));
    Write(i, (i - 1) * 4096, d, FILE_SYNC);
  }
  Advance(std::chrono::microseconds(1200));
  EXPECT_EQ(up_.calls.size(), 1u) << "1.2 ms after the last write: still open";
  Advance(std::chrono::microseconds(100));
  ASSERT_EQ(up_.calls.size(), 2u) << "writes stopped coming";
  EXPECT_EQ(DecodeWriteArgs(up_.calls[1].args).data, d + d + d);
  // The writer's next file opens an open-ended window at its first write.
  // Writes every millisecond: the window still ends 5 ms after it opened.
  fh_ = "second-file";
  Write(5, 0, d, FILE_SYNC);
  for (int i = 6; i <= 10; ++i) {
    Advance(std::chrono::milliseconds(1));
    if (i <= 9) Write(i, (i - 5) * 4096, d, FILE_SYNC);
    EXPECT_EQ(up_.calls.size(), i < 10 ? 2u : 3u) << "at " << i - 5 << " ms";
  }
  EXPECT_EQ(DecodeWriteArgs(up_.calls[2].args).data, std::string(5 * 4096, 'd'));
}

TEST_F(WritePathTest, WritesBehindALoneWriteDoNotWaitForIt) {
  const std::string a(4096, 'a'), b(4096, 'b'), c(4096, 'c');
  Write(1, 0, a, FILE_SYNC);  // a new file is lone: sent at once
  ASSERT_EQ(up_.calls.size(), 1u);
  // A pipelining writer's other writes: they gather for a window, not for
  // the lone write's round trip.
  Write(2, 4096, b, FILE_SYNC);
  Write(3, 8192, c, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 1u);
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 2u) << "sent while the lone write is upstream";
  SentWrite w = DecodeWriteArgs(up_.calls[1].args);
  EXPECT_EQ(w.offset, 4096u);
  EXPECT_EQ(w.stable, FILE_SYNC) << "a contiguous batch: one FILE_SYNC WRITE, no COMMIT";
  EXPECT_EQ(w.data, b + c);
  // Replies stay in arrival order: the batch answered first waits.
  up_.Answer(1, WriteOk(8192, FILE_SYNC, kV1, Attr(12288, 2)));
  EXPECT_TRUE(replies_.empty());
  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 1)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  for (const auto& [tag, r] : replies_) EXPECT_EQ(r.committed, FILE_SYNC);
  EXPECT_EQ(wp_->stats().upstream_commits, 0u);
  // The file is no longer lone: the next write waits for its writers.
  Write(4, 12288, a, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 2u);
  Write(5, 16384, b, FILE_SYNC);
  Write(6, 20480, c, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), 3u) << "the window closes once the last batch's writers are in";
  EXPECT_EQ(DecodeWriteArgs(up_.calls[2].args).data, a + b + c);
}

TEST_F(WritePathTest, AWriterWhoseWritesFoundCompanyGathersFromANewFilesFirstWrite) {
  const std::string a(4096, 'a'), b(4096, 'b'), c(4096, 'c');
  // First file: lone at first, then company.
  Write(1, 0, a, FILE_SYNC);
  Write(2, 4096, b, FILE_SYNC);
  Write(3, 8192, c, FILE_SYNC);
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 2u);
  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 1)));
  up_.Answer(1, WriteOk(8192, FILE_SYNC, kV1, Attr(12288, 2)));
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  // The same writer's next file: its first write waits for the others (an
  // open-ended window: how many come is not known yet), and all go as one.
  fh_ = "second-file";
  Write(4, 0, a, FILE_SYNC);
  Write(5, 4096, b, FILE_SYNC);
  Write(6, 8192, c, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 2u) << "held by the first window";
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 3u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[2].args).data, a + b + c);
  up_.Answer(2, WriteOk(12288, FILE_SYNC, kV1, Attr(12288, 3)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  // The writer goes on alone, one write a file: two windows that find no
  // company (lone_after), then its files start lone.
  for (int i = 0; i < 3; ++i) {
    fh_ = "single-" + std::to_string(i);
    Write(7 + i, 0, a, FILE_SYNC);
    EXPECT_EQ(up_.calls.size(), static_cast<size_t>(i < 2 ? 3 + i : 4 + i)) << "file " << i;
    Advance(std::chrono::milliseconds(5));
    ASSERT_EQ(up_.calls.size(), static_cast<size_t>(4 + i));
    up_.Answer(3 + i, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 4)));
  }
  // Another writer (credential) has no history: its new file is lone.
  cred_.body = std::string(4, '\0') + "another writer";
  fh_ = "other-file";
  Write(10, 0, a, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 7u) << "sent at once";
}

TEST_F(WritePathTest, GatheringStableWritesAreNotFlushedInTheBackground) {
  options_.lone_after = 0;  // every batch opens a window
  Make();
  const std::string a(4096, 'a'), b(4096, 'b');
  Write(1, 0, a, FILE_SYNC);
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 1)));
  // The next window spans the end of a flush delay from the first write.
  Advance(options_.flush_delay - std::chrono::milliseconds(7));
  Write(2, 4096, b, FILE_SYNC);
  Advance(std::chrono::milliseconds(5));
  EXPECT_TRUE(bg_.calls.empty()) << "a waiting batch's data is its own";
  ASSERT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[1].args).stable, FILE_SYNC);
  up_.Answer(1, WriteOk(4096, FILE_SYNC, kV1, Attr(8192, 2)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(wp_->stats().upstream_commits, 0u);
  EXPECT_EQ(wp_->stats().sync_writes, 2u);
}

TEST_F(WritePathTest, ZeroWindowNeverWaits) {
  Write(1, 0, std::string(100, 'x'), FILE_SYNC, true, &nowait_);
  EXPECT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(wp_->stats().windows, 0u);
}

TEST_F(WritePathTest, UnstableWritesAreBufferedMergedAndCommittedForTheClient) {
  const std::string a(32768, 'a'), b(32768, 'b'), c(1000, 'c');
  Write(1, 0, a, UNSTABLE);
  Write(2, 32768, b, UNSTABLE);  // a whole upstream WRITE (64 KiB): sent at once
  Write(3, 65536, c, UNSTABLE);
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  for (const auto& [tag, r] : replies_) {
    EXPECT_EQ(r.committed, UNSTABLE);
    EXPECT_EQ(r.verf, wp_->verifier());
  }
  EXPECT_TRUE(up_.calls.empty()) << "write-behind uses the background caller";
  ASSERT_EQ(bg_.calls.size(), 1u);
  EXPECT_EQ(DecodeWriteArgs(bg_.calls[0].args).data, a + b);
  EXPECT_EQ(DecodeWriteArgs(bg_.calls[0].args).stable, UNSTABLE);
  bg_.Answer(0, WriteOk(65536, UNSTABLE, kV1, Attr(65536, 1)));

  replies_.clear();
  Commit(9);
  EXPECT_TRUE(replies_.empty()) << "COMMIT waits for the buffered data";
  // The client's COMMIT sends the rest, then commits.
  ASSERT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[0].args).data, c);
  up_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(66536, 2)));
  ASSERT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(up_.calls[1].proc, NFSPROC3_COMMIT);
  up_.Answer(1, CommitOk(kV1, Attr(66536, 3)));
  ASSERT_EQ(Tags(), (std::vector<int>{9}));
  EXPECT_EQ(replies_[0].second.status, NFS3_OK);
  EXPECT_EQ(replies_[0].second.verf, wp_->verifier()) << "the proxy's verifier, not the server's";
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  // Nothing held: the next COMMIT is answered at once.
  Commit(10);
  EXPECT_EQ(Tags(), (std::vector<int>{9, 10}));
}

TEST_F(WritePathTest, FlushDelaySendsPartialDataAndCommits) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  EXPECT_TRUE(bg_.calls.empty());
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  ASSERT_EQ(bg_.calls.size(), 2u);
  EXPECT_EQ(bg_.calls[1].proc, NFSPROC3_COMMIT);
  bg_.Answer(1, CommitOk(kV1, Attr(1000, 2)));
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}

TEST_F(WritePathTest, WithoutWriteEvidenceAnUnstableWriteIsAnsweredOnceStable) {
  Write(1, 0, std::string(10, 'a'), UNSTABLE, /*may_buffer=*/false, &nowait_);
  EXPECT_TRUE(replies_.empty());
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(10, FILE_SYNC, kV1, Attr(10, 1)));
  ASSERT_EQ(replies_.size(), 1u);
  EXPECT_EQ(replies_[0].second.committed, FILE_SYNC) << "committed tells what was done";
}

TEST_F(WritePathTest, BufferLimitsMakeWritersWait) {
  options_.max_file_bytes = 8192;
  options_.max_bytes = 16384;
  Make();
  Write(1, 0, std::string(8192, 'a'), UNSTABLE);
  Write(2, 8192, std::string(8192, 'b'), UNSTABLE);
  EXPECT_EQ(Tags(), (std::vector<int>{1})) << "the second write is beyond the file's limit";
  EXPECT_EQ(wp_->stats().blocked, 1u);
  EXPECT_LE(wp_->stats().max_buffered_bytes, 8192u);
  // Pressure flushes and commits the file.
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteOk(8192, UNSTABLE, kV1, Attr(8192, 1)));
  ASSERT_EQ(bg_.calls.size(), 2u);
  EXPECT_EQ(bg_.calls[1].proc, NFSPROC3_COMMIT);
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
  bg_.Answer(1, CommitOk(kV1, Attr(8192, 2)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(wp_->stats().buffered_bytes, 8192u);
}

TEST_F(WritePathTest, RaisedLimitsAdmitWaitingWriters) {
  options_.max_file_bytes = 8192;
  options_.max_bytes = 16384;
  Make();
  Write(1, 0, std::string(8192, 'a'), UNSTABLE);
  Write(2, 8192, std::string(8192, 'b'), UNSTABLE);
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
  WritePathOptions raised = options_;
  raised.max_bytes = raised.max_file_bytes = 1 << 20;
  wp_->SetLimits(raised);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2})) << "room now: the waiting write goes in";
  // A lower bound makes the next write wait.
  wp_->SetLimits(options_);
  Write(3, 16384, std::string(100, 'c'), UNSTABLE);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
}

TEST_F(WritePathTest, FlushErrorIsReturnedAtTheNextWriteOnce) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_NOSPC));
  ASSERT_FALSE(learned_.empty());
  EXPECT_EQ(learned_.back(), static_cast<uint32_t>(NFSPROC3_WRITE))
      << "the caches learn a refused WRITE's wcc data (it may have written part)";
  Write(2, 1000, std::string(10, 'b'), UNSTABLE);
  ASSERT_EQ(replies_.size(), 2u);
  EXPECT_EQ(replies_[1].second.status, NFS3ERR_NOSPC);
  Write(3, 1000, std::string(10, 'b'), UNSTABLE);
  EXPECT_EQ(replies_[2].second.status, NFS3_OK) << "reported once";
}

// A file removed with writes still buffered: the flush meets STALE, which
// every later WRITE or COMMIT of the handle gets at once; nothing of the
// file is kept for it.
TEST_F(WritePathTest, StaleFlushMakesTheHandleStaleForGood) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_STALE));
  EXPECT_EQ(wp_->buffered_files(), 0u);
  Write(2, 1000, std::string(10, 'b'), UNSTABLE);
  Write(3, 0, std::string(10, 'c'), FILE_SYNC);
  Commit(4);
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3, 4}));
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(replies_[i].second.status, NFS3ERR_STALE);
  EXPECT_EQ(bg_.calls.size() + up_.calls.size(), 1u) << "nothing more sent upstream";
}

TEST_F(WritePathTest, CommitErrorReachesTheWaitingClient) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Commit(2);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  ASSERT_EQ(up_.calls.size(), 2u);
  COMMIT3res fail{};
  fail.status = NFS3ERR_IO;
  std::string out;
  ASSERT_TRUE(XdrEncode(Proc(xdr_COMMIT3res), &fail, &out));
  up_.Answer(1, out);
  ASSERT_EQ(replies_.size(), 2u);
  EXPECT_EQ(replies_[1].first, 2);
  EXPECT_EQ(replies_[1].second.status, NFS3ERR_IO);
  EXPECT_EQ(learned_.back(), static_cast<uint32_t>(NFSPROC3_COMMIT))
      << "the caches learn a refused COMMIT's wcc data";
}

TEST_F(WritePathTest, ReadsAreHeldUntilBufferedDataIsUpstream) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  int ran = 0;
  EXPECT_TRUE(wp_->Hold(fh_, false, [&] { ran++; }));
  EXPECT_EQ(ran, 0);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  EXPECT_EQ(ran, 1) << "the upstream has the bytes: the READ may go";
  EXPECT_EQ(learned_.back(), static_cast<uint32_t>(NFSPROC3_WRITE)) << "caches learn the wcc";
  EXPECT_FALSE(wp_->Hold(fh_, false, [&] { ran++; }));
  // A SETATTR waits until the data is stable.
  EXPECT_TRUE(wp_->Hold(fh_, true, [&] { ran++; }));
  ASSERT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(up_.calls[1].proc, NFSPROC3_COMMIT);
  up_.Answer(1, CommitOk(kV1, Attr(1000, 2)));
  EXPECT_EQ(ran, 2);
  EXPECT_FALSE(wp_->Hold("other", true, [&] { ran++; }));
}

TEST_F(WritePathTest, NewerDataIsNotOverwrittenByAWriteInFlight) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  Write(2, 0, std::string(1000, 'b'), UNSTABLE);
  Commit(3);
  EXPECT_TRUE(up_.calls.empty()) << "the newer data waits for the WRITE in flight";
  bg_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  ASSERT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[0].args).data, std::string(1000, 'b'));
}

TEST_F(WritePathTest, UnreachableUpstreamIsRetried) {
  up_.refuse = true;
  Write(1, 0, std::string(10, 'a'), FILE_SYNC, true, &nowait_);
  EXPECT_TRUE(up_.calls.empty());
  up_.refuse = false;
  Advance(std::chrono::milliseconds(100));
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(10, FILE_SYNC, kV1, Attr(10, 1)));
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
}

}  // namespace

namespace {

TEST_F(JournalTest, WritesAreAnsweredOnceInTheJournalThenGoUpstream) {
  const std::string a(3000, 'a');
  WriteBack(1, 0, a, FILE_SYNC);
  EXPECT_TRUE(replies_.empty()) << "not before the journal has it on disk";
  ASSERT_EQ(journal_.records.size(), 1u);
  EXPECT_EQ(journal_.records[0].data, a);
  EXPECT_EQ(journal_.records[0].export_path, "/e");
  journal_.Complete();
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_EQ(replies_[0].second.committed, FILE_SYNC);
  EXPECT_EQ(replies_[0].second.verf, journal_.verifier()) << "the journal's verifier";
  EXPECT_FALSE(replies_[0].second.after) << "no attributes: the upstream has not the data";
  EXPECT_TRUE(up_.calls.empty() && bg_.calls.empty()) << "the upstream is not waited for";

  WriteBack(2, 3000, std::string(100, 'b'), UNSTABLE);
  journal_.Complete();
  CommitBack(3);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2})) << "the COMMIT waits for the journal";
  journal_.Complete();
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(replies_[2].second.verf, journal_.verifier());
  EXPECT_TRUE(journal_.removed.empty());

  FlushAndAnswer();
  ASSERT_GE(bg_.calls.size(), 2u);
  EXPECT_EQ(DecodeWriteArgs(bg_.calls[0].args).data, a + std::string(100, 'b'));
  EXPECT_EQ(bg_.calls.back().proc, NFSPROC3_COMMIT);
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2})) << "stable upstream: removed";
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_EQ(wp_->stats().journaled, 2u);
}

TEST_F(JournalTest, RecordsAreRemovedInOrderOnceNothingRefersToThem) {
  WriteBack(1, 0, std::string(1000, 'a'), FILE_SYNC);     // record 1
  WriteBack(2, 5000, std::string(1000, 'b'), FILE_SYNC);  // record 2
  WriteBack(3, 5000, std::string(1000, 'c'), FILE_SYNC);  // record 3 replaces 2
  journal_.Complete();
  EXPECT_TRUE(journal_.removed.empty()) << "2 is dead but 1 is not: a replay needs the order";
  WriteBack(4, 0, std::string(1000, 'd'), FILE_SYNC);  // record 4 replaces 1
  journal_.Complete();
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
  FlushAndAnswer();
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST_F(JournalTest, BytesWithoutEvidenceKeepTheRecordsTheyOverwroteUntilStable) {
  WriteBack(1, 0, std::string(1000, 'a'), FILE_SYNC);
  journal_.Complete();
  // No ACCESS evidence: this write is journaled (record 2) but answered
  // only once stable upstream; until then (its append not on disk yet),
  // record 1 must stay.
  WriteBack(2, 0, std::string(1000, 'b'), FILE_SYNC, /*may_buffer=*/false);
  EXPECT_EQ(journal_.records.size(), 2u);
  EXPECT_TRUE(journal_.removed.empty());
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(1000, FILE_SYNC, kV1, Attr(1000, 3)));
  EXPECT_EQ(Tags(), (std::vector<int>{1})) << "stable upstream; answered once its record is too";
  journal_.Complete();
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
}

TEST_F(JournalTest, AFailedAppendIsAnsweredOnceStableUpstream) {
  WriteBack(1, 0, std::string(1000, 'a'), FILE_SYNC);
  journal_.Complete(Status(StatusCode::kIoError, "disk"));
  EXPECT_TRUE(replies_.empty()) << "not durable anywhere yet";
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(1000, FILE_SYNC, kV1, Attr(1000, 3)));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_EQ(replies_[0].second.committed, FILE_SYNC);
  EXPECT_EQ(wp_->stats().journal_failed, 1u);
}

TEST_F(JournalTest, RecoveredRecordsGoUpstreamAtOnceAndHoldReads) {
  JournalRecord r{7, fh_, "/e", cred_, 100, std::string(500, 'r')};
  wp_->Recover(r, back_);
  wp_->FlushAll();
  int ran = 0;
  EXPECT_TRUE(wp_->Hold(fh_, false, [&] { ran++; })) << "reads wait for the replay";
  ASSERT_EQ(bg_.calls.size(), 1u) << "sent without waiting for the flush delay";
  SentWrite w = DecodeWriteArgs(bg_.calls[0].args);
  EXPECT_EQ(w.offset, 100u);
  EXPECT_EQ(w.data, r.data);
  bg_.Answer(0, WriteOk(500, UNSTABLE, kV1, Attr(600, 4)));
  EXPECT_EQ(ran, 1);
  ASSERT_EQ(bg_.calls.size(), 2u);
  EXPECT_EQ(bg_.calls[1].proc, NFSPROC3_COMMIT);
  bg_.Answer(1, CommitOk(kV1, Attr(600, 5)));
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{7}));
  EXPECT_EQ(wp_->stats().recovered, 1u);
}

// An upstream WRITE that wrote fewer bytes than asked
// (count < requested) leaves the rest buffered; only the rest is sent
// again, and the client is answered once all of it is stable.
TEST_F(WritePathTest, ShortUpstreamWriteSendsOnlyTheRestAgain) {
  std::string data(1000, 'a');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
  Write(1, 0, data, FILE_SYNC, true, &nowait_);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(400, FILE_SYNC, kV1, Attr(400, 1)));
  EXPECT_TRUE(replies_.empty()) << "600 bytes are not upstream yet";
  ASSERT_EQ(up_.calls.size(), 2u);
  SentWrite rest = DecodeWriteArgs(up_.calls[1].args);
  EXPECT_EQ(rest.offset, 400u);
  EXPECT_EQ(rest.data, data.substr(400));
  up_.Answer(1, WriteOk(600, FILE_SYNC, kV1, Attr(1000, 2)));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_EQ(replies_[0].second.status, NFS3_OK);
  EXPECT_EQ(replies_[0].second.count, 1000u);
  EXPECT_EQ(wp_->stats().upstream_writes, 2u);
}

// Each WRITE's verifier is compared with the COMMIT's.
// A server restart between two WRITEs (V1, then V2) and a COMMIT answering
// V2: only the bytes written under V1 go again. (Both WRITEs left before
// either was answered: the second's V2 alone does not tell which ran
// first, so nothing goes again before the COMMIT's answer.)
TEST_F(WritePathTest, CommitVerifierIsComparedWithEachWritesOwn) {
  const std::string a(4096, 'a'), b(4096, 'b');
  // The server restarted between the two WRITEs.
  ASSERT_NO_FATAL_FAILURE(TwoApartAnsweredUnstable(a, b, kV1, kV2));
  up_.Answer(2, CommitOk(kV2, Attr(1, 3)));
  EXPECT_TRUE(replies_.empty()) << "the first write's bytes are not proven stable";
  ASSERT_EQ(up_.calls.size(), 4u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[3].args).data, a) << "only the V1 bytes again";
  up_.Answer(3, WriteOk(4096, UNSTABLE, kV2, Attr(1, 4)));
  ASSERT_EQ(up_.calls.size(), 5u);
  up_.Answer(4, CommitOk(kV2, Attr(1, 5)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(wp_->stats().resent, 4096u);
}

// DESIGN rules 1, 2: a flush error is kept for the next WRITE or COMMIT of
// the file by the writer whose bytes were refused; another writer does not
// get it (over quota, A's EDQUOT is not B's). Writer A's buffered bytes
// fail upstream (NOSPC) and are dropped; B's next WRITE goes through, with
// a new verifier for the file (had B written before, it would resend); A's
// COMMIT gets the error, and its next one the new verifier, not the one
// A's WRITE got (A would believe bytes that never reached the server
// stable); A sends its bytes again.
TEST_F(WritePathTest, AFlushErrorGoesToItsWriterAndChangesTheVerifierForTheOthers) {
  cred_ = Cred("writer-a");
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  ASSERT_EQ(replies_.size(), 1u);
  const Verf told_a = replies_[0].second.verf;
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_NOSPC));  // A's bytes are dropped
  cred_ = Cred("writer-b");
  Write(2, 5000, std::string(10, 'b'), UNSTABLE);
  ASSERT_EQ(replies_.size(), 2u);
  EXPECT_EQ(replies_[1].second.status, NFS3_OK) << "B got A's error";
  const Verf renewed = replies_[1].second.verf;
  EXPECT_NE(renewed, told_a);
  EXPECT_EQ(wp_->stats().verifier_changes, 1u);
  cred_ = Cred("writer-a");
  Commit(3);
  ASSERT_EQ(replies_.size(), 3u);
  EXPECT_EQ(replies_[2].second.status, NFS3ERR_NOSPC) << "A's error was not kept for A";
  Commit(4);  // B's bytes are still buffered: answered once they are stable
  Settle();
  ASSERT_EQ(replies_.size(), 4u);
  EXPECT_EQ(replies_[3].second.status, NFS3_OK);
  EXPECT_EQ(replies_[3].second.verf, renewed);
  // A sends its bytes again, under the new verifier, and they get there.
  Write(5, 0, std::string(1000, 'a'), UNSTABLE);
  ASSERT_EQ(replies_.size(), 5u);
  EXPECT_EQ(replies_[4].second.verf, renewed);
  // Another file keeps the verifier: its writers need not send again.
  fh_ = "other-file";
  Write(6, 0, std::string(10, 'o'), UNSTABLE);
  ASSERT_EQ(replies_.size(), 6u);
  EXPECT_EQ(replies_[5].second.verf, told_a);
}

// The upstream denying the credential at the RPC level (MSG_DENIED) is an
// answer: the buffered bytes are given up on with NFS3ERR_ACCES, returned
// at the file's next WRITE, not tried again for ever.
TEST_F(WritePathTest, AnRpcLevelDenialOfAFlushIsAnErrorNotARetry) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  ASSERT_EQ(replies_.size(), 1u);
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Deny(0);
  Advance(std::chrono::seconds(1));
  EXPECT_EQ(bg_.calls.size(), 1u) << "a denied WRITE is not sent again";
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  Write(2, 1000, std::string(10, 'b'), UNSTABLE);
  ASSERT_EQ(replies_.size(), 2u);
  EXPECT_EQ(replies_[1].second.status, NFS3ERR_ACCES);
}

// A stable write the upstream refuses was never answered from the buffer:
// its own client gets the error, and the verifier stays (a new one would
// have every client send its uncommitted writes again).
TEST_F(WritePathTest, AStableWriteRefusedUpstreamKeepsTheVerifier) {
  const auto before = wp_->verifier();
  Write(1, 0, std::string(100, 'a'), FILE_SYNC, true, &nowait_);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteFail(NFS3ERR_ACCES));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_EQ(replies_[0].second.status, NFS3ERR_ACCES);
  EXPECT_EQ(wp_->verifier(), before);
  EXPECT_EQ(wp_->stats().verifier_changes, 0u);
}

// DESIGN rule 8, liveness: under pressure (a writer waits for room), a
// background flush that finds every background slot taken
// (max_background) is tried again: the file's bytes do not stay in the
// buffer until something else touches the file.
TEST_F(WritePathTest, FlushThatFoundNoFreeSlotIsTriedAgain) {
  options_.max_background = 1;
  options_.max_file_bytes = 1000;
  Make();
  fh_ = "file-f";
  Write(1, 0, std::string(1000, 'f'), UNSTABLE);
  fh_ = "file-g";
  Write(2, 0, std::string(1000, 'g'), UNSTABLE);
  Write(3, 1000, std::string(1000, 'h'), UNSTABLE);  // beyond G's room: waits
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  ASSERT_EQ(bg_.calls.size(), 1u) << "pressure: one file takes the one slot, the other none";
  // The flush delay ends while that WRITE holds the slot.
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  // From here the upstream answers everything at once, for 10 s.
  for (int round = 0; round < 100; ++round) {
    for (int i = bg_.Pending(); i >= 0; i = bg_.Pending()) {
      const auto idx = static_cast<size_t>(i);
      if (bg_.calls[idx].proc == NFSPROC3_WRITE) {
        const auto n = static_cast<uint32_t>(DecodeWriteArgs(bg_.calls[idx].args).data.size());
        bg_.Answer(idx, WriteOk(n, UNSTABLE, kV1, Attr(n, 1)));
      } else {
        bg_.Answer(idx, CommitOk(kV1, Attr(1000, 2)));
      }
    }
    Advance(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u)
      << "bytes left in the buffer after 10 s of an idle, answering upstream; upstream "
         "calls: "
      << bg_.calls.size();
}

// DESIGN rule 1: a write ending past 2^64 is refused (NFS3ERR_FBIG), not
// answered FILE_SYNC with nothing upstream (a wrapped [off, end) would hold
// no piece).
TEST_F(WritePathTest, StableWriteWrappingTheOffsetSpaceIsNotAnsweredBeforeUpstream) {
  const uint64_t off = std::numeric_limits<uint64_t>::max() - 9;
  Write(1, off, std::string(20, 'z'), FILE_SYNC, true, &nowait_);
  if (!replies_.empty()) {
    EXPECT_NE(replies_[0].second.status, NFS3_OK)
        << "answered FILE_SYNC with nothing upstream (" << up_.calls.size()
        << " upstream call(s) sent, none answered)";
  }
}

// DESIGN rule 4 asks only for the writes acknowledged before the read: a
// READ/GETATTR held for buffered data does not wait for writes that keep
// coming after it (a log being appended, a copy in progress).
TEST_F(WritePathTest, HeldReadIsNotStarvedByWritesThatCameAfterIt) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  int ran = 0;
  ASSERT_TRUE(wp_->Hold(fh_, false, [&] { ran++; }));
  ASSERT_EQ(up_.calls.size(), 1u);
  for (int i = 1; i <= 5; ++i) {
    // A write after the READ, then the upstream has everything before it.
    Write(10 + i, static_cast<uint64_t>(i) * 1000, std::string(1000, 'b'), UNSTABLE);
    const int p = up_.Pending();
    ASSERT_GE(p, 0);
    up_.Answer(static_cast<size_t>(p), WriteOk(1000, UNSTABLE, kV1, Attr(1000, i)));
    if (ran > 0) break;
  }
  EXPECT_EQ(ran, 1) << "the READ waited for " << up_.calls.size()
                    << " upstream WRITEs, all but the first for writes that came after it";
}

// The same for a client COMMIT: a whole-file COMMIT (count 0) waits for
// the writes before it, not for those that keep coming after it (every
// stable write queued behind it would wait too, FIFO).
TEST_F(WritePathTest, CommitIsNotStarvedByWritesThatCameAfterIt) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Commit(2);
  ASSERT_EQ(up_.calls.size(), 1u);
  auto commit_answered = [this] {
    int n = 0;
    for (const auto& [tag, r] : replies_) n += tag == 2;
    return n;
  };
  for (int i = 1; i <= 6 && commit_answered() == 0; ++i) {
    Write(10 + i, static_cast<uint64_t>(i) * 1000, std::string(1000, 'b'), UNSTABLE);
    const int p = up_.Pending();
    ASSERT_GE(p, 0);
    const auto idx = static_cast<size_t>(p);
    if (up_.calls[idx].proc == NFSPROC3_WRITE) {
      up_.Answer(idx, WriteOk(1000, UNSTABLE, kV1, Attr(1000, i)));
    } else {
      up_.Answer(idx, CommitOk(kV1, Attr(1000, i)));
    }
  }
  EXPECT_EQ(commit_answered(), 1) << "the COMMIT still waits after " << up_.calls.size()
                                << " upstream calls, for writes that came after it";
}

// An upstream WRITE answered NFS3_OK with count 0 makes no progress: it is
// tried again after a delay, not at once, and given up on after a few.
// A background flush the upstream could not take for now (JUKEBOX) goes
// again after the retry delay, though it is short of a whole WRITE and the
// flush delay that sent it is past.
TEST_F(WritePathTest, ABackgroundFlushRefusedForNowIsSentAgainAfterTheDelay) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_JUKEBOX));
  Advance(std::chrono::milliseconds(100));
  ASSERT_EQ(bg_.calls.size(), 2u) << "left in the buffer";
  bg_.Answer(1, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  ASSERT_EQ(bg_.calls.size(), 3u);
  bg_.Answer(2, CommitOk(kV1, Attr(1000, 2)));
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}

TEST_F(WritePathTest, ZeroCountWriteIsNotResentInATightLoop) {
  Write(1, 0, std::string(100, 'a'), FILE_SYNC, true, &nowait_);
  for (int i = 0; i < 50; ++i) {
    const int p = up_.Pending();
    if (p < 0) break;
    up_.Answer(static_cast<size_t>(p), WriteOk(0, FILE_SYNC, kV1, Attr(0, 1)));
  }
  EXPECT_LE(up_.calls.size(), 2u) << "resent " << up_.calls.size()
                                  << " times without the clock moving";
  // Tried again after the retry delay, each time; the tenth such reply in
  // a row fails the write with NFS3ERR_IO.
  for (int i = 0; i < 50 && replies_.empty(); ++i) {
    Advance(std::chrono::milliseconds(100));
    const int p = up_.Pending();
    if (p >= 0) up_.Answer(static_cast<size_t>(p), WriteOk(0, FILE_SYNC, kV1, Attr(0, 1)));
  }
  EXPECT_EQ(up_.calls.size(), 10u);
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_EQ(replies_[0].second.status, NFS3ERR_IO);
}

}  // namespace
}  // namespace nfsedge::write_path_test
