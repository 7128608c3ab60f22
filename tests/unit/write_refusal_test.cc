// Refusals of written data by the upstream on a write_back export (edge
// journal): what was acknowledged from the journal, or replaced such bytes,
// is kept and tried again, for a bounded time ([write] journal_give_up_s;
// 0: until the upstream takes it); a write the
// journal refused, answered with the upstream's error, is not sent again;
// calls held for the file are answered once the data is given up on.
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "proxy/write_path_state.h"
#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

using test_xdr::Xdr;

const Status kDiskError(StatusCode::kIoError, "disk");

// Answers every pending call of `u`: WRITEs and COMMITs of `refused_fh`
// with `refusal`, every other one as taken (UNSTABLE / COMMIT with kV1).
// Returns the number answered.
size_t AnswerRefusing(HeldUpstream& u, const std::string& refused_fh, nfsstat3 refusal) {
  size_t n = 0;
  for (int i = u.Pending(); i >= 0; i = u.Pending()) {
    ++n;
    HeldUpstream::Held& c = u.calls[static_cast<size_t>(i)];
    if (c.proc == NFSPROC3_WRITE) {
      XdrValue<WRITE3args> a(Proc(xdr_WRITE3args));
      EXPECT_TRUE(a.Decode(c.args));
      const std::string fh(a->file.data.data_val, a->file.data.data_len);
      const uint32_t count = a->data.data_len;
      u.Answer(static_cast<size_t>(i), fh == refused_fh
                                           ? WriteFail(refusal)
                                           : WriteOk(count, UNSTABLE, kV1, Attr(0, 9)));
    } else {
      XdrValue<COMMIT3args> a(Proc(xdr_COMMIT3args));
      EXPECT_TRUE(a.Decode(c.args));
      const std::string fh(a->file.data.data_val, a->file.data.data_len);
      if (fh == refused_fh) {
        COMMIT3res res{};
        res.status = refusal;
        u.Answer(static_cast<size_t>(i), Xdr(Proc(xdr_COMMIT3res), res));
      } else {
        u.Answer(static_cast<size_t>(i), CommitOk(kV1, Attr(0, 10)));
      }
    }
  }
  return n;
}

class RefusalTest : public JournalTest {
 protected:
  // Runs the clock for `d` in steps of 100 ms, answering every upstream
  // call as AnswerRefusing does.
  void RunRefusing(Duration d, const std::string& refused_fh, nfsstat3 refusal) {
    const MonoTime until = clock_.MonoNow() + d;
    while (clock_.MonoNow() < until) {
      Advance(std::chrono::milliseconds(100));
      while (AnswerRefusing(up_, refused_fh, refusal) + AnswerRefusing(bg_, refused_fh, refusal) >
             0) {
      }
      journal_.Complete();  // the edge's disk works: only the upstream refuses
    }
  }
  // Journaled write `tag` to `fh`, acknowledged from the journal.
  void Acknowledged(const std::string& fh, int tag, uint64_t off, const std::string& data) {
    fh_ = fh;
    WriteBack(tag, off, data, UNSTABLE);
    journal_.Complete();
  }
};

// A write whose append the journal refused was never acknowledged: it is
// answered once stable upstream. When the upstream refuses it (NOSPC) its
// client is told so; its bytes hold no acknowledged record (they overwrote
// nothing), so nothing justifies keeping them. Kept, they are sent again and
// land later, after the client was told the write failed (resurrected data,
// possibly over what was written at the head office since).
TEST_F(RefusalTest, AWriteTheJournalRefusedIsDroppedWithTheUpstreamsError) {
  WriteBack(1, 0, std::string(1000, 'x'), FILE_SYNC);
  journal_.Complete(kDiskError);  // answered once stable upstream instead
  ASSERT_TRUE(replies_.empty());
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteFail(NFS3ERR_NOSPC));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  ASSERT_EQ(replies_[0].second.status, NFS3ERR_NOSPC) << "the client learns the write failed";
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u) << "the failed write's bytes are still buffered";
  // Space is freed at the upstream; whatever the proxy still sends lands.
  const size_t before = up_.calls.size() + bg_.calls.size();
  Settle();
  size_t resent = 0;
  for (HeldUpstream* u : {&up_, &bg_}) {
    for (const HeldUpstream::Held& c : u->calls) {
      if (c.proc == NFSPROC3_WRITE && DecodeWriteArgs(c.args).data == std::string(1000, 'x')) {
        resent++;
      }
    }
  }
  EXPECT_EQ(resent, 1u) << "the write its client was told failed (NOSPC) reached the upstream "
                        << (resent - 1) << " more time(s) later ("
                        << (up_.calls.size() + bg_.calls.size() - before) << " calls after)";
}

