// CongestionController driven by a simulated link: a FIFO bottleneck of a
// given rate, a propagation delay each way, a sender that always has calls
// to send and paces them as the controller says, and a fake clock.
#include "proxy/congestion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace nfsedge {
namespace {

using std::chrono::milliseconds;

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// The link and the sender. Time moves in steps of kTick. A call's bytes leave
// the sender at the pacing rate (all at once when not paced) and are
// serialized by the bottleneck in arrival order; the call reaches the server
// one propagation delay after its last byte is serialized, and its (small)
// reply comes back one propagation delay later.
class SimulatedLink {
 public:
  static constexpr Duration kTick = std::chrono::microseconds(250);

  SimulatedLink(CongestionController& cc, double rate, Duration one_way, uint64_t call_bytes)
      : cc_(cc), rate_(rate), one_way_(one_way), call_bytes_(call_bytes) {}

  void set_rate(double rate) { rate_ = rate; }
  void set_one_way(Duration d) { one_way_ = d; }
  void set_call_bytes(uint64_t n) { call_bytes_ = n; }
  // The client sends its next call only after the reply reached it: the
  // scheduler, its queue empty at the reply, marks the path application
  // limited before that call (as nfsedge's does).
  void set_client_turnaround(bool on) { turnaround_ = on; }
  // The share of the pacing rate the sender's pacer achieves (a real one,
  // with its timer's gaps, sends a little below it).
  void set_pacer_efficiency(double e) { pacer_efficiency_ = e; }
  // Whether the sender follows the controller's pacing rate.
  void set_paced(bool paced) { paced_ = paced; }
  // The sender's calls in flight at most (a client waiting for replies).
  void set_max_calls(size_t n) { max_calls_ = n; }
  // The server's own time per call (an fsync), told to the controller as
  // the call's service time.
  void set_service(Duration d) { service_ = d; }
  // A small metadata call (not bulk, not paced) every `d`, as the
  // benchmark's GETATTR probe; 0 = none.
  void set_probe_interval(Duration d) { probe_interval_ = d; }

  // The server answers nothing that reaches it in [from, to) before `to`
  // (a stall: writeback throttling, a paused server).
  void StallServer(MonoTime from, MonoTime to) {
    stall_from_ = from;
    stall_to_ = to;
  }

  // Runs for `d` of simulated time.
  void Run(Duration d) {
    MonoTime end = clock_.MonoNow() + d;
    while (clock_.MonoNow() < end) {
      clock_.Advance(kTick);
      MonoTime now = clock_.MonoNow();
      while (!replies_.empty() && replies_.begin()->first <= now) {
        const Flight& f = replies_.begin()->second;
        cc_.OnReply(f.ticket, f.sent, now, f.ticket.bulk ? service_ : Duration::zero());
        if (f.ticket.bulk) {
          delivered_bytes_ += f.ticket.bytes;
          bulk_in_flight_--;
        }
        replies_.erase(replies_.begin());
        if (turnaround_) cc_.SetAppLimited();
      }
      if (probe_interval_ > Duration::zero() && now >= next_probe_) Probe(now);
      while (now >= next_release_ && bulk_in_flight_ < max_calls_ && cc_.CanSend(call_bytes_)) {
        Send(now);
      }
      // A client that waits for its replies has nothing more to send: the
      // scheduler then marks the calls in flight application limited.
      if (bulk_in_flight_ >= max_calls_) cc_.SetAppLimited();
      max_in_flight_ = std::max(max_in_flight_, cc_.in_flight());
    }
  }

  MonoTime now() const { return clock_.MonoNow(); }
  uint64_t delivered_bytes() const { return delivered_bytes_; }
  uint64_t max_in_flight() const { return max_in_flight_; }
  // Queueing delay seen by the probes sent in [from, to).
  std::vector<double> ProbeDelaysMs(MonoTime from, MonoTime to) const {
    std::vector<double> out;
    for (const auto& [t, ms] : probe_delays_) {
      if (t >= from && t < to) out.push_back(ms);
    }
    return out;
  }
  // Queueing delay seen by the last byte of each call sent in [from, to).
  std::vector<double> QueueDelaysMs(MonoTime from, MonoTime to) const {
    std::vector<double> out;
    for (const auto& [t, ms] : queue_delays_) {
      if (t >= from && t < to) out.push_back(ms);
    }
    return out;
  }

 private:
  struct Flight {
    CongestionController::Ticket ticket;
    MonoTime sent;  // last byte left the sender
  };

