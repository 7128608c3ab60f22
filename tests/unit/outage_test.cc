// OutageDetector with a fake clock and a scripted upstream: when the
// upstream counts as out, when it is back, and the probe that sees it back.
#include "proxy/outage.h"

#include <gtest/gtest.h>

#include <vector>

#include "proxy/nfs_procs.h"

namespace nfsedge {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Holds every call until the test ends it; refuses calls when told to.
class HeldUpstream : public RpcCaller {
 public:
  struct Held {
    uint32_t proc;
    ReplyCallback done;
  };
  Status Call(uint32_t, uint32_t, uint32_t proc, const OpaqueAuth&, std::string_view,
              ReplyCallback done) override {
    if (refuse) return Status(StatusCode::kResourceExhausted, "queue full");
    calls.push_back(Held{proc, std::move(done)});
    return Status::Ok();
  }
  // Ends held call `i` with a reply (an accepted SUCCESS record).
  void Reply(size_t i) {
    RpcReply r;
    r.header.reply_stat = kMsgAccepted;
    r.header.accept_stat = kSuccess;
    Take(i)(std::move(r));
  }
  // Ends held call `i` without a reply (the transport's deadline).
  void TimeOut(size_t i) { Take(i)(Status(StatusCode::kTimeout, "deadline")); }
  // Call `i`'s callback, moved out of `calls` (running, it may make calls,
  // which grow the vector).
  ReplyCallback Take(size_t i) { return std::move(calls[i].done); }

  std::vector<Held> calls;
  bool refuse = false;
};

class OutageTest : public ::testing::Test {
 protected:
  OutageTest() : detector_(clock_, seconds(2)), watched_(detector_.Watch(upstream_)) {
    detector_.SetListener([this](bool out) { changes_.push_back(out); });
  }
  void Send() {
    Status s = watched_.Call(kNfsProgram, kNfsVersion, NFSPROC3_GETATTR, OpaqueAuth{}, "",
                             [this](StatusOr<RpcReply> r) { outcomes_.push_back(r.ok()); });
    ASSERT_TRUE(s.ok());
  }

