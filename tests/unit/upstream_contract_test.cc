// The upstream scheduler and its congestion controller, as an NFS client or
// an administrator sees them: the rate after a pause, callbacks never run
// from inside Call(), counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/clock.h"
#include "proxy/congestion.h"
#include "proxy/scheduler.h"
#include "rpc/auth_sys.h"
#include "simulated_link.h"

namespace nfsedge {
namespace {

using std::chrono::milliseconds;

// ---------------------------------------------------------------------------
// CongestionController after an idle period, on a simulated link
// (simulated_link.h).

// The congestion benchmark's link (2 Mbit/s, 40 ms) and write path (one
// 256 KB FILE_SYNC WRITE at a time, 5 ms of fsync). After the client pauses
// for three seconds, one small data call (a GETATTR that revalidates cached
// blocks goes as client data: 240 bytes) meets 30 ms of jitter on the WAN.
// That call's "delivery rate" (240 bytes over 30 ms, an application-limited
// sample, the older samples having expired during the pause) is not what
// the link carries: taken for it, the pacing rate would drop to about
// 8 KB/s and the next 256 KB WRITE take half a minute on the wire.
// docs/architecture.md section 12: a drop is "at most half"; BBR's rule is
// that an application-limited sample never lowers the estimate.
TEST(CongestionAfterIdleTest, OneSmallSlowCallAfterAPauseDoesNotCollapseThePacingRate) {
  constexpr double kSlow = 250e3;
  constexpr uint64_t kLarge = 256 << 10;
  CongestionController cc(simulated::Options());
  simulated::SimulatedLink link(cc, kSlow, milliseconds(20), kLarge);
  link.set_max_calls(1);
  link.set_service(milliseconds(5));
  link.set_probe_interval(milliseconds(100));
  link.Run(std::chrono::seconds(20));
  const double before = cc.pacing_rate();
  ASSERT_GE(before, 0.8 * kSlow) << "precondition: the rate found the link";
  ASSERT_GT(cc.applied_pacing_rate(), 0.0) << "precondition: paced (a queue was seen)";

  // The client pauses: nothing is sent for three seconds.
  link.set_max_calls(0);
  link.set_probe_interval(Duration::zero());
  link.Run(std::chrono::seconds(3));

  // One small client-data call, 30 ms above the base round trip.
  FakeClock& clock = link.clock();
  const MonoTime sent = clock.MonoNow();
  CongestionController::Ticket t = cc.OnSend(240, sent);
  clock.Advance(milliseconds(40 + 30));
  cc.OnReply(t, sent, clock.MonoNow());
  cc.SetAppLimited();  // the scheduler's queues are empty again

  EXPECT_GE(cc.pacing_rate(), 0.5 * before)
      << "one application-limited 240-byte call set the pacing rate from " << before << " to "
      << cc.pacing_rate() << " bytes/s";

  // The client's writes resume: what they get over the next 15 s.
  link.set_max_calls(1);
  link.set_probe_interval(milliseconds(100));
  const uint64_t delivered = link.delivered_bytes();
  link.Run(std::chrono::seconds(15));
  const double rate = (link.delivered_bytes() - delivered) / 15.0;
  // Unpaced, one call per (transfer + round trip + fsync) is the best.
  const double best = kLarge / (kLarge / kSlow + 0.045);
  EXPECT_GE(rate, 0.7 * best) << "bulk rate after the pause: " << rate << " bytes/s";
}

// ---------------------------------------------------------------------------
// UpstreamScheduler over fake lanes.

constexpr uint32_t kNfs = 100003;
constexpr uint32_t kGetattr = 1, kRead = 6, kWrite = 7;

// A lane that holds calls until answered, or refuses them when told to.
class Lane : public RpcCaller {
 public:
  Status Call(uint32_t, uint32_t, uint32_t proc, const OpaqueAuth&, std::string_view args,
              ReplyCallback done) override {
    if (refuse) return ResourceExhausted("lane: queue full");
    held.push_back(Held{proc, std::string(args), std::move(done)});
    return Status::Ok();
  }
  struct Held {
    uint32_t proc;
    std::string args;
    ReplyCallback done;
  };
  void Answer(size_t i = 0) {
    Held h = std::move(held[i]);
    held.erase(held.begin() + static_cast<long>(i));
    RpcReply r;
    r.header.reply_stat = kMsgAccepted;
    r.header.accept_stat = kSuccess;
    h.done(std::move(r));
  }
  std::vector<Held> held;
  bool refuse = false;
};

OpaqueAuth Machine(const std::string& machine) {
  AuthSys a;
  a.machine = machine;
  a.uid = 1000;
  return OpaqueAuth{kAuthSys, EncodeAuthSys(a)};
}

// Arguments of `bytes` bytes ending in a zero count (a READ brings nothing
// more back).
std::string ArgsOf(size_t bytes) {
  std::string s(std::max<size_t>(bytes, 8), '.');
  s.replace(s.size() - 4, 4, std::string(4, '\0'));
  return s;
}

// RpcCaller's contract (rpc/rpc_caller.h, proxy/scheduler.h): `done` runs
// "later (never from inside Call)", and a call that cannot be queued is
// refused by Call's status. Here WRITEs wait for the write cap (a client
// writing hard), so a READ submitted next is queued, then sent by the Pump
// that Submit runs; the bulk lane refuses it (its queue is full:
// upstream.max_queued). The READ is refused by Call's status, its callback
// never runs: the read path (ReadPath::Fetch) marks blocks pending only after
// Call() returns OK, so a callback run from inside Call() would leave them
// "pending" forever, every client READ of them waiting for a fetch that
// never comes.
TEST(SchedulerCallbackContractTest, ARefusedCallIsNotAnsweredFromInsideCall) {
  FakeClock clock;
  Lane meta, bulk;
  SchedulerOptions o;
  o.max_writes_in_flight = 1;
  o.congestion.initial_window = 64 << 20;  // the window does not limit here
  UpstreamScheduler scheduler(clock, meta, bulk, o);
  auto ignore = [](StatusOr<RpcReply>) {};
  ASSERT_TRUE(scheduler.Caller(CallClass::kClientData)
                  .Call(kNfs, 3, kWrite, Machine("a"), ArgsOf(1000), ignore)
                  .ok());
  ASSERT_TRUE(scheduler.Caller(CallClass::kClientData)
                  .Call(kNfs, 3, kWrite, Machine("a"), ArgsOf(1000), ignore)
                  .ok());
  ASSERT_EQ(bulk.held.size(), 1u);
  ASSERT_EQ(scheduler.stats().queued[1], 1u) << "precondition: a WRITE waits for the cap";

  bulk.refuse = true;
  bool in_call = false;
  bool ran_inside = false;
  bool ran = false;
  in_call = true;
  Status s = scheduler.Caller(CallClass::kClientData)
                 .Call(kNfs, 3, kRead, Machine("b"), ArgsOf(100), [&](StatusOr<RpcReply>) {
                   ran = true;
                   ran_inside = in_call;
                 });
  in_call = false;
  EXPECT_FALSE(ran_inside) << "the callback ran from inside Call() (which returned "
                           << s.ToString() << ")";
  // Either refused by Call's status (and `done` never runs), or accepted and
  // answered later: not both, and not answered inside.
  if (!s.ok()) {
    EXPECT_FALSE(ran);
  }
}

// SchedulerStats::calls counts calls accepted ("accepted", scheduler.h);
// an interactive call the metadata lane refused (the client is answered
// NFS3ERR_JUKEBOX) is not counted, as client data and background are not.
TEST(SchedulerCountersTest, AnInteractiveCallTheLaneRefusedIsNotCountedAsAccepted) {
  FakeClock clock;
  Lane meta, bulk;
  UpstreamScheduler scheduler(clock, meta, bulk, SchedulerOptions{});
  meta.refuse = true;
  bulk.refuse = true;
  auto ignore = [](StatusOr<RpcReply>) {};
  Status g = scheduler.Caller(CallClass::kInteractive)
                 .Call(kNfs, 3, kGetattr, Machine("a"), ArgsOf(100), ignore);
  Status r = scheduler.Caller(CallClass::kClientData)
                 .Call(kNfs, 3, kRead, Machine("a"), ArgsOf(100), ignore);
  ASSERT_FALSE(g.ok());
  ASSERT_FALSE(r.ok());
  SchedulerStats st = scheduler.stats();
  EXPECT_EQ(st.calls[1], 0u);  // client data: not counted
  EXPECT_EQ(st.calls[0], 0u) << "a refused interactive call counted as accepted";
}

}  // namespace
}  // namespace nfsedge