  // The bottleneck's backlog, in time, at `now`: it grows while the last
  // call's bytes arrive faster than the link takes them, then drains.
  Duration Backlog(MonoTime now) const {
    if (now >= last_.last_byte) return std::max(Duration::zero(), last_.finish - now);
    const double done = Seconds(now - last_.send) / Seconds(last_.last_byte - last_.send);
    const double at_send = std::max(0.0, Seconds(last_.before - last_.send));
    const double at_end = Seconds(last_.finish - last_.last_byte);
    return std::chrono::duration_cast<Duration>(
        std::chrono::duration<double>(at_send + (at_end - at_send) * done));
  }

  void Probe(MonoTime now) {
    next_probe_ = now + probe_interval_;
    CongestionController::Ticket t = cc_.OnSend(200, now, false);
    const Duration queue = Backlog(now);
    probe_delays_.emplace_back(now, Seconds(queue) * 1e3);
    replies_.emplace(now + queue + 2 * one_way_, Flight{t, now});
  }

  void Send(MonoTime now) {
    CongestionController::Ticket t = cc_.OnSend(call_bytes_, now);
    cc_.MarkOutbound(&t);  // the simulated calls are WRITEs
    double pace = paced_ ? cc_.applied_pacing_rate() * pacer_efficiency_ : 0;
    Duration release = pace > 0 ? Duration(static_cast<int64_t>(call_bytes_ / pace * 1e9))
                                : Duration::zero();
    MonoTime last_byte = now + release;
    // Fluid model: the bottleneck cannot finish before the last byte arrived
    // nor before it has serialized everything ahead plus this call.
    Duration serialize(static_cast<int64_t>(call_bytes_ / rate_ * 1e9));
    MonoTime start = std::max(now, link_free_);
    MonoTime finish = std::max(last_byte, start + serialize);
    last_ = Transfer{now, last_byte, finish, link_free_};
    link_free_ = finish;
    bulk_in_flight_++;
    queue_delays_.emplace_back(now, std::max(0.0, Seconds(finish - last_byte) * 1e3));
    MonoTime at_server = finish + one_way_;
    if (at_server >= stall_from_ && at_server < stall_to_) at_server = stall_to_;
    replies_.emplace(at_server + one_way_ + service_, Flight{t, last_byte});
    next_release_ = last_byte;
  }

