// UpstreamScheduler over fake lanes that hold every call until the test
// answers it, with a fake clock.
#include "proxy/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "rpc/auth_sys.h"

namespace nfsedge {
namespace {

constexpr uint32_t kNfs = 100003;
constexpr uint32_t kGetattr = 1, kRead = 6, kWrite = 7, kCommit = 21;

// An RpcCaller that records calls and answers them only when told.
class HeldCaller : public RpcCaller {
 public:
  struct Held {
    uint32_t proc;
    std::string args;
    ReplyCallback done;
  };
  Status Call(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
              std::string_view args, ReplyCallback done) override {
    if (refuse > 0) {
      refuse--;
      return ResourceExhausted("the lane's queue is full");
    }
    held.push_back(Held{proc, std::string(args), std::move(done)});
    sent.push_back(std::string(args));
    max_writes = std::max<size_t>(max_writes, Writes());
    return Status::Ok();
  }
  size_t Writes() const {
    return std::count_if(held.begin(), held.end(), [](const Held& h) { return h.proc == kWrite; });
  }
  // Answers the oldest call held (or the one at `i`) with SUCCESS.
  void Answer(size_t i = 0) {
    Held h = std::move(held[i]);
    held.erase(held.begin() + static_cast<long>(i));
    RpcReply r;
    r.header.reply_stat = kMsgAccepted;
    r.header.accept_stat = kSuccess;
    h.done(std::move(r));
  }
  std::vector<Held> held;
  int refuse = 0;                 // calls to refuse from now (a full queue)
  std::vector<std::string> sent;  // args of every call, in order
  size_t max_writes = 0;
};

OpaqueAuth Cred(const std::string& machine) {
  AuthSys a;
  a.machine = machine;
  a.uid = 1000;
  return OpaqueAuth{kAuthSys, EncodeAuthSys(a)};
}

// Arguments of `bytes` bytes whose text names the call; they end in a zero
// count, so that a READ's reply adds nothing to its size.
std::string Args(const std::string& name, size_t bytes) {
  std::string s = name + ";";
  s.resize(std::max(bytes, s.size() + 4), '.');
  s.replace(s.size() - 4, 4, std::string(4, '\0'));
  return s;
}

std::string Name(const std::string& args) { return args.substr(0, args.find(';')); }

class SchedulerTest : public ::testing::Test {
 protected:
  void Make(SchedulerOptions o) {
    scheduler_ = std::make_unique<UpstreamScheduler>(clock_, meta_, bulk_, o);
  }
  // Small window: one 40 KB call at a time.
  static SchedulerOptions OneAtATime() {
    SchedulerOptions o;
    o.congestion.initial_window = 48 << 10;
    o.congestion.min_window = 48 << 10;
    o.congestion.max_window = 48 << 10;
    o.background_share_percent = 0;
    return o;
  }
  Status Submit(CallClass c, uint32_t proc, const std::string& name, const std::string& machine,
                size_t bytes = 40 << 10) {
    return scheduler_->Caller(c).Call(kNfs, 3, proc, Cred(machine), Args(name, bytes),
                                      [this, name](StatusOr<RpcReply> r) {
                                        answered_.push_back(name);
                                        if (!r.ok()) errors_.push_back(name);
                                      });
  }
  // One WRITE in flight at most, and room for it and one call more.
  static SchedulerOptions CappedAtOneWrite(uint32_t background_share_percent) {
    SchedulerOptions o = OneAtATime();
    o.background_share_percent = background_share_percent;
    o.max_writes_in_flight = 1;
    o.congestion.initial_window = o.congestion.min_window = o.congestion.max_window = 96 << 10;
    return o;
  }
  // `n` READs of `cls` from `machine`, each sent and answered while the
  // WRITE the cap holds stays.
  void ReadsWhileCapped(CallClass cls, const std::string& name, const std::string& machine,
                        int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(Submit(cls, kRead, name, machine).ok());
      clock_.Advance(std::chrono::milliseconds(10));
      bulk_.Answer(bulk_.held.size() - 1);
    }
  }
  // Answers bulk calls one by one until none is held; returns the order in
  // which they were sent.
  std::vector<std::string> Drain() {
    while (!bulk_.held.empty()) {
      clock_.Advance(std::chrono::milliseconds(10));
      bulk_.Answer();
    }
    std::vector<std::string> order;
    for (const auto& a : bulk_.sent) order.push_back(Name(a));
    return order;
  }

