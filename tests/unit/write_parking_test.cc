// Writes parked over another caller's bytes (write_path_test): they wait
// for those bytes to leave the buffer, hold no other file's writes, and
// meet what became of the file meanwhile; whose refusal reaches whom.
#include <chrono>
#include <string>
#include <vector>

#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

class ParkingTest : public JournalTest {
 protected:
  // Runs the clock for `d` in steps of 100 ms; the upstream answers
  // NFS3ERR_JUKEBOX to every WRITE of `jukebox` bytes (a file being
  // recalled from tape, say) and takes everything else.
  void RunWithJukebox(Duration d, char jukebox) {
    const MonoTime until = clock_.MonoNow() + d;
    while (clock_.MonoNow() < until) {
      Advance(std::chrono::milliseconds(100));
      while (AnswerAllBut(up_, jukebox, NFS3ERR_JUKEBOX) +
                 AnswerAllBut(bg_, jukebox, NFS3ERR_JUKEBOX) >
             0) {
      }
    }
  }
  // User A's UNSTABLE write of file "X" is answered from the buffer; its
  // background WRITE meets NFS3ERR_JUKEBOX (tried again in 100 ms). User B
  // then writes the same bytes: they wait for A's to go upstream.
  void ParkBehindAJukeboxedWrite() {
    fh_ = "X";
    cred_ = Cred("uid-A");
    Write(1, 0, std::string(4096, 'a'), UNSTABLE);
    ASSERT_NE(ReplyOf(1), nullptr);
    Advance(options_.flush_delay);  // the flush delay sends it
    ASSERT_EQ(bg_.calls.size(), 1u);
    bg_.Answer(0, WriteFail(NFS3ERR_JUKEBOX));
    cred_ = Cred("uid-B");
    Write(2, 0, std::string(4096, 'b'), UNSTABLE);
  }
};

// Liveness, head of line. A write parked because it would replace another
// caller's bytes (B's, on file X, during a JUKEBOX retry) holds no write of
// another file: user C's write of file Y, under every buffer bound, is
// answered while X's server answers JUKEBOX (2 s here; a tape recall can
// take minutes).
TEST_F(ParkingTest, AWriteOfAnotherFileIsNotHeldBehindAWriteParkedForOthersBytes) {
  ParkBehindAJukeboxedWrite();
  fh_ = "Y";
  cred_ = Cred("uid-C");
  Write(3, 0, std::string(4096, 'c'), UNSTABLE);
  RunWithJukebox(std::chrono::seconds(2), 'a');
  EXPECT_LT(wp_->stats().buffered_bytes + 4096, options_.max_bytes);
  const ClientReply* r = ReplyOf(3);
  ASSERT_NE(r, nullptr) << "C's write of file Y, within every bound, is still unanswered after "
                           "2 s: it waits behind B's write of X, which waits for X's JUKEBOX";
  EXPECT_EQ(r->status, NFS3_OK);
}

// Liveness of the parked write itself: B's write waits while A's bytes are
// in the buffer (sent again at every retry, every 100 ms, and answered
// JUKEBOX), and goes in as soon as the upstream takes them.
TEST_F(ParkingTest, AParkedWriteIsTakenOnceTheOtherCallersBytesLeaveTheBuffer) {
  ParkBehindAJukeboxedWrite();
  ASSERT_EQ(ReplyOf(2), nullptr) << "(B waits: A's bytes are not sent during the retry delay)";
  RunWithJukebox(std::chrono::seconds(2), 'a');
  EXPECT_EQ(ReplyOf(2), nullptr) << "taken while A's bytes are still in the buffer";
  RunWithJukebox(std::chrono::seconds(1), 'z');  // the upstream takes A's bytes now
  size_t a_sent = 0;
  for (const auto& c : bg_.calls) {
    a_sent += c.proc == NFSPROC3_WRITE && DecodeWriteArgs(c.args).data == std::string(4096, 'a');
  }
  for (const auto& c : up_.calls) {
    a_sent += c.proc == NFSPROC3_WRITE && DecodeWriteArgs(c.args).data == std::string(4096, 'a');
  }
  ASSERT_GE(a_sent, 10u) << "A's bytes went upstream again and again";
  const ClientReply* r = ReplyOf(2);
  ASSERT_NE(r, nullptr) << "B's write is not taken once A's bytes are stable upstream";
  EXPECT_EQ(r->status, NFS3_OK);
}

