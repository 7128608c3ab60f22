#include "proxy/congestion.h"

#include <algorithm>
#include <cmath>

#include "rpc/rpc_caller.h"

namespace nfsedge {

namespace {

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// Sends per epoch when tracking the largest call: the window's allowance
// follows the calls of the last one to two epochs.
constexpr uint64_t kCallEpoch = 64;

// Delivery-rate samples are remembered this long (at least ten round trips).
constexpr Duration kRateWindow = std::chrono::seconds(2);

// Least time a transfer sample counts (against clock granularity).
constexpr Duration kMinTransfer = std::chrono::microseconds(50);

// Largest growth per round once a queue has been seen.
constexpr double kGain = 0.125;
// Least drop of the rate when the queue is above the target; a queue of our
// own then shrinks by about this fraction of the round trip.
constexpr double kMinDrop = 0.1;
// An application-limited round still grows when its rate samples reached
// this share of the pacing rate: the pacer held its calls back.
constexpr double kPacerLimited = 0.5;
// A long round's probing step grows by this factor for each round in a row
// that found no queue; it stops at kGain.
constexpr double kQuietStep = 4;
// A pacing rate below this share of the rate delivered with a queue is
// below the link's.
constexpr double kNearLink = 0.99;
constexpr int kMaxQuietRounds = 8;
// The most the retransmission timeout is backed off (it is also clamped to
// rto_ceiling).
constexpr int kMaxRtoBackoff = 64;

}  // namespace

CongestionController::CongestionController(CongestionOptions options)
    : options_(options), window_(std::max(options.initial_window, options.min_window)) {}

bool CongestionController::CanSend(uint64_t bytes) const {
  return bulk_in_flight_ == 0 || in_flight_ + bytes <= window_;
}

CongestionController::Ticket CongestionController::OnSend(uint64_t bytes, MonoTime now,
                                                          bool bulk) {
  now_ = now;
  if (in_flight_ == 0) delivered_time_ = first_sent_time_ = now;
  // Small calls (probes, metadata) do not keep the link busy: a data call
  // sent while only they are in flight starts a transfer on an idle link.
  if (bulk && bulk_in_flight_ == 0) {
    busy_delivered_ = delivered_;
    busy_since_ = now;
  }
  if (bulk && round_start_ == MonoTime{}) round_start_ = now;  // the first round
  // Before any delivery rate is known, calls go unpaced: the first round's
  // replies measure the link, and a fast link is not held back while it is
  // found (a slow one meets one round of queue).
  Ticket t;
  t.bytes = bytes;
  t.answered = bytes;
  t.delivered = delivered_;
  t.delivered_time = delivered_time_;
  t.first_sent_time = first_sent_time_;
  t.app_limited = app_limited_until_ != 0;
  t.bulk = bulk;
  t.sent_time = now;
  t.busy_delivered = busy_delivered_;
  t.busy_since = busy_since_;
  t.before_rate = pacing_rate_ <= 0;
  t.ahead = in_flight_;
  if (bulk) t.paced_at = applied_pacing_rate();
  in_flight_ += bytes;
  if (bulk) bulk_in_flight_ += bytes;
  largest_call_ = std::max(largest_call_, bytes);
  if (++sends_this_epoch_ >= kCallEpoch) {
    largest_call_prev_ = largest_call_;
    largest_call_ = 0;
    sends_this_epoch_ = 0;
  }
  return t;
}

void CongestionController::Leave(const Ticket& t) {
  if (t.released) return;
  in_flight_ -= std::min(in_flight_, t.bytes);
  if (t.bulk) bulk_in_flight_ -= std::min(bulk_in_flight_, t.bytes);
}

void CongestionController::OnFailure(const Ticket& t) { Leave(t); }

void CongestionController::OnStalled(Ticket* t) {
  Leave(*t);
  t->released = true;
}

void CongestionController::SetAppLimited() {
  if (pacing_rate_ > 0 && have_base_ &&
      static_cast<double>(in_flight_) >
          pacing_rate_ * Seconds(base_rtt_ + options_.queue_delay_target)) {
    return;
  }
  app_limited_until_ = std::max<uint64_t>(delivered_ + in_flight_, 1);
}

void CongestionController::UpdateBaseRtt(Duration rtt, MonoTime now) {
  if (!have_base_ || rtt <= base_rtt_) {
    have_base_ = true;
    base_rtt_ = candidate_rtt_ = rtt;
    base_time_ = candidate_time_ = now;
    return;
  }
  // The candidate is the minimum of the younger half of the window.
  if (rtt <= candidate_rtt_ || now - candidate_time_ > options_.base_rtt_window / 2) {
    candidate_rtt_ = rtt;
    candidate_time_ = now;
  }
  if (now - base_time_ > options_.base_rtt_window) {
    base_rtt_ = candidate_rtt_;
    base_time_ = candidate_time_;
    candidate_rtt_ = rtt;
    candidate_time_ = now;
  }
}

void CongestionController::Deliver(const Ticket& t, MonoTime now) {
  now_ = now;
  Leave(t);
  delivered_ += t.answered;
  delivered_time_ = now;
  // (Of data calls only: a metadata call the server took long over would
  // stretch the next sample's send time.)
  if (t.bulk) first_sent_time_ = t.sent_time;
  if (app_limited_until_ != 0 && delivered_ >= app_limited_until_) app_limited_until_ = 0;
}

void CongestionController::OnRetransmittedReply(const Ticket& t, MonoTime now) {
  // Its bytes count as delivered: whichever transmission the reply answers,
  // the server had the call and its reply came now, and that is all that
  // the samples of later replies count (bytes answered by their reply;
  // counted once, though they may have crossed the link twice, they never
  // raise a rate). Its own samples would not be sound: the round trip may
  // be timed from the wrong transmission, and both rate samples would
  // span the wait for the timeout or the reconnect, which the transfer
  // sample would take for time on the wire (and, for a call sent before
  // any rate, for a first queue).
  Deliver(t, now);
  // The timeout may have been too short for it: longer for the next calls,
  // until a reply gives a round trip again.
  rto_backoff_ = std::min(rto_backoff_ * 2, kMaxRtoBackoff);
}

void CongestionController::OnReply(const Ticket& t, MonoTime sent, MonoTime now,
                                   Duration service, std::optional<Duration> transfer_service) {
  Deliver(t, now);
  service = std::max(Duration::zero(), service);
  // A correction never takes a round trip below the base: the base stays
  // what the path itself gave.
  if (have_base_) service = std::min(service, std::max(Duration::zero(), now - sent - base_rtt_));
  if (t.bulk) service_ = service;
  Duration rtt = std::max(Duration::zero(), now - sent - service);
  last_rtt_ = rtt;
  rto_backoff_ = 1;
  counters_.samples++;
  // RFC 6298.
  if (!srtt_) {
    srtt_ = rtt;
    rttvar_ = rtt / 2;
  } else {
    Duration err = rtt > *srtt_ ? rtt - *srtt_ : *srtt_ - rtt;
    rttvar_ = (*rttvar_ * 3 + err) / 4;
    srtt_ = (*srtt_ * 7 + rtt) / 8;
  }
  UpdateBaseRtt(rtt, now);
  round_min_rtt_ = round_min_rtt_ ? std::min(*round_min_rtt_, rtt) : rtt;

  if (t.bulk) {
    // BBR's delivery rate sample: what was answered since this call was
    // sent, over the time that took, or over the time those bytes took to
    // be sent, if longer: replies that come bunched (one held at the
    // server, the next right behind it) do not show a rate the calls were
    // never sent at.
    double rate = 0;
    double interval = std::max(Seconds(now - t.delivered_time),
                               Seconds(t.sent_time - t.first_sent_time));
    if (interval > 0) rate = static_cast<double>(delivered_ - t.delivered) / interval;
    // The transfer sample, for a call sent on an idle link: what was
    // answered since, over the time the link spent on it (less the base
    // round trip and the server's own time), and never less than the pacer
    // took to send it. Every byte counted left after the idle moment, so
    // the link carried them all within that time: the sample does not
    // exceed its rate.
    if (t.busy_since == t.sent_time) {
      Duration transfer = now - t.busy_since - base_rtt_ -
                          std::max(Duration::zero(), transfer_service.value_or(service));
      // A short transfer tells of the link only for an outbound call as
      // large as the ones a pacer would stretch (a READ's reply may be far
      // shorter than its count).
      // One long transfer on a link shown to be fast may be the server's
      // (a reply held by a slow fsync, the next call's short again): the
      // link is taken for slow at the second in a row.
      if (std::max(transfer, sent - t.sent_time) >= base_rtt_ / 4) {
        if (++long_transfers_ >= 2) fast_link_ = false;
      } else if (t.outbound && 2 * t.bytes >= largest_outbound_) {
        fast_link_ = true;
        long_transfers_ = 0;
      }
      transfer = std::max({transfer, sent - t.sent_time, base_rtt_ / 4, kMinTransfer});
      // Sent unpaced, alone, and longer than the target on the wire: the
      // call queued behind itself at the bottleneck.
      if (t.before_rate && transfer > options_.queue_delay_target) seen_queue_ = true;
      rate = std::max(rate,
                      static_cast<double>(delivered_ - t.busy_delivered) / Seconds(transfer));
    }
    // Kept or not, it tells that the link carries at least that much.
    floor_rates_[next_floor_++ % kFloorSamples] = RateSample{now, rate};
    // What of its delay can be a queue of the proxy's own: no more than its
    // bytes and those in flight ahead of it take at the least rate the link
    // has shown. The rest is the server's (a stall: a slow fsync, a busy
    // disk) or another sender's, which a lower rate would not drain.
    Duration judged = rtt;
    // A reply held longer than the target beyond what all its bytes and
    // those ahead take at that rate measured the server's stall, not the
    // link (a sample over a stall of seconds is a small fraction of the
    // link's rate): its sample is not kept, nor does it set the rate a drop
    // starts from. (Judged on all of them: a paced call's sample, at about
    // the pacing rate, is what lets the rounds after a drop grow.)
    bool held = false;
    const double floor = LinkFloor();
    if (have_base_ && rtt > base_rtt_ && floor > 0) {
      auto at_floor = [&](double bytes) {
        return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(bytes / floor));
      };
      judged = base_rtt_ + std::min(rtt - base_rtt_, at_floor(OwnQueueBytes(t, sent, floor)));
      held = rtt - base_rtt_ - at_floor(static_cast<double>(t.ahead + t.bytes)) >
             options_.queue_delay_target;
    }
    // An application-limited sample says only that the link carries at
    // least that much: kept when above what is known (after a pause, with
    // the samples gone, the pacing rate), never to lower it.
    if (!held) {
      if (!t.app_limited || rate > std::max(BottleneckRate(), pacing_rate_)) {
        rates_[next_rate_++ % kRateSamples] = RateSample{now, rate};
        round_rate_ = std::max(round_rate_, rate);
      }
      // Kept or not, it tells whether the pacer held the call back.
      round_send_rate_ = std::max(round_send_rate_, rate);
    }
    round_min_bulk_ = round_min_bulk_ ? std::min(*round_min_bulk_, judged) : judged;
    round_min_path_ = round_min_path_ ? std::min(*round_min_path_, rtt) : rtt;
  }
  if (t.app_limited) round_app_limited_ = true;
  // Rounds are counted by data calls: small calls answered while one large
  // call is on the wire do not end its round.
  if (t.bulk && t.delivered >= round_end_delivered_) OnRoundEnd(now);
}

