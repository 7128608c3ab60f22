// CongestionController on a fast link whose server holds some replies (a
// slow fsync, a busy disk): a hold is not a queue of the proxy's own, and
// it does not start a pacer on a link shown to be fast.
#include <gtest/gtest.h>

#include <cstdint>

#include "proxy/congestion.h"
#include "simulated_link.h"

namespace nfsedge {
namespace {

using namespace simulated;  // NOLINT(build/namespaces)

// The calls go out unpaced, and the link carries one whole 480 KiB call a
// round of `round_s` seconds over the next second.
void ExpectWholeCallsEachRound(const CongestionController& cc, SimulatedLink& link,
                               double round_s) {
  EXPECT_EQ(cc.applied_pacing_rate(), 0) << "paced";
  Measured m = Measure(link, std::chrono::seconds(1));
  EXPECT_GE(m.rate, 0.95 * (480 << 10) / round_s);
}

TEST(CongestionTest, FastLinkIsNotPacedAfterOneSlowRound) {
  // A gathered FILE_SYNC WRITE a round on a link far faster than any rate a
  // transfer sample can time (each is on the wire for well under a quarter
  // of the round trip). One round is slow (the path, or a server stall): a
  // pacer set from those samples would stretch every later call, so none
  // is paced. One call's bytes could not have queued that long at the rate
  // the link has shown: the slow round is no queue of the proxy's own.
  CongestionController cc(Options());
  SimulatedLink link(cc, 2e9, milliseconds(25), 480 << 10);
  link.set_max_calls(1);
  link.Run(std::chrono::seconds(1));
  link.set_one_way(milliseconds(40));
  link.Run(milliseconds(200));
  link.set_one_way(milliseconds(25));
  link.Run(std::chrono::seconds(3));
  EXPECT_EQ(cc.stats().decreases, 0u) << "the slow round was taken for a queue";
  ExpectWholeCallsEachRound(cc, link, 0.050);
}

TEST(CongestionTest, AServerStallIsNotAQueue) {
  // The benchmark's stablewrite at 50 ms: one gathered FILE_SYNC WRITE a
  // round, 32 KiB for a while, then 480 KiB, on a fast link; every round
  // application limited. Then the server holds a reply for 70 ms (a slow
  // fsync): one call and nothing ahead of it could not have queued that
  // long at the rate the link has shown, so the rate holds and no pacer
  // starts to stretch the calls after it.
  CongestionController cc(Options());
  SimulatedLink link(cc, 2e9, milliseconds(25), 32 << 10);
  OneWriteARound(link);
  link.set_call_bytes(480 << 10);
  link.Run(std::chrono::seconds(1));
  link.set_service(milliseconds(71));
  link.Run(milliseconds(150));
  link.set_service(milliseconds(1));
  link.Run(milliseconds(100));
  EXPECT_EQ(cc.stats().decreases, 0u) << "the stall was taken for a queue";
  ExpectWholeCallsEachRound(cc, link, 0.051);
}

// The benchmark's stablewrite at 50 ms on a fast link: metadata first
// (LOOKUP, CREATE), then the file's first FILE_SYNC WRITE, 32 KiB, which the
// server holds 60 ms (a new file's first fsync). Sent before any rate was
// known, it counts as a queue, and the pacer starts at about 1 MB/s. Then
// one WRITE a round.
void FirstWriteHeld(SimulatedLink& link) {
  link.set_max_calls(0);
  link.set_probe_interval(milliseconds(60));
  link.Run(milliseconds(130));
  link.set_probe_interval(Duration::zero());
  link.set_max_calls(1);
  link.set_client_turnaround(true);
  link.StallServer(link.now(), link.now() + milliseconds(60));
  link.Run(milliseconds(200));
}

TEST(CongestionTest, APacedLoneCallHeldByTheServerIsNotAQueue) {
  // K = 1 on a busy server: one 32 KiB WRITE a round, the first held (above).
  // Then every third round the server holds a reply up to 45 ms. A paced
  // call's bytes left over the time the pacer took, while the link carried
  // them: they could not still be queued when its last byte left, so a hold
  // after it is not a queue: the rate must not fall at every hold.
  CongestionController cc(Options());
  SimulatedLink link(cc, 2e9, milliseconds(25), 32 << 10);
  FirstWriteHeld(link);
  ASSERT_GT(cc.applied_pacing_rate(), 0) << "the first call no longer starts the pacer";
  const uint64_t first_decreases = cc.stats().decreases;
  for (int i = 0; i < 100; ++i) {
    // (A call reaches the server about 55 ms after it is sent.)
    if (i % 3 == 0) link.StallServer(link.now() + milliseconds(50), link.now() + milliseconds(100));
    link.Run(milliseconds(100));
  }
  EXPECT_EQ(cc.stats().decreases, first_decreases) << "a server hold was taken for a queue";
}

TEST(CongestionTest, ARateSetFromTheFirstCallsServerHoldFindsTheLinkWithinSeconds) {
  // Rounds of paced 480 KiB calls at that rate are half a second long, and
  // they show no queue at all: with the step a long round allows once the
  // link has been seen full, the calls would be paced for seven seconds.
  // The first call's queue alone does not say that the link was full.
  CongestionController cc(Options());
  SimulatedLink link(cc, 2e9, milliseconds(25), 32 << 10);
  FirstWriteHeld(link);
  link.set_call_bytes(480 << 10);  // K = 15: the writes gathered
  ASSERT_GT(cc.applied_pacing_rate(), 0) << "the first call no longer starts the pacer";
  ASSERT_LT(cc.pacing_rate(), 2e6);
  link.Run(std::chrono::seconds(4));
  ExpectWholeCallsEachRound(cc, link, 0.050);
}

TEST(CongestionTest, AServerHoldDoesNotPaceAFastLink) {
  // K = 15, once the calls go out whole: every fourth round the server
  // holds a reply 30 ms. A hold's transfer looks long, but the next call's
  // is short again: a link shown to be fast stays unpaced.
  CongestionController cc(Options());
  SimulatedLink link(cc, 2e9, milliseconds(25), 32 << 10);
  FirstWriteHeld(link);
  link.set_call_bytes(480 << 10);  // K = 15: the writes gathered
  link.Run(std::chrono::seconds(5));
  ASSERT_EQ(cc.applied_pacing_rate(), 0);
  const uint64_t paced = link.paced_sends();
  for (int i = 0; i < 40; ++i) {
    // (A call reaches the server about 25 ms after it is sent.)
    if (i % 4 == 0) link.StallServer(link.now() + milliseconds(20), link.now() + milliseconds(50));
    link.Run(milliseconds(100));
  }
  EXPECT_EQ(link.paced_sends(), paced) << "a server hold started the pacer";
}

}  // namespace
}  // namespace nfsedge