// One file's acknowledged data that the upstream keeps refusing (its owner
// is over quota) is given up on after a bounded number of tries: records
// are removed in order, so until then it holds back the removal of every
// newer record, of every file (disk and memory, DESIGN rule 8), and a
// restart would replay them all. Afterwards the journal is empty and the
// refused file's next COMMIT learns the error.
TEST_F(RefusalTest, ARefusalThatLastsIsGivenUpOnAndLetsTheJournalEmpty) {
  const std::string over_quota = "FH-OVER-QUOTA", other = "FH-OTHER";
  Acknowledged(over_quota, 1, 0, std::string(1000, 'q'));  // record 1
  ASSERT_EQ(replies_.size(), 1u);
  wp_->FlushAll();
  ASSERT_EQ(AnswerRefusing(bg_, over_quota, NFS3ERR_DQUOT), 1u);
  ASSERT_EQ(wp_->stats().buffered_bytes, 1000u) << "kept for another try";
  // Another user writes another file: 20 records, all taken upstream.
  for (int i = 0; i < 20; ++i) {
    Acknowledged(other, 10 + i, static_cast<uint64_t>(i) * 4096, std::string(4096, 'o'));
  }
  RunRefusing(std::chrono::minutes(5), over_quota, NFS3ERR_DQUOT);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u) << "the refused data is given up on";
  size_t tries = 0;
  for (const HeldUpstream& u : {std::cref(up_), std::cref(bg_)}) {
    for (const HeldUpstream::Held& c : u.calls) {
      tries += c.proc == NFSPROC3_WRITE && DecodeWriteArgs(c.args).data == std::string(1000, 'q');
    }
  }
  EXPECT_EQ(tries, 9u) << "the first try and 8 more";
  std::vector<uint64_t> removed = journal_.removed;
  std::sort(removed.begin(), removed.end());
  for (uint64_t s = 1; s <= 21; ++s) {
    EXPECT_TRUE(std::binary_search(removed.begin(), removed.end(), s)) << "record " << s;
  }
  fh_ = over_quota;
  CommitBack(99);
  ASSERT_FALSE(replies_.empty());
  EXPECT_EQ(replies_.back().first, 99);
  EXPECT_EQ(replies_.back().second.status, NFS3ERR_DQUOT);
}

// A READ or GETATTR of a file is held until the upstream has answered the
// WRITEs of its buffered data (rule 4). Data acknowledged from the journal
// that the upstream refuses is kept for a while, and the held call waits
// with it, but not for as long as the refusal lasts (quota, full disk,
// permissions): else every LOOKUP and READDIRPLUS naming the file would
// hang too, and a SETATTR or truncating CREATE (Hold stable) that would
// free the quota would wait for the very data the quota refuses.
TEST_F(RefusalTest, AGetattrOfAFileWhoseJournaledDataIsRefusedIsAnswered) {
  Acknowledged(fh_, 1, 0, std::string(1000, 'q'));
  wp_->FlushAll();
  ASSERT_EQ(AnswerRefusing(bg_, fh_, NFS3ERR_DQUOT), 1u);
  ASSERT_EQ(wp_->stats().buffered_bytes, 1000u);
  bool released = false;
  const bool held = wp_->Hold(fh_, /*stable=*/false, [&released] { released = true; });
  RunRefusing(std::chrono::minutes(5), fh_, NFS3ERR_DQUOT);
  EXPECT_TRUE(!held || released)
      << "a GETATTR of the file, held behind data the upstream refused for 5 minutes, is still "
         "not answered";
  bool truncated = false;
  const bool setattr_held = wp_->Hold(fh_, /*stable=*/true, [&truncated] { truncated = true; });
  RunRefusing(std::chrono::minutes(5), fh_, NFS3ERR_DQUOT);
  EXPECT_TRUE(!setattr_held || truncated)
      << "a SETATTR (truncation to free the quota) waits for data the quota refuses";
}