// Attribution. User C's FILE_SYNC write and user A's (elsewhere in the
// file) go as one batch: UNSTABLE WRITEs (kV1), then a COMMIT. While the
// COMMIT is upstream, user B writes C's bytes (written, not yet committed:
// B's write waits for them). The COMMIT returns kV1: C's bytes are stable
// upstream (RFC 1813; DESIGN rule 1's second way). B's own WRITE is then
// refused: B is over quota. C must not be told B's NFS3ERR_DQUOT ("one
// user's quota is not another's"): its data is on the server's disk.
TEST_F(ParkingTest, AWriteCommittedUpstreamIsNotToldTheRefusalOfTheBytesThatReplacedIt) {
  options_.lone_after = 0;  // the file gathers: C and A form one batch
  options_.journal = nullptr;
  Make();
  const std::string a(4096, 'a'), b(4096, 'b'), c(4096, 'c');
  cred_ = Cred("uid-C");
  Write(1, 0, c, FILE_SYNC);
  cred_ = Cred("uid-A");
  Write(2, 65536, a, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), 2u);
  ASSERT_EQ(DecodeWriteArgs(up_.calls[0].args).stable, UNSTABLE);
  up_.Answer(0, WriteOk(4096, UNSTABLE, kV1, Attr(69632, 1)));
  up_.Answer(1, WriteOk(4096, UNSTABLE, kV1, Attr(69632, 2)));
  ASSERT_EQ(up_.calls.size(), 3u);
  ASSERT_EQ(up_.calls[2].proc, static_cast<uint32_t>(NFSPROC3_COMMIT));
  cred_ = Cred("uid-B");
  Write(3, 0, b, FILE_SYNC);
  // The COMMIT, sent after C's WRITE was answered, returns C's verifier.
  up_.Answer(2, CommitOk(kV1, Attr(69632, 3)));
  for (int round = 0; round < 5 && replies_.size() < 3; ++round) {
    AnswerAllBut(up_, 'b', NFS3ERR_DQUOT);
    Advance(std::chrono::milliseconds(10));
  }
  ASSERT_NE(ReplyOf(1), nullptr);
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(3)->status, NFS3ERR_DQUOT);
  EXPECT_EQ(ReplyOf(1)->status, NFS3_OK)
      << "C's bytes were written (kV1) and committed (kV1) upstream, yet C is told B's DQUOT";
}

// After STALE. User A's FILE_SYNC write of X is upstream; A writes the
// same bytes again UNSTABLE (answered from the buffer, unsent over the
// WRITE in flight). User B's write of those bytes waits for A's. The
// upstream answers A's WRITE NFS3ERR_STALE: X is gone, and A's waiting
// write is told so. B's write, taken from the queue after that, is
// answered STALE too, as a write arriving now is, not NFS3_OK from the
// buffer for a file the proxy knows is removed.
TEST_F(ParkingTest, AWriteParkedOverAFileFoundStaleIsNotAnsweredOk) {
  fh_ = "X";
  cred_ = Cred("uid-A");
  Write(1, 0, std::string(4096, 'a'), FILE_SYNC);  // a new file: lone, sent at once
  ASSERT_EQ(up_.calls.size(), 1u);
  Write(2, 0, std::string(4096, 'A'), UNSTABLE);
  ASSERT_NE(ReplyOf(2), nullptr);
  cred_ = Cred("uid-B");
  Write(3, 0, std::string(4096, 'b'), UNSTABLE);
  ASSERT_EQ(ReplyOf(3), nullptr) << "(B waits for A's unsent bytes)";
  up_.Answer(0, WriteFail(NFS3ERR_STALE));
  ASSERT_NE(ReplyOf(1), nullptr);
  EXPECT_EQ(ReplyOf(1)->status, NFS3ERR_STALE);
  // Control: a write of X now is answered STALE.
  cred_ = Cred("uid-D");
  Write(4, 65536, std::string(16, 'd'), UNSTABLE);
  ASSERT_NE(ReplyOf(4), nullptr);
  ASSERT_EQ(ReplyOf(4)->status, NFS3ERR_STALE);
  for (int round = 0; round < 5 && ReplyOf(3) == nullptr; ++round) {
    AnswerAllBut(bg_, 'A', NFS3ERR_STALE);
    AnswerAllBut(up_, 'A', NFS3ERR_STALE);
    Advance(std::chrono::milliseconds(100));
  }
  const ClientReply* r = ReplyOf(3);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status, NFS3ERR_STALE)
      << "B's write of a file the proxy knows is removed is answered OK (committed "
      << r->committed << ")";
}

// Liveness of a COMMIT. A writer that rewrites the same bytes faster than
// a round trip (a status block, a database header) while its COMMIT waits:
// new bytes over older ones take the older ones' stamp, so were they taken
// while the older ones are on their way upstream, the COMMIT would wait for
// the newer, then for the ones after, for as long as the rewrites go on.
// A rewrite of bytes on their way that a waiting call needs stable waits
// (parked) until they are, and the COMMIT is answered within a few rounds.
// So for a SETATTR (a stable barrier).
TEST_F(ParkingTest, RewritesOfBytesOnTheirWayDoNotKeepACommitWaiting) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Commit(2);
  int tag = 3;
  for (int round = 0; round < 10 && ReplyOf(2) == nullptr; ++round) {
    // The upstream's call in flight (a WRITE or the COMMIT) is answered
    // only after the next rewrite came.
    const int pending = up_.Pending();
    Write(tag++, 0, std::string(1000, static_cast<char>('b' + round)), UNSTABLE);
    if (pending >= 0) AnswerOne(up_, static_cast<size_t>(pending));
  }
  ASSERT_NE(ReplyOf(2), nullptr) << "the COMMIT is still waiting after 10 rounds of rewrites";
  EXPECT_EQ(ReplyOf(2)->status, NFS3_OK);
  Settle();
  for (int t = 3; t < tag; ++t) EXPECT_NE(ReplyOf(t), nullptr) << "rewrite " << t;

  int ran = 0;
  Write(tag++, 0, std::string(1000, 'x'), UNSTABLE);
  ASSERT_TRUE(wp_->Hold(fh_, /*stable=*/true, [&] { ran++; }));
  for (int round = 0; round < 10 && ran == 0; ++round) {
    const int pending = up_.Pending();
    Write(tag++, 0, std::string(1000, static_cast<char>('b' + round)), UNSTABLE);
    if (pending >= 0) AnswerOne(up_, static_cast<size_t>(pending));
  }
  EXPECT_EQ(ran, 1) << "the SETATTR is still waiting after 10 rounds of rewrites";
  Settle();
}

}  // namespace
}  // namespace nfsedge::write_path_test
