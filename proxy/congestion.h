// CongestionController: a latency-based congestion controller for the calls
// nfsedge sends upstream, free of I/O: the caller reports each call's send and
// reply with a time, and reads back a pacing rate, a window of bytes in flight
// and a retransmission timeout.
//
// What it measures (in the spirit of TCP Vegas, LEDBAT and BBR):
//  - round trips, from the moment a call's last byte left the proxy to its
//    reply; their minimum over `base_rtt_window` is the path's base RTT, and
//    anything above it is queueing delay;
//  - a delivery rate (bytes answered per second, BBR's sample per reply of
//    a data call), whose maximum over the last two seconds (at least ten
//    round trips) estimates the bottleneck's rate.
//
// What it decides, once per round trip ("round"), from the smallest round
// trip of that round:
//  - queueing delay below half the target: the pacing rate grows (x2 until
//    the first queue is seen, then by up to 12.5% per round, less as the
//    delay nears half the target; not beyond the delivery rate x that gain),
//    unless the round was limited by the application rather than the rate;
//  - queueing delay above the target: the rate drops below the measured
//    delivery rate in proportion, (base + target) / (base + delay), at
//    least by 10% and at most by half, so the queue the proxy built drains
//    within about a round; the round after a drop is not judged (its calls
//    left before the drop);
//  - in between: the rate holds.
// The window (bytes handed upstream and not yet answered) follows the rate:
// rate x (base RTT + target) plus two of the largest recent calls, so that a
// pacer below always has the next call ready while one is on the wire.
//
// A longer path is told apart from a queue: a queue of the proxy's own
// drains after the rate drops, by about (1 - factor) x the time since. When
// the smallest round trip has not come down half that much after two drops
// in a row, the path itself changed: the base RTT is re-seated there, and
// the rate restored to the delivery rate measured, instead of waiting for
// the windowed minimum to expire. Before any delivery is measured, data
// calls are paced at min_window per (base RTT + target).
//
// Retransmission timeout: RFC 6298 from the same samples, clamped to
// [rto_floor, rto_ceiling].
//
// Thread-safety: none; one owner (the upstream scheduler, on its loop).
#ifndef NFSEDGE_PROXY_CONGESTION_H_
#define NFSEDGE_PROXY_CONGESTION_H_

#include <array>
#include <cstdint>
#include <optional>

#include "cache/clock.h"

namespace nfsedge {

struct CongestionOptions {
  // Queueing delay above the base RTT that the controller allows.
  Duration queue_delay_target = std::chrono::milliseconds(20);
  // How long a minimum round trip stays the base RTT.
  Duration base_rtt_window = std::chrono::seconds(60);
  // Window before the first round trip is measured, and the least window.
  uint64_t initial_window = 64 << 10;
  uint64_t min_window = 16 << 10;
  uint64_t max_window = 256ull << 20;
  // Retransmission timeout bounds.
  Duration rto_floor = std::chrono::seconds(1);
  Duration rto_ceiling = std::chrono::seconds(30);
};

// The controller's state, for counters and logs.
struct CongestionStats {
  Duration base_rtt{};  // 0 until measured
  Duration last_rtt{};  // most recent sample
  Duration srtt{};      // smoothed
  Duration rttvar{};
  Duration rto{};
  double delivery_rate = 0;  // bytes/s, the bottleneck estimate
  double pacing_rate = 0;    // bytes/s; 0 = not paced yet
  uint64_t window = 0;       // bytes
  uint64_t in_flight = 0;    // bytes
  uint64_t samples = 0;      // round trips measured
  uint64_t rounds = 0;
  uint64_t increases = 0;    // rounds that raised the rate
  uint64_t decreases = 0;    // rounds that lowered it (queue above target)
  uint64_t base_resets = 0;  // base RTT re-seated on a longer path
};

class CongestionController {
 public:
  // What the controller remembers about a call from its send to its reply.
  struct Ticket {
    uint64_t bytes = 0;
    uint64_t delivered = 0;    // bytes answered before this call was sent
    MonoTime delivered_time;   // when the last of those was answered
    bool app_limited = false;
    bool bulk = true;  // a data call: gives delivery-rate samples
  };