double CongestionController::OwnQueueBytes(const Ticket& t, MonoTime sent, double floor) {
  // The round trip runs from the call's last byte. While its bytes were
  // being sent (paced, or behind others), the link carried at least the
  // floor's worth of them and of those ahead: that much cannot be queued
  // when the last one left. What cannot have drained is what the sender let
  // out faster than the floor: unpaced, the call's every byte at once at
  // the end; paced, the pacer's largest burst (its credit), and, when that
  // rate is above the floor,
  // the share of the bytes (its own, and those ahead still being paced)
  // sent faster than the floor.
  const double bytes = static_cast<double>(t.bytes);
  const double all = static_cast<double>(t.ahead) + bytes;
  double tail = bytes;
  if (t.paced_at > 0) {
    const double burst = kPacerCreditQuanta * PacingQuantum(t.paced_at);
    tail = std::min(all, burst + all * std::max(0.0, 1.0 - floor / t.paced_at));
  }
  const double sending = std::max(0.0, Seconds(sent - t.sent_time));
  return std::max(all - floor * sending, tail);
}

double CongestionController::LongRoundShare(Duration round_length) const {
  if (round_length <= Duration::zero()) return 1;
  return Seconds(options_.queue_delay_target / 2) / Seconds(round_length);
}

double CongestionController::LargestRecent(std::span<const RateSample> ring) const {
  Duration window = kRateWindow;
  if (srtt_) window = std::max(window, 10 * *srtt_);
  double best = 0;
  for (const RateSample& r : ring) {
    if (r.rate > 0 && now_ - r.at <= window) best = std::max(best, r.rate);
  }
  return best;
}

