// The edge journal's edges: a write without ACCESS evidence over
// acknowledged bytes, and its answer only once its own record is written;
// refusals given up on per round; the verifiers clients see when data
// answered from the journal is lost (recovered data too, and after lost_
// forgets a file); the order of replies when appends or syncs are refused;
// STALE files. Each test states the rule it holds.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "proxy/write_path_state.h"
#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

const Status kDiskError(StatusCode::kIoError, "disk");

class JournalEdgeTest : public JournalTest {
 protected:
  // What a restart would write at [off, off + len) if the process died now:
  // the records the disk has taken ("okN") and whose removal has not
  // reached the disk, replayed in sequence order. A removal is on disk
  // once a batch completed after it was queued (FakeJournal::Complete).
  std::string DurableReplayed(uint64_t off, size_t len) const {
    size_t last_batch = 0;  // index just past the last "ok"/"fail" event
    for (size_t i = 0; i < journal_.events.size(); ++i) {
      const std::string& e = journal_.events[i];
      if (e.rfind("ok", 0) == 0 || e.rfind("fail", 0) == 0) last_batch = i + 1;
    }
    std::set<uint64_t> on_disk, removed;
    for (size_t i = 0; i < journal_.events.size(); ++i) {
      const std::string& e = journal_.events[i];
      if (e.rfind("ok", 0) == 0) on_disk.insert(std::stoull(e.substr(2)));
      if (e[0] == '-' && i < last_batch) removed.insert(std::stoull(e.substr(1)));
    }
    std::map<uint64_t, const JournalRecord*> by_seq;
    for (const JournalRecord& r : journal_.records) by_seq[r.seq] = &r;
    std::string out(len, '?');
    for (const auto& [seq, r] : by_seq) {
      if (!on_disk.contains(seq) || removed.contains(seq) || r->fh != fh_) continue;
      for (size_t i = 0; i < r->data.size(); ++i) {
        const uint64_t at = r->offset + i;
        if (at >= off && at < off + len) out[at - off] = r->data[i];
      }
    }
    return out;
  }
  // Answers every pending call of `u` from index `from` with `reply`;
  // returns the new `from`.
  static size_t AnswerFrom(HeldUpstream& u, size_t from, const std::string& reply) {
    for (; from < u.calls.size(); ++from) {
      if (!u.calls[from].answered) u.Answer(from, reply);
    }
    return from;
  }
};

// (rule 1, docs "Bytes that replaced acknowledged ones ... are kept
// the same way") a stable write without ACCESS evidence over bytes
// answered FILE_SYNC from the journal. Once its own (unacknowledged)
// record is on disk, OnJournaled releases the older record (removed from
// the journal) and KeepsAcknowledged() no longer sees that the piece
// replaced acknowledged bytes (overwritten_ is gone): an upstream refusal
// drops it at once. The acknowledged "aaaa" is then neither upstream nor in
// the journal.
TEST_F(JournalEdgeTest, UnevidencedWriteOverAcknowledgedBytesIsKeptOnRefusal) {
  WriteBack(1, 0, "aaaa", FILE_SYNC);  // journaled, answered FILE_SYNC
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  ASSERT_EQ(ReplyOf(1)->status, NFS3_OK);
  ASSERT_EQ(ReplyOf(1)->committed, FILE_SYNC);
  WriteBack(2, 0, "bbbb", FILE_SYNC, /*may_buffer=*/false);  // no evidence
  ASSERT_EQ(up_.calls.size(), 1u);
  journal_.Complete();  // its record is on disk: record 1 is let go of
  up_.Answer(0, WriteFail(NFS3ERR_NOSPC));
  EXPECT_GT(wp_->stats().buffered_bytes, 0u)
      << "bytes that replaced data answered FILE_SYNC were dropped at the first refusal";
  const std::set<uint64_t> removed(journal_.removed.begin(), journal_.removed.end());
  EXPECT_FALSE(removed.contains(1) && removed.contains(2))
      << "nothing of the range acknowledged FILE_SYNC is left: not upstream, not in the journal";
}