// The same when the file's other bytes keep reaching the upstream: a
// writer appends (refused: the disk is full) and rewrites blocks already
// there (taken). The bound counts the rounds that refused the kept bytes,
// whatever else of the file went through meanwhile; counted per file and
// reset by any WRITE taken, the refused bytes were kept and sent again
// for ever, and the held GETATTR (and every newer journal record) with them.
TEST_F(RefusalTest, RefusedBytesAreGivenUpOnWhileOtherBytesOfTheFileGoThrough) {
  Acknowledged(fh_, 1, 0, std::string(1000, 'q'));
  wp_->FlushAll();
  ASSERT_EQ(AnswerRefusing(bg_, fh_, NFS3ERR_NOSPC), 1u);
  bool released = false;
  const bool held = wp_->Hold(fh_, /*stable=*/false, [&released] { released = true; });
  // Every 100 ms a rewrite of another range; WRITEs carrying the refused
  // bytes get NOSPC, every other call is taken.
  auto answer = [](HeldUpstream& u) {
    size_t n = 0;
    for (int i = u.Pending(); i >= 0; i = u.Pending(), ++n) {
      HeldUpstream::Held& c = u.calls[static_cast<size_t>(i)];
      if (c.proc != NFSPROC3_WRITE) {
        u.Answer(static_cast<size_t>(i), CommitOk(kV1, Attr(0, 10)));
        continue;
      }
      const SentWrite w = DecodeWriteArgs(c.args);
      u.Answer(static_cast<size_t>(i),
               w.data.find('q') != std::string::npos
                   ? WriteFail(NFS3ERR_NOSPC)
                   : WriteOk(static_cast<uint32_t>(w.data.size()), UNSTABLE, kV1, Attr(0, 9)));
    }
    return n;
  };
  for (int round = 0; round < 3000 && !(held && released); ++round) {
    Acknowledged(fh_, 100 + round, 65536, std::string(4096, 'o'));
    Advance(std::chrono::milliseconds(100));
    while (answer(up_) + answer(bg_) > 0) {
    }
  }
  EXPECT_TRUE(!held || released) << "a GETATTR held behind refused bytes for 5 minutes";
  size_t tries = 0;
  for (const HeldUpstream& u : {std::cref(up_), std::cref(bg_)}) {
    for (const HeldUpstream::Held& c : u.calls) {
      tries += c.proc == NFSPROC3_WRITE && DecodeWriteArgs(c.args).data == std::string(1000, 'q');
    }
  }
  EXPECT_LE(tries, 9u) << "the refused bytes were sent again without bound";
}

