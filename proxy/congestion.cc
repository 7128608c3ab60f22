#include "proxy/congestion.h"

#include <algorithm>

namespace nfsedge {

namespace {

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// Sends per epoch when tracking the largest call: the window's allowance
// follows the calls of the last one to two epochs.
constexpr uint64_t kCallEpoch = 64;

// Delivery-rate samples are remembered this long (at least ten round trips).
constexpr Duration kRateWindow = std::chrono::seconds(2);

// Largest growth per round once a queue has been seen.
constexpr double kGain = 0.125;
// Least drop of the rate when the queue is above the target; a queue of our
// own then shrinks by about this fraction of the round trip.
constexpr double kMinDrop = 0.1;

}  // namespace

CongestionController::CongestionController(CongestionOptions options)
    : options_(options), window_(std::max(options.initial_window, options.min_window)) {}

bool CongestionController::CanSend(uint64_t bytes) const {
  return in_flight_ == 0 || in_flight_ + bytes <= window_;
}

CongestionController::Ticket CongestionController::OnSend(uint64_t bytes, MonoTime now,
                                                          bool bulk) {
  now_ = now;
  if (in_flight_ == 0) delivered_time_ = now;
  // Before any delivery rate is known, pace as the least window per round
  // trip: a slow link is not flooded, a fast one is found by doubling.
  if (bulk && pacing_rate_ <= 0 && have_base_) {
    pacing_rate_ = static_cast<double>(options_.min_window) /
                   Seconds(base_rtt_ + options_.queue_delay_target);
    UpdateWindow();
  }
  Ticket t;
  t.bytes = bytes;
  t.delivered = delivered_;
  t.delivered_time = delivered_time_;
  t.app_limited = app_limited_until_ != 0;
  t.bulk = bulk;
  in_flight_ += bytes;
  largest_call_ = std::max(largest_call_, bytes);
  if (++sends_this_epoch_ >= kCallEpoch) {
    largest_call_prev_ = largest_call_;
    largest_call_ = 0;
    sends_this_epoch_ = 0;
  }
  return t;
}

void CongestionController::OnFailure(const Ticket& t) {
  in_flight_ -= std::min(in_flight_, t.bytes);
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

void CongestionController::OnReply(const Ticket& t, MonoTime sent, MonoTime now) {
  now_ = now;
  in_flight_ -= std::min(in_flight_, t.bytes);
  delivered_ += t.bytes;
  delivered_time_ = now;
  Duration rtt = std::max(Duration::zero(), now - sent);
  last_rtt_ = rtt;
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

  // BBR's delivery rate sample: what was answered since this call was sent,
  // over the time that took.
  double interval = Seconds(now - t.delivered_time);
  if (t.bulk && interval > 0) {
    double rate = static_cast<double>(delivered_ - t.delivered) / interval;
    if (!t.app_limited || rate > BottleneckRate()) {
      rates_[next_rate_++ % kRateSamples] = RateSample{now, rate};
      round_rate_ = std::max(round_rate_, rate);
    }
  }
  if (t.app_limited) round_app_limited_ = true;
  if (app_limited_until_ != 0 && delivered_ >= app_limited_until_) app_limited_until_ = 0;
  if (t.delivered >= round_end_delivered_) OnRoundEnd(now);
}

double CongestionController::BottleneckRate() const {
  Duration window = kRateWindow;
  if (srtt_) window = std::max(window, 10 * *srtt_);
  double best = 0;
  for (const RateSample& r : rates_) {
    if (r.rate > 0 && now_ - r.at <= window) best = std::max(best, r.rate);
  }
  return best;
}

void CongestionController::OnRoundEnd(MonoTime now) {
  counters_.rounds++;
  round_end_delivered_ = delivered_;
  const double recent_rate = round_rate_;
  const double bw = BottleneckRate();
  round_++;
  round_rate_ = 0;
  const Duration round_min = *round_min_rtt_;
  round_min_rtt_.reset();
  const bool app_limited = round_app_limited_;
  round_app_limited_ = false;
  if (pacing_rate_ <= 0) {
    if (bw <= 0) return;  // nothing sent in bulk yet: nothing to control
    pacing_rate_ = bw;
  }

  const Duration target = options_.queue_delay_target;
  const Duration queue = round_min - base_rtt_;
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
    bool persistent = drop_min_ && Seconds(*drop_min_ - round_min) <
                                       0.5 * (1 - drop_factor_) * Seconds(now - drop_time_);
    persistent_rounds_ = persistent ? persistent_rounds_ + 1 : 0;
    if (persistent_rounds_ >= 2) {
      base_rtt_ = candidate_rtt_ = round_min;
      base_time_ = candidate_time_ = now;
      counters_.base_resets++;
      persistent_rounds_ = 0;
      drop_min_.reset();
      pacing_rate_ = std::max(pacing_rate_, bw);  // the capacity did not change
      UpdateWindow();
      return;
    }
    drop_min_ = round_min;
    drop_time_ = now;
  }
  if (queue > target) {
    seen_queue_ = true;
    // At least kMinDrop, so that the drop changes the calls in flight and
    // its effect on the delay can be seen.
    double factor = std::clamp(Seconds(base_rtt_ + target) / Seconds(base_rtt_ + queue), 0.5,
                               1.0 - kMinDrop);
    double basis = recent_rate > 0 ? std::min(pacing_rate_, recent_rate) : pacing_rate_;
    pacing_rate_ = basis * factor;
    drop_factor_ = factor;
    hold_round_ = true;
    counters_.decreases++;
  } else if (queue < target / 2 && !app_limited) {
    // Doubling until the first queue; then growth that slows as the delay
    // approaches half the target (LEDBAT's proportional step).
    double gain = 2.0;
    if (seen_queue_) gain = 1.0 + kGain * (1.0 - Seconds(queue) / Seconds(target / 2));
    // Never far beyond what was delivered: a rate that was not measured
    // would only build a queue.
    if (bw > 0) pacing_rate_ = std::min(pacing_rate_ * gain, bw * gain);
    counters_.increases++;
  }
  UpdateWindow();
}

void CongestionController::UpdateWindow() {
  if (pacing_rate_ <= 0 || !have_base_) return;
  // Once a queue was met, the window follows the delivery rate measured
  // rather than a pacing rate that may be probing above it.
  double rate = pacing_rate_;
  if (seen_queue_ && BottleneckRate() > 0) rate = std::min(rate, BottleneckRate());
  double w = rate * Seconds(base_rtt_ + options_.queue_delay_target) +
             2.0 * static_cast<double>(std::max(largest_call_, largest_call_prev_));
  w = std::clamp(w, static_cast<double>(options_.min_window),
                 static_cast<double>(options_.max_window));
  window_ = static_cast<uint64_t>(w);
}

Duration CongestionController::rto() const {
  Duration r = srtt_ ? *srtt_ + 4 * *rttvar_ : Duration(std::chrono::seconds(1));
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