  FakeClock clock_;
  HeldUpstream upstream_;
  OutageDetector detector_;
  RpcCaller& watched_;
  std::vector<bool> changes_;
  std::vector<bool> outcomes_;
};

TEST_F(OutageTest, AnIdleUpstreamIsNeverOut) {
  clock_.Advance(seconds(60));
  EXPECT_FALSE(detector_.Poll());
  EXPECT_FALSE(detector_.out());
  Send();
  upstream_.Reply(0);
  clock_.Advance(seconds(60));
  EXPECT_FALSE(detector_.Poll());
  EXPECT_FALSE(detector_.out());
  EXPECT_EQ(outcomes_, std::vector<bool>{true}) << "the caller's callback still runs";
}

TEST_F(OutageTest, OutAfterTheQuietPeriodWithACallWaitingBackAtTheNextReply) {
  Send();
  clock_.Advance(milliseconds(1999));
  EXPECT_FALSE(detector_.Poll());
  clock_.Advance(milliseconds(1));
  EXPECT_TRUE(detector_.Poll());
  EXPECT_TRUE(detector_.out());
  EXPECT_FALSE(detector_.Poll()) << "one change";
  Send();  // more calls during the outage change nothing
  EXPECT_TRUE(detector_.out());
  upstream_.Reply(1);
  EXPECT_FALSE(detector_.out()) << "any reply ends it at once";
  EXPECT_EQ(changes_, (std::vector<bool>{true, false}));
  EXPECT_EQ(detector_.stats().outages, 1u);
  EXPECT_EQ(detector_.waiting(), 1u);
}

TEST_F(OutageTest, ASlowUpstreamThatStillAnswersIsNotOut) {
  // Calls overlap; each is answered 1.5 s after it left: a reply comes
  // every 1.5 s, so there is never 2 s without one.
  Send();
  for (size_t i = 1; i < 10; ++i) {
    clock_.Advance(milliseconds(1500));
    Send();
    upstream_.Reply(i - 1);
    EXPECT_FALSE(detector_.Poll());
  }
  EXPECT_FALSE(detector_.out());
  // Then it stops answering.
  clock_.Advance(seconds(2));
  EXPECT_TRUE(detector_.Poll());
}

TEST_F(OutageTest, LocalErrorsAreNotRepliesAndTheProbeSeesTheEnd) {
  detector_.SetProbe(&watched_);
  Send();
  clock_.Advance(seconds(3));
  // Before an outage is declared, a NULL probe: not answered within 1 s.
  EXPECT_FALSE(detector_.Poll());
  ASSERT_EQ(upstream_.calls.size(), 2u);
  EXPECT_EQ(upstream_.calls[1].proc, static_cast<uint32_t>(NFSPROC3_NULL));
  clock_.Advance(milliseconds(999));
  EXPECT_FALSE(detector_.Poll());
  clock_.Advance(milliseconds(1));
  EXPECT_TRUE(detector_.Poll());
  upstream_.TimeOut(0);  // the call's deadline: not a sign of life
  EXPECT_TRUE(detector_.out());
  EXPECT_EQ(detector_.waiting(), 1u) << "the probe";
  detector_.Poll();
  EXPECT_EQ(upstream_.calls.size(), 2u) << "the first probe still waits";
  upstream_.TimeOut(1);
  detector_.Poll();
  ASSERT_EQ(upstream_.calls.size(), 3u) << "a new probe after the first timed out";
  EXPECT_EQ(upstream_.calls[2].proc, static_cast<uint32_t>(NFSPROC3_NULL));
  upstream_.Reply(2);
  EXPECT_FALSE(detector_.out());
  EXPECT_EQ(detector_.stats().probes, 2u);
  EXPECT_EQ(changes_, (std::vector<bool>{true, false}));
}

// A probe that ends without a reply (its connection cannot be made) does
// not hold the outage back.
TEST_F(OutageTest, AProbeLostAtOnceDeclaresTheOutage) {
  detector_.SetProbe(&watched_);
  Send();
  clock_.Advance(seconds(3));
  EXPECT_FALSE(detector_.Poll());
  upstream_.TimeOut(1);
  EXPECT_TRUE(detector_.Poll());
  EXPECT_TRUE(detector_.out());
}

// One slow call (a long COMMIT, a 1 MiB READ on a slow link) and nothing
// else sent: the probe sent before declaring is answered at once, so the
// upstream is never out, however long the call takes (it used to be out,
// then back at the probe's answer, again and again: stale answers from a
// server that was up, and the call's deadline pushed back each time).
TEST_F(OutageTest, ASlowCallAloneIsNeverAnOutage) {
  detector_.SetProbe(&watched_);
  Send();
  size_t answered = 1;  // every probe is answered at once
  for (int i = 0; i < 60; ++i) {
    clock_.Advance(milliseconds(500));
    EXPECT_FALSE(detector_.Poll());
    while (answered < upstream_.calls.size()) upstream_.Reply(answered++);
  }
  EXPECT_TRUE(changes_.empty());
  EXPECT_EQ(detector_.waiting(), 1u) << "the slow call still waits";
  EXPECT_GE(detector_.stats().probes, 5u) << "a probe every quiet period";
  EXPECT_LE(detector_.stats().probes, 15u);
}

// A probe left over from an earlier outage (still waiting, deadlines held)
// or lost after the upstream came back says nothing of a later quiet period:
// a new one is sent, and the upstream is not declared out at once.
TEST_F(OutageTest, AnOlderProbeDoesNotDecideALaterQuietPeriod) {
  detector_.SetProbe(&watched_);
  Send();  // call 0
  clock_.Advance(seconds(3));
  EXPECT_FALSE(detector_.Poll());  // probe 1 sent
  clock_.Advance(seconds(1));
  EXPECT_TRUE(detector_.Poll());  // out; probe 1 still waits
  upstream_.Reply(0);             // back
  EXPECT_FALSE(detector_.out());
  upstream_.TimeOut(1);  // probe 1 ends without a reply, after the outage
  Send();                // call 2: slow
  clock_.Advance(seconds(3));
  EXPECT_FALSE(detector_.Poll()) << "declared out on the old probe's loss";
  ASSERT_EQ(upstream_.calls.size(), 4u) << "a new probe";
  EXPECT_EQ(upstream_.calls[3].proc, static_cast<uint32_t>(NFSPROC3_NULL));
  upstream_.Reply(3);
  clock_.Advance(milliseconds(500));
  EXPECT_FALSE(detector_.Poll());
  EXPECT_FALSE(detector_.out());
  EXPECT_EQ(changes_, (std::vector<bool>{true, false}));
}

TEST_F(OutageTest, ARefusedCallDoesNotCountAsWaiting) {
  upstream_.refuse = true;
  Status s = watched_.Call(kNfsProgram, kNfsVersion, NFSPROC3_GETATTR, OpaqueAuth{}, "",
                           [](StatusOr<RpcReply>) { FAIL() << "never queued"; });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(detector_.waiting(), 0u);
  clock_.Advance(seconds(10));
  EXPECT_FALSE(detector_.Poll());
}

}  // namespace
}  // namespace nfsedge
