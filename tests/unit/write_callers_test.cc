// Stable writes of several callers on one file (write_path_test): whose
// refusal reaches whom, whose bytes the upstream judges, and the attributes
// of the replies.
#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

using WriteCallersTest = WritePathTest;

const ClientReply* ReplyFor(const std::vector<std::pair<int, ClientReply>>& replies, int tag) {
  for (const auto& [t, r] : replies) {
    if (t == tag) return &r;
  }
  return nullptr;
}

// User B's stable write is refused upstream (B is over quota); user A's
// stable write of other bytes of the same file was taken by the upstream
// with FILE_SYNC. A must be told its write succeeded: the upstream's answer
// to A's own WRITE said so, and B's quota is not A's.
TEST_F(WriteCallersTest, AnotherUsersRefusalIsNotGivenToAWriteTheUpstreamMadeStable) {
  const std::string a(4096, 'a'), b(4096, 'b');
  cred_ = Cred("uid-B");
  Write(1, 65536, b, FILE_SYNC);  // a new file: lone, sent at once
  ASSERT_EQ(up_.calls.size(), 1u);
  cred_ = Cred("uid-A");
  Write(2, 0, a, FILE_SYNC);  // company behind a lone write: a short window
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 2u);
  SentWrite wa = DecodeWriteArgs(up_.calls[1].args);
  ASSERT_EQ(wa.offset, 0u);
  ASSERT_EQ(wa.stable, FILE_SYNC);
  // The upstream takes A's write: its bytes are stable.
  up_.Answer(1, WriteOk(4096, FILE_SYNC, kV1, Attr(69632, 2)));
  EXPECT_TRUE(replies_.empty()) << "arrival order: B's write is answered first";
  // B is over quota.
  up_.Answer(0, WriteFail(NFS3ERR_DQUOT));
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(ReplyFor(replies_, 1)->status, NFS3ERR_DQUOT);
  const ClientReply* ra = ReplyFor(replies_, 2);
  EXPECT_EQ(ra->status, NFS3_OK) << "A's write is stable upstream, yet A is told B's DQUOT";
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}


// User C has no ACCESS evidence that it may write the file (may_buffer
// false): its stable write must be judged by the upstream under C's
// credential. User B writes the same bytes while C's write waits in the
// gathering window: C's bytes still go upstream, under C's credential,
// before B's replace them, and C's answer is the upstream's.
TEST_F(WriteCallersTest, AWriteOfACredentialWithoutEvidenceIsJudgedByTheUpstream) {
  const std::string x(4096, 'x'), c(4096, 'c'), b(4096, 'b');
  cred_ = Cred("uid-A");
  Write(1, 65536, x, FILE_SYNC);  // a new file: lone, sent at once
  ASSERT_EQ(up_.calls.size(), 1u);
  cred_ = Cred("uid-C");
  Write(2, 0, c, FILE_SYNC, /*may_buffer=*/false);  // company: a short window
  cred_ = Cred("uid-B");
  Write(3, 0, b, FILE_SYNC);  // the same bytes, another user
  Advance(std::chrono::milliseconds(5));
  // Answer everything the upstream is asked, as a server would for A and B.
  for (int i = up_.Pending(); i >= 0; i = up_.Pending()) {
    const auto& call = up_.calls[static_cast<size_t>(i)];
    ASSERT_EQ(call.proc, static_cast<uint32_t>(NFSPROC3_WRITE));
    SentWrite w = DecodeWriteArgs(call.args);
    up_.Answer(static_cast<size_t>(i),
               WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1, Attr(69632, 2)));
  }
  bool c_sent = false;
  for (const auto& call : up_.calls) {
    if (call.proc == NFSPROC3_WRITE && DecodeWriteArgs(call.args).data == c) c_sent = true;
  }
  for (int t : forwarded_) c_sent |= t == 2;  // sent upstream as is
  const ClientReply* rc = ReplyFor(replies_, 2);
  ASSERT_NE(rc, nullptr);
  EXPECT_FALSE(rc->status == NFS3_OK && !c_sent)
      << "C's write is answered OK (committed " << rc->committed
      << ") but the upstream never saw it: no one checked that C may write the file";
}