  FakeClock clock_;
  CongestionController& cc_;
  double rate_;  // bytes/s
  Duration one_way_;
  uint64_t call_bytes_;
  bool paced_ = true;
  bool turnaround_ = false;
  double pacer_efficiency_ = 1;
  size_t max_calls_ = SIZE_MAX;
  size_t bulk_in_flight_ = 0;
  Duration probe_interval_{};
  MonoTime next_probe_{};
  std::vector<std::pair<MonoTime, double>> probe_delays_;
  // The last bulk call: sent, its last byte out, its last byte through the
  // bottleneck, and when the bottleneck was free of the calls before it.
  struct Transfer {
    MonoTime send, last_byte, finish, before;
  };
  Transfer last_{};
  Duration service_{};
  MonoTime stall_from_{}, stall_to_{};
  MonoTime link_free_{};
  MonoTime next_release_{};
  std::multimap<MonoTime, Flight> replies_;
  std::vector<std::pair<MonoTime, double>> queue_delays_;
  uint64_t delivered_bytes_ = 0;
  uint64_t max_in_flight_ = 0;
};

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

// What the link did over the next `d`: bytes per second delivered, and the
// queueing delays of the calls sent.
struct Measured {
  double rate;
  std::vector<double> queue_ms;
};

Measured Measure(SimulatedLink& link, Duration d) {
  uint64_t before = link.delivered_bytes();
  MonoTime from = link.now();
  link.Run(d);
  return {(link.delivered_bytes() - before) / Seconds(d), link.QueueDelaysMs(from, link.now())};
}

constexpr double kTargetMs = 20;

CongestionOptions Options() {
  CongestionOptions o;
  o.queue_delay_target = milliseconds(static_cast<int>(kTargetMs));
  return o;
}

// 10 Mbit/s, 50 ms round trip: a bandwidth-delay product of 62.5 KB.
constexpr double kRate = 1.25e6;
constexpr Duration kOneWay = milliseconds(25);
constexpr uint64_t kCall = 8 << 10;

TEST(CongestionTest, ConvergesNearTheBdpWithTheQueueNearTheTarget) {
  CongestionController cc(Options());
  SimulatedLink link(cc, kRate, kOneWay, kCall);
  link.Run(std::chrono::seconds(10));
  Measured m = Measure(link, std::chrono::seconds(10));
  EXPECT_GE(m.rate, 0.9 * kRate);
  const std::vector<double>& q = m.queue_ms;
  EXPECT_LE(Quantile(q, 0.5), kTargetMs);
  EXPECT_LE(Quantile(q, 0.95), 1.5 * kTargetMs);
  const double bdp = kRate * 0.050;
  CongestionStats s = cc.stats();
  EXPECT_GE(s.window, bdp);
  // BDP + the target's worth of queue + two calls for the pacer.
  EXPECT_LE(s.window, bdp + 1.5 * kRate * kTargetMs / 1e3 + 2 * kCall);
  EXPECT_NEAR(Seconds(s.base_rtt) * 1e3, 50, 2);
  EXPECT_NEAR(s.pacing_rate, kRate, 0.2 * kRate);
  EXPECT_GT(s.delivery_rate, 0.8 * kRate);
  EXPECT_GT(s.decreases, 0u);  // it did meet the queue and back off
}

TEST(CongestionTest, WithoutPacingTheWindowAloneKeepsTheQueueShort) {
  // Reads: the replies' bytes cannot be paced by the proxy; only the window
  // bounds them, so the sender here ignores the pacing rate.
  CongestionController cc(Options());
  SimulatedLink link(cc, kRate, kOneWay, kCall);
  link.set_paced(false);
  link.Run(std::chrono::seconds(10));
  Measured m = Measure(link, std::chrono::seconds(10));
  EXPECT_GE(m.rate, 0.9 * kRate);
  // What the window lets sit in the queue beyond the BDP: the target's
  // worth and the pacer's two calls.
  const double bound_ms = 1.5 * kTargetMs + 2e3 * kCall / kRate;
  const std::vector<double>& q = m.queue_ms;
  EXPECT_LE(Quantile(q, 0.5), bound_ms);
  EXPECT_LE(Quantile(q, 1.0), 2 * bound_ms);
}

TEST(CongestionTest, HalvedBandwidthDrainsTheQueueWithinAFewRoundTrips) {
  CongestionController cc(Options());
  SimulatedLink link(cc, kRate, kOneWay, kCall);
  link.Run(std::chrono::seconds(10));
  const uint64_t window_before = cc.window();
  link.set_rate(kRate / 2);
  // Five round trips (at most 50 ms + the queue each) to react.
  Measured reacting = Measure(link, milliseconds(500));
  EXPECT_LE(cc.pacing_rate(), 0.7 * kRate);
  // The worst queue meanwhile: no more than what was in flight at the
  // change, at the new rate.
  EXPECT_LE(Quantile(reacting.queue_ms, 1.0), 1e3 * window_before / (kRate / 2));
  Measured m = Measure(link, std::chrono::seconds(5));
  EXPECT_GE(m.rate, 0.85 * kRate / 2);
  const std::vector<double>& q = m.queue_ms;
  EXPECT_LE(Quantile(q, 0.5), kTargetMs);
  EXPECT_LE(Quantile(q, 0.95), 1.5 * kTargetMs);
  EXPECT_EQ(cc.stats().base_resets, 0u);  // a queue is not mistaken for a longer path
}

TEST(CongestionTest, DoubledRttIsANewBaseNotAQueue) {
  CongestionController cc(Options());
  SimulatedLink link(cc, kRate, kOneWay, kCall);
  link.Run(std::chrono::seconds(10));
  link.set_one_way(2 * kOneWay);
  // About ten round trips of the new path (100 ms each).
  link.Run(milliseconds(1200));
  CongestionStats s = cc.stats();
  EXPECT_EQ(s.base_resets, 1u);
  EXPECT_NEAR(Seconds(s.base_rtt) * 1e3, 100, 5);
  link.Run(std::chrono::seconds(2));
  Measured m = Measure(link, std::chrono::seconds(5));
  EXPECT_GE(m.rate, 0.9 * kRate);
  const std::vector<double>& q = m.queue_ms;
  EXPECT_LE(Quantile(q, 0.5), kTargetMs);
  EXPECT_GE(cc.window(), kRate * 0.100);  // the new, larger BDP
}

TEST(CongestionTest, SlowLinkWithLargeCallsKeepsTheLinkBusyAndTheQueueShort) {
  // The benchmark's link: 2 Mbit/s, 40 ms, 32 KB writes (each 128 ms on the
  // wire): the window must let a second call wait in the pacer.
  constexpr double kSlow = 250e3;
  CongestionController cc(Options());
  SimulatedLink link(cc, kSlow, milliseconds(20), 32 << 10);
  link.Run(std::chrono::seconds(10));
  Measured m = Measure(link, std::chrono::seconds(20));
  EXPECT_GE(m.rate, 0.9 * kSlow);
  const std::vector<double>& q = m.queue_ms;
  EXPECT_LE(Quantile(q, 0.5), kTargetMs);
  // A round is one call long here (160 ms), so a step of the rate shows a
  // round late: the tail reaches a few times the target.
  EXPECT_LE(Quantile(q, 0.99), 3 * kTargetMs);
}

// The benchmark's start on a slow link: one lone 32 KiB write measures the
// link, then the client's next writes, gathered into one 224 KiB call,
// follow. The first rate is what the lone call measured, not a probe above
// it, and it applies at once (the lone call, 130 ms on the wire, queued
// behind itself): unpaced or paced above the link, the long call would
// queue all through its transfer (0.9 s here).
TEST(CongestionTest, FirstRateIsTheMeasuredOneAndAppliesAtOnce) {
  constexpr double kSlow = 250e3;
  CongestionController cc(Options());
  MonoTime now{std::chrono::hours(1)};
  // A small metadata call gives the base round trip.
  CongestionController::Ticket meta = cc.OnSend(200, now, /*bulk=*/false);
  cc.OnReply(meta, now, now + milliseconds(40));
  now += milliseconds(100);
  // The lone write, unpaced: on the wire for bytes / rate, then the path.
  constexpr uint64_t kLone = 33016;
  CongestionController::Ticket lone = cc.OnSend(kLone, now);
  EXPECT_EQ(cc.applied_pacing_rate(), 0.0) << "no rate known yet";
  const MonoTime answered =
      now + milliseconds(40) +
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(kLone / kSlow));
  // As the scheduler reports a procedure's first reply: its round trip above
  // the least of any taken for server time, the transfer sample without it.
  cc.OnReply(lone, now, answered, answered - now - milliseconds(40), Duration::zero());
  EXPECT_GE(cc.pacing_rate(), 0.95 * kSlow);
  EXPECT_LE(cc.pacing_rate(), 1.01 * kSlow) << "probing above the measured link rate";
  EXPECT_EQ(cc.applied_pacing_rate(), cc.pacing_rate()) << "the next call is paced";
}