  FakeClock clock_;
  HeldCaller meta_, bulk_;
  std::vector<std::string> answered_, errors_;
  std::unique_ptr<UpstreamScheduler> scheduler_;
};

TEST_F(SchedulerTest, InteractiveMetadataIsNotHeldBehindBulk) {
  Make(OneAtATime());
  ASSERT_TRUE(Submit(CallClass::kInteractive, kWrite, "w1", "a").ok());
  ASSERT_TRUE(Submit(CallClass::kInteractive, kWrite, "w2", "a").ok());
  ASSERT_TRUE(Submit(CallClass::kBackground, kRead, "ra", "a").ok());
  EXPECT_EQ(bulk_.held.size(), 1u);  // the window holds one
  ASSERT_TRUE(Submit(CallClass::kInteractive, kGetattr, "g", "a", 100).ok());
  ASSERT_EQ(meta_.held.size(), 1u);  // at once, on the metadata lane
  EXPECT_EQ(Name(meta_.held[0].args), "g");
  // It counts as bytes in flight.
  EXPECT_GT(scheduler_->stats().congestion.in_flight, 40u << 10);
  SchedulerStats s = scheduler_->stats();
  EXPECT_EQ(s.calls[0], 1u);
  EXPECT_EQ(s.calls[1], 2u);  // WRITEs through the interactive facade are client data
  EXPECT_EQ(s.queued[1], 1u);
  EXPECT_EQ(s.queued[2], 1u);
  meta_.Answer();
  EXPECT_EQ(answered_, std::vector<std::string>{"g"});
  EXPECT_EQ(Drain(), (std::vector<std::string>{"w1", "w2", "ra"}));
}

// A lane that refuses a call (its transport's queue is full) as a reply
// makes room: the call waits at the head of its queue for the next Pump
// (here the next sweep), and the calls behind it are not failed one after
// the other.
TEST_F(SchedulerTest, ACallALaneRefusesAtAReplyWaitsForTheNextPump) {
  Make(OneAtATime());
  for (const char* n : {"r0", "r1", "r2", "r3"}) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, n, "a").ok());
  }
  ASSERT_EQ(bulk_.held.size(), 1u);
  bulk_.refuse = 1;
  clock_.Advance(std::chrono::milliseconds(10));
  bulk_.Answer();  // r0's reply; the lane refuses r1 once
  EXPECT_TRUE(errors_.empty()) << "calls failed for one refusal";
  EXPECT_TRUE(bulk_.held.empty());
  clock_.Advance(std::chrono::milliseconds(100));
  scheduler_->Sweep();
  EXPECT_EQ(Drain(), (std::vector<std::string>{"r0", "r1", "r2", "r3"}));
  EXPECT_TRUE(errors_.empty());
}

TEST_F(SchedulerTest, ClientDataGoesBeforeBackground) {
  Make(OneAtATime());
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "first", "a").ok());
  ASSERT_TRUE(Submit(CallClass::kBackground, kRead, "bg1", "a").ok());
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "d1", "b").ok());
  ASSERT_TRUE(Submit(CallClass::kBackground, kRead, "bg2", "b").ok());
  ASSERT_TRUE(Submit(CallClass::kInteractive, kCommit, "d2", "b", 100).ok());
  EXPECT_EQ(Drain(), (std::vector<std::string>{"first", "d1", "d2", "bg1", "bg2"}));
  EXPECT_EQ(answered_.size(), 5u);
  EXPECT_TRUE(errors_.empty());
}

TEST_F(SchedulerTest, ClientsShareTheirClassFairly) {
  Make(OneAtATime());
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "a0", "alpha").ok());
  for (int i = 1; i <= 4; ++i) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "a" + std::to_string(i), "alpha").ok());
  }
  for (int i = 1; i <= 4; ++i) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "b" + std::to_string(i), "beta").ok());
  }
  EXPECT_EQ(Drain(),
            (std::vector<std::string>{"a0", "a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4"}));
}