// The same, when the upstream refuses C's bytes (C may not write the
// file): C is told so; B's write, which waited for C's bytes to leave the
// buffer and which the upstream takes, is answered OK.
TEST_F(WriteCallersTest, ARefusalOfReplacedBytesReachesTheirWriterOnly) {
  const std::string x(4096, 'x'), c(4096, 'c'), b(4096, 'b');
  cred_ = Cred("uid-A");
  Write(1, 65536, x, FILE_SYNC);
  cred_ = Cred("uid-C");
  Write(2, 0, c, FILE_SYNC, /*may_buffer=*/false);
  cred_ = Cred("uid-B");
  Write(3, 0, b, FILE_SYNC);
  EXPECT_EQ(wp_->stats().parked, 1u) << "B's write waits for C's bytes";
  for (int round = 0; round < 4; ++round) {
    Advance(std::chrono::milliseconds(5));
    for (int i = up_.Pending(); i >= 0; i = up_.Pending()) {
      const auto& call = up_.calls[static_cast<size_t>(i)];
      ASSERT_EQ(call.proc, static_cast<uint32_t>(NFSPROC3_WRITE));
      SentWrite w = DecodeWriteArgs(call.args);
      up_.Answer(static_cast<size_t>(i),
                 w.data == c ? WriteFail(NFS3ERR_ACCES)
                             : WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1,
                                       Attr(69632, 2)));
    }
  }
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ReplyFor(replies_, 1)->status, NFS3_OK);
  EXPECT_EQ(ReplyFor(replies_, 2)->status, NFS3ERR_ACCES);
  EXPECT_EQ(ReplyFor(replies_, 3)->status, NFS3_OK);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}

// RFC 1813 WRITE: "If count is 0, the WRITE will succeed and return a count
// of 0, barring errors due to permissions checking." A zero-count stable
// write of a credential without ACCESS evidence goes upstream as is: the
// upstream checks.
TEST_F(WriteCallersTest, AZeroCountWriteWithoutEvidenceIsNotAcceptedWithoutTheUpstream) {
  cred_ = Cred("uid-C");
  Write(1, 0, std::string(), FILE_SYNC, /*may_buffer=*/false);
  const ClientReply* r = ReplyFor(replies_, 1);
  EXPECT_EQ(r, nullptr) << "answered without the upstream";
  EXPECT_EQ(forwarded_, (std::vector<int>{1}));
}

// The upstream's reply to a batch's FILE_SYNC WRITE carries no post-op
// attributes (optional in NFSv3). The client's reply then must not carry
// the attributes of an earlier call as its post-op attributes: they show
// the file smaller than the write just made it.
TEST_F(WriteCallersTest, PostOpAttributesAreNotThoseFromBeforeTheWrite) {
  const std::string a(4096, 'a'), b(4096, 'b');
  Write(1, 0, a, FILE_SYNC);  // lone: sent at once
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 1)));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  Write(2, 4096, b, FILE_SYNC);  // appends
  ASSERT_EQ(up_.calls.size(), 2u);
  WRITE3res res{};
  res.status = NFS3_OK;
  res.WRITE3res_u.resok.count = 4096;
  res.WRITE3res_u.resok.committed = FILE_SYNC;
  std::copy(kV1.begin(), kV1.end(), res.WRITE3res_u.resok.verf);
  std::string wire;
  ASSERT_TRUE(XdrEncode(Proc(xdr_WRITE3res), &res, &wire));
  up_.Answer(1, wire);
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  const ClientReply* r = ReplyFor(replies_, 2);
  EXPECT_EQ(r->status, NFS3_OK);
  if (r->after) {
    EXPECT_GE(r->after->size, 8192u)
        << "post-op attributes of write 2 show the file before it (size " << r->after->size
        << ", ctime " << r->after->ctime.seconds << ")";
  }
}