// An admin who sets journal_give_up_s = 0 keeps acknowledged data for as
// long as the upstream refuses it: nothing is lost, nothing is answered as
// an error meanwhile to a call that does not write the file, and once the
// quota is raised the data lands, the journal empties and the held GETATTR
// is answered. A give-up time set by reload applies to the refusal under way.
TEST_F(RefusalTest, WithNoGiveUpTimeRefusedDataIsKeptUntilTheUpstreamTakesIt) {
  WritePathOptions never = options_;
  never.journal_give_up = Duration::zero();
  wp_->SetLimits(never);
  Acknowledged(fh_, 1, 0, std::string(1000, 'q'));
  wp_->FlushAll();
  ASSERT_EQ(AnswerRefusing(bg_, fh_, NFS3ERR_DQUOT), 1u);
  bool released = false;
  const bool held = wp_->Hold(fh_, /*stable=*/false, [&released] { released = true; });
  ASSERT_TRUE(held);
  RunRefusing(std::chrono::minutes(10), fh_, NFS3ERR_DQUOT);
  auto tries = [this] {
    size_t n = 0;
    for (const HeldUpstream& u : {std::cref(up_), std::cref(bg_)}) {
      for (const HeldUpstream::Held& c : u.calls) {
        n += c.proc == NFSPROC3_WRITE && DecodeWriteArgs(c.args).data == std::string(1000, 'q');
      }
    }
    return n;
  };
  EXPECT_EQ(wp_->stats().buffered_bytes, 1000u) << "acknowledged data given up on";
  EXPECT_FALSE(released) << "the GETATTR was answered before the data reached the upstream";
  // 100 ms, 200 ms, ... doubling to 30 s apart: 9 tries in the first
  // 25.5 s, then one every 30 s (19 more in the 9.5 minutes left).
  EXPECT_GE(tries(), 25u) << "not sent again every 30 s at most";
  EXPECT_TRUE(journal_.removed.empty()) << "the refused record left the journal";
  // The quota is raised: the next try lands.
  RunRefusing(std::chrono::seconds(31), "FH-NONE", NFS3ERR_DQUOT);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_TRUE(released) << "the GETATTR is still held after the data landed";
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
  // The writer's next COMMIT hears of the refusal (as it would have during
  // it: its user may free space); the one after, that all is stable.
  CommitBack(2);
  CommitBack(3);
  journal_.Complete();
  ASSERT_NE(ReplyOf(2), nullptr);
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(2)->status, NFS3ERR_DQUOT);
  EXPECT_EQ(ReplyOf(3)->status, NFS3_OK) << "the data landed: nothing more to report";

  // A give-up time set by a reload during a refusal applies to it, counted
  // from its first refusal.
  const std::string other = "FH-OTHER";
  Acknowledged(other, 4, 0, std::string(1000, 'r'));
  wp_->FlushAll();
  ASSERT_EQ(AnswerRefusing(bg_, other, NFS3ERR_NOSPC), 1u);
  RunRefusing(std::chrono::minutes(2), other, NFS3ERR_NOSPC);
  ASSERT_EQ(wp_->stats().buffered_bytes, 1000u);
  WritePathOptions minute = options_;
  minute.journal_give_up = std::chrono::seconds(60);
  wp_->SetLimits(minute);
  RunRefusing(std::chrono::seconds(31), other, NFS3ERR_NOSPC);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u)
      << "refused for over 2 minutes, with a give-up time of 60 s, and still kept";
}

// A flush refused NOSPC keeps the error for the writer; a reload then turns
// write-behind off, so its next UNSTABLE WRITE is forwarded as it is: it is
// told the error first (once), not forwarded past it, and the file is not
// kept for ever for an error nobody takes.
TEST_F(WritePathTest, AKeptErrorIsToldWhenWriteBehindWasTurnedOff) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_NOSPC));
  ExportConfig c = MakeExport(5);
  c.write_behind = false;
  const Export off(0, c);
  Write(2, 1000, std::string(10, 'b'), UNSTABLE, true, &off);
  ASSERT_EQ(replies_.size(), 2u);
  EXPECT_EQ(replies_[1].second.status, NFS3ERR_NOSPC);
  EXPECT_TRUE(forwarded_.empty());
  EXPECT_EQ(wp_->buffered_files(), 0u) << "nothing left of the file";
  Write(3, 1000, std::string(10, 'b'), UNSTABLE, true, &off);
  EXPECT_EQ(forwarded_, (std::vector<int>{3})) << "told once, then forwarded";
}