// (rule 1) a stable write without evidence is answered once stable
// upstream, before its own record (which orders it after the record of the
// bytes it replaced) is on disk. A crash then leaves the older journaled
// record on disk (its removal is queued after the new append) and a
// restart replays it over the write answered FILE_SYNC. So it is answered
// only once its record is written too.
TEST_F(JournalEdgeTest, UnevidencedStableWriteIsNotAnsweredBeforeItsRecordIsOnDisk) {
  WriteBack(1, 0, "bbbb", UNSTABLE);  // record 1
  journal_.Complete();
  ASSERT_EQ(ReplyOf(1)->status, NFS3_OK);
  WriteBack(2, 0, "cccc", FILE_SYNC, /*may_buffer=*/false);  // record 2, disk slow
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(4, FILE_SYNC, kV1, Attr(4, 3)));
  const ClientReply* r = ReplyOf(2);
  if (r != nullptr && r->status == NFS3_OK) {
    // The process dies now.
    EXPECT_EQ(DurableReplayed(0, 4), "cccc")
        << "write 2 answered FILE_SYNC; a restart now replays record 1 over it";
  }
}

// (rule 8 / docs "Refusals are counted per retry round") the give-up is
// decided per retry round: the round whose first refused WRITE is kept
// keeps the others; one that gives up the first gives up the rest. Were it
// decided per refused WRITE, part of the file's acknowledged data would be
// lost in one round and the rest held for another give-up time.
TEST_F(JournalEdgeTest, GiveUpIsDecidedForTheWholeRound) {
  const uint64_t kChunk = 64 << 10;  // write_size: each chunk is a WRITE
  WriteBack(1, 0, std::string(kChunk, 'a'), UNSTABLE);
  WriteBack(2, kChunk, std::string(kChunk, 'b'), UNSTABLE);
  journal_.Complete();
  ASSERT_EQ(bg_.calls.size(), 2u);
  std::vector<uint64_t> buffered;
  size_t from = 0;
  for (int round = 0; round < 40 && wp_->stats().buffered_bytes > 0; ++round) {
    from = AnswerFrom(bg_, from, WriteFail(NFS3ERR_DQUOT));
    buffered.push_back(wp_->stats().buffered_bytes);
    Advance(std::chrono::seconds(31));
  }
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  auto half = std::find(buffered.begin(), buffered.end(), kChunk);
  EXPECT_EQ(half, buffered.end())
      << "after refusal round " << (half - buffered.begin()) + 1
      << " half of the file's acknowledged data is given up, half kept (rounds with half: "
      << std::count(buffered.begin(), buffered.end(), kChunk) << ")";
}

// (rules 1, 2, 8) Bytes answered FILE_SYNC from the journal and then given
// up on change no verifier (a client does not COMMIT a FILE_SYNC write):
// the error kept for the writer is its only notice, and it outlives the
// file, which is forgotten with the idle ones (the write path keeps at most
// kMaxIdleFiles of those). uid-B writes each of `files` files FILE_SYNC
// (over its own UNSTABLE bytes with kFileSyncOverUnstable: one piece,
// answered from the buffer too, whose loss changes the journal's verifier,
// which a FILE_SYNC writer does not look at), or UNSTABLE and then
// COMMITs it (kUnstableCommitted); the upstream refuses
// (DQUOT) until the journal gives up. Returns how many of uid-B's COMMITs
// were then told.
class GivenUpTest : public JournalEdgeTest {
 protected:
  enum class Kind { kFileSync, kFileSyncOverUnstable, kUnstableCommitted };
  size_t ToldAfterGivingUp(int files, Kind kind) {
    options_.max_background = 1u << 20;
    Make();
    for (int i = 0; i < files; ++i) {
      fh_ = "file-" + std::to_string(i);
      cred_ = Cred("uid-B");
      if (kind == Kind::kFileSyncOverUnstable) WriteBack(-1, 0, "aaaa", UNSTABLE);
      WriteBack(i, 0, "bbbb", kind == Kind::kUnstableCommitted ? UNSTABLE : FILE_SYNC);
    }
    journal_.Complete();
    if (kind == Kind::kUnstableCommitted) {
      // Each COMMIT answered from the journal: the writer drops its copy.
      for (int i = 0; i < files; ++i) {
        fh_ = "file-" + std::to_string(i);
        CommitBack(-2);
      }
      journal_.Complete();
    }
    for (int round = 0; round < 40 && wp_->stats().buffered_bytes > 0; ++round) {
      Advance(std::chrono::seconds(31));
      for (HeldUpstream* u : {&up_, &bg_}) {
        for (int i = u->Pending(); i >= 0; i = u->Pending()) {
          u->Answer(static_cast<size_t>(i), WriteFail(NFS3ERR_DQUOT));
        }
      }
    }
    EXPECT_EQ(wp_->stats().buffered_bytes, 0u) << "given up";
    EXPECT_LE(wp_->tracked_files(), write_path_internal::kMaxIdleFiles) << "files kept";
    cred_ = Cred("uid-B");
    size_t told = 0;
    for (int i = 0; i < files; ++i) {
      fh_ = "file-" + std::to_string(i);
      CommitBack(files + i);
      journal_.Complete();
      if (replies_.back().second.status != NFS3_OK) told++;
    }
    return told;
  }
};

