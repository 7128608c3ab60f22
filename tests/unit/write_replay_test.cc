// The edge journal seen from a restart: what the records left on disk would
// replay (in sequence order, as WritePath::Recover does) never undoes a
// write answered as stable; records recovered are all removed once stable;
// data answered from the journal and given up on after refusals changes
// the file's verifier; refusals are counted per retry round; replies keep
// their order when the journal refuses appends.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

const Status kDiskError(StatusCode::kIoError, "disk");

class ReplayTest : public JournalTest {
 protected:
  // What a restart would write at [off, off + len): the records still in
  // the journal (appended, not refused, not removed) replayed in sequence
  // order (WritePath::Recover); '?' where no record holds the byte.
  std::string Replayed(uint64_t off, size_t len) const {
    std::set<uint64_t> gone(journal_.removed.begin(), journal_.removed.end());
    for (const std::string& e : journal_.events) {
      if (e.rfind("fail", 0) == 0) gone.insert(std::stoull(e.substr(4)));
    }
    std::map<uint64_t, const JournalRecord*> by_seq;
    for (const JournalRecord& r : journal_.records) by_seq[r.seq] = &r;
    std::string out(len, '?');
    for (const auto& [seq, r] : by_seq) {
      if (gone.contains(seq) || r->fh != fh_) continue;
      for (size_t i = 0; i < r->data.size(); ++i) {
        const uint64_t at = r->offset + i;
        if (at >= off && at < off + len) out[at - off] = r->data[i];
      }
    }
    return out;
  }
  // Acknowledged record far from the others whose background WRITE stays
  // unanswered: it holds every newer record of the file in the journal
  // (records go in order per file). Returns its bg_ call.
  size_t OlderRecordHeldUpstream() {
    WriteBack(1, 1 << 20, "aaaa", UNSTABLE);
    journal_.Complete();
    Advance(options_.flush_delay);
    EXPECT_EQ(bg_.calls.size(), 1u);
    return bg_.calls.size() - 1;
  }
  // Record 2 ("bbbb" at 0) stable upstream but held behind record 1; then a
  // FILE_SYNC write of "cccc" over it, not journaled (no evidence) or
  // through the write_behind export, answered FILE_SYNC: a restart must not
  // replay record 2 over it.
  void StableWriteOverAHeldRecord(bool other_export) {
    OlderRecordHeldUpstream();          // record 1, held
    WriteBack(2, 0, "bbbb", UNSTABLE);  // record 2
    journal_.Complete();
    Advance(options_.flush_delay);
    ASSERT_EQ(bg_.calls.size(), 2u);
    bg_.Answer(1, WriteOk(4, FILE_SYNC, kV1, Attr(4, 3)));  // record 2's bytes stable upstream
    ASSERT_TRUE(journal_.removed.empty()) << "record 2 waits for record 1 (file order)";
    if (other_export) {
      Write(3, 0, "cccc", FILE_SYNC);
    } else {
      WriteBack(3, 0, "cccc", FILE_SYNC, /*may_buffer=*/false);
    }
    journal_.Complete();
    ASSERT_EQ(up_.calls.size(), 1u);
    up_.Answer(0, WriteOk(4, FILE_SYNC, kV1, Attr(4, 4)));
    journal_.Complete();
    const ClientReply* r = ReplyOf(3);
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->status, NFS3_OK);
    ASSERT_EQ(r->committed, FILE_SYNC);
    EXPECT_EQ(Replayed(0, 4), "cccc")
        << "a restart now replays record 2 (\"bbbb\") over the write answered FILE_SYNC";
  }
};

// A journaled write whose bytes are already stable upstream has no piece in
// the buffer any more, but its record stays on disk while an older record
// of the file is held. A stable write without ACCESS evidence over those
// bytes, answered FILE_SYNC, must not be undone by a restart replaying that
// record (DESIGN rule 1).
TEST_F(ReplayTest, StableWriteOverAStableButStillJournaledRecordIsNotUndoneByARestart) {
  StableWriteOverAHeldRecord(/*other_export=*/false);
}

