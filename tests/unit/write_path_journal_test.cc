// The edge journal's records under overwrites (DESIGN rule 1 across a
// crash): a record whose bytes a newer write replaced is removed only once
// that newer write is durable itself, in the journal (its append is on
// disk) or upstream (its bytes are stable there); every record is removed
// once nothing needs it, none is left behind.
#include <algorithm>
#include <string>
#include <vector>

#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

const Status kDiskError(StatusCode::kIoError, "disk");

TEST_F(JournalTest, ARecordOverwrittenByAWriteTheJournalRefusedStaysUntilThatWriteIsStable) {
  WriteBack(1, 0, std::string(1000, 'a'), FILE_SYNC);  // record 1
  journal_.Complete();
  ASSERT_EQ(Tags(), (std::vector<int>{1})) << "answered FILE_SYNC: durable in record 1 only";
  WriteBack(2, 0, std::string(1000, 'b'), FILE_SYNC);  // record 2, over all of 1
  journal_.Complete(kDiskError);
  EXPECT_EQ(Tags(), (std::vector<int>{1})) << "2 is answered once stable upstream";
  EXPECT_TRUE(journal_.removed.empty())
      << "a crash now must still replay record 1: the upstream has neither write";
  ASSERT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[0].args).data, std::string(1000, 'b'));
  up_.Answer(0, WriteOk(1000, FILE_SYNC, kV1, Attr(1000, 3)));
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}))
      << "the newer bytes are stable upstream: record 1 goes, and so does 2";
  EXPECT_EQ(Tags(), (std::vector<int>{1}))
      << "answered before record 1's removal is on disk: a restart would replay it over 2";
  journal_.Complete();
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(wp_->stats().journal_failed, 1u);
}

// The same when the disk refuses the newer write's record only after its
// bytes are stable upstream (a slow disk; the flush went meanwhile) and
// record 1's removal is queued: the write is answered once that removal is
// on disk, not at once (a restart would replay record 1 over it; the
// newer write has no record of its own to replay after it).
TEST_F(JournalTest, AWriteWhoseRecordFailsAfterItsBytesAreStableWaitsForTheOlderRemoval) {
  WriteBack(1, 0, std::string(1000, 'a'), FILE_SYNC);  // record 1
  journal_.Complete();
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  WriteBack(2, 0, std::string(1000, 'b'), FILE_SYNC);  // record 2, on its way to disk
  for (int i = 0; i < 5 && journal_.removed.empty(); ++i) {
    FlushAndAnswer();
    AnswerAll(up_);
  }
  ASSERT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2})) << "2's bytes are stable upstream";
  journal_.CompleteFirst(kDiskError);  // record 2's append
  EXPECT_EQ(Tags(), (std::vector<int>{1}))
      << "answered before record 1's removal is on disk: a restart would replay it over 2";
  journal_.Complete();
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
}

TEST_F(JournalTest, ARecordOverwrittenByAJournaledWriteIsRemovedOnlyOnceThatOneIsOnDisk) {
  WriteBack(1, 0, std::string(1000, 'a'), UNSTABLE);
  journal_.Complete();
  WriteBack(2, 0, std::string(1000, 'b'), UNSTABLE);
  EXPECT_TRUE(journal_.removed.empty()) << "record 2 is not on disk yet";
  journal_.Complete();
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
  EXPECT_EQ(journal_.events, (std::vector<std::string>{"+1", "ok1", "+2", "ok2", "-1"}))
      << "record 1's removal is queued after record 2 is on disk";
  EXPECT_TRUE(bg_.calls.empty()) << "removed before any of it went upstream";
  FlushAndAnswer();
  ASSERT_FALSE(bg_.calls.empty());
  EXPECT_EQ(DecodeWriteArgs(bg_.calls[0].args).data, std::string(1000, 'b'));
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
}

TEST_F(JournalTest, APartlyOverwrittenRecordStaysForItsOtherBytes) {
  WriteBack(1, 0, std::string(1000, 'a'), UNSTABLE);
  WriteBack(2, 500, std::string(1000, 'b'), UNSTABLE);  // over the second half of 1
  journal_.Complete();
  EXPECT_TRUE(journal_.removed.empty()) << "[0, 500) is in record 1 only";
  FlushAndAnswer();
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
}

