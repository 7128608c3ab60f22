// DuplicateRequestCache (proxy/drc.h): which replies it keeps, and for whom.
#include "proxy/drc.h"

#include <gtest/gtest.h>
#include <rpc/xdr/nfs3.h>

#include <memory>
#include <string>
#include <vector>

#include "rpc/rpc_message.h"
#include "rpc/rpc_server.h"
#include "rpc/sockaddr.h"

namespace nfsedge {
namespace {

// An NFS call of `proc` with `xid` from `host`, not tied to a connection
// (its reply goes nowhere, its hooks run).
std::shared_ptr<IncomingCall> Call(uint32_t proc, uint32_t xid, const std::string& host,
                                   uint16_t port = 800) {
  CallHeader h;
  h.xid = xid;
  h.prog = 100003;
  h.vers = 3;
  h.proc = proc;
  h.cred = OpaqueAuth{kAuthNone, ""};
  const std::string record = EncodeCallHeader(h) + std::string(12, 'x');
  ParsedCall parsed = ParseCall(record);
  EXPECT_EQ(parsed.error, CallError::kNone);
  return std::make_shared<IncomingCall>(std::weak_ptr<ServerConnection>(), record, parsed,
                                        *ResolveAddress(host, port));
}

std::shared_ptr<IncomingCall> Remove(uint32_t xid, const std::string& host = "10.0.0.1") {
  return Call(NFSPROC3_REMOVE, xid, host);
}

// A client streaming writes (each kept, as a WRITE may be held long enough
// to be sent again) does not push out another client's REMOVE: that
// client, sending it again after a reconnect, would run it twice (NOENT).
TEST(DuplicateRequestCache, WritesDoNotPushOutOtherCalls) {
  DuplicateRequestCache drc(4);
  auto remove = Remove(1);
  ASSERT_TRUE(drc.Admit(remove));
  remove->ReplySuccess("removed");
  for (uint32_t xid = 100; xid < 120; ++xid) {
    auto write = Call(NFSPROC3_WRITE, xid, "10.0.0.9");
    ASSERT_TRUE(drc.Admit(write));
    write->ReplySuccess("written");
  }
  EXPECT_FALSE(drc.Admit(Remove(1))) << "the REMOVE would run again";
  EXPECT_TRUE(drc.Admit(Call(NFSPROC3_WRITE, 100, "10.0.0.9")))
      << "WRITEs are bounded among themselves";
  EXPECT_FALSE(drc.Admit(Call(NFSPROC3_WRITE, 119, "10.0.0.9")));
}

TEST(DuplicateRequestCache, ARetransmissionGetsTheFirstReply) {
  DuplicateRequestCache drc(4);
  auto first = Remove(1);
  ASSERT_TRUE(drc.Admit(first));
  auto during = Remove(1);
  EXPECT_FALSE(drc.Admit(during)) << "joins the call in progress";
  EXPECT_FALSE(during->replied());
  first->ReplySuccess("done");
  EXPECT_TRUE(during->replied());
  auto after = Remove(1);
  EXPECT_FALSE(drc.Admit(after));
  EXPECT_TRUE(after->replied());
  EXPECT_TRUE(drc.Admit(Remove(1, "10.0.0.2"))) << "another client's call of the same XID";
  EXPECT_EQ(drc.stats().joined, 1u);
  EXPECT_EQ(drc.stats().replayed, 1u);
}

// A client knows its calls by address, not by connection: one sending a
// call again from a new port after a reconnect gets the first reply; one
// at another address, IPv4 or IPv6, runs its own.
TEST(DuplicateRequestCache, TheClientIsItsAddressWithoutThePort) {
  DuplicateRequestCache drc(8);
  for (const char* host : {"10.0.0.1", "fd00::1"}) {
    auto first = Call(NFSPROC3_REMOVE, 7, host, 800);
    ASSERT_TRUE(drc.Admit(first));
    first->ReplySuccess("removed");
    auto again = Call(NFSPROC3_REMOVE, 7, host, 1023);
    EXPECT_FALSE(drc.Admit(again)) << host << ": the REMOVE would run twice";
    EXPECT_TRUE(again->replied());
  }
  EXPECT_TRUE(drc.Admit(Call(NFSPROC3_REMOVE, 7, "fd00::2")));
  EXPECT_TRUE(drc.Admit(Call(NFSPROC3_REMOVE, 7, "10.0.0.2")));
  EXPECT_TRUE(drc.Admit(Call(NFSPROC3_REMOVE, 7, "::ffff:10.0.0.3")));
  EXPECT_EQ(drc.stats().replayed, 2u);
}

// A slow call (the one its client most likely gave up on and sends again)
// is kept as the most recent when it finishes, not as old as its arrival:
// calls that came and finished while it ran are evicted before it.
TEST(DuplicateRequestCache, ASlowCallsReplyIsKeptFromWhenItFinished) {
  DuplicateRequestCache drc(2);
  auto slow = Remove(1);
  ASSERT_TRUE(drc.Admit(slow));
  for (uint32_t xid : {2u, 3u}) {
    auto quick = Remove(xid);
    ASSERT_TRUE(drc.Admit(quick));
    quick->ReplySuccess("quick");
  }
  slow->ReplySuccess("slow");
  EXPECT_EQ(drc.stats().evicted, 1u);
  auto again = Remove(1);
  EXPECT_FALSE(drc.Admit(again)) << "the slow REMOVE would run upstream twice";
  EXPECT_TRUE(again->replied());
  EXPECT_TRUE(drc.Admit(Remove(2))) << "the oldest finished call went";
}

// Calls in progress are never evicted, however many finish meanwhile.
TEST(DuplicateRequestCache, CallsInProgressAreNotEvicted) {
  DuplicateRequestCache drc(1);
  auto open = Remove(1);
  ASSERT_TRUE(drc.Admit(open));
  for (uint32_t xid = 2; xid < 6; ++xid) {
    auto quick = Remove(xid);
    ASSERT_TRUE(drc.Admit(quick));
    quick->ReplySuccess("quick");
  }
  EXPECT_FALSE(drc.Admit(Remove(1)));
  EXPECT_EQ(drc.stats().entries, 2u);  // the one in progress and the last finished
}

}  // namespace
}  // namespace nfsedge