TEST_F(GivenUpTest, AFileSyncWriteGivenUpIsToldWhateverTheNumberOfFiles) {
  EXPECT_EQ(ToldAfterGivingUp(6000, Kind::kFileSync), 6000u);
}

TEST_F(GivenUpTest, AFileSyncWriteOverUnstableBytesGivenUpIsToldToo) {
  EXPECT_EQ(ToldAfterGivingUp(6000, Kind::kFileSyncOverUnstable), 6000u);
}

// Bytes answered UNSTABLE from the journal and then COMMITted from it:
// their writers dropped their copies, so a new verifier does not tell them;
// the kept error does, whatever the number of files.
TEST_F(GivenUpTest, AnUnstableWriteCommittedFromTheJournalGivenUpIsToldToo) {
  EXPECT_EQ(ToldAfterGivingUp(6000, Kind::kUnstableCommitted), 6000u);
}

// (rule 2) Recover() inserts records with acked = false. Data a
// client had been answered UNSTABLE from the journal before a restart, then
// given up on after the restart, does not change the file's verifier: the
// first COMMIT gets the error, any other client's COMMIT gets OK with the
// journal's verifier, the one its lost UNSTABLE write had.
TEST_F(JournalEdgeTest, RecoveredDataGivenUpChangesTheVerifier) {
  WriteBack(1, 0, "aaaa", UNSTABLE);
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  const Verf acked = ReplyOf(1)->verf;
  // The process dies; a new one recovers the record.
  std::vector<JournalRecord> left = journal_.records;
  timers_.clear();
  up_.calls.clear();
  bg_.calls.clear();
  Make();
  for (const JournalRecord& r : left) wp_->Recover(r, back_);
  wp_->FlushAll();
  RefuseUntilGivenUp(NFS3ERR_DQUOT);
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  CommitBack(2);  // meets the error
  journal_.Complete();
  CommitBack(3);  // the writer of record 1
  journal_.Complete();
  const ClientReply* r = ReplyOf(3);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status != NFS3_OK || r->verf != acked)
      << "COMMIT OK with the verifier of the lost UNSTABLE write: its client never resends";
}

// (rule 2) lost_ is bounded (4096 files); a file evicted from it
// goes back to the shared verifier, which Failed() changes (verifier_) for
// that reason. But a write_back file's verifier is the journal's
// (JournalVerf), which never changes: the evicted file answers COMMIT with
// the very verifier its lost UNSTABLE write had.
TEST_F(JournalEdgeTest, EvictedFromLostAWriteBackFileDoesNotGoBackToTheOldVerifier) {
  options_.max_background = 1u << 20;
  Make();
  fh_ = "lost-file-A";
  WriteBack(1, 0, "aaaa", UNSTABLE);
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  const Verf acked = ReplyOf(1)->verf;
  RefuseUntilGivenUp(NFS3ERR_DQUOT);  // file A lost its data: lost_[A] = 1
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  // 4096 other files lose theirs.
  for (int i = 0; i < 4096; ++i) {
    fh_ = "other-" + std::to_string(i);
    WriteBack(100, 0, "xxxx", UNSTABLE);
  }
  journal_.Complete();
  size_t from = bg_.calls.size();
  for (int round = 0; round < 40 && wp_->stats().buffered_bytes > 0; ++round) {
    Advance(std::chrono::seconds(31));
    from = AnswerFrom(bg_, from, WriteFail(NFS3ERR_DQUOT));
  }
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  fh_ = "lost-file-A";
  CommitBack(2);  // meets file A's error
  journal_.Complete();
  CommitBack(3);  // the client of write 1
  journal_.Complete();
  const ClientReply* r = ReplyOf(3);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status != NFS3_OK || r->verf != acked)
      << "file A, evicted from lost_, answers COMMIT with the verifier of its lost write";
}