// Records appended (overlapping, some refused by the disk, one of a write
// without evidence) are each removed once, in order, after the flush; none
// is removed while a write over it is durable nowhere.
TEST_F(JournalTest, OverwritesLeaveNoRecordBehindAndRemoveNoneEarly) {
  WriteBack(1, 0, std::string(4000, 'a'), FILE_SYNC);
  WriteBack(2, 2000, std::string(4000, 'b'), UNSTABLE);
  WriteBack(3, 1000, std::string(2000, 'c'), FILE_SYNC);  // splits 1, cuts into 2
  journal_.Complete();
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(journal_.removed.empty()) << "1 and 2 still hold bytes no other record has";

  WriteBack(4, 0, std::string(8000, 'd'), UNSTABLE);  // over all of 1, 2 and 3
  journal_.Complete(kDiskError);
  EXPECT_TRUE(journal_.removed.empty()) << "record 4 is not on disk: 1, 2 and 3 must stay";
  ASSERT_EQ(up_.calls.size(), 1u) << "4 goes upstream for its client";

  WriteBack(5, 3000, std::string(2000, 'e'), FILE_SYNC);  // splits 4's piece in flight
  journal_.Complete();
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3, 5}));
  EXPECT_TRUE(journal_.removed.empty()) << "the rest of 4 is durable nowhere yet";

  // No evidence: journaled (record 6), answered once stable upstream.
  WriteBack(6, 100, std::string(100, 'f'), FILE_SYNC, /*may_buffer=*/false);
  EXPECT_EQ(journal_.records.size(), 6u);

  Settle();
  journal_.Complete();  // record 6's append
  std::vector<int> tags = Tags();
  std::sort(tags.begin(), tags.end());
  EXPECT_EQ(tags, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}))
      << "each record removed once, in order, none left behind";
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_EQ(wp_->buffered_files(), 0u);
}

// The file is gone (STALE) with the bytes of a write the journal refused:
// they are dropped, and the record they overwrote with them (nothing is
// left that would need it).
TEST_F(JournalTest, TheRecordsHeldForAGoneFileAreRemoved) {
  WriteBack(1, 0, std::string(1000, 'a'), UNSTABLE);
  journal_.Complete();
  WriteBack(2, 0, std::string(1000, 'b'), FILE_SYNC);
  journal_.Complete(kDiskError);
  EXPECT_TRUE(journal_.removed.empty());
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteFail(NFS3ERR_STALE));
  journal_.Complete();  // the removals on disk: the replies go on, in order
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(replies_[1].second.status, NFS3ERR_STALE);
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}

// Any other refusal of bytes that keep an acknowledged record: they stay,
// in the buffer and in the journal, and go again later; the refused
// write's client waits for them (its bytes are kept, not refused for
// good) and is answered once the upstream takes them, when the records go.
TEST_F(JournalTest, BytesKeepingAnAcknowledgedRecordStayWhenTheUpstreamRefusesThem) {
  WriteBack(1, 0, std::string(1000, 'a'), UNSTABLE);
  journal_.Complete();
  WriteBack(2, 0, std::string(1000, 'b'), FILE_SYNC);
  journal_.Complete(kDiskError);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteFail(NFS3ERR_NOSPC));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_TRUE(journal_.removed.empty()) << "write 1 was acknowledged from the journal";
  EXPECT_EQ(wp_->stats().buffered_bytes, 1000u);
  Settle();
  ASSERT_GE(up_.calls.size(), 2u);
  EXPECT_EQ(up_.calls[1].proc, NFSPROC3_WRITE);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[1].args).data, std::string(1000, 'b'));
  journal_.Complete();  // record 1's removal on disk: 2 is answered
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(replies_[1].second.status, NFS3_OK);
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}

// A write acknowledged from the journal that the upstream keeps refusing
// (out of space): kept and sent again, less and less often, until the
// upstream takes it; its record stays until then. The file's next COMMIT
// learns the error.
TEST_F(JournalTest, AcknowledgedWritesAreRetriedWithGrowingDelaysUntilTheUpstreamTakesThem) {
  const std::string data(1000, 'a');
  WriteBack(1, 0, data, FILE_SYNC);
  journal_.Complete();
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  wp_->FlushAll();
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_NOSPC));
  EXPECT_TRUE(journal_.removed.empty());
  EXPECT_EQ(wp_->stats().buffered_bytes, data.size());
  CommitBack(2);
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(replies_[1].second.status, NFS3ERR_NOSPC) << "the error is not kept from clients";
  // Each refusal doubles the wait before the next try.
  std::vector<Duration> waits;
  for (int round = 0; round < 4; ++round) {
    const MonoTime from = clock_.MonoNow();
    while (bg_.Pending() < 0 && clock_.MonoNow() - from < std::chrono::minutes(2)) {
      Advance(std::chrono::milliseconds(10));
    }
    ASSERT_GE(bg_.Pending(), 0) << "round " << round << ": not sent again";
    waits.push_back(clock_.MonoNow() - from);
    const size_t i = static_cast<size_t>(bg_.Pending());
    EXPECT_EQ(DecodeWriteArgs(bg_.calls[i].args).data, data);
    if (round < 3) bg_.Answer(i, WriteFail(NFS3ERR_NOSPC));
  }
  for (size_t r = 1; r < waits.size(); ++r) EXPECT_GT(waits[r], waits[r - 1]) << "round " << r;
  EXPECT_TRUE(journal_.removed.empty());
  AnswerAll(bg_);
  Settle();
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}

