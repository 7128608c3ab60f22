// The edge journal's verifier and order after losses: data answered from
// the journal and lost changes the verifier every client sees, also across
// a restart; a write that replaced only unacknowledged bytes is not kept
// after a refusal; a COMMIT keeps its arrival place though its file was
// forgotten meanwhile.
#include <chrono>
#include <string>
#include <vector>

#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

const Status kDiskError(StatusCode::kIoError, "disk");

class JournalLossTest : public JournalTest {
 protected:
};

// (rule 2) a file that lost data answered from the journal, while other
// files lose theirs too: its clients never see the verifier their lost
// UNSTABLE write was answered with again.
TEST_F(JournalLossTest, AFilesLossIsNotUndoneByOtherFilesLosses) {
  options_.max_background = 1u << 20;
  Make();
  fh_ = "file-A";  // lost first
  WriteBack(1, 0, "aaaa", UNSTABLE);
  fh_ = "file-B";  // lost second
  WriteBack(2, 0, "bbbb", UNSTABLE);
  for (int i = 0; i < 4095; ++i) {  // 4097 files in all: one eviction
    fh_ = "other-" + std::to_string(i);
    WriteBack(100, 0, "xxxx", UNSTABLE);
  }
  journal_.Complete();
  ASSERT_NE(ReplyOf(2), nullptr);
  ASSERT_EQ(ReplyOf(2)->status, NFS3_OK);
  const Verf acked = ReplyOf(2)->verf;
  RefuseUntilGivenUp(NFS3ERR_DQUOT);
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  fh_ = "file-B";
  CommitBack(3);  // meets file B's error
  journal_.Complete();
  ASSERT_NE(ReplyOf(3), nullptr);
  ASSERT_EQ(ReplyOf(3)->status, NFS3ERR_DQUOT);
  CommitBack(4);  // the client of write 2
  journal_.Complete();
  const ClientReply* r = ReplyOf(4);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status != NFS3_OK || r->verf != acked)
      << "file B's COMMIT answers the verifier its lost UNSTABLE write had";
}

// (rule 2) the journal's verifier is kept across restarts. Data answered
// UNSTABLE from the journal and given up on (its record removed) before a
// restart: after the restart its client's COMMIT must not get OK with the
// verifier the lost write was answered with.
TEST_F(JournalLossTest, DataGivenUpBeforeARestartStillChangesTheVerifier) {
  WriteBack(1, 0, "aaaa", UNSTABLE);
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  const Verf acked = ReplyOf(1)->verf;
  RefuseUntilGivenUp(NFS3ERR_DQUOT);
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  journal_.Complete();  // the removal of record 1 reaches the disk
  // The process restarts: no record is left to recover.
  timers_.clear();
  up_.calls.clear();
  bg_.calls.clear();
  Make();
  CommitBack(2);  // the client of write 1
  journal_.Complete();
  const ClientReply* r = ReplyOf(2);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status != NFS3_OK || r->verf != acked)
      << "after a restart, COMMIT OK with the verifier of the UNSTABLE write lost before it";
}

// (docs "a write not answered from the journal (no evidence, or its append
// refused) that replaced nothing acknowledged is not [kept] (its client
// got the upstream's error)"; rule 8: kept data holds the file's reads)
// An unevidenced write over another unevidenced one (nothing acknowledged
// anywhere) is not kept after a refusal and retried for ~25 s: both
// clients were answered the error.
TEST_F(JournalLossTest, UnevidencedOverUnevidencedIsNotKeptOnRefusal) {
  WriteBack(1, 0, "aaaa", FILE_SYNC, /*may_buffer=*/false);  // lone: goes at once
  ASSERT_EQ(up_.calls.size(), 1u);
  WriteBack(2, 0, "bbbb", FILE_SYNC, /*may_buffer=*/false);  // over it
  journal_.Complete();  // both records on disk
  up_.Answer(0, WriteOk(4, FILE_SYNC, kV1, Attr(4, 3)));  // "aaaa": replaced meanwhile
  Advance(std::chrono::milliseconds(5));
  const int pending = up_.Pending();
  ASSERT_GE(pending, 0);
  ASSERT_EQ(DecodeWriteArgs(up_.calls[static_cast<size_t>(pending)].args).data, "bbbb");
  up_.Answer(static_cast<size_t>(pending), WriteFail(NFS3ERR_NOSPC));
  journal_.Complete();  // the records' removals on disk
  ASSERT_NE(ReplyOf(1), nullptr);
  ASSERT_NE(ReplyOf(2), nullptr);
  EXPECT_EQ(ReplyOf(2)->status, NFS3ERR_NOSPC);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u)
      << "bytes that replaced nothing acknowledged, answered with the error, are kept";
}

// (rule 3) a write_back COMMIT, then a write, on a file forgotten (idle,
// no gathering history: lone_after = 0) before the journal answers: when
// both the sync and the append are refused, the COMMIT is still answered
// first.
TEST_F(JournalLossTest, RefusedCommitKeepsItsPlaceAcrossAForgottenFile) {
  options_.lone_after = 0;
  Make();
  WriteBack(1, 0, "aaaa", UNSTABLE);
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  CommitBack(2);  // stamp 1; the disk is slow
  Settle();       // record 1 stable upstream: the file is forgotten
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  WriteBack(3, 8, "bbbb", FILE_SYNC);  // after the COMMIT
  journal_.Complete(kDiskError);       // the sync and the append refused
  Settle();
  journal_.Complete();  // the records' removals on disk
  ASSERT_EQ(replies_.size(), 3u);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace nfsedge::write_path_test
