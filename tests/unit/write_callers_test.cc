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
// file): C is told so, though B's bytes have replaced C's in the buffer;
// B's write, which the upstream takes, is answered OK.
TEST_F(WriteCallersTest, ARefusalOfReplacedBytesReachesTheirWriterOnly) {
  const std::string x(4096, 'x'), c(4096, 'c'), b(4096, 'b');
  cred_ = Cred("uid-A");
  Write(1, 65536, x, FILE_SYNC);
  cred_ = Cred("uid-C");
  Write(2, 0, c, FILE_SYNC, /*may_buffer=*/false);
  cred_ = Cred("uid-B");
  Write(3, 0, b, FILE_SYNC);
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

}  // namespace
}  // namespace nfsedge::write_path_test