// (rule 1) a journaled FILE_SYNC write whose append is slow, whose
// data the upstream refused until it was given up on (dropped, f.error
// set), and whose append the disk then refuses: OnJournaled finds no byte
// of it buffered, the file not stale, and answers FILE_SYNC OK for bytes
// that never reached the upstream and are in no journal.
TEST_F(JournalEdgeTest, RefusedAppendOfDataGivenUpIsNotAnsweredStable) {
  WriteBack(1, 0, "aaaa", FILE_SYNC);  // journaled; the disk is slow
  RefuseUntilGivenUp(NFS3ERR_NOSPC);
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  ASSERT_TRUE(replies_.empty());
  journal_.Complete(kDiskError);
  const ClientReply* r = ReplyOf(1);
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r->status, NFS3_OK) << "answered FILE_SYNC for bytes given up on";
}

// The same for a journaled stable write whose bytes a newer write of the
// same writer replaced before its append was on disk: when the newer
// write's bytes are given up on, the older one is not answered FILE_SYNC
// either (its bytes never reached the upstream, and its record goes).
TEST_F(JournalEdgeTest, AnOverwrittenAppendOfDataGivenUpIsNotAnsweredStable) {
  WriteBack(2, 100, "wwww", FILE_SYNC);  // journaled; the disk is slow
  WriteBack(3, 100, "WWWW", FILE_SYNC);  // the same writer, over it
  for (int round = 0; round < 40 && wp_->stats().buffered_bytes > 0; ++round) {
    Advance(std::chrono::seconds(31));
    for (HeldUpstream* u : {&bg_, &up_}) {
      for (int i = u->Pending(); i >= 0; i = u->Pending()) {
        u->Answer(static_cast<size_t>(i), WriteFail(NFS3ERR_DQUOT));
      }
    }
  }
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  journal_.Complete();  // both appends reach the disk
  const ClientReply* w2 = ReplyOf(2);
  ASSERT_NE(w2, nullptr);
  EXPECT_NE(w2->status, NFS3_OK) << "answered FILE_SYNC for bytes given up on";
}

// (rule 2) the verifier of a journaled UNSTABLE reply is taken when
// the journal answers, not when the write came. Data given up on before
// the (slow) append is answered has already changed the file's verifier:
// the write is answered UNSTABLE with the new one, its later COMMIT
// returns the same, and its client never resends the lost bytes (another
// client's COMMIT took the error).
TEST_F(JournalEdgeTest, UnstableWriteLostBeforeItsAnswerIsNotAnsweredWithTheNewVerifier) {
  WriteBack(1, 0, "aaaa", UNSTABLE);  // journaled; the disk is slow
  RefuseUntilGivenUp(NFS3ERR_DQUOT);
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  CommitBack(2);  // another client meets the error
  ASSERT_NE(ReplyOf(2), nullptr);
  ASSERT_EQ(ReplyOf(2)->status, NFS3ERR_DQUOT);
  journal_.Complete();  // write 1's append reaches the disk
  CommitBack(3);        // write 1's client commits
  journal_.Complete();
  const ClientReply* w = ReplyOf(1);
  const ClientReply* c = ReplyOf(3);
  ASSERT_NE(w, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(w->status == NFS3_OK && c->status == NFS3_OK && w->verf == c->verf)
      << "write 1's data was lost, yet its COMMIT verifier matches its write's";
}

// (rule 3) a zero-length stable write without evidence goes upstream as
// is, but not before the bytes of a journaled write that came before it
// and whose append is refused.
TEST_F(JournalEdgeTest, RefusedAppendIsAnsweredBeforeALaterZeroLengthWrite) {
  WriteBack(1, 0, "aaaa", FILE_SYNC);                     // journaled
  WriteBack(2, 2, "", FILE_SYNC, /*may_buffer=*/false);   // after it, inside its range
  journal_.Complete(kDiskError);
  EXPECT_TRUE(forwarded_.empty()) << "sent upstream before the write it follows";
  Settle();
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
  // Without evidence, a write of no bytes is the upstream's to judge (RFC
  // 1813: "barring errors due to permissions checking"): it goes as is.
  EXPECT_EQ(forwarded_, (std::vector<int>{2}));
}

// (rule 3) a write_back COMMIT whose sync the disk refuses becomes a
// waiter stamped with the file's stamp when the journal answers, not when
// it came: writes that came after it have stamps below it, and when their
// appends are refused too, OnJournaled puts them ahead of the COMMIT.
TEST_F(JournalEdgeTest, CommitBeforeRefusedAppendsIsAnsweredFirst) {
  CommitBack(1);
  WriteBack(2, 0, "aaaa", FILE_SYNC);
  WriteBack(3, 8, "bbbb", FILE_SYNC);
  journal_.Complete(kDiskError);
  Settle();
  journal_.Complete();  // the records' removals on disk
  ASSERT_EQ(replies_.size(), 3u);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
}

// (minor, STALE edge) a write_back COMMIT checks only f.error, not
// stale_: the first COMMIT after the file went stale gets STALE, a second
// one gets OK with the journal's verifier, for data acknowledged UNSTABLE
// and dropped with the file (a write_behind export answers STALE).
TEST_F(JournalEdgeTest, SecondCommitOfAStaleWriteBackFileIsStale) {
  WriteBack(1, 0, "aaaa", UNSTABLE);
  journal_.Complete();
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_STALE));
  CommitBack(2);
  journal_.Complete();
  CommitBack(3);
  journal_.Complete();
  ASSERT_NE(ReplyOf(2), nullptr);
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(2)->status, NFS3ERR_STALE);
  EXPECT_EQ(ReplyOf(3)->status, NFS3ERR_STALE) << "COMMIT OK for data dropped with a stale file";
  WriteBack(4, 0, "cccc", UNSTABLE);
  ASSERT_NE(ReplyOf(4), nullptr);
  EXPECT_EQ(ReplyOf(4)->status, NFS3ERR_STALE);  // WRITE does check stale_
}