class JournalCallersTest : public JournalTest {
 protected:
  const ClientReply* ReplyFor(int tag) const { return ReplyOf(tag); }
  // Answers every pending call of `u`: WRITEs as `write(data)` says,
  // COMMITs with kV1.
  template <typename Fn>
  void AnswerWith(HeldUpstream& u, const Fn& write) {
    for (int i = u.Pending(); i >= 0; i = u.Pending()) {
      const auto& call = u.calls[static_cast<size_t>(i)];
      if (call.proc == NFSPROC3_WRITE) {
        SentWrite w = DecodeWriteArgs(call.args);
        u.Answer(static_cast<size_t>(i), write(w));
      } else {
        u.Answer(static_cast<size_t>(i), CommitOk(kV1, Attr(0, 10)));
      }
    }
  }
};

// Write-back export. User C has no ACCESS evidence (may_buffer false): its
// FILE_SYNC write waits for the upstream, which gets C's bytes at once (a
// new file: lone). While that WRITE is on its way, user B (with evidence)
// writes the same bytes: B's write waits until C's bytes leave the buffer.
// The upstream refuses C's WRITE (ACCES: C may not write the file): C is
// told, and B's write goes in then, answered from the journal.
TEST_F(JournalCallersTest, ARefusedWriterIsToldWhileAnotherCallersWriteWaitsForItsBytes) {
  const std::string c(4096, 'c'), b(4096, 'b');
  cred_ = Cred("uid-C");
  WriteBack(1, 0, c, FILE_SYNC, /*may_buffer=*/false);
  ASSERT_EQ(up_.calls.size(), 1u) << "a new file: C's write goes at once";
  ASSERT_EQ(DecodeWriteArgs(up_.calls[0].args).data, c);
  cred_ = Cred("uid-B");
  WriteBack(2, 0, b, FILE_SYNC);  // with evidence, but over C's bytes: waits
  journal_.Complete();
  EXPECT_EQ(ReplyFor(2), nullptr) << "answered before C's bytes left the buffer";
  // C may not write the file.
  up_.Answer(0, WriteFail(NFS3ERR_ACCES));
  journal_.Complete();  // B's append, once taken
  ASSERT_NE(ReplyFor(2), nullptr);
  ASSERT_EQ(ReplyFor(2)->status, NFS3_OK);
  // B's bytes go and are taken.
  for (int round = 0; round < 5 && ReplyFor(1) == nullptr; ++round) {
    AnswerWith(up_, [](const SentWrite& w) {
      return WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1, Attr(4096, 3));
    });
    AnswerWith(bg_, [](const SentWrite& w) {
      return WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1, Attr(4096, 3));
    });
    Advance(std::chrono::milliseconds(200));
  }
  const ClientReply* rc = ReplyFor(1);
  ASSERT_NE(rc, nullptr) << "C's write is never answered";
  EXPECT_EQ(rc->status, NFS3ERR_ACCES)
      << "the upstream refused C's bytes (ACCES), yet C is told its write is stable";
}

// The same: C told, the refusal is not left as the file's error for its
// next WRITE, which is B's, who may write the file.
TEST_F(JournalCallersTest, KeptRoundGivesTheRefusalOfReplacedBytesToTheNextWriter) {
  const std::string c(4096, 'c'), b(4096, 'b');
  cred_ = Cred("uid-C");
  WriteBack(1, 0, c, FILE_SYNC, /*may_buffer=*/false);
  ASSERT_EQ(up_.calls.size(), 1u);
  cred_ = Cred("uid-B");
  WriteBack(2, 0, b, FILE_SYNC);
  journal_.Complete();
  up_.Answer(0, WriteFail(NFS3ERR_ACCES));
  for (int round = 0; round < 5; ++round) {
    AnswerWith(up_, [](const SentWrite& w) {
      return WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1, Attr(4096, 3));
    });
    Advance(std::chrono::milliseconds(200));
  }
  ASSERT_NE(ReplyFor(1), nullptr);
  // B writes again (other bytes), with evidence.
  WriteBack(3, 8192, b, FILE_SYNC);
  journal_.Complete();
  const ClientReply* r3 = ReplyFor(3);
  ASSERT_NE(r3, nullptr);
  EXPECT_EQ(r3->status, NFS3_OK) << "B's write is told the refusal of C's bytes";
}