TEST_F(SchedulerTest, FairnessIsInBytesNotCalls) {
  Make(OneAtATime());
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "x", "alpha").ok());
  // alpha sends 40 KB calls, beta 10 KB ones: beta gets about four calls
  // for each of alpha's.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "A", "alpha").ok());
  }
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "b", "beta", 10 << 10).ok());
  }
  std::vector<std::string> order = Drain();
  // Among the first 7 after "x": 2 of alpha's, 5 of beta's (or 1 and 6)
  // rather than alternating calls.
  int alpha = static_cast<int>(std::count(order.begin() + 1, order.begin() + 8, "A"));
  EXPECT_LE(alpha, 2);
  EXPECT_GE(alpha, 1);
}

TEST_F(SchedulerTest, BackgroundKeepsItsShare) {
  SchedulerOptions o = OneAtATime();
  o.background_share_percent = 20;
  Make(o);
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "d", "a").ok());
  ASSERT_TRUE(Submit(CallClass::kBackground, kRead, "bg", "a").ok());
  // Client data keeps coming: one more each time one is answered.
  int data_before_bg = 0;
  for (int i = 0; i < 50 && std::find(answered_.begin(), answered_.end(), "bg") == answered_.end();
       ++i) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "d", "a").ok());
    clock_.Advance(std::chrono::milliseconds(10));
    bulk_.Answer();
    data_before_bg = static_cast<int>(std::count(answered_.begin(), answered_.end(), "d"));
  }
  ASSERT_NE(std::find(answered_.begin(), answered_.end(), "bg"), answered_.end())
      << "background starved";
  // 20% of the bytes: one background call for every four of client data.
  EXPECT_LE(data_before_bg, 5);
  Drain();
}

TEST_F(SchedulerTest, SmallClientCallsThatFitDoNotStarveALargerBackgroundCall) {
  // The window is kept full of small client calls; each reply frees room
  // for one of them but not for the larger background call (a write-behind
  // flush a client COMMIT waits for). Client calls that find room must
  // still go through the background's share, not around it.
  SchedulerOptions o = OneAtATime();
  o.background_share_percent = 20;
  Make(o);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "d", "a", 10 << 10).ok());
  }
  ASSERT_TRUE(Submit(CallClass::kBackground, kRead, "bg", "b").ok());
  for (int i = 0; i < 200 && std::find(answered_.begin(), answered_.end(), "bg") == answered_.end();
       ++i) {
    clock_.Advance(std::chrono::milliseconds(10));
    if (!bulk_.held.empty()) bulk_.Answer();
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "d", "a", 10 << 10).ok());
  }
  EXPECT_NE(std::find(answered_.begin(), answered_.end(), "bg"), answered_.end())
      << "background starved";
  Drain();
}

// Background whose WRITE the write cap holds earns its share while client
// READs go, but banks at most 256 KiB of it: once the cap lets the WRITE go,
// the background calls behind it do not go ahead of client data for as
// long as the READs went (here 16 MiB of them: 4 MiB of share at 20%, the
// 40 background calls' 1.6 MB many times over).
TEST_F(SchedulerTest, BackgroundHeldByTheWriteCapBanksABoundedShare) {
  Make(CappedAtOneWrite(20));
  ASSERT_TRUE(Submit(CallClass::kInteractive, kWrite, "w", "a").ok());  // takes the cap
  ASSERT_TRUE(Submit(CallClass::kBackground, kWrite, "flush", "b").ok());
  ReadsWhileCapped(CallClass::kClientData, "d", "a", 400);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "d2", "a").ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(Submit(CallClass::kBackground, kRead, "bg", "b").ok());
  bulk_.sent.clear();
  bulk_.Answer(0);  // the client's WRITE: the cap lets the flush go
  std::vector<std::string> order = Drain();
  ASSERT_EQ(order.size(), 80u);  // (one d2 went before)
  const auto first = std::find(order.begin(), order.end(), "d2");
  EXPECT_LE(first - order.begin(), 10)
      << "client data waited behind the share banked while the flush was held";
}

