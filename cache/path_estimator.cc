#include "cache/path_estimator.h"

#include <algorithm>
#include <limits>

namespace nfsedge {

namespace {

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

PathEstimator::PathEstimator(const Clock& clock, Duration min_rtt_window, Duration rate_window)
    : clock_(clock), rate_window_(rate_window), min_rtt_(min_rtt_window), max_rate_(rate_window) {}

void PathEstimator::OnSample(const PathSample& s) {
  if (s.received < s.sent) return;
  samples_++;
  const MonoTime now = clock_.MonoNow();
  UpdateRtt(now, s.received - s.sent);
  UpdateRate(now, s);
}

void PathEstimator::UpdateRtt(MonoTime now, Duration rtt) {
  min_rtt_.Update(now, rtt);
  if (!srtt_) {  // RFC 6298 2.2
    srtt_ = rtt;
    rttvar_ = rtt / 2;
    return;
  }
  // RFC 6298 2.3: RTTVAR first, with the old SRTT.
  const Duration err = *srtt_ > rtt ? *srtt_ - rtt : rtt - *srtt_;
  rttvar_ = (3 * rttvar_ + err) / 4;
  srtt_ = (7 * *srtt_ + rtt) / 8;
}

void PathEstimator::UpdateRate(MonoTime now, const PathSample& s) {
  delivered_ += s.bytes;
  // Replies are recorded in arrival order; a stamp that went back is clamped.
  MonoTime received = s.received;
  if (!arrivals_.empty()) received = std::max(received, arrivals_.back().received);

  // The reference: the latest arrival at or before this call was sent.
  auto after = std::upper_bound(arrivals_.begin(), arrivals_.end(), s.sent,
                                [](MonoTime t, const Arrival& a) { return t < a.received; });
  if (after != arrivals_.begin()) {
    const Arrival& ref = *std::prev(after);
    const Duration interval = std::max(received - ref.received, s.sent - ref.sent);
    if (interval > Duration::zero()) {
      max_rate_.Update(now, static_cast<double>(delivered_ - ref.delivered) / Seconds(interval));
    }
  } else if (s.received > s.sent) {
    max_rate_.Update(now, static_cast<double>(s.bytes) / Seconds(s.received - s.sent));
  }

  arrivals_.push_back(Arrival{received, s.sent, delivered_});
  // Keep one arrival older than the window: it is the reference of calls
  // sent just after it.
  const MonoTime horizon = now - rate_window_;
  while (arrivals_.size() > kMaxArrivals ||
         (arrivals_.size() >= 2 && arrivals_[1].received <= horizon)) {
    arrivals_.pop_front();
  }
}

uint64_t PathEstimator::bdp() const {
  const std::optional<Duration> rtt = min_rtt();
  const double rate = delivery_rate();
  if (!rtt || rate <= 0) return 0;
  const double bdp = rate * Seconds(*rtt);
  constexpr double kMax = 18446744073709549568.0;  // largest double below 2^64
  return bdp >= kMax ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(bdp);
}

}  // namespace nfsedge
