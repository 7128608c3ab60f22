// A simulated link for the congestion controller's tests: a FIFO bottleneck
// of a given rate, a propagation delay each way, a sender that always has
// calls to send and paces them as the controller says, and a fake clock.
#ifndef NFSEDGE_TESTS_UNIT_SIMULATED_LINK_H_
#define NFSEDGE_TESTS_UNIT_SIMULATED_LINK_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "cache/clock.h"
#include "proxy/congestion.h"

namespace nfsedge {
namespace simulated {

using std::chrono::milliseconds;

inline double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

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
  // The link's clock, for calls made outside Run.
  FakeClock& clock() { return clock_; }
  uint64_t delivered_bytes() const { return delivered_bytes_; }
  uint64_t max_in_flight() const { return max_in_flight_; }
  // Bulk calls sent paced so far.
  uint64_t paced_sends() const { return paced_sends_; }
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
    if (pace > 0) paced_sends_++;
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
  uint64_t paced_sends_ = 0;
};

inline double Quantile(std::vector<double> v, double q) {
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

inline Measured Measure(SimulatedLink& link, Duration d) {
  uint64_t before = link.delivered_bytes();
  MonoTime from = link.now();
  link.Run(d);
  return {(link.delivered_bytes() - before) / Seconds(d), link.QueueDelaysMs(from, link.now())};
}

constexpr double kTargetMs = 20;

inline CongestionOptions Options() {
  CongestionOptions o;
  o.queue_delay_target = milliseconds(static_cast<int>(kTargetMs));
  return o;
}

// 10 Mbit/s, 50 ms round trip: a bandwidth-delay product of 62.5 KB.
constexpr double kRate = 1.25e6;
constexpr Duration kOneWay = milliseconds(25);
constexpr uint64_t kCall = 8 << 10;

// A client's FILE_SYNC writes gathered into one WRITE a round: one call in
// flight, sent after the reply reached the client, 1 ms of fsync; three
// seconds of them.
inline void OneWriteARound(SimulatedLink& link) {
  link.set_max_calls(1);
  link.set_client_turnaround(true);
  link.set_service(milliseconds(1));
  link.Run(std::chrono::seconds(3));
}

}  // namespace simulated
}  // namespace nfsedge

#endif  // NFSEDGE_TESTS_UNIT_SIMULATED_LINK_H_