// The mirror case: client data whose WRITE the cap holds cannot go, so
// background calls that go meanwhile are not taken from its share. Once
// the cap lets it go, background (a write-behind flush a client COMMIT
// waits for) does not owe client data for the time it was held.
TEST_F(SchedulerTest, BackgroundDoesNotOweForTimeClientDataWasCapped) {
  Make(CappedAtOneWrite(20));
  ASSERT_TRUE(Submit(CallClass::kInteractive, kWrite, "w0", "a").ok());  // takes the cap
  ASSERT_TRUE(Submit(CallClass::kInteractive, kWrite, "w1", "a").ok());  // waits for it
  ReadsWhileCapped(CallClass::kBackground, "pre", "b", 100);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(Submit(CallClass::kBackground, kRead, "bg", "b").ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "d", "a").ok());
  bulk_.sent.clear();
  bulk_.Answer(0);  // w0: the cap lets w1 go
  std::vector<std::string> order = Drain();
  const auto first = std::find(order.begin(), order.end(), "bg");
  EXPECT_LE(first - order.begin(), 7)
      << "background owed client data for the 4 MB it sent while client data was capped";
}

// Within a class, a client whose only waiting call is a WRITE the cap holds
// is not waiting to be sent: it banks no share over the clients whose calls
// went meanwhile, and does not pass them all once it has a call to send.
TEST_F(SchedulerTest, AClientHeldByTheWriteCapBanksNoShare) {
  Make(CappedAtOneWrite(0));
  ASSERT_TRUE(Submit(CallClass::kInteractive, kWrite, "w0", "a").ok());  // takes the cap
  ASSERT_TRUE(Submit(CallClass::kInteractive, kWrite, "w1", "a").ok());  // waits for it
  ReadsWhileCapped(CallClass::kClientData, "r", "b", 100);
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "b0", "b").ok());  // sent: the window is full
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "b", "b").ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "a", "a").ok());
  bulk_.sent.clear();
  std::vector<std::string> order = Drain();
  ASSERT_GE(order.size(), 10u);
  EXPECT_GE(std::count(order.begin(), order.begin() + 10, "b"), 3)
      << "client a, held by the cap, passed client b for the 4 MB b sent meanwhile";
}

TEST_F(SchedulerTest, WritesInFlightNeverExceedTheCap) {
  SchedulerOptions o;
  o.max_writes_in_flight = 2;
  o.congestion.initial_window = 64 << 20;  // the window does not limit here
  Make(o);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(Submit(CallClass::kInteractive, kWrite, "w" + std::to_string(i), "a").ok());
  }
  ASSERT_TRUE(Submit(CallClass::kBackground, kWrite, "flush", "b").ok());
  EXPECT_EQ(bulk_.Writes(), 2u);
  // A READ from the same client is not held behind the capped WRITEs.
  ASSERT_TRUE(Submit(CallClass::kInteractive, kRead, "r", "a").ok());
  EXPECT_EQ(Name(bulk_.held.back().args), "r");
  EXPECT_EQ(scheduler_->stats().writes_in_flight, 2u);
  EXPECT_GT(scheduler_->stats().write_cap_waits, 0u);
  std::vector<std::string> order = Drain();
  EXPECT_EQ(bulk_.max_writes, 2u);
  EXPECT_EQ(answered_.size(), 12u);
  // The client's WRITEs stay in order.
  std::vector<std::string> writes;
  for (const auto& n : order) {
    if (n[0] == 'w') writes.push_back(n);
  }
  EXPECT_TRUE(std::is_sorted(writes.begin(), writes.end()));
}

TEST_F(SchedulerTest, SetOptionsMovesTheWriteCapAndTheQueueBound) {
  SchedulerOptions o;
  o.max_writes_in_flight = 1;
  o.max_queued = 100;
  o.congestion.initial_window = 64 << 20;  // the window does not limit here
  Make(o);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(Submit(CallClass::kInteractive, kWrite, "w" + std::to_string(i), "a").ok());
  }
  EXPECT_EQ(bulk_.Writes(), 1u);
  o.max_writes_in_flight = 4;  // a reload raises the cap: waiting WRITEs go at once
  scheduler_->SetOptions(o);
  EXPECT_EQ(bulk_.Writes(), 4u);
  o.max_writes_in_flight = 2;  // lowered: nothing is recalled, no new one goes
  o.max_queued = 1;
  scheduler_->SetOptions(o);
  bulk_.Answer();
  EXPECT_EQ(bulk_.Writes(), 3u) << "four in flight, one answered, cap 2: none sent";
  const auto queued = scheduler_->stats().queued;
  EXPECT_EQ(std::accumulate(queued.begin(), queued.end(), uint64_t{0}), 2u);
  EXPECT_EQ(Submit(CallClass::kClientData, kRead, "r", "a").code(),
            StatusCode::kResourceExhausted)
      << "the lower queue bound refuses";
  Drain();
  EXPECT_EQ(bulk_.max_writes, 4u);
  EXPECT_EQ(answered_.size(), 6u);
}