  explicit CongestionController(CongestionOptions options);

  // Returns true iff a call of `bytes` may be handed upstream now: nothing is
  // in flight, or the call fits in the window.
  bool CanSend(uint64_t bytes) const;
  // Records a call handed upstream at `now`. Returns its ticket, to be given
  // back to OnReply or OnFailure. Calls that are not `bulk` (small metadata)
  // count as bytes in flight and give round trips, but no delivery rate.
  Ticket OnSend(uint64_t bytes, MonoTime now, bool bulk = true);
  // A reply for `t`'s call arrived at `now`; its last byte left at `sent`.
  // REQUIRES: sent <= now
  void OnReply(const Ticket& t, MonoTime sent, MonoTime now);
  // The call ended without a usable reply (error, timeout): no sample.
  void OnFailure(const Ticket& t);
  // The sender has nothing more to send although the window has room: the
  // calls in flight now do not measure the rate (BBR's app-limited mark).
  // Ignored while more is in flight than the pacing rate sends in a round
  // trip: then the pacer below, not the sender, is the limit.
  void SetAppLimited();
  // Replaces the options (config reload); the state measured so far stays
  // and the new bounds apply from the next round and timeout.
  void SetOptions(const CongestionOptions& options) { options_ = options; }

  uint64_t window() const { return window_; }
  uint64_t in_flight() const { return in_flight_; }
  // Bytes per second the sender should not exceed; 0 = not paced (no
  // measurement yet).
  double pacing_rate() const { return pacing_rate_; }
  Duration rto() const;
  CongestionStats stats() const;

 private:
  void OnRoundEnd(MonoTime now);
  void UpdateBaseRtt(Duration rtt, MonoTime now);
  void UpdateWindow();
  // The largest delivery rate sample of the last kRateWindow (or ten
  // smoothed round trips, if longer).
  double BottleneckRate() const;

  CongestionOptions options_;

  uint64_t in_flight_ = 0;
  uint64_t window_;
  double pacing_rate_ = 0;
  bool seen_queue_ = false;  // leaves the doubling start-up

  // Round trips.
  std::optional<Duration> srtt_, rttvar_;
  Duration last_rtt_{};
  // Windowed minimum: the current minimum and a younger candidate that
  // replaces it when it expires.
  Duration base_rtt_{};
  MonoTime base_time_;
  Duration candidate_rtt_{};
  MonoTime candidate_time_;
  bool have_base_ = false;

  // Delivery.
  uint64_t delivered_ = 0;
  MonoTime delivered_time_;
  uint64_t app_limited_until_ = 0;  // delivered count; 0 = not limited
  static constexpr int kRateSamples = 64;
  struct RateSample {
    MonoTime at;
    double rate = 0;
  };
  std::array<RateSample, kRateSamples> rates_{};  // ring of bulk samples
  size_t next_rate_ = 0;
  MonoTime now_;       // time of the last event
  double round_rate_ = 0;  // largest bulk sample of the current round
  uint64_t largest_call_ = 0, largest_call_prev_ = 0;
  uint64_t sends_this_epoch_ = 0;

  // The current round.
  uint64_t round_end_delivered_ = 0;
  uint64_t round_ = 0;
  std::optional<Duration> round_min_rtt_;
  bool round_app_limited_ = false;
  bool hold_round_ = false;
  // Route-change detection: the smallest round trip when the rate last
  // dropped, and the drops in a row after which it did not come down.
  std::optional<Duration> drop_min_;
  double drop_factor_ = 1;
  MonoTime drop_time_;
  int persistent_rounds_ = 0;

  CongestionStats counters_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_CONGESTION_H_
