// CongestionController driven by a simulated link: a FIFO bottleneck of a
// given rate, a propagation delay each way, a sender that always has calls
// to send and paces them as the controller says, and a fake clock.
#include "proxy/congestion.h"

#include <gtest/gtest.h>

#include <algorithm>
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
  // Whether the sender follows the controller's pacing rate.
  void set_paced(bool paced) { paced_ = paced; }

  // Runs for `d` of simulated time.
  void Run(Duration d) {
    MonoTime end = clock_.MonoNow() + d;
    while (clock_.MonoNow() < end) {
      clock_.Advance(kTick);
      MonoTime now = clock_.MonoNow();
      while (!replies_.empty() && replies_.begin()->first <= now) {
        const Flight& f = replies_.begin()->second;
        cc_.OnReply(f.ticket, f.sent, now);
        delivered_bytes_ += f.ticket.bytes;
        replies_.erase(replies_.begin());
      }
      while (now >= next_release_ && cc_.CanSend(call_bytes_)) Send(now);
      max_in_flight_ = std::max(max_in_flight_, cc_.in_flight());
    }
  }

  MonoTime now() const { return clock_.MonoNow(); }
  uint64_t delivered_bytes() const { return delivered_bytes_; }
  uint64_t max_in_flight() const { return max_in_flight_; }
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

  void Send(MonoTime now) {
    CongestionController::Ticket t = cc_.OnSend(call_bytes_, now);
    double pace = paced_ ? cc_.pacing_rate() : 0;
    Duration release = pace > 0 ? Duration(static_cast<int64_t>(call_bytes_ / pace * 1e9))
                                : Duration::zero();
    MonoTime last_byte = now + release;
    // Fluid model: the bottleneck cannot finish before the last byte arrived
    // nor before it has serialized everything ahead plus this call.
    Duration serialize(static_cast<int64_t>(call_bytes_ / rate_ * 1e9));
    MonoTime start = std::max(now, link_free_);
    MonoTime finish = std::max(last_byte, start + serialize);
    link_free_ = finish;
    queue_delays_.emplace_back(now, std::max(0.0, Seconds(finish - last_byte) * 1e3));
    replies_.emplace(finish + 2 * one_way_, Flight{t, last_byte});
    next_release_ = last_byte;
  }

  FakeClock clock_;
  CongestionController& cc_;
  double rate_;  // bytes/s
  Duration one_way_;
  const uint64_t call_bytes_;
  bool paced_ = true;
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

}  // namespace
}  // namespace nfsedge