TEST_F(SchedulerTest, RefusesBeyondTheQueueBound) {
  SchedulerOptions o = OneAtATime();
  o.max_queued = 2;
  Make(o);
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "a", "a").ok());  // sent
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "b", "a").ok());  // waits
  ASSERT_TRUE(Submit(CallClass::kBackground, kRead, "c", "a").ok());  // waits
  Status s = Submit(CallClass::kBackground, kRead, "d", "a");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(scheduler_->stats().refused, 1u);
  // Interactive metadata is never refused by the scheduler's queue.
  EXPECT_TRUE(Submit(CallClass::kInteractive, kGetattr, "g", "a", 100).ok());
  Drain();
  meta_.Answer();
  EXPECT_EQ(answered_.size(), 4u);
}

TEST_F(SchedulerTest, RoundTripsReachTheControllerAndTheTransport) {
  SchedulerOptions o;
  o.congestion.rto_floor = std::chrono::milliseconds(10);
  Duration rto{};
  SchedulerHooks hooks;
  hooks.set_retransmit_timeout = [&](Duration d) { rto = d; };
  scheduler_ = std::make_unique<UpstreamScheduler>(clock_, meta_, bulk_, o, hooks);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(Submit(CallClass::kInteractive, kGetattr, "g", "a", 100).ok());
    clock_.Advance(std::chrono::milliseconds(50));
    meta_.Answer();
  }
  CongestionStats c = scheduler_->stats().congestion;
  EXPECT_EQ(c.base_rtt, Duration(std::chrono::milliseconds(50)));
  EXPECT_EQ(c.samples, 20u);
  EXPECT_EQ(c.in_flight, 0u);
  EXPECT_EQ(rto, c.rto);
  EXPECT_GE(rto, Duration(std::chrono::milliseconds(50)));
  EXPECT_NE(scheduler_->StatsLine().find("base_rtt_us=50000"), std::string::npos)
      << scheduler_->StatsLine();
}

// The round trips the timeout is made of are taken without the procedures'
// own times (a READ's reply on the wire, a WRITE's sync), so the timeout
// adds the longest of those: a 1 MiB READ whose reply takes 4 s on a
// 2 Mbit/s link is not sent again after 1 s.
TEST_F(SchedulerTest, TheTimeoutAllowsForTheProceduresOwnTimes) {
  SchedulerOptions o;
  Duration rto{};
  SchedulerHooks hooks;
  hooks.set_retransmit_timeout = [&](Duration d) { rto = d; };
  scheduler_ = std::make_unique<UpstreamScheduler>(clock_, meta_, bulk_, o, hooks);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Submit(CallClass::kInteractive, kGetattr, "g", "a", 100).ok());
    clock_.Advance(std::chrono::milliseconds(50));
    meta_.Answer();
  }
  EXPECT_LT(rto, Duration(std::chrono::seconds(2)));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "r", "a", 1 << 20).ok());
    clock_.Advance(std::chrono::seconds(4));
    bulk_.Answer();
    EXPECT_GT(rto, Duration(std::chrono::seconds(4))) << "READ " << i;
    EXPECT_LT(rto, Duration(std::chrono::seconds(8))) << "READ " << i;
  }
  EXPECT_EQ(scheduler_->stats().congestion.rto + std::chrono::milliseconds(3950), rto);
}

