// One file written through two nested exports of different settings (a
// write_behind export and a write_back one inside or around it): each
// reply carries the verifier of the export it came through, and a loss is
// handled by how each piece of the buffer was answered, not by the export
// the file was last written through.
#include <chrono>
#include <string>

#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

class NestedExportsTest : public JournalTest {
 protected:
  NestedExportsTest() {
    options_.lone_after = 0;
    Make();
  }
  // WRITEs the background upstream was sent whose data is all `c`.
  size_t WritesOf(char c) const {
    size_t n = 0;
    for (const auto& call : bg_.calls) {
      if (call.proc != NFSPROC3_WRITE) continue;
      const SentWrite w = DecodeWriteArgs(call.args);
      n += !w.data.empty() && w.data == std::string(w.data.size(), c);
    }
    return n;
  }
};

// (rule 2) Writer A's UNSTABLE write through the write_behind export is
// answered from the buffer with the proxy's verifier; then B writes the
// file through the write_back export. The upstream refuses A's bytes: A's
// next COMMIT gets the error, and the one after a new verifier, never the
// one A's WRITE got with OK (A would take its lost bytes for stable).
TEST_F(NestedExportsTest, BytesAnsweredFromTheBufferLostAfterAJournaledWriteChangeTheVerifier) {
  cred_ = Cred("writer-a");
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  ASSERT_NE(ReplyOf(1), nullptr);
  const Verf told_a = ReplyOf(1)->verf;
  cred_ = Cred("writer-b");
  WriteBack(2, 65536, std::string(10, 'b'), UNSTABLE);
  journal_.Complete();
  ASSERT_NE(ReplyOf(2), nullptr);
  ASSERT_EQ(ReplyOf(2)->status, NFS3_OK);
  Advance(options_.flush_delay);
  AnswerAllBut(bg_, 'a', NFS3ERR_NOSPC);
  cred_ = Cred("writer-a");
  Commit(3);
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(3)->status, NFS3ERR_NOSPC);
  Commit(4);
  Settle();
  journal_.Complete();  // B's record removed (the COMMIT waits for that)
  ASSERT_NE(ReplyOf(4), nullptr);
  EXPECT_EQ(ReplyOf(4)->status, NFS3_OK);
  EXPECT_NE(ReplyOf(4)->verf, told_a) << "A's lost bytes answered stable";
}

// A COMMIT through the write_behind export that waits for the upstream is
// answered with that export's verifier (the proxy's), which A's WRITE got,
// though a write through the write_back export came meanwhile: else A would
// send again what it had no reason to.
TEST_F(NestedExportsTest, AWaitingCommitIsAnsweredWithItsOwnExportsVerifier) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  ASSERT_NE(ReplyOf(1), nullptr);
  const Verf proxy = ReplyOf(1)->verf;
  ASSERT_NE(proxy, journal_.verifier());
  Commit(2);
  ASSERT_EQ(ReplyOf(2), nullptr);
  WriteBack(3, 65536, std::string(10, 'b'), UNSTABLE);
  journal_.Complete();
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(3)->verf, journal_.verifier());
  Settle();
  ASSERT_NE(ReplyOf(2), nullptr);
  EXPECT_EQ(ReplyOf(2)->status, NFS3_OK);
  EXPECT_EQ(ReplyOf(2)->verf, proxy);
}

// (rule 1) A FILE_SYNC write acknowledged from the journal is stable by the
// proxy's promise, though the file was written through the write_behind
// export since: a refusal of its bytes keeps them and sends them again, and
// its record stays in the journal until the upstream takes them.
TEST_F(NestedExportsTest, JournaledBytesAreKeptAfterAWriteThroughTheOtherExport) {
  WriteBack(1, 0, std::string(100, 'j'), FILE_SYNC);
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  ASSERT_EQ(ReplyOf(1)->status, NFS3_OK);
  Write(2, 65536, std::string(10, 'w'), UNSTABLE);
  ASSERT_NE(ReplyOf(2), nullptr);
  Advance(options_.flush_delay);
  ASSERT_EQ(WritesOf('j'), 1u);
  AnswerAllBut(bg_, 'j', NFS3ERR_NOSPC);
  EXPECT_GE(wp_->stats().buffered_bytes, 100u) << "acknowledged bytes dropped at a refusal";
  EXPECT_TRUE(journal_.removed.empty());
  Settle();
  EXPECT_EQ(WritesOf('j'), 2u);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  // (Write 2 has a record too, to order it after record 1: gone with it.)
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
}