// Not write-back. User A's FILE_SYNC write is upstream (a new file: sent
// at once). User C, without ACCESS evidence, writes the same bytes: they
// wait (they cannot go over A's WRITE in flight). User B then writes the
// same bytes too: it waits until C's bytes are on their way upstream,
// which judges them (as AWriteOfACredentialWithoutEvidenceIsJudgedByTheUpstream,
// with the bytes over a WRITE in flight).
TEST_F(JournalCallersTest, BytesWithoutEvidenceOverAWriteInFlightAreJudgedByTheUpstream) {
  const std::string a(4096, 'a'), c(4096, 'c'), b(4096, 'b');
  cred_ = Cred("uid-A");
  Write(1, 0, a, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), 1u);
  cred_ = Cred("uid-C");
  Write(2, 0, c, FILE_SYNC, /*may_buffer=*/false);
  cred_ = Cred("uid-B");
  Write(3, 0, b, FILE_SYNC);
  for (int round = 0; round < 5 && replies_.size() < 3; ++round) {
    AnswerWith(up_, [](const SentWrite& w) {
      return WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1, Attr(4096, 2));
    });
    Advance(std::chrono::milliseconds(10));
  }
  bool c_sent = false;
  for (const auto& call : up_.calls) {
    if (call.proc == NFSPROC3_WRITE && DecodeWriteArgs(call.args).data == c) c_sent = true;
  }
  for (int t : forwarded_) c_sent |= t == 2;
  const ClientReply* rc = ReplyFor(2);
  ASSERT_NE(rc, nullptr);
  EXPECT_FALSE(rc->status == NFS3_OK && !c_sent)
      << "C's write is answered OK but the upstream never saw C's bytes";
}

// The same while the file waits for a retry (the upstream answered
// JUKEBOX): B's write waits until C's bytes went upstream.
TEST_F(JournalCallersTest, BytesWithoutEvidenceDuringARetryAreJudgedByTheUpstream) {
  const std::string a(4096, 'a'), c(4096, 'c'), b(4096, 'b');
  cred_ = Cred("uid-A");
  Write(1, 65536, a, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteFail(NFS3ERR_JUKEBOX));  // tried again in 100 ms
  cred_ = Cred("uid-C");
  Write(2, 0, c, FILE_SYNC, /*may_buffer=*/false);
  cred_ = Cred("uid-B");
  Write(3, 0, b, FILE_SYNC);
  for (int round = 0; round < 10 && replies_.size() < 3; ++round) {
    Advance(std::chrono::milliseconds(100));
    AnswerWith(up_, [](const SentWrite& w) {
      return WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1, Attr(69632, 2));
    });
  }
  bool c_sent = false;
  for (const auto& call : up_.calls) {
    if (call.proc == NFSPROC3_WRITE && DecodeWriteArgs(call.args).data == c) c_sent = true;
  }
  for (int t : forwarded_) c_sent |= t == 2;
  const ClientReply* rc = ReplyFor(2);
  ASSERT_NE(rc, nullptr);
  EXPECT_FALSE(rc->status == NFS3_OK && !c_sent)
      << "C's write is answered OK but the upstream never saw C's bytes";
}

// User A's FILE_SYNC write is upstream; user B writes the same bytes
// meanwhile. The upstream takes A's WRITE (FILE_SYNC), then refuses B's
// (B is over quota). A's write is stable upstream, and the file holds A's
// bytes: A must not be told B's DQUOT ("one user's quota is not
// another's").
TEST_F(JournalCallersTest, AWriteTheUpstreamTookIsNotToldTheRefusalOfTheBytesThatReplacedIt) {
  const std::string a(4096, 'a'), b(4096, 'b');
  cred_ = Cred("uid-A");
  Write(1, 0, a, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), 1u);
  cred_ = Cred("uid-B");
  Write(2, 0, b, FILE_SYNC);
  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 2)));
  for (int round = 0; round < 5 && replies_.size() < 2; ++round) {
    Advance(std::chrono::milliseconds(10));
    AnswerWith(up_, [](const SentWrite&) { return WriteFail(NFS3ERR_DQUOT); });
  }
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(ReplyFor(2)->status, NFS3ERR_DQUOT);
  EXPECT_EQ(ReplyFor(1)->status, NFS3_OK)
      << "A's write was taken FILE_SYNC by the upstream, yet A is told B's DQUOT";
}

}  // namespace
}  // namespace nfsedge::write_path_test