TEST_F(SchedulerTest, AStandingQueueEveryWriteMeetsIsNotTakenForServerTime) {
  // Base: GETATTRs alone take 40 ms. Then every WRITE meets a 30 ms queue
  // (and spends 2 ms in the server), and so does a GETATTR sent with it.
  // Taking each procedure's least round trip above the least of any for
  // server time would take the queue for 32 ms of it and see none.
  Make(SchedulerOptions{});
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Submit(CallClass::kInteractive, kGetattr, "g", "a", 100).ok());
    clock_.Advance(std::chrono::milliseconds(40));
    meta_.Answer();
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kWrite, "w", "a", 1000).ok());
    ASSERT_TRUE(Submit(CallClass::kInteractive, kGetattr, "g", "a", 100).ok());
    clock_.Advance(std::chrono::milliseconds(70));
    meta_.Answer();
    clock_.Advance(std::chrono::milliseconds(2));
    bulk_.Answer();
  }
  CongestionStats c = scheduler_->stats().congestion;
  EXPECT_EQ(c.base_rtt, Duration(std::chrono::milliseconds(40)));
  // The WRITE's round trip less its 2 ms of server time: the queue shows.
  EXPECT_EQ(c.last_rtt, Duration(std::chrono::milliseconds(70)));
}

// A WRITE answered sooner than the queue a GETATTR sent near it met (the
// path's queue drained between them, or an outage held the GETATTR) gives
// no server time to bound the correction with: taken for none, it would
// count every later WRITE's sync as queue for as long as the proxy runs.
TEST_F(SchedulerTest, AWriteFasterThanANearbyQueueLeavesItsServerTimeUnknown) {
  Make(SchedulerOptions{});
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Submit(CallClass::kInteractive, kGetattr, "g", "a", 100).ok());
    clock_.Advance(std::chrono::milliseconds(40));
    meta_.Answer();
  }
  ASSERT_TRUE(Submit(CallClass::kInteractive, kGetattr, "g", "a", 100).ok());
  clock_.Advance(std::chrono::milliseconds(28));
  ASSERT_TRUE(Submit(CallClass::kClientData, kWrite, "w", "a", 1000).ok());
  clock_.Advance(std::chrono::milliseconds(42));
  meta_.Answer();  // met 30 ms of queue
  bulk_.Answer();  // 40 ms and 2 ms of sync: no queue
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(std::chrono::milliseconds(200));
    ASSERT_TRUE(Submit(CallClass::kClientData, kWrite, "w", "a", 1000).ok());
    clock_.Advance(std::chrono::milliseconds(42));
    bulk_.Answer();
  }
  // The WRITE's 2 ms of sync are its own, not a queue.
  EXPECT_EQ(scheduler_->stats().congestion.last_rtt, Duration(std::chrono::milliseconds(40)));
}

TEST_F(SchedulerTest, ShutdownFailsWaitingCallsAndRefusesNewOnes) {
  Make(OneAtATime());
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "a", "a").ok());
  ASSERT_TRUE(Submit(CallClass::kBackground, kRead, "b", "a").ok());
  scheduler_->Shutdown(Status(StatusCode::kCancelled, "bye"));
  EXPECT_EQ(errors_, std::vector<std::string>{"b"});
  EXPECT_EQ(Submit(CallClass::kInteractive, kGetattr, "c", "a", 100).code(),
            StatusCode::kCancelled);
  bulk_.Answer();  // a late reply for a call sent before is still delivered
  EXPECT_EQ(answered_, (std::vector<std::string>{"b", "a"}));
  // Destroyed with a call still out: its reply only reaches the caller.
  ASSERT_TRUE(meta_.held.empty());
}

TEST_F(SchedulerTest, ReadsCountTheirReplyBytes) {
  Make(OneAtATime());
  // A READ of 32 KB asks little but brings 32 KB back: with one in flight,
  // a second does not fit the 48 KB window.
  std::string args(40, '\0');
  args[36] = 0;
  args[37] = 0;
  args[38] = static_cast<char>(0x80);  // count = 32768
  auto call = [&] {
    return scheduler_->Caller(CallClass::kClientData)
        .Call(kNfs, 3, kRead, Cred("a"), args, [this](StatusOr<RpcReply>) {
          answered_.push_back("r");
        });
  };
  ASSERT_TRUE(call().ok());
  ASSERT_TRUE(call().ok());
  EXPECT_EQ(bulk_.held.size(), 1u);
  EXPECT_GE(scheduler_->stats().congestion.in_flight, 32u << 10);
  Drain();
  EXPECT_EQ(answered_.size(), 2u);
}