// A fast link: a small first call is far shorter than the target on the
// wire and queued nothing; pacing waits for a real queue.
TEST(CongestionTest, ShortFirstCallOnAFastLinkStartsNoPacing) {
  CongestionController cc(Options());
  MonoTime now{std::chrono::hours(1)};
  CongestionController::Ticket meta = cc.OnSend(200, now, /*bulk=*/false);
  cc.OnReply(meta, now, now + milliseconds(10));
  now += milliseconds(20);
  CongestionController::Ticket first = cc.OnSend(32768, now);
  const MonoTime answered = now + milliseconds(10) + std::chrono::microseconds(1300);
  cc.OnReply(first, now, answered, answered - now - milliseconds(10), Duration::zero());
  EXPECT_GT(cc.pacing_rate(), 0.0);
  EXPECT_EQ(cc.applied_pacing_rate(), 0.0);
}

// 200 Mbit/s, 10 ms round trip: the bulk workloads' link in a quick run.
constexpr double kFast = 25e6;
constexpr Duration kFastOneWay = milliseconds(5);

TEST(CongestionTest, FastLinkIsFilledWithinAFewRoundTrips) {
  CongestionController cc(Options());
  SimulatedLink link(cc, kFast, kFastOneWay, 32 << 10);
  // Start-up doubles the rate each round from the initial window per
  // (base + target); ten round trips are plenty.
  link.Run(milliseconds(100));
  EXPECT_GE(cc.pacing_rate(), 0.9 * kFast);
  Measured m = Measure(link, milliseconds(500));
  EXPECT_GE(m.rate, 0.9 * kFast);
  EXPECT_LE(Quantile(m.queue_ms, 0.5), kTargetMs);
}

// Bytes per second a closed-loop sender (at most `calls` in flight) gets
// over `measure`, after `warm`, paced or not.
double ClosedLoopRate(double rate, Duration one_way, uint64_t call, size_t calls, Duration service,
                      bool paced, Duration warm, Duration measure) {
  CongestionController cc(Options());
  SimulatedLink link(cc, rate, one_way, call);
  link.set_paced(paced);
  link.set_max_calls(calls);
  link.set_service(service);
  link.Run(warm);
  return Measure(link, measure).rate;
}

// On the fast link, a closed-loop sender of `call`-byte calls with
// `service` of server time each gets at least 90% paced of what it gets
// unpaced, with 1 and with `calls` calls in flight.
void ExpectPacerDoesNotHoldBack(uint64_t call, Duration service, size_t calls, Duration warm,
                                Duration measure) {
  for (size_t n : {size_t{1}, calls}) {
    SCOPED_TRACE(n);
    const double unpaced =
        ClosedLoopRate(kFast, kFastOneWay, call, n, service, false, warm, measure);
    const double paced = ClosedLoopRate(kFast, kFastOneWay, call, n, service, true, warm, measure);
    EXPECT_GE(paced, 0.9 * unpaced);
  }
}