TEST_F(JournalTest, RecoveredRecordsOverwrittenByLaterOnesAreRemovedAtOnce) {
  wp_->Recover(JournalRecord{7, fh_, "/e", cred_, 0, std::string(100, 'x')}, back_);
  wp_->Recover(JournalRecord{8, fh_, "/e", cred_, 0, std::string(100, 'y')}, back_);
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{7})) << "8 is on disk already";
  wp_->FlushAll();
  Settle();
  ASSERT_FALSE(bg_.calls.empty());
  EXPECT_EQ(DecodeWriteArgs(bg_.calls[0].args).data, std::string(100, 'y'));
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{7, 8}));
}

// Each file's records go in order, but not after other files' records:
// a file whose data is still buffered (or kept after a refusal) does not
// keep every newer record of every other file on disk.
TEST_F(JournalTest, AFilesRecordsDoNotWaitForAnotherFilesOlderOnes) {
  fh_ = "FH-A";
  WriteBack(1, 0, std::string(1000, 'a'), FILE_SYNC);  // record 1
  fh_ = "FH-B";
  WriteBack(2, 0, std::string(1000, 'b'), FILE_SYNC);  // record 2
  journal_.Complete();
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  wp_->FlushAll();
  ASSERT_EQ(bg_.calls.size(), 2u);
  for (size_t i = 0; i < bg_.calls.size(); ++i) {
    XdrValue<WRITE3args> a(Proc(xdr_WRITE3args));
    ASSERT_TRUE(a.Decode(bg_.calls[i].args));
    if (std::string(a->file.data.data_val, a->file.data.data_len) == "FH-B") {
      bg_.Answer(i, WriteOk(1000, FILE_SYNC, kV1, Attr(1000, 2)));
    }
  }
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{2})) << "FH-A's record 1 holds nothing of FH-B";
  Settle();
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{2, 1}));
}

// A write without ACCESS evidence, on a write_back export, is answered
// once stable upstream, but appended to the journal all the same: its
// record comes after the older records of the bytes it replaces, which may
// stay on disk after it is stable (their other bytes are not stable yet),
// so a restart replays them before it, never over it.
TEST_F(JournalTest, AWriteWithoutEvidenceIsJournaledAfterTheRecordsItReplaces) {
  WriteBack(1, 0, std::string(2000, 'a'), UNSTABLE);  // record 1
  journal_.Complete();
  wp_->FlushAll();
  ASSERT_EQ(bg_.calls.size(), 1u) << "record 1's bytes on their way upstream";
  WriteBack(2, 0, std::string(1000, 'b'), FILE_SYNC, /*may_buffer=*/false);
  ASSERT_EQ(journal_.records.size(), 2u) << "journaled, though not answered from the journal";
  EXPECT_EQ(journal_.records[1].data, std::string(1000, 'b'));
  journal_.Complete();
  EXPECT_EQ(Tags(), (std::vector<int>{1})) << "answered once stable upstream only";
  bg_.Answer(0, WriteOk(2000, UNSTABLE, kV1, Attr(2000, 2)));  // not committed yet
  const int b = up_.Pending();
  ASSERT_GE(b, 0);
  ASSERT_EQ(DecodeWriteArgs(up_.calls[static_cast<size_t>(b)].args).data, std::string(1000, 'b'));
  up_.Answer(static_cast<size_t>(b), WriteOk(1000, FILE_SYNC, kV1, Attr(2000, 3)));
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(replies_[1].second.committed, FILE_SYNC);
  EXPECT_TRUE(journal_.removed.empty()) << "record 1 keeps bytes not stable upstream yet";
  Settle();
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
}

// Such a write that the upstream refuses, having replaced nothing answered
// from the journal, is dropped with the error (its client learns it), not
// kept and sent again later.
TEST_F(JournalTest, AWriteWithoutEvidenceRefusedUpstreamIsDropped) {
  WriteBack(1, 0, std::string(1000, 'x'), FILE_SYNC, /*may_buffer=*/false);
  journal_.Complete();
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteFail(NFS3ERR_ACCES));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_EQ(replies_[0].second.status, NFS3ERR_ACCES);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
}