// A call the server holds (a frozen file system) leaves the window once it
// is past the retransmission timeout after its bytes were through the path,
// and a call handed upstream after that was answered (here the scheduler's
// NULL probe): the other calls go on. Its reply still ends it, is not taken
// off twice, and gives the controller no sample.
TEST_F(SchedulerTest, ACallTheServerHoldsLeavesTheWindow) {
  SchedulerOptions o = OneAtATime();
  Make(o);
  // A few round trips: a rate and a timeout are known.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "warm", "a").ok());
    clock_.Advance(std::chrono::milliseconds(50));
    bulk_.Answer();
  }
  const CongestionStats c = scheduler_->stats().congestion;
  ASSERT_GT(c.delivery_rate, 0);
  ASSERT_EQ(c.pacing_rate > 0 && c.rto > Duration::zero(), true);
  ASSERT_TRUE(Submit(CallClass::kClientData, kWrite, "held", "a").ok());
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "other", "b").ok());
  ASSERT_EQ(bulk_.held.size(), 1u);  // the window holds one
  // Its bytes (and none ahead) through the path at the lower of the rates
  // known, then the timeout.
  const double rate = std::min(c.delivery_rate, c.pacing_rate);
  const auto limit = c.rto + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(
                                 ((40 << 10) + 200) / rate));
  clock_.Advance(limit - std::chrono::milliseconds(20));
  scheduler_->Sweep();
  EXPECT_EQ(bulk_.held.size(), 1u);
  EXPECT_TRUE(meta_.held.empty()) << "nothing to find out yet";
  clock_.Advance(std::chrono::milliseconds(40));
  scheduler_->Sweep();
  // Past its time, but nothing handed since was answered: a silent path
  // holds every call alike. The scheduler asks with a NULL call.
  EXPECT_EQ(bulk_.held.size(), 1u);
  ASSERT_EQ(meta_.held.size(), 1u);
  EXPECT_EQ(meta_.held[0].proc, 0u);
  clock_.Advance(std::chrono::seconds(30));
  scheduler_->Sweep();
  EXPECT_EQ(bulk_.held.size(), 1u) << "released while the path said nothing";
  EXPECT_EQ(meta_.held.size(), 1u) << "one probe at a time";
  EXPECT_EQ(scheduler_->stats().stalled, 0u);
  // Not while the upstream is out, even with the path shown alive.
  meta_.Answer();
  scheduler_->HoldDeadlines(true);
  clock_.Advance(std::chrono::seconds(60));
  scheduler_->Sweep();
  ASSERT_EQ(bulk_.held.size(), 1u);
  // After the outage, timed again from its end, and proven again: here by
  // a client's GETATTR handed upstream after that and answered.
  scheduler_->HoldDeadlines(false);
  clock_.Advance(limit - std::chrono::milliseconds(20));
  scheduler_->Sweep();
  ASSERT_EQ(bulk_.held.size(), 1u);
  // (The GETATTR's round trip, the least of any, adds READ's own time to
  // the timeout.)
  clock_.Advance(std::chrono::milliseconds(100));
  ASSERT_TRUE(Submit(CallClass::kInteractive, kGetattr, "g", "c", 100).ok());
  ASSERT_EQ(meta_.held.size(), 1u);
  meta_.Answer();
  scheduler_->Sweep();
  ASSERT_EQ(bulk_.held.size(), 2u);
  EXPECT_EQ(Name(bulk_.held[1].args), "other");
  EXPECT_EQ(scheduler_->stats().stalled, 1u);
  EXPECT_EQ(scheduler_->stats().probes, 1u) << "no need to ask";
  EXPECT_EQ(scheduler_->stats().writes_in_flight, 1u);  // the cap still counts it
  const uint64_t other_bytes = scheduler_->stats().congestion.in_flight;
  EXPECT_GE(other_bytes, 40u << 10);
  EXPECT_LT(other_bytes, 80u << 10);  // the held WRITE's bytes are gone
  // The held WRITE's reply takes nothing more off, and its round trip (the
  // hold) is no sample.
  const CongestionStats before = scheduler_->stats().congestion;
  clock_.Advance(std::chrono::milliseconds(10));
  bulk_.Answer(0);
  const CongestionStats after = scheduler_->stats().congestion;
  EXPECT_EQ(after.in_flight, other_bytes);
  EXPECT_EQ(after.srtt, before.srtt);
  EXPECT_EQ(after.rto, before.rto);
  EXPECT_EQ(after.samples, before.samples);
  EXPECT_EQ(scheduler_->stats().writes_in_flight, 0u);
  bulk_.Answer(0);
  EXPECT_EQ(scheduler_->stats().congestion.in_flight, 0u);
  EXPECT_EQ(answered_.size(), 7u);
  EXPECT_TRUE(errors_.empty());
}