TEST(CongestionTest, OneCallAtATimeOnAFastLinkIsNotHeldBackByThePacer) {
  // A client's FILE_SYNC writes one at a time: every round is application
  // limited, yet the pacer must not be what limits them.
  ExpectPacerDoesNotHoldBack(32 << 10, milliseconds(1), 3, milliseconds(200),
                             std::chrono::seconds(1));
}

// The congestion benchmark's write path: one 256 KB FILE_SYNC WRITE at a
// time (about a second on the wire) over 2 Mbit/s, 40 ms, with the server's
// fsync (5 ms) in every round trip and a small probe every 100 ms.
constexpr double kSlow = 250e3;
constexpr uint64_t kLarge = 256 << 10;
// Unpaced, one call per (transfer + round trip + fsync) is the best.
constexpr double kBestLarge = kLarge / (kLarge / kSlow + 0.045);

void OneLargeCallAtATime(SimulatedLink& link) {
  link.set_max_calls(1);
  link.set_service(milliseconds(5));
  link.set_probe_interval(milliseconds(100));
}

// The 99th percentile of the probes' queueing delay over the last `d`.
double ProbeP99Ms(const SimulatedLink& link, Duration d) {
  return Quantile(link.ProbeDelaysMs(link.now() - d, link.now()), 0.99);
}

TEST(CongestionTest, OneLargeCallAtATimeConvergesToTheLinkRate) {
  CongestionController cc(Options());
  SimulatedLink link(cc, kSlow, milliseconds(20), kLarge);
  OneLargeCallAtATime(link);
  link.Run(std::chrono::seconds(15));
  EXPECT_NEAR(cc.stats().delivery_rate, kSlow, 0.1 * kSlow);
  Measured m = Measure(link, std::chrono::seconds(30));
  EXPECT_GE(m.rate, 0.92 * kBestLarge);
  // The benchmark's latency target: probes within base + 30 ms.
  EXPECT_LE(ProbeP99Ms(link, std::chrono::seconds(30)), kTargetMs + 10);
}

TEST(CongestionTest, OneLargeCallAtATimeRecoversFromADropWithinAFewRounds) {
  // The link of the test above halves long enough for the rate, and the
  // bottleneck measured, to follow it down, then comes back: the rounds
  // that find no queue must find the room again within a few rounds, not
  // creep up by the long round's step (half the target per round).
  CongestionController cc(Options());
  SimulatedLink link(cc, kSlow, milliseconds(20), kLarge);
  OneLargeCallAtATime(link);
  link.Run(std::chrono::seconds(15));
  link.set_rate(kSlow / 2);
  link.Run(std::chrono::seconds(30));
  EXPECT_LE(cc.pacing_rate(), 0.6 * kSlow);
  link.set_rate(kSlow);
  // About ten rounds (each 1-2 s) to find the link again.
  link.Run(std::chrono::seconds(20));
  EXPECT_GE(cc.pacing_rate(), 0.85 * kSlow);
  Measured m = Measure(link, std::chrono::seconds(20));
  EXPECT_GE(m.rate, 0.9 * kBestLarge);
  EXPECT_LE(ProbeP99Ms(link, std::chrono::seconds(20)), kTargetMs + 10);
}

TEST(CongestionTest, LargeServerTimeDoesNotHoldTheRateBelowTheLink) {
  // Every call spends 300 ms in the server (an fsync) after its bytes
  // crossed the link; four calls overlap. A rate sampled per call over its
  // whole round trip would read far below the link, and a window of the
  // round trip alone would hold two calls; the rate must still reach it.
  CongestionController cc(Options());
  SimulatedLink link(cc, kSlow, milliseconds(20), 64 << 10);
  link.set_max_calls(4);
  link.set_service(milliseconds(300));
  link.set_probe_interval(milliseconds(100));
  link.Run(std::chrono::seconds(15));
  Measured m = Measure(link, std::chrono::seconds(30));
  EXPECT_GE(m.rate, 0.9 * kSlow);
  // The window counts the calls in the server's hands: more than two calls
  // of the four are in flight at once.
  EXPECT_GT(link.max_in_flight(), 2u * (64 << 10));
  // Not held here: the probes' queue. Replies that bunch up after the
  // server's time read above the link, and the queue's tail reaches about
  // ten times the target (docs/benchmarks.md, "Congestion control").
}

