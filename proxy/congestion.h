// CongestionController: a latency-based congestion controller for the calls
// nfsedge sends upstream, free of I/O: the caller reports each call's send and
// reply with a time, and reads back a pacing rate, a window of bytes in flight
// and a retransmission timeout.
//
// What it measures (in the spirit of TCP Vegas, LEDBAT and BBR):
//  - round trips, from the moment a call's last byte left the proxy to its
//    reply; their minimum over `base_rtt_window` is the path's base RTT, and
//    anything above it is queueing delay. A call sent more than once gives
//    none (Karn's rule): its reply may answer any of its transmissions;
//  - a delivery rate (bytes answered per second; a reply answers the bytes
//    it carried, fewer than its count for a READ answered short), whose
//    maximum over the last two seconds (at least ten round trips) estimates
//    the bottleneck's rate. Each reply of a data call gives the larger of
//    two samples: BBR's (bytes answered since the call was sent, over that
//    time or, if longer, over the time they took to be sent: replies
//    bunched behind one the server held do not raise it), and the
//    transfer sample: bytes answered since the link was last
//    idle (nothing in flight) over that time less the base RTT and the
//    server's own time, so that one large call at a time, whose BBR sample
//    counts a whole round trip, still measures the link.
//
// Of a data call's delay above the base RTT, only what its bytes and those
// in flight ahead of it take at the least rate the link has shown (the
// largest of the last few samples, application limited or not) can be a
// queue of the proxy's own, less what the link carried of them while the
// call was being sent (its round trip runs from its last byte: a call the
// pacer spread over 30 ms at the floor's rate left nothing queued but the
// pacer's last burst); the rest is the server's (a stalled fsync) or
// another sender's, which a lower rate would not drain, and is not judged.
// A reply held longer than the queue delay target beyond what all those
// bytes take at that rate (without the sending-time credit) measured the
// server's stall: its rate sample is not kept.
//
// What it decides, once per round trip ("round"), from the smallest round
// trip of that round (of its data calls, if it had any, less what cannot
// be its own queue):
//  - queueing delay below half the target: the pacing rate grows (x2 until
//    the first queue is seen, then by up to 12.5% per round, less as the
//    delay nears half the target; not beyond the delivery rate x that gain),
//    and, once a queue was seen, never below the rate a round without a
//    queue (below a quarter of the target) delivered.
//    A round limited by the application grows only if its calls went out
//    at half the pacing rate or more (the pacer, not the application, was
//    the limit: one call at a time, paced), from the pacing rate when no
//    sample was kept. In a long round (large calls:
//    half the target is less than 12.5% of the round), below the rate the
//    link delivered when it last had a queue the rate returns to that rate
//    at once (the queue of the last drop has drained); at or above it, and
//    in the start-up, a step moves the queue by at most half the target by
//    the round's end, x4 for each round in a row that grew without a queue
//    (up to 12.5%, in the start-up too), so a rate far below the link
//    finds it within a few rounds; without a queue (below a quarter of
//    the target) that step is from the pacing rate, not from the delivery
//    rate (a link slower than the pacer would have queued; a pacer whose
//    late timers send at a fraction of its rate would otherwise lower the
//    rate round after round);
//  - queueing delay above the target: the rate drops below the measured
//    delivery rate in proportion, (base + target) / (base + delay), or, in
//    a round much longer than the delay (large calls), by the share the
//    queue takes of the round or of the largest recent call's time on the
//    wire, if longer; at least by 10% (less in a round much longer than the
//    target) and at most by half, so the queue the proxy built drains
//    within about a round; the round after a drop is not judged (its calls
//    left before the drop);
//  - in between: the rate holds, except in a long round, where it eases
//    off by what brings the queue back to a quarter of the target by the
//    round's end (the next large call would keep it all through).
// The window (bytes handed upstream and not yet answered) follows the rate:
// rate x (base RTT + the server's time per call + target) plus two of the
// largest recent calls, so that a pacer below always has the next call
// ready while one is on the wire.
//
// Pacing starts with the first queue: until a round has shown a queue above
// the target, applied_pacing_rate() is 0 and the window alone bounds what is
// sent, so a fast link that the sender never fills is not held back while
// its rate is being found (a slow one meets one round of queue, from the
// first calls, before their replies set the rate). A call sent before any
// rate was known, alone on the link, whose transfer took longer than the
// target queued by itself: that counts as the first queue. The first rate
// is the one measured, without a probe above it (the next call may be a
// long one, paced at it all through).
//
// A longer path is told apart from a queue: a queue of the proxy's own
// drains after the rate drops, by about (1 - factor) x the time since. When
// the smallest round trip has not come down half that much after two drops
// in a row, the path itself changed: the base RTT is re-seated there, and
// the rate restored to the delivery rate measured, instead of waiting for
// the windowed minimum to expire.
//
// Retransmission timeout: RFC 6298 from the same samples, clamped to
// [rto_floor, rto_ceiling], and backed off (RFC 6298 5.5): doubled for each
// reply that came only after its call was sent again, which gives no
// sample, until a reply gives one. (Without that, a server whose answers
// came to take longer than the timeout would get every call two or three
// times, for good: no reply would give a sample to raise it.)
//
// Thread-safety: none; one owner (the upstream scheduler, on its loop).
#ifndef NFSEDGE_PROXY_CONGESTION_H_
#define NFSEDGE_PROXY_CONGESTION_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>

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
    MonoTime first_sent_time;  // when the last of those was sent
    bool app_limited = false;
    bool bulk = true;  // a data call: gives delivery-rate samples
    MonoTime sent_time;         // handed upstream
    uint64_t busy_delivered = 0;  // bytes answered when no data call was last in flight
    MonoTime busy_since;          // when that was
    bool before_rate = false;     // sent before any rate was measured
    // Its bytes are the call's own, on their way up (a WRITE), not the
    // most a reply may carry (a READ's count): only such a call's transfer
    // tells that the link is fast (fast_link_). Set by the caller.
    bool outbound = false;
    // Its bytes that the reply answered, which count as delivered: `bytes`
    // unless lowered by SetAnswered.
    uint64_t answered = 0;
    uint64_t ahead = 0;  // bytes in flight when it was sent
    double paced_at = 0;  // the pacing rate applied when it was sent (0: none)
    // Its bytes left the window before its reply (OnStalled).
    bool released = false;
  };

  explicit CongestionController(CongestionOptions options);

  // Returns true iff a data call of `bytes` may be handed upstream now: no
  // data call is in flight (small metadata calls do not hold the link), or
  // the call fits in the window.
  bool CanSend(uint64_t bytes) const;
  // Records a call handed upstream at `now`. Returns its ticket, to be given
  // back to OnReply or OnFailure. Calls that are not `bulk` (small metadata)
  // count as bytes in flight and give round trips, but no delivery rate.
  Ticket OnSend(uint64_t bytes, MonoTime now, bool bulk = true);
  // The call of `t` carries its bytes up (a WRITE): see Ticket::outbound.
  void MarkOutbound(Ticket* t) {
    t->outbound = true;
    largest_outbound_ = std::max(largest_outbound_, t->bytes);
  }
  // The reply to `t`'s call carried only `bytes` of the bytes the call was
  // counted at (a READ answered short, at end of file): only those count as
  // delivered. To be called before OnReply or OnRetransmittedReply.
  static void SetAnswered(Ticket* t, uint64_t bytes) { t->answered = std::min(t->bytes, bytes); }
  // A reply for `t`'s call arrived at `now`; its last byte left at `sent`.
  // `service` is the part of the round trip that is the server's own work
  // for this kind of call (a FILE_SYNC write's least fsync), not queueing:
  // it is taken off the round trip and, unless `transfer_service` says
  // otherwise (a first sample, whose server time is not known yet), off the
  // transfer time.
  // REQUIRES: sent <= now
  void OnReply(const Ticket& t, MonoTime sent, MonoTime now,
               Duration service = Duration::zero(),
               std::optional<Duration> transfer_service = std::nullopt);
  // A reply for `t`'s call arrived at `now`, but the call was sent more than
  // once (again after a timeout, or after its connection was lost), so which
  // transmission it answers is not known (Karn's rule): no round trip and no
  // delivery-rate sample of its own, and it ends no round. Its answered
  // bytes count as delivered, in the samples of the replies after it.
  void OnRetransmittedReply(const Ticket& t, MonoTime now);
  // The call ended without a usable reply (error, timeout): no sample.
  void OnFailure(const Ticket& t);
  // The call of `t` has had no reply for so long that its bytes are not on
  // the path any more (the server holds it: a frozen file system, a hung
  // backend): they leave the window, as a lost segment leaves TCP's flight,
  // so that other calls are not held back for as long as the server holds
  // it. No sample and no change of rate (a server that holds a call says
  // nothing about the link); its reply, if it comes, gives the controller
  // nothing either (no sample, no delivery: UpstreamScheduler::OnReply).
  void OnStalled(Ticket* t);
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
  // The rate the sender should pace at: 0 (not paced) until the path has
  // shown a queue above the target, then pacing_rate(). Pacing only
  // matters once the link, not the sender, is the limit; before that it
  // would only hold a fast link back while its rate is being found.
  // Before that, the calls in flight beyond the window (one large call
  // sent alone) are still paced at pacing_rate(), so the first large call
  // on a slow link does not fill its queue. To be read after OnSend and
  // after OnReply.
  double applied_pacing_rate() const {
    if (fast_link_) return 0;
    return seen_queue_ || in_flight_ > window_ ? pacing_rate_ : 0;
  }
  Duration rto() const;
  CongestionStats stats() const;

 private:
  // `t`'s call was answered at `now`: its bytes leave the window and those
  // its reply answered count as delivered.
  void Deliver(const Ticket& t, MonoTime now);
  // `t`'s bytes leave the window (once).
  void Leave(const Ticket& t);
  void OnRoundEnd(MonoTime now);
  void UpdateBaseRtt(Duration rtt, MonoTime now);
  void UpdateWindow();
  static constexpr int kRateSamples = 64;
  // The samples that bound how much of a call's delay can be the proxy's own
  // queue (LinkFloor): a few rounds of one call at a time, so that a link
  // that slows down is soon known.
  static constexpr int kFloorSamples = 16;
  struct RateSample {
    MonoTime at;
    double rate = 0;
  };
  // The largest sample in `ring` of the last kRateWindow (or ten smoothed
  // round trips, if longer).
  double LargestRecent(std::span<const RateSample> ring) const;
  // The largest delivery rate sample kept (not application limited, or
  // above what was known): the bottleneck's rate.
  double BottleneckRate() const { return LargestRecent(rates_); }
  // The largest of the last kFloorSamples samples of any kind: application
  // limited or not, the link carried at least that much.
  double LinkFloor() const { return LargestRecent(floor_rates_); }
  // The most of the bytes of `t` and of those ahead of it that can still be
  // queued at the bottleneck when its last byte left at `sent`, on a link of
  // at least `floor` bytes/s.
  static double OwnQueueBytes(const Ticket& t, MonoTime sent, double floor);
  // Half the queue delay target as a share of a round of `round_length`:
  // the change of rate that, kept for the round, moves the queue by that.
  double LongRoundShare(Duration round_length) const;

  CongestionOptions options_;

  uint64_t in_flight_ = 0;
  uint64_t window_;
  double pacing_rate_ = 0;
  bool seen_queue_ = false;  // leaves the doubling start-up
  // A round after the one that gave the first rate had a queue above the
  // target: the link, not only the first call's server time, was seen full.
  bool queue_confirmed_ = false;
  // The latest outbound call sent on an idle link, at least half as large
  // as the largest outbound call yet, was on the wire for less than a
  // quarter of the base RTT, the shortest transfer a sample can time (and
  // no two calls in a row since took longer, and no round since showed a
  // queue): the
  // link carries the calls faster than any rate measured, and a pacer set
  // from those samples would only stretch every call (a gathered WRITE on
  // a fast link, one a round). Not paced until two calls' transfers in a
  // row show otherwise (or a round shows a queue).
  bool fast_link_ = false;
  int long_transfers_ = 0;  // long transfers since the last short one
  uint64_t largest_outbound_ = 0;  // the largest outbound call yet
  int quiet_rounds_ = 0;     // rounds in a row that grew without a queue
  int rto_backoff_ = 1;      // the timeout's multiplier (RFC 6298 5.5)
  double queue_rate_ = 0;    // delivery rate of the last round with a queue

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
  MonoTime first_sent_time_;  // when the data call answered last was sent
  uint64_t app_limited_until_ = 0;  // delivered count; 0 = not limited
  uint64_t bulk_in_flight_ = 0;     // bytes of data calls in flight
  Duration service_{};              // server time of the last data call
  uint64_t busy_delivered_ = 0;     // delivered_ when bulk_in_flight_ was last 0
  MonoTime busy_since_;
  std::array<RateSample, kRateSamples> rates_{};  // ring of bulk samples kept
  size_t next_rate_ = 0;
  std::array<RateSample, kFloorSamples> floor_rates_{};  // ring of the latest bulk samples
  size_t next_floor_ = 0;
  MonoTime now_;       // time of the last event
  double round_rate_ = 0;  // largest bulk sample of the current round kept
  double round_send_rate_ = 0;  // largest bulk sample of the current round
  uint64_t largest_call_ = 0, largest_call_prev_ = 0;
  uint64_t sends_this_epoch_ = 0;

  // The current round.
  uint64_t round_end_delivered_ = 0;
  uint64_t round_ = 0;
  MonoTime round_start_;
  std::optional<Duration> round_min_rtt_;
  // Of data calls only: the part of their round trip that can be a queue
  // of the proxy's own (judged), and the whole (the path's).
  std::optional<Duration> round_min_bulk_;
  std::optional<Duration> round_min_path_;
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