// The same through a nested export without write_back (or one a reload
// turned it off on): a write of a file that still has records gets a record
// of its own to order it after them, whatever its export.
TEST_F(ReplayTest, StableWriteThroughAnotherExportIsNotUndoneByARestart) {
  StableWriteOverAHeldRecord(/*other_export=*/true);
}

// A journaled write over the bytes of a stable write without evidence,
// arriving while that one is upstream, goes upstream after it and is
// acknowledged: a restart must replay it last, not the older stable
// write's bytes over it.
TEST_F(ReplayTest, RejournaledStableWriteIsNotReplayedOverANewerJournaledWrite) {
  OlderRecordHeldUpstream();                  // record 1, held
  WriteBack(2, 0, "bbbbbbbb", UNSTABLE);      // record 2
  journal_.Complete();
  WriteBack(3, 0, "cccc", FILE_SYNC, /*may_buffer=*/false);  // over record 2
  ASSERT_EQ(up_.calls.size(), 1u);
  ASSERT_EQ(DecodeWriteArgs(up_.calls[0].args).data.substr(0, 4), "cccc");
  WriteBack(4, 0, "dddd", UNSTABLE);          // record 3, while write 3 is upstream
  journal_.Complete();
  ASSERT_NE(ReplyOf(4), nullptr);
  ASSERT_EQ(ReplyOf(4)->status, NFS3_OK);
  up_.Answer(0, WriteOk(8, FILE_SYNC, kV1, Attr(8, 3)));
  journal_.Complete();
  // Write 3's own WRITE made it stable: answered, though newer bytes
  // (write 4's) have replaced its own in the buffer.
  ASSERT_NE(ReplyOf(3), nullptr);
  ASSERT_EQ(ReplyOf(3)->status, NFS3_OK);
  EXPECT_EQ(Replayed(0, 4), "dddd")
      << "a restart replays the stable write's bytes over the newer acknowledged write 4";
  Settle();  // write 4's bytes go after write 3's WRITE was answered
  bool sent = false;
  for (const auto& c : bg_.calls) {
    sent |= c.proc == NFSPROC3_WRITE && DecodeWriteArgs(c.args).data == "dddd";
  }
  EXPECT_TRUE(sent);
  EXPECT_EQ(Replayed(0, 4), "????") << "stable upstream: nothing left to replay";
}

// Refusals are counted per retry round, not per refused WRITE: data
// acknowledged from the journal spanning more upstream WRITEs than the
// 8 retries of the default give-up time is not given up on at the first
// refusal round.
TEST_F(ReplayTest, RefusalsAreCountedPerRoundNotPerRefusedWrite) {
  const uint64_t kChunk = 64 << 10;  // write_size
  for (int i = 0; i < 9; ++i) {
    WriteBack(10 + i, i * kChunk, std::string(kChunk, static_cast<char>('a' + i)), UNSTABLE);
  }
  journal_.Complete();
  ASSERT_EQ(replies_.size(), 9u);
  ASSERT_EQ(bg_.calls.size(), 9u) << "each whole WRITE goes at once";
  for (size_t i = 0; i < 9; ++i) bg_.Answer(i, WriteFail(NFS3ERR_NOSPC));
  EXPECT_EQ(wp_->stats().buffered_bytes, 9 * kChunk)
      << "acknowledged data was given up on after one refusal round";
  // The quota is freed: a retry 100 ms later sends everything again.
  Advance(std::chrono::milliseconds(100));
  uint64_t resent = 0;
  for (size_t i = 9; i < bg_.calls.size(); ++i) {
    if (bg_.calls[i].proc == NFSPROC3_WRITE) resent += DecodeWriteArgs(bg_.calls[i].args).data.size();
  }
  EXPECT_EQ(resent, 9 * kChunk);
}