// A call that waits in the scheduler longer than queue_timeout fails,
// never sent (its client gets NFS3ERR_JUKEBOX), except while the upstream
// is out; after the outage each has a whole timeout again.
TEST_F(SchedulerTest, AWaitingCallFailsAtItsDeadline) {
  SchedulerOptions o = CappedAtOneWrite(0);
  o.queue_timeout = std::chrono::seconds(5);
  Make(o);
  ASSERT_TRUE(Submit(CallClass::kClientData, kWrite, "w1", "a").ok());
  ASSERT_TRUE(Submit(CallClass::kClientData, kWrite, "w2", "b").ok());
  clock_.Advance(std::chrono::seconds(2));
  ASSERT_TRUE(Submit(CallClass::kClientData, kWrite, "w3", "c").ok());
  ASSERT_EQ(bulk_.held.size(), 1u);  // the cap holds w2 and w3
  scheduler_->HoldDeadlines(true);
  clock_.Advance(std::chrono::seconds(30));
  scheduler_->Sweep();
  EXPECT_TRUE(errors_.empty());
  scheduler_->HoldDeadlines(false);
  clock_.Advance(std::chrono::seconds(4));
  scheduler_->Sweep();
  EXPECT_TRUE(errors_.empty());
  clock_.Advance(std::chrono::seconds(1));
  scheduler_->Sweep();
  EXPECT_EQ(errors_, (std::vector<std::string>{"w2", "w3"}));
  EXPECT_EQ(scheduler_->stats().timeouts, 2u);
  EXPECT_EQ(scheduler_->stats().queued[1], 0u);
  // Without an outage the deadline runs from when it was queued.
  ASSERT_TRUE(Submit(CallClass::kClientData, kWrite, "w4", "b").ok());
  clock_.Advance(std::chrono::seconds(3));
  ASSERT_TRUE(Submit(CallClass::kClientData, kWrite, "w5", "b").ok());
  clock_.Advance(std::chrono::seconds(2));
  scheduler_->Sweep();
  EXPECT_EQ(errors_.back(), "w4");
  EXPECT_EQ(scheduler_->stats().queued[1], 1u);
  // The one left goes when the cap has room; the one sent was never failed.
  bulk_.Answer();
  ASSERT_EQ(bulk_.held.size(), 1u);
  EXPECT_EQ(Name(bulk_.held[0].args), "w5");
  bulk_.Answer();
  EXPECT_EQ(answered_.size(), 5u);
}

// A call that did not fit the window and failed at its deadline no longer
// holds back a smaller one behind it that fits.
TEST_F(SchedulerTest, AnExpiredCallNoLongerHoldsBackTheOnesBehindIt) {
  SchedulerOptions o = OneAtATime();
  o.queue_timeout = std::chrono::seconds(5);
  Make(o);
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "a", "x").ok());
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "big", "x").ok());
  clock_.Advance(std::chrono::seconds(3));
  ASSERT_TRUE(Submit(CallClass::kClientData, kRead, "small", "x", 4 << 10).ok());
  ASSERT_EQ(bulk_.held.size(), 1u) << "the small one waits behind the big one";
  clock_.Advance(std::chrono::seconds(2));
  scheduler_->Sweep();
  EXPECT_EQ(errors_, std::vector<std::string>{"big"});
  ASSERT_EQ(bulk_.held.size(), 2u);
  EXPECT_EQ(Name(bulk_.held[1].args), "small");
}

}  // namespace
}  // namespace nfsedge