TEST(CongestionTest, LargeServerTimeOnAFastLinkIsNotHeldBackByThePacer) {
  // The same with 30 ms of server time per 256 KB call on a fast link, one
  // call at a time and four.
  ExpectPacerDoesNotHoldBack(256 << 10, milliseconds(30), 4, milliseconds(300),
                             std::chrono::seconds(2));
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
  EXPECT_EQ(cc.applied_pacing_rate(), 0);
  Measured m = Measure(link, std::chrono::seconds(1));
  // One call a round trip (50 ms), each whole at once.
  EXPECT_GE(m.rate, 0.95 * (480 << 10) / 0.050);
}

// A client's FILE_SYNC writes gathered into one WRITE a round: one call in
// flight, sent after the reply reached the client, 1 ms of fsync; three
// seconds of them.
void OneWriteARound(SimulatedLink& link) {
  link.set_max_calls(1);
  link.set_client_turnaround(true);
  link.set_service(milliseconds(1));
  link.Run(std::chrono::seconds(3));
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
  EXPECT_EQ(cc.applied_pacing_rate(), 0);
  Measured m = Measure(link, std::chrono::seconds(1));
  // One call a round trip (51 ms), each whole at once.
  EXPECT_GE(m.rate, 0.95 * (480 << 10) / 0.051);
}

TEST(CongestionTest, APacedLoneCallHeldByTheServerIsNotAQueue) {
  // The benchmark's stablewrite K = 1 at 50 ms on a busy server: one 32 KiB
  // FILE_SYNC WRITE a round on a fast link. The first is held 35 ms (a new
  // file's first fsync), which, sent before any rate was known, counts as
  // a queue: the pacer starts at about 1 MB/s. Then every third round the
  // server holds a reply up to 45 ms. A paced call's bytes left over the time
  // the pacer took, while the link carried them: they could not still be
  // queued when its last byte left, so a hold after it is not a queue: the
  // rate must not fall at every hold.
  CongestionController cc(Options());
  SimulatedLink link(cc, 2e9, milliseconds(25), 32 << 10);
  link.set_max_calls(0);  // first the metadata calls (LOOKUP, CREATE)
  link.set_probe_interval(milliseconds(60));
  link.Run(milliseconds(130));
  link.set_probe_interval(Duration::zero());
  link.set_max_calls(1);
  link.set_client_turnaround(true);
  link.StallServer(link.now(), link.now() + milliseconds(60));
  link.Run(milliseconds(200));
  ASSERT_GT(cc.applied_pacing_rate(), 0) << "the first call no longer starts the pacer";
  const uint64_t first_decreases = cc.stats().decreases;
  for (int i = 0; i < 100; ++i) {
    // (A call reaches the server about 55 ms after it is sent.)
    if (i % 3 == 0) link.StallServer(link.now() + milliseconds(50), link.now() + milliseconds(100));
    link.Run(milliseconds(100));
  }
  EXPECT_EQ(cc.stats().decreases, first_decreases) << "a server hold was taken for a queue";
}

// The benchmark's write-behind flush: WRITEs of the server's preferred
// size on a 200 Mbit/s link.
constexpr double kWanRate = 25e6;
constexpr uint64_t kWanCall = 1110016;

// After `settle` more, the link carries at least `share` of kWanRate over
// the next 2 s, with the median call's queue within the target.
void ExpectRecovered(SimulatedLink& link, Duration settle, double share) {
  link.Run(settle);
  Measured m = Measure(link, std::chrono::seconds(2));
  EXPECT_GE(m.rate, share * kWanRate);
  EXPECT_LE(Quantile(m.queue_ms, 0.5), kTargetMs);
}

TEST(CongestionTest, ALongServerStallDoesNotLeaveTheRateLow) {
  // The benchmark's unstablewrite: 1.1 MB WRITEs behind a 200 Mbit/s link
  // at 50 ms, as many as the window lets go. Then the server stops
  // answering for 5 s (writeback throttling) with a window's worth in
  // flight. The replies that come after it measure the stall, not the
  // link: within a few seconds of it the calls fill the link again.
  CongestionController cc(Options());
  SimulatedLink link(cc, kWanRate, milliseconds(25), kWanCall);
  link.Run(std::chrono::seconds(4));
  ASSERT_GE(Measure(link, std::chrono::seconds(1)).rate, 0.8 * kWanRate);
  link.StallServer(link.now(), link.now() + std::chrono::seconds(5));
  link.Run(std::chrono::seconds(5));
  ExpectRecovered(link, std::chrono::seconds(3), 0.8);
}