// Data acknowledged UNSTABLE from the journal that the upstream keeps
// refusing is given up on as without the journal: the file's write
// verifier changes (Failed, lost_), so that every client of the file, not
// only the one whose COMMIT meets the error, resends (DESIGN rule 2).
TEST_F(ReplayTest, GivenUpUnstableDataChangesTheVerifierOtherClientsSee) {
  WriteBack(1, 0, "aaaa", UNSTABLE);
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  const Verf acked = ReplyOf(1)->verf;
  for (int round = 0; round < 40 && wp_->stats().buffered_bytes > 0; ++round) {
    Advance(std::chrono::seconds(31));
    for (int i = bg_.Pending(); i >= 0; i = bg_.Pending()) {
      bg_.Answer(static_cast<size_t>(i), WriteFail(NFS3ERR_DQUOT));
    }
  }
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u) << "given up on";
  CommitBack(2);  // one client meets the error
  journal_.Complete();
  ASSERT_NE(ReplyOf(2), nullptr);
  EXPECT_EQ(ReplyOf(2)->status, NFS3ERR_DQUOT);
  CommitBack(3);  // another client of the file
  journal_.Complete();
  const ClientReply* r = ReplyOf(3);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status != NFS3_OK || r->verf != acked)
      << "COMMIT answered OK with the verifier of the lost UNSTABLE write: its client "
         "never resends";
}

// A write whose append the journal refused, and whose bytes the upstream
// refused meanwhile (the file is gone: STALE), is not answered FILE_SYNC
// for data that never reached the upstream (DESIGN rule 1).
TEST_F(ReplayTest, ARefusedAppendWhoseDataTheUpstreamRefusedIsNotAnsweredStable) {
  WriteBack(1, 0, "aaaa", FILE_SYNC);  // journaled; the disk is slow
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_STALE));
  ASSERT_TRUE(replies_.empty());
  journal_.Complete(kDiskError);
  const ClientReply* r = ReplyOf(1);
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r->status, NFS3_OK) << "answered FILE_SYNC for bytes the upstream refused";
}


// A zero-length stable write (no ACCESS evidence) inside journaled bytes
// leaves no record behind (it goes upstream as is, once the bytes before
// it are there): after a restart, every record recovered is removed once stable
// upstream (none leaked, rule 8).
TEST_F(ReplayTest, EveryRecoveredRecordIsRemovedOnceStable) {
  OlderRecordHeldUpstream();                  // record 1, held
  WriteBack(2, 0, "bbbbbbbb", UNSTABLE);      // record 2
  journal_.Complete();
  WriteBack(3, 2, "", FILE_SYNC, /*may_buffer=*/false);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(8, FILE_SYNC, kV1, Attr(8, 3)));
  journal_.Complete();
  // The process dies; a new one replays what the journal holds.
  std::set<uint64_t> gone(journal_.removed.begin(), journal_.removed.end());
  std::map<uint64_t, JournalRecord> left;
  for (const JournalRecord& r : journal_.records) {
    if (!gone.contains(r.seq)) left[r.seq] = r;
  }
  ASSERT_FALSE(left.empty());
  timers_.clear();  // the dead process's timers and calls
  up_.calls.clear();
  bg_.calls.clear();
  Make();
  for (const auto& [seq, r] : left) wp_->Recover(r, back_);
  wp_->FlushAll();
  Settle();
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  const std::set<uint64_t> removed(journal_.removed.begin(), journal_.removed.end());
  for (const auto& [seq, r] : left) {
    EXPECT_TRUE(removed.contains(seq))
        << "record " << seq << " (" << r.data.size() << " bytes at " << r.offset
        << ") recovered, stable upstream, never removed";
  }
}

