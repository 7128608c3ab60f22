#include "rpc/rpc_message.h"

#include <gtest/gtest.h>

#include "rpc/xdr_codec.h"

namespace nfsedge {
namespace {

CallHeader SampleHeader() {
  CallHeader h;
  h.xid = 0x01020304;
  h.prog = 100003;
  h.vers = 3;
  h.proc = 1;
  h.cred.flavor = kAuthSys;
  h.cred.body = std::string(20, '\x01');
  return h;
}

TEST(RpcMessage, CallHeaderRoundTrip) {
  std::string rec = EncodeCallHeader(SampleHeader()) + "ARGS";
  ParsedCall p = ParseCall(rec);
  ASSERT_EQ(p.error, CallError::kNone);
  EXPECT_EQ(p.header.xid, 0x01020304u);
  EXPECT_EQ(p.header.prog, 100003u);
  EXPECT_EQ(p.header.vers, 3u);
  EXPECT_EQ(p.header.proc, 1u);
  EXPECT_EQ(p.header.cred.flavor, kAuthSys);
  EXPECT_EQ(p.header.cred.body, std::string(20, '\x01'));
  EXPECT_EQ(p.header.verf.flavor, kAuthNone);
  EXPECT_EQ(rec.substr(p.args_offset), "ARGS");
}

TEST(RpcMessage, ShortOrNonCallIsMalformed) {
  EXPECT_EQ(ParseCall("abc").error, CallError::kMalformed);
  std::string rec = EncodeCallHeader(SampleHeader());
  StoreBE32(rec.data() + 4, kReply);
  EXPECT_EQ(ParseCall(rec).error, CallError::kMalformed);
  // Header cut after the RPC version: cannot be answered sensibly.
  EXPECT_EQ(ParseCall(EncodeCallHeader(SampleHeader()).substr(0, 14)).error,
            CallError::kMalformed);
}

TEST(RpcMessage, WrongRpcVersionIsMismatch) {
  CallHeader h = SampleHeader();
  h.rpcvers = 3;
  ParsedCall p = ParseCall(EncodeCallHeader(h));
  EXPECT_EQ(p.error, CallError::kRpcMismatch);
  EXPECT_EQ(p.header.xid, h.xid);
}

TEST(RpcMessage, OversizedOrTruncatedCredentialIsBadAuth) {
  CallHeader h = SampleHeader();
  h.cred.body = std::string(kMaxAuthBytes + 4, 'x');
  EXPECT_EQ(ParseCall(EncodeCallHeader(h)).error, CallError::kBadAuth);
  std::string rec = EncodeCallHeader(SampleHeader());
  EXPECT_EQ(ParseCall(rec.substr(0, 30)).error, CallError::kBadAuth);
}

// RFC 5531 section 9: a verifier that does not decode is AUTH_BADVERF.
TEST(RpcMessage, OversizedOrTruncatedVerifierIsBadVerf) {
  CallHeader h = SampleHeader();
  h.verf.body = std::string(kMaxAuthBytes + 4, 'x');
  EXPECT_EQ(ParseCall(EncodeCallHeader(h)).error, CallError::kBadVerf);
  const std::string rec = EncodeCallHeader(SampleHeader());
  EXPECT_EQ(ParseCall(rec.substr(0, rec.size() - 2)).error, CallError::kBadVerf);
}

TEST(RpcMessage, AcceptedRepliesParse) {
  std::string r = EncodeAcceptedReply(7, kSuccess) + "RES";
  StatusOr<ReplyHeader> h = ParseReply(r);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->xid, 7u);
  EXPECT_EQ(h->reply_stat, kMsgAccepted);
  EXPECT_EQ(h->accept_stat, kSuccess);
  EXPECT_EQ(r.substr(h->results_offset), "RES");

  h = ParseReply(EncodeAcceptedReply(8, kProgMismatch, 2, 4));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->accept_stat, kProgMismatch);
  EXPECT_EQ(h->mismatch_low, 2u);
  EXPECT_EQ(h->mismatch_high, 4u);
}

TEST(RpcMessage, DeniedRepliesParse) {
  StatusOr<ReplyHeader> h = ParseReply(EncodeRpcMismatchReply(9));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->reply_stat, kMsgDenied);
  EXPECT_EQ(h->reject_stat, kRpcMismatch);
  EXPECT_EQ(h->mismatch_low, 2u);
  h = ParseReply(EncodeAuthErrorReply(10, kAuthTooWeak));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->reject_stat, kAuthError);
  EXPECT_EQ(h->auth_stat, kAuthTooWeak);
}

TEST(RpcMessage, MalformedRepliesAreErrors) {
  EXPECT_FALSE(ParseReply("").ok());
  EXPECT_FALSE(ParseReply(EncodeCallHeader(SampleHeader())).ok());
  std::string r = EncodeAcceptedReply(7, kSuccess);
  EXPECT_FALSE(ParseReply(r.substr(0, r.size() - 2)).ok());
  StoreBE32(r.data() + 20, 99);  // accept_stat out of range
  EXPECT_FALSE(ParseReply(r).ok());
}

}  // namespace
}  // namespace nfsedge