TEST(CongestionTest, ASlowPacerDoesNotSpiralTheRateDown) {
  // 1.1 MB WRITEs on a 25 MB/s link at 50 ms, from a pacer that sends at
  // 40% of its rate (a loaded machine: its timers fire late). Another
  // sender takes most of the link for 2 s; the queue drops the rate. Once
  // the link is free, rounds without a queue raise the rate from the
  // pacing rate, not from the 40% the pacer delivered, which would lower
  // it round after round.
  CongestionController cc(Options());
  SimulatedLink link(cc, kWanRate, milliseconds(25), kWanCall);
  link.set_pacer_efficiency(0.4);
  link.Run(std::chrono::seconds(3));
  link.set_rate(3e6);
  link.Run(std::chrono::seconds(2));
  ASSERT_GE(cc.stats().decreases, 1u);
  link.set_rate(kWanRate);
  ExpectRecovered(link, std::chrono::seconds(5), 0.5);
}

TEST(CongestionTest, PacedCallsGrowBackWithoutKeptSamples) {
  // One 480 KiB call a round, application limited, on a fast link that
  // slows to 5 MB/s for three seconds (another sender), then comes back. The
  // queue then is the proxy's: the rate drops and the pacer starts. Back
  // on the fast link, a paced call's sample is at about the pacing rate,
  // never above it, so no sample is kept once the slow ones expire: the
  // rounds that show no queue must still raise the rate until the calls
  // go out whole again.
  CongestionController cc(Options());
  SimulatedLink link(cc, 2e9, milliseconds(25), 480 << 10);
  link.set_pacer_efficiency(0.97);
  OneWriteARound(link);
  link.set_rate(5e6);
  link.Run(std::chrono::seconds(3));
  ASSERT_GE(cc.stats().decreases, 1u);
  ASSERT_GT(cc.applied_pacing_rate(), 0);
  link.set_rate(2e9);
  link.Run(std::chrono::seconds(4));
  Measured m = Measure(link, std::chrono::seconds(1));
  EXPECT_GE(m.rate, 0.9 * (480 << 10) / 0.051);
}

TEST(CongestionTest, AReadWhoseReplyIsShortDoesNotUnpaceASlowLink) {
  // A slow link paced for its 256 KiB WRITEs; then, on an idle link, a READ
  // counted at its 1 MiB count whose reply is short (end of file) comes
  // back at once. Its transfer says nothing of the link: still paced.
  CongestionController cc(Options());
  SimulatedLink link(cc, kSlow, milliseconds(20), 256 << 10);
  link.set_max_calls(1);
  link.set_probe_interval(milliseconds(100));
  link.Run(std::chrono::seconds(10));
  ASSERT_GT(cc.applied_pacing_rate(), 0);
  // The writer stops; everything in flight is answered.
  link.set_max_calls(0);
  link.set_probe_interval(Duration::zero());
  link.Run(std::chrono::seconds(5));
  ASSERT_EQ(cc.in_flight(), 0u);
  MonoTime now = link.now();
  CongestionController::Ticket read = cc.OnSend(1 << 20, now);
  cc.OnReply(read, now, now + milliseconds(41), Duration::zero());
  EXPECT_GT(cc.applied_pacing_rate(), 0) << "a short reply is not a fast link";
  // A small WRITE answered quickly is no evidence either: the link's large
  // WRITEs are what a pacer stretches.
  now += milliseconds(100);
  CongestionController::Ticket small = cc.OnSend(4096, now);
  cc.MarkOutbound(&small);
  cc.OnReply(small, now, now + milliseconds(41), Duration::zero());
  EXPECT_GT(cc.applied_pacing_rate(), 0) << "a small write is not a fast link";
}

TEST(CongestionTest, NotPacedUntilThePathShowsAQueue) {
  // A fast link that a closed-loop sender never fills: no queue, so the
  // sender is told not to pace at all.
  {
    CongestionController cc(Options());
    SimulatedLink link(cc, kFast, kFastOneWay, 32 << 10);
    link.set_max_calls(2);
    link.Run(std::chrono::seconds(1));
    EXPECT_EQ(cc.applied_pacing_rate(), 0);
    EXPECT_EQ(cc.stats().decreases, 0u);
  }
  // A slow link that large calls fill: paced from the first queue on, near
  // the link's rate.
  {
    CongestionController cc(Options());
    SimulatedLink link(cc, kSlow, milliseconds(20), 256 << 10);
    link.set_max_calls(1);
    link.set_probe_interval(milliseconds(100));  // small calls: the base RTT
    link.Run(std::chrono::seconds(10));
    EXPECT_GT(cc.applied_pacing_rate(), 0.8 * kSlow);
    EXPECT_LT(cc.applied_pacing_rate(), 1.2 * kSlow);
  }
}