// A COMMIT answered with another verifier makes its bytes go again; they
// are committed once written, without a client COMMIT or more writes: the
// flush that started it has a timer for them again.
TEST_F(WritePathTest, BytesResentAfterAVerifierChangeAreCommitted) {
  Write(1, 0, std::string(64 << 10, 'a'), UNSTABLE);
  ASSERT_EQ(bg_.calls.size(), 1u) << "a whole upstream WRITE goes at once";
  Advance(options_.flush_delay);  // the flush, with the WRITE in flight
  bg_.Answer(0, WriteOk(64 << 10, UNSTABLE, kV1, Attr(65536, 1)));
  ASSERT_EQ(bg_.calls.size(), 2u);
  ASSERT_EQ(bg_.calls[1].proc, NFSPROC3_COMMIT);
  bg_.Answer(1, CommitOk(kV2, Attr(65536, 2)));
  ASSERT_EQ(bg_.calls.size(), 3u) << "sent again";
  ASSERT_EQ(bg_.calls[2].proc, NFSPROC3_WRITE);
  bg_.Answer(2, WriteOk(64 << 10, UNSTABLE, kV2, Attr(65536, 3)));
  Advance(std::chrono::seconds(10));
  ASSERT_EQ(bg_.calls.size(), 4u) << "never committed";
  EXPECT_EQ(bg_.calls[3].proc, NFSPROC3_COMMIT);
  bg_.Answer(3, CommitOk(kV2, Attr(65536, 4)));
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}

// A WRITE answered with another verifier than an earlier, uncommitted one
// (the upstream restarted between them): the earlier bytes are lost
// upstream, so they are the proxy's again at once. A READ or GETATTR waits
// for them (DESIGN rule 4), and they are sent again, without waiting for a
// COMMIT to show the change.
TEST_F(WritePathTest, AWriteReplyWithANewVerifierTakesBackWhatTheUpstreamLost) {
  Write(1, 0, "aaaa", UNSTABLE);  // answered from the buffer
  Advance(options_.flush_delay);  // the background WRITE of "aaaa"
  ASSERT_EQ(bg_.calls.size(), 1u);
  Write(2, 4, "bbbb", UNSTABLE);  // the writer goes on
  bg_.Answer(0, WriteOk(4, UNSTABLE, kV1, Attr(4, 1)));  // written, not committed
  Advance(options_.flush_delay);  // the background WRITE of "bbbb"
  ASSERT_EQ(bg_.calls.size(), 2u);
  bg_.Answer(1, WriteOk(4, UNSTABLE, kV2, Attr(8, 2)));  // after a restart
  EXPECT_TRUE(wp_->Hold(fh_, /*stable=*/false, [] {}))
      << "a READ let through to an upstream that lost bytes the proxy acknowledged";
  Advance(options_.flush_delay);
  // (As a call a client waits for: the held READ.)
  ASSERT_EQ(up_.calls.size(), 1u) << "bytes 0-3 not sent again";
  ASSERT_EQ(up_.calls[0].proc, NFSPROC3_WRITE);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[0].args).offset, 0u);
  EXPECT_EQ(wp_->stats().resent, 4u);
}

// A COMMIT refused for the writer it went as (ACCES) keeps that writer's
// journaled bytes for another try; the next COMMIT goes as another writer,
// whose bytes it commits, not as the refused one again, round after round.
TEST_F(RefusalTest, TheNextCommitGoesAsAWriterNotRefused) {
  fh_ = "F";
  cred_ = Cred("uid-X");
  Acknowledged("F", 1, 0, std::string(1000, 'x'));
  cred_ = Cred("uid-Y");
  Acknowledged("F", 2, 5000, std::string(10, 'y'));
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  Advance(options_.flush_delay);
  for (size_t i = 0; i < bg_.calls.size(); ++i) {  // the WRITEs, not the COMMIT
    if (!bg_.calls[i].answered && bg_.calls[i].proc == NFSPROC3_WRITE) AnswerOne(bg_, i);
  }
  ASSERT_EQ(bg_.Count(NFSPROC3_COMMIT), 1u);
  const size_t c = bg_.calls.size() - 1;
  ASSERT_EQ(bg_.calls[c].proc, NFSPROC3_COMMIT);
  const std::string refused = bg_.calls[c].cred.body;
  COMMIT3res res{};
  res.status = NFS3ERR_ACCES;
  bg_.Answer(c, Xdr(Proc(xdr_COMMIT3res), res));
  journal_.Complete();
  for (int round = 0; round < 50 && bg_.Count(NFSPROC3_COMMIT) < 2; ++round) {
    Advance(std::chrono::milliseconds(100));
    for (size_t i = 0; i < bg_.calls.size(); ++i) {
      if (!bg_.calls[i].answered && bg_.calls[i].proc == NFSPROC3_WRITE) AnswerOne(bg_, i);
    }
  }
  ASSERT_GE(bg_.Count(NFSPROC3_COMMIT), 2u);
  size_t next = 0;
  for (size_t i = c + 1; i < bg_.calls.size(); ++i) {
    if (bg_.calls[i].proc == NFSPROC3_COMMIT) next = i;
  }
  EXPECT_NE(bg_.calls[next].cred.body, refused) << "sent as the refused writer again";
}