// A SETATTR (a truncation) goes upstream once the removals of the records
// of the bytes it waited for are on disk: a restart in between would
// replay them over it (the file would grow back). Also when the file is
// gone from the buffer by the time the SETATTR comes.
TEST_F(JournalTest, ASetattrWaitsUntilTheRemovalsOfTheRecordsBeforeItAreOnDisk) {
  WriteBack(1, 0, std::string(1000, 'a'), UNSTABLE);
  journal_.Complete();
  int ran = 0;
  ASSERT_TRUE(wp_->Hold(fh_, /*stable=*/true, [&] { ran++; }));
  AnswerAll(up_);  // the WRITE, then the COMMIT: stable upstream
  ASSERT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
  EXPECT_EQ(ran, 0) << "record 1's removal is not on disk yet";
  EXPECT_TRUE(wp_->Hold(fh_, true, [&] { ran++; })) << "nor for a SETATTR that comes now";
  EXPECT_FALSE(wp_->Hold(fh_, false, [&] { ran++; })) << "a READ need not wait";
  journal_.Complete();
  EXPECT_EQ(ran, 2);
  EXPECT_FALSE(wp_->Hold(fh_, true, [&] { ran++; }));
  EXPECT_EQ(ran, 2);
}

// Every removal of the file's records queued before it counts: one on disk
// already does not let the SETATTR go while another is not.
TEST_F(JournalTest, ASetattrWaitsForEveryRemovalOfTheFileQueuedBeforeIt) {
  WriteBack(1, 0, std::string(1000, 'a'), UNSTABLE);
  WriteBack(2, 4096, std::string(1000, 'b'), UNSTABLE);
  journal_.Complete();
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 2u) << "not contiguous: two WRITEs";
  bg_.Answer(0, WriteOk(1000, FILE_SYNC, kV1, Attr(1000, 1)));
  ASSERT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
  journal_.Complete();  // record 1's removal is on disk
  bg_.Answer(1, WriteOk(1000, FILE_SYNC, kV1, Attr(5096, 2)));
  ASSERT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
  int ran = 0;
  ASSERT_TRUE(wp_->Hold(fh_, /*stable=*/true, [&] { ran++; }));
  EXPECT_EQ(ran, 0) << "record 2's removal is not on disk yet";
  journal_.Complete();
  EXPECT_EQ(ran, 1);
}

// A journal write that fails leaves the removals for the next batch: the
// SETATTR waits for a sync after them that succeeds. A journal disk that
// keeps failing holds it a bounded number of tries, not for ever.
TEST_F(JournalTest, ASetattrWaitsThroughJournalFailuresButNotForEver) {
  int ran = 0;
  for (int round = 0; round < 2; ++round) {
    WriteBack(1 + round, 0, std::string(1000, 'a'), UNSTABLE);
    journal_.Complete();
    ASSERT_TRUE(wp_->Hold(fh_, /*stable=*/true, [&] { ran++; }));
    AnswerAll(up_);
    journal_.Complete(kDiskError);
    EXPECT_EQ(ran, round) << "one failure: tried again";
    if (round == 0) {
      journal_.Complete();
    } else {
      for (uint32_t i = 1; i < WritePath::kMaxRemovalFailures; ++i) journal_.Complete(kDiskError);
    }
    EXPECT_EQ(ran, round + 1);
  }
}

// Served again once its wait is over (with the stamp it was held at), the
// SETATTR does not wait for removals of records of writes that came after
// it: a writer that goes on would hold it for as long as it writes. A new
// SETATTR does.
TEST_F(JournalTest, ASetattrDoesNotWaitForRemovalsOfLaterWrites) {
  WriteBack(1, 0, std::string(1000, 'a'), UNSTABLE);
  journal_.Complete();
  const uint64_t before = wp_->last_stamp();
  int ran = 0;
  ASSERT_TRUE(wp_->Hold(fh_, /*stable=*/true, [&] { ran++; }, before));
  AnswerAll(up_);
  ASSERT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
  WriteBack(2, 4096, std::string(1000, 'b'), UNSTABLE);
  journal_.Complete();  // record 2's append, and record 1's removal
  ASSERT_EQ(ran, 1);
  Advance(options_.flush_delay);
  AnswerAll(bg_);
  ASSERT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
  EXPECT_FALSE(wp_->Hold(fh_, true, [&] { ran++; }, before))
      << "record 2 is of a write after the SETATTR";
  EXPECT_TRUE(wp_->Hold(fh_, true, [&] { ran++; })) << "a new SETATTR waits for it";
  journal_.Complete();
  EXPECT_EQ(ran, 2);
}

}  // namespace
}  // namespace nfsedge::write_path_test