TEST(CongestionTest, RetransmissionTimeoutFollowsTheRoundTripWithinBounds) {
  CongestionOptions o = Options();
  o.rto_floor = milliseconds(200);
  o.rto_ceiling = milliseconds(2000);
  CongestionController cc(o);
  EXPECT_EQ(cc.rto(), Duration(std::chrono::seconds(1)));  // no sample yet
  SimulatedLink link(cc, kRate, kOneWay, kCall);
  link.Run(std::chrono::seconds(5));
  CongestionStats s = cc.stats();
  EXPECT_EQ(s.rto, std::clamp(s.srtt + 4 * s.rttvar, o.rto_floor, o.rto_ceiling));
  EXPECT_GE(s.rto, o.rto_floor);
  // A very long path is capped at the ceiling.
  CongestionController slow(o);
  FakeClock clock;
  CongestionController::Ticket t = slow.OnSend(100, clock.MonoNow());
  clock.Advance(std::chrono::seconds(5));
  slow.OnReply(t, clock.MonoNow() - std::chrono::seconds(5), clock.MonoNow());
  EXPECT_EQ(slow.rto(), o.rto_ceiling);
}

TEST(CongestionTest, FirstCallAlwaysFitsAndFailuresFreeTheWindow) {
  CongestionOptions o = Options();
  o.initial_window = 16 << 10;
  o.min_window = 16 << 10;
  CongestionController cc(o);
  EXPECT_TRUE(cc.CanSend(1 << 20));  // nothing in flight: a large call goes alone
  FakeClock clock;
  CongestionController::Ticket t = cc.OnSend(1 << 20, clock.MonoNow());
  EXPECT_FALSE(cc.CanSend(1));
  cc.OnFailure(t);
  EXPECT_EQ(cc.in_flight(), 0u);
  EXPECT_TRUE(cc.CanSend(8 << 10));
  CongestionController::Ticket a = cc.OnSend(8 << 10, clock.MonoNow());
  EXPECT_TRUE(cc.CanSend(8 << 10));
  CongestionController::Ticket b = cc.OnSend(8 << 10, clock.MonoNow());
  EXPECT_FALSE(cc.CanSend(1));  // 16 KB window full
  cc.OnFailure(a);
  cc.OnFailure(b);
}

TEST(CongestionTest, MetadataInFlightDoesNotHoldTheFirstDataCall) {
  CongestionOptions o = Options();
  o.initial_window = 16 << 10;
  o.min_window = 16 << 10;
  CongestionController cc(o);
  FakeClock clock;
  // An ACCESS on its way (the one a CREATE starts) while the first write
  // of the new file is ready: the write does not wait a round trip for it.
  CongestionController::Ticket access = cc.OnSend(232, clock.MonoNow(), /*bulk=*/false);
  EXPECT_TRUE(cc.CanSend(1 << 20));
  CongestionController::Ticket write = cc.OnSend(1 << 20, clock.MonoNow());
  EXPECT_FALSE(cc.CanSend(1 << 20));  // one data call in flight: the window counts
  cc.OnFailure(access);
  cc.OnFailure(write);
}

TEST(CongestionTest, RepliesBunchedByAServerHoldDoNotRaiseTheRate) {
  CongestionController cc(Options());
  FakeClock clock;
  const MonoTime t0 = clock.MonoNow();
  auto at = [&](int ms) { return t0 + milliseconds(ms); };
  // A small call gives the base round trip, 50 ms.
  CongestionController::Ticket probe = cc.OnSend(200, at(0), /*bulk=*/false);
  cc.OnReply(probe, at(0), at(50));
  // 1 MB calls paced at 10 MB/s (one every 100 ms), each 150 ms from send
  // to reply (50 ms path, 100 ms on the wire), except that the server holds
  // A's reply 49 ms and B's comes right behind it.
  const uint64_t mb = 1000 * 1000;
  CongestionController::Ticket a = cc.OnSend(mb, at(100));
  CongestionController::Ticket b = cc.OnSend(mb, at(200));
  cc.OnReply(a, at(100), at(299));
  CongestionController::Ticket c = cc.OnSend(mb, at(300));
  cc.OnReply(b, at(200), at(350));
  cc.OnReply(c, at(300), at(450));
  // C's reply answers B's and C's 2 MB 151 ms after A's reply: 13 MB/s, a
  // rate the calls never went at. They were sent over 200 ms: 10 MB/s.
  EXPECT_LE(cc.stats().delivery_rate, 10.5e6);
  EXPECT_GE(cc.stats().delivery_rate, 9.5e6);
}

}  // namespace
}  // namespace nfsedge