// A journal that refuses every append (disk error): a journaled stable
// write is then answered once stable upstream, but OnJournaled queues it at
// the back of the file's FIFO when the journal's answer comes, behind the
// stable writes that arrived after it: replies out of arrival order
// (DESIGN rule 3).
TEST_F(ReplayTest, ARefusedAppendKeepsItsPlaceInTheFifo) {
  WriteBack(1, 0, "aaaa", FILE_SYNC);                        // journaled
  WriteBack(2, 4096, "bbbb", FILE_SYNC, /*may_buffer=*/false);  // not journaled, after it
  journal_.Complete(kDiskError);
  Settle();
  journal_.Complete();  // the records' removals on disk
  ASSERT_EQ(replies_.size(), 2u);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
}

// After a restart no client asks FSINFO again (they mounted before it), and
// the journal is replayed before any client does: until the server's write
// sizes are known, upstream WRITEs stay small, and the proxy asks FSINFO
// itself, on the file it writes, at the first one.
TEST_F(WritePathTest, UntilTheServersSizesAreKnownWritesAreSmallAndFsinfoIsAsked) {
  options_.write_size = 0;  // the server's preferred size, once known
  Make(/*learned=*/false);
  const std::string a(40000, 'a');
  Write(1, 0, a, FILE_SYNC);
  Advance(std::chrono::milliseconds(10));  // past any gathering window
  // Sent cut to the size known to fit, and FSINFO asked.
  ASSERT_EQ(up_.calls.size(), 3u);
  EXPECT_EQ(up_.Count(NFSPROC3_FSINFO), 1u);
  size_t sent = 0;
  for (const auto& c : up_.calls) {
    if (c.proc != NFSPROC3_WRITE) continue;
    const SentWrite w = DecodeWriteArgs(c.args);
    EXPECT_LE(w.data.size(), WritePath::kUnlearnedWriteMax);
    sent += w.data.size();
  }
  EXPECT_EQ(sent, a.size());
  for (size_t i = 0; i < up_.calls.size(); ++i) {
    if (up_.calls[i].proc == NFSPROC3_FSINFO) up_.Answer(i, FsinfoResults(1u << 20, 1u << 20));
  }
  EXPECT_EQ(wp_->write_size(), 1u << 20) << "the server's preferred size, learned";
  // Learned: the next batch goes whole.
  for (size_t i = 0; i < up_.calls.size(); ++i) {
    if (up_.calls[i].proc == NFSPROC3_WRITE && !up_.calls[i].answered) {
      const SentWrite w = DecodeWriteArgs(up_.calls[i].args);
      up_.Answer(i, WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1,
                            Attr(a.size(), 1)));
    }
  }
  const size_t before = up_.calls.size();
  const std::string b(100000, 'b');
  Write(2, 40000, b, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), before + 1);
  EXPECT_EQ(DecodeWriteArgs(up_.calls.back().args).data.size(), b.size());
  EXPECT_EQ(up_.Count(NFSPROC3_FSINFO), 1u) << "asked once";
}

// An FSINFO that teaches nothing (refused for the writer's credential) is
// not asked again at every write, which would double the calls: only after
// a while.
TEST_F(WritePathTest, AnFsinfoThatTaughtNothingIsAskedAgainOnlyAfterAWhile) {
  Make(/*learned=*/false);
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  ASSERT_EQ(up_.Count(NFSPROC3_FSINFO), 1u);
  FSINFO3res refused{};
  refused.status = NFS3ERR_ACCES;
  for (size_t i = 0; i < up_.calls.size(); ++i) {
    if (up_.calls[i].proc == NFSPROC3_FSINFO) up_.Answer(i, Xdr(Proc(xdr_FSINFO3res), refused));
  }
  for (int i = 0; i < 5; ++i) Write(2 + i, 1000 * (i + 1), std::string(1000, 'b'), UNSTABLE);
  EXPECT_EQ(up_.Count(NFSPROC3_FSINFO), 1u) << "asked again at every write";
  Advance(WritePath::kFsinfoRetry);
  Write(9, 9000, std::string(1000, 'c'), UNSTABLE);
  EXPECT_EQ(up_.Count(NFSPROC3_FSINFO), 2u) << "never asked again";
}

}  // namespace
}  // namespace nfsedge::write_path_test