void CongestionController::OnRoundEnd(MonoTime now) {
  counters_.rounds++;
  round_end_delivered_ = delivered_;
  const double recent_rate = round_rate_;
  const double send_rate = round_send_rate_;
  round_send_rate_ = 0;
  const double bw = BottleneckRate();
  round_++;
  round_rate_ = 0;
  // A round's data calls judge its queue when it has any: small calls sent
  // early in a long round (one large call) did not see the queue it built.
  const Duration round_min = round_min_bulk_.value_or(*round_min_rtt_);
  // The path's own round trip, for telling a longer path from a queue.
  const Duration path_min = round_min_path_.value_or(*round_min_rtt_);
  round_min_rtt_.reset();
  round_min_bulk_.reset();
  round_min_path_.reset();
  const bool app_limited = round_app_limited_;
  round_app_limited_ = false;
  const Duration round_length = now - round_start_;
  round_start_ = now;
  // The round that gives the first rate: what an unpaced call measured.
  bool first_rate = false;
  if (pacing_rate_ <= 0) {
    if (bw <= 0) return;  // nothing sent in bulk yet: nothing to control
    pacing_rate_ = bw;
    first_rate = true;
  }

  // The pacer, not the application, held the calls back when they went out
  // at about the pacing rate.
  // (An application-limited round's samples count here even when they are
  // not kept for the bottleneck: at the pacing rate, below the rate a
  // round before measured, they are what shows that the pacer held the
  // calls back, and without them the rate could not grow back to the
  // link's after a drop until the older samples expire.)
  const bool pacer_limited = send_rate >= kPacerLimited * pacing_rate_;
  const Duration target = options_.queue_delay_target;
  const Duration queue = round_min - base_rtt_;
  // A queue of half the target or more: the link was full, and the
  // round's delivery rate is what it carries.
  if (queue >= target / 2 && recent_rate > 0) queue_rate_ = recent_rate;
  if (hold_round_) {
    // This round's replies were mostly sent before the last drop: wait
    // for the next to judge it.
    hold_round_ = false;
    return;
  }
  if (queue <= target) {
    persistent_rounds_ = 0;
    drop_min_.reset();
  } else {
    // A queue of the proxy's own shrinks after a drop, by about
    // (1 - factor) x the time since; a longer path does not.
    bool persistent = drop_min_ && Seconds(*drop_min_ - path_min) <
                                       0.5 * (1 - drop_factor_) * Seconds(now - drop_time_);
    persistent_rounds_ = persistent ? persistent_rounds_ + 1 : 0;
    if (persistent_rounds_ >= 2) {
      base_rtt_ = candidate_rtt_ = path_min;
      base_time_ = candidate_time_ = now;
      counters_.base_resets++;
      persistent_rounds_ = 0;
      drop_min_.reset();
      pacing_rate_ = std::max(pacing_rate_, bw);  // the capacity did not change
      UpdateWindow();
      return;
    }
    drop_min_ = path_min;
    drop_time_ = now;
  }
  bool quiet = false;
  if (queue > target) {
    seen_queue_ = true;
    fast_link_ = false;
    // At least kMinDrop, so that the drop changes the calls in flight and
    // its effect on the delay can be seen.
    // A round much longer than the queue (large calls, each a long
    // transfer) drains that queue with a smaller drop.
    // So does a large call on the wire longer than this round lasted (the
    // first round, of a small call, before the first large one).
    Duration horizon = round_length;
    const uint64_t largest = std::max({largest_call_, largest_call_prev_, bulk_in_flight_});
    if (recent_rate > 0) {
      horizon = std::max(horizon, std::chrono::duration_cast<Duration>(std::chrono::duration<double>(
                                      static_cast<double>(largest) / recent_rate)));
    }
    double factor = Seconds(base_rtt_ + target) / Seconds(base_rtt_ + queue);
    if (horizon > queue) factor = std::max(factor, 1.0 - Seconds(queue) / Seconds(horizon));
    factor = std::clamp(factor, 0.5, 1.0 - std::min(kMinDrop, LongRoundShare(horizon)));
    double basis = recent_rate > 0 ? std::min(pacing_rate_, recent_rate) : pacing_rate_;
    pacing_rate_ = basis * factor;
    if (!first_rate) queue_confirmed_ = true;
    drop_factor_ = factor;
    hold_round_ = true;
    counters_.decreases++;
  } else if (queue < target / 2 && (!app_limited || pacer_limited) && !first_rate) {
    // (Not on the first rate: the call that measured it went unpaced, so
    // the rate is what the link carried; a probe above it would be paced
    // onto the next call, which may be far longer, a gathered write, and
    // queue all through it.)
    // Doubling until the first queue; then growth that slows as the delay
    // approaches half the target (LEDBAT's proportional step).
    // In a long round (large calls), below the rate the link carried when
    // it last had a queue, the rate returns to it by up to kGain a round;
    // at or above it (and in the start-up), it probes for more by a step
    // kept to what builds half the target's queue by the round's end,
    // multiplied by kQuietStep for each round in a row that found no queue
    // at all (the pacer, not the link, was the limit).
    const bool long_round = LongRoundShare(round_length) < kGain;
    const bool below_link = long_round && pacing_rate_ < kNearLink * queue_rate_;
    double gain = 2.0;
    if (seen_queue_ || long_round) {
      // Doubling is for short rounds: a long round's step stops at kGain (a
      // larger one would fill the queue in a round), but for one case. While
      // the only queue the path has shown is the first call's (sent unpaced
      // before any rate), that call's delay may have been the server's (a new
      // file's first fsync) rather than the link's, and the rate set from it
      // far below the link: then the step, which grows with the rounds in a
      // row that showed no queue at all, may reach doubling. A round with any
      // queue sets it back to the round's share.
      double step = kGain;
      if (long_round && !below_link) {
        const double cap = queue_confirmed_ ? kGain : 1.0;
        step = std::min(cap, LongRoundShare(round_length) * std::pow(kQuietStep, quiet_rounds_));
      }
      gain = 1.0 + step * (1.0 - Seconds(queue) / Seconds(target / 2));
    }
    // Never far beyond what was delivered: a rate that was not measured
    // would only build a queue. Without a queue, never below what this
    // round delivered.
    // With no rate sample kept (all application limited, none above the
    // pacing rate: a paced call's sample is at about that rate), a round
    // the pacer held back grows from the pacing rate. (Not before the
    // pacer applies: then it held nothing back.)
    if (bw > 0 || (pacer_limited && seen_queue_ && !fast_link_)) {
      double next = bw > 0 ? std::min(pacing_rate_ * gain, bw * gain) : pacing_rate_ * gain;
      // In a long round without a queue, what was delivered fell short of
      // the pacing rate by the pacer's own gaps, not the link's (a link
      // slower than the pacer would have built a queue): the step is from
      // the pacing rate. (On a loaded machine a pacer whose timers fire
      // late sends at a fraction of its rate; a step from what it
      // delivered would lower the rate round after round.)
      if (long_round && queue < target / 4) next = pacing_rate_ * gain;
      // Below the rate the link carried with a queue, and no queue now:
      // the queue of the last drop has drained, back to that rate at once.
      if (below_link) next = queue_rate_;
      // (With some queue, the round's rate is the link's, or above it when
      // the server's time is overestimated: no floor then.)
      const bool floor = seen_queue_ && queue < target / 4;
      pacing_rate_ = floor ? std::max(next, recent_rate) : next;
    }
    counters_.increases++;
    quiet = long_round && !below_link && queue < target / 4;
  } else if (queue >= target / 2 && LongRoundShare(round_length) < kGain) {
    // Between half the target and the target in a long round (large calls):
    // the next call would keep that queue all through its transfer, so the
    // rate eases off by what brings it back to a quarter of the target by
    // the round's end.
    pacing_rate_ *= 1.0 - Seconds(queue - target / 4) / Seconds(round_length);
  }
  // Probing speeds up only while the rounds that grew show no queue at all.
  quiet_rounds_ = quiet ? std::min(quiet_rounds_ + 1, kMaxQuietRounds) : 0;
  UpdateWindow();
}