// Errors kept for writers do not keep every file (DESIGN rule 8): a writer
// over its quota that never comes back to the files it wrote leaves at most
// kMaxIdleFiles of them kept. One forgotten still tells its writer through
// the verifier: its COMMIT shows another than its WRITE was answered with,
// so the client sends its bytes again (and meets the error itself).
TEST_F(WritePathTest, KeptErrorsDoNotKeepEveryFile) {
  constexpr int kFiles = 6000;
  for (int i = 0; i < kFiles; ++i) {
    fh_ = "file-" + std::to_string(i);
    Write(i, 0, "x", UNSTABLE);
  }
  ASSERT_EQ(replies_.size(), static_cast<size_t>(kFiles));
  const Verf written = replies_[0].second.verf;
  for (int round = 0; round < 2000 && wp_->stats().buffered_bytes > 0; ++round) {
    Advance(options_.flush_delay);
    AnswerAllBut(bg_, 'x', NFS3ERR_DQUOT);
    AnswerAllBut(up_, 'x', NFS3ERR_DQUOT);
  }
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_LE(wp_->tracked_files(), write_path_internal::kMaxIdleFiles);
  fh_ = "file-0";
  Commit(kFiles);
  ASSERT_EQ(replies_.size(), static_cast<size_t>(kFiles + 1));
  const ClientReply& c = replies_.back().second;
  EXPECT_TRUE(c.status != NFS3_OK || c.verf != written)
      << "the writer of a forgotten file is told neither by an error nor by the verifier";
}

// An upstream that answers without running the call (SYSTEM_ERR,
// GARBAGE_ARGS, PROC_UNAVAIL): tried again after the retry delay, and, as
// for WRITEs that write nothing, the tenth such answer in a row fails the
// data with NFS3ERR_IO; the writers are told, not left waiting for ever.
TEST_F(WritePathTest, AWriteTheUpstreamWillNotRunFailsAfterAFewTries) {
  Write(1, 0, std::string(100, 'a'), FILE_SYNC, true, &nowait_);
  for (int i = 0; i < 50 && replies_.empty(); ++i) {
    const int p = up_.Pending();
    if (p >= 0) up_.NotRun(static_cast<size_t>(p), i % 2 ? kSystemErr : kGarbageArgs);
    Advance(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(up_.calls.size(), 10u);
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_EQ(replies_[0].second.status, NFS3ERR_IO);
}

TEST_F(WritePathTest, ACommitTheUpstreamWillNotRunFailsAfterAFewTries) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Commit(2);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  for (int i = 0; i < 50 && replies_.size() < 2; ++i) {
    const int p = up_.Pending();
    if (p >= 0) {
      ASSERT_EQ(up_.calls[static_cast<size_t>(p)].proc, NFSPROC3_COMMIT);
      up_.NotRun(static_cast<size_t>(p), kSystemErr);
    }
    Advance(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(up_.Count(NFSPROC3_COMMIT), 10u);
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(replies_[1].second.status, NFS3ERR_IO);
}

}  // namespace
}  // namespace nfsedge::write_path_test