// More files gone stale under acknowledged writes than the proxy remembers
// (a volume restored at the head office gives every file a new handle):
// the first one forgotten would answer its next COMMIT with the verifier
// its lost bytes were acknowledged under. The verifiers change instead, so
// its writer sends them again and meets the STALE itself.
TEST_F(JournalEdgeTest, AStaleFileTheProxyForgetsDoesNotCommitWithTheOldVerifier) {
  constexpr int kFiles = 4097;  // one more than the proxy keeps
  for (int i = 0; i < kFiles; ++i) {
    fh_ = "gone-" + std::to_string(i);
    WriteBack(1 + i, 0, "aaaa", UNSTABLE);
    journal_.Complete();
    Advance(options_.flush_delay);
    const int sent = bg_.Pending();
    ASSERT_GE(sent, 0) << i;
    bg_.Answer(static_cast<size_t>(sent), WriteFail(NFS3ERR_STALE));
    journal_.Complete();
  }
  ASSERT_NE(ReplyOf(1), nullptr);
  const auto acknowledged = ReplyOf(1)->verf;
  fh_ = "gone-0";
  CommitBack(kFiles + 1);
  journal_.Complete();
  const ClientReply* commit = ReplyOf(kFiles + 1);
  ASSERT_NE(commit, nullptr);
  EXPECT_TRUE(commit->status != NFS3_OK || commit->verf != acknowledged)
      << "COMMIT OK with the verifier the dropped bytes were acknowledged under";
}

// CHECK (expected to pass): stable writes without evidence on a write_back
// export still gather: one upstream FILE_SYNC WRITE for the batch.
TEST_F(JournalEdgeTest, UnevidencedStableWritesStillGather) {
  options_.lone_after = 0;
  Make();
  WriteBack(1, 0, "aaaa", FILE_SYNC, /*may_buffer=*/false);
  WriteBack(2, 4, "bbbb", FILE_SYNC, /*may_buffer=*/false);
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 1u);
  SentWrite w = DecodeWriteArgs(up_.calls[0].args);
  EXPECT_EQ(w.data, "aaaabbbb");
  EXPECT_EQ(w.stable, FILE_SYNC);
  up_.Answer(0, WriteOk(8, FILE_SYNC, kV1, Attr(8, 3)));
  journal_.Complete();
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(up_.calls.size(), 1u);
  Settle();
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_EQ(journal_.removed.size(), 2u) << "both records removed";
}

// CHECK (expected to pass): recovered records are all removed once stable,
// including one of a write without evidence (not in unacknowledged_ after
// the restart).
TEST_F(JournalEdgeTest, RecoveredUnevidencedRecordIsRemovedOnceStable) {
  WriteBack(1, 0, "aaaa", UNSTABLE);
  WriteBack(2, 2, "bbbb", FILE_SYNC, /*may_buffer=*/false);
  journal_.Complete();
  std::vector<JournalRecord> left = journal_.records;
  timers_.clear();
  up_.calls.clear();
  bg_.calls.clear();
  journal_.removed.clear();
  Make();
  for (const JournalRecord& r : left) wp_->Recover(r, back_);
  wp_->FlushAll();
  Settle();
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  std::set<uint64_t> removed(journal_.removed.begin(), journal_.removed.end());
  EXPECT_TRUE(removed.contains(1));
  EXPECT_TRUE(removed.contains(2));
}

}  // namespace
}  // namespace nfsedge::write_path_test