void CongestionController::UpdateWindow() {
  if (pacing_rate_ <= 0 || !have_base_) return;
  // Once a queue was met, the window follows the delivery rate measured
  // rather than a pacing rate that may be probing above it.
  double rate = pacing_rate_;
  if (seen_queue_ && BottleneckRate() > 0) rate = std::min(rate, BottleneckRate());
  // Calls in the server's hands (its own time per call) are in flight too.
  double w = rate * Seconds(base_rtt_ + service_ + options_.queue_delay_target) +
             2.0 * static_cast<double>(std::max(largest_call_, largest_call_prev_));
  w = std::clamp(w, static_cast<double>(options_.min_window),
                 static_cast<double>(options_.max_window));
  window_ = static_cast<uint64_t>(w);
}

Duration CongestionController::rto() const {
  Duration r = srtt_ ? *srtt_ + 4 * *rttvar_ : Duration(std::chrono::seconds(1));
  r *= rto_backoff_;
  return std::clamp(r, options_.rto_floor, std::max(options_.rto_floor, options_.rto_ceiling));
}

CongestionStats CongestionController::stats() const {
  CongestionStats s = counters_;
  s.base_rtt = have_base_ ? base_rtt_ : Duration::zero();
  s.last_rtt = last_rtt_;
  s.srtt = srtt_.value_or(Duration::zero());
  s.rttvar = rttvar_.value_or(Duration::zero());
  s.rto = rto();
  s.delivery_rate = BottleneckRate();
  s.pacing_rate = pacing_rate_;
  s.window = window_;
  s.in_flight = in_flight_;
  return s;
}

}  // namespace nfsedge