// (rule 1) A FILE_SYNC write through the write_behind export over bytes a
// write through the write_back export journaled: once the upstream has it,
// the older record is removed from the journal, and the write's reply
// waits until that removal is on disk (answered before, a restart would
// replay the older bytes over what the reply said is stable). So does a
// COMMIT of an UNSTABLE write over them.
TEST_F(NestedExportsTest, AStableWriteOverJournaledBytesIsAnsweredOnceTheirRecordIsGone) {
  WriteBack(1, 0, std::string(100, 'j'), FILE_SYNC);
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  Write(2, 0, std::string(100, 'w'), FILE_SYNC);
  Settle();
  ASSERT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));  // write 2's own record too
  EXPECT_EQ(ReplyOf(2), nullptr) << "answered before the older record's removal was on disk";
  Commit(3);  // nothing left to send: it too waits for the removal
  EXPECT_EQ(ReplyOf(3), nullptr) << "answered before the older record's removal was on disk";
  journal_.Complete();
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  ASSERT_NE(ReplyOf(2), nullptr);
  EXPECT_EQ(ReplyOf(2)->status, NFS3_OK);
}

TEST_F(NestedExportsTest, ACommitOverJournaledBytesIsAnsweredOnceTheirRecordIsGone) {
  WriteBack(1, 0, std::string(100, 'j'), FILE_SYNC);
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  Write(2, 0, std::string(100, 'u'), UNSTABLE);
  ASSERT_NE(ReplyOf(2), nullptr);
  Commit(3);
  Settle();
  ASSERT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));  // write 2's own record too
  EXPECT_EQ(ReplyOf(3), nullptr) << "answered before the older record's removal was on disk";
  journal_.Complete();
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(3)->status, NFS3_OK);
}

// (rules 2 and 4) Bytes answered from the buffer and written upstream
// UNSTABLE, not yet committed, may have to go again: a COMMIT with another
// verifier (the server restarted). An UNSTABLE write through an export
// without write-behind goes upstream as sent; sent before those bytes are
// committed, their resend lands over it, and its client, whose COMMIT the
// upstream then answers with the verifier its WRITE got, never sends it
// again: the file keeps the older bytes.
TEST_F(NestedExportsTest, AForwardedWriteWaitsUntilOlderBufferedBytesAreCommitted) {
  ExportConfig off = MakeExport(5);
  off.write_behind = false;
  const Export plain(3, off);
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  ASSERT_NE(ReplyOf(1), nullptr);
  Advance(options_.flush_delay);
  int i = bg_.Pending();
  ASSERT_GE(i, 0);
  ASSERT_EQ(bg_.calls[static_cast<size_t>(i)].proc, NFSPROC3_WRITE);
  bg_.Answer(static_cast<size_t>(i), WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  Write(2, 0, std::string(1000, 'b'), UNSTABLE, /*may_buffer=*/true, &plain);
  EXPECT_TRUE(forwarded_.empty()) << "sent upstream while older bytes of its range may go again";
  // The upstream restarted: every COMMIT and WRITE is answered with kV2.
  size_t resent = 0;
  for (int round = 0; round < 20 && forwarded_.empty(); ++round) {
    Advance(options_.flush_delay);
    for (HeldUpstream* u : {&up_, &bg_}) {
      for (int k = u->Pending(); k >= 0; k = u->Pending()) {
        HeldUpstream::Held& c = u->calls[static_cast<size_t>(k)];
        if (c.proc == NFSPROC3_WRITE) {
          resent++;
          u->Answer(static_cast<size_t>(k), WriteOk(1000, UNSTABLE, kV2, Attr(1000, 2)));
        } else {
          u->Answer(static_cast<size_t>(k), CommitOk(kV2, Attr(1000, 3)));
        }
      }
    }
  }
  EXPECT_EQ(resent, 1u) << "the bytes of write 1 go again once, after the verifier changed";
  EXPECT_EQ(forwarded_, (std::vector<int>{2})) << "not sent once write 1's bytes are stable";
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}

// (rule 2) The other order: the file has a record (B's journaled write)
// when A's UNSTABLE write through the write_behind export comes, which then
// gets a record of its own (to order it after B's). Answered from the
// buffer all the same: when the upstream refuses A's bytes, A's next COMMIT
// gets the error, and the one after a new verifier.
TEST_F(NestedExportsTest, BufferAnsweredBytesWithAnOrderingRecordLostChangeTheVerifier) {
  cred_ = Cred("writer-b");
  WriteBack(1, 65536, std::string(10, 'b'), UNSTABLE);
  journal_.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  cred_ = Cred("writer-a");
  Write(2, 0, std::string(1000, 'a'), UNSTABLE);
  journal_.Complete();
  ASSERT_NE(ReplyOf(2), nullptr);
  const Verf told_a = ReplyOf(2)->verf;
  Advance(options_.flush_delay);
  AnswerAllBut(bg_, 'a', NFS3ERR_NOSPC);
  Commit(3);
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(3)->status, NFS3ERR_NOSPC);
  Commit(4);
  for (int i = 0; i < 2; ++i) {
    Settle();
    journal_.Complete();
  }
  ASSERT_NE(ReplyOf(4), nullptr);
  EXPECT_EQ(ReplyOf(4)->status, NFS3_OK);
  EXPECT_NE(ReplyOf(4)->verf, told_a) << "A's lost bytes answered stable";
  EXPECT_GE(wp_->stats().verifier_changes, 1u);
}

}  // namespace
}  // namespace nfsedge::write_path_test
