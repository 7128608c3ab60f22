// PathEstimator: what the upstream path can hold in flight (its
// bandwidth-delay product), measured from the proxy's own calls rather than
// configured, so that read-ahead fills the WAN pipe without flooding it.
//
// Every upstream call gives one PathSample when its reply arrives:
//  - RTT = received - sent. min_rtt() is the smallest RTT seen within the
//    last `min_rtt_window` (the base RTT; after a route change the old
//    minimum is forgotten within one window). srtt() and rttvar() are the
//    RFC 6298 smoothed RTT (alpha 1/8) and variation (beta 1/4).
//  - Delivery rate, as BBR measures it: a sample's reference is the latest
//    reply that had arrived when the call was sent; the rate is the reply
//    bytes delivered since that reply (this one included), over
//    max(time between the two arrivals, time between the two sends). With
//    several calls in flight this measures the path, not one call. A call
//    sent before any remembered arrival gives its own bytes / RTT (a lower
//    bound). delivery_rate() is the largest sample within `rate_window`.
//  - bdp() = min_rtt() x delivery_rate().
//
// Caveats. The RTT of a large reply includes its transmission time, so
// without small calls on the path min_rtt() (and bdp()) read high. The rate
// is only as high as what the proxy offers: a caller that bounds its bytes in
// flight by bdp() alone can never measure more, so it should offer a gain
// (BBR uses 2 x bdp()). With no samples the estimates keep their last values;
// the first sample after a quiet window replaces them.
//
// Memory is bounded: three samples per windowed filter, and at most
// kMaxArrivals remembered arrivals (none older than rate_window, plus one).
//
// Thread-safety: not synchronized; used from the proxy's event loop thread.
#ifndef NFSEDGE_CACHE_PATH_ESTIMATOR_H_
#define NFSEDGE_CACHE_PATH_ESTIMATOR_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

#include "cache/clock.h"

namespace nfsedge {

// One upstream call: request sent, reply received, reply payload bytes.
struct PathSample {
  MonoTime sent;
  MonoTime received;
  uint64_t bytes = 0;
};

// The best value (by Compare: std::less for a minimum, std::greater for a
// maximum) among the samples of the last `window`, after Kathleen Nichols'
// windowed min/max filter as used by BBR: the best, second best and third
// best of successive sub-windows, so O(1) memory. An estimate, not exact:
// when the best expires, the runner-up that replaces it is the best of a
// later sub-window, not always of all that remains of the window.
template <typename T, typename Compare>
class WindowedExtremum {
 public:
  explicit WindowedExtremum(Duration window) : window_(window) {}

  // REQUIRES: `t` does not decrease from one call to the next.
  void Update(MonoTime t, T v) {
    const Sample s{t, v};
    if (!known_ || AtLeastAsGood(v, best_[0].v) || t - best_[2].t > window_) {
      best_[0] = best_[1] = best_[2] = s;  // new best, or nothing left in window
      known_ = true;
      return;
    }
    if (AtLeastAsGood(v, best_[1].v)) {
      best_[1] = best_[2] = s;
    } else if (AtLeastAsGood(v, best_[2].v)) {
      best_[2] = s;
    }
    const Duration age = t - best_[0].t;
    if (age > window_) {  // the best expired: promote the runners-up
      best_[0] = best_[1];
      best_[1] = best_[2];
      best_[2] = s;
      if (t - best_[0].t > window_) {
        best_[0] = best_[1];
        best_[1] = best_[2];
      }
    } else if (best_[1].t == best_[0].t && age > window_ / 4) {
      best_[1] = best_[2] = s;  // a quarter window with no runner-up: take one
    } else if (best_[2].t == best_[1].t && age > window_ / 2) {
      best_[2] = s;  // half a window with no third: take one
    }
  }

  // Returns the best value of the window iff any sample was given.
  std::optional<T> Get() const {
    if (!known_) return std::nullopt;
    return best_[0].v;
  }

 private:
  struct Sample {
    MonoTime t;
    T v;
  };
  static bool AtLeastAsGood(const T& a, const T& b) { return !Compare()(b, a); }

  const Duration window_;
  bool known_ = false;
  Sample best_[3]{};
};

class PathEstimator {
 public:
  static constexpr size_t kMaxArrivals = 1 << 14;

  // The windows run on `clock`: call OnSample() when the reply arrives.
  explicit PathEstimator(const Clock& clock, Duration min_rtt_window = std::chrono::seconds(10),
                         Duration rate_window = std::chrono::seconds(10));
  PathEstimator(const PathEstimator&) = delete;
  PathEstimator& operator=(const PathEstimator&) = delete;

  // Records one call. A sample received before it was sent is ignored.
  void OnSample(const PathSample& s);

  // Returns the windowed minimum RTT iff any sample was recorded.
  std::optional<Duration> min_rtt() const { return min_rtt_.Get(); }
  // Returns the smoothed RTT iff any sample was recorded.
  std::optional<Duration> srtt() const { return srtt_; }
  // The RTT variation; 0 until a sample is recorded.
  Duration rttvar() const { return rttvar_; }
  // Bytes per second; 0 until a sample is recorded.
  double delivery_rate() const { return max_rate_.Get().value_or(0.0); }
  // Bytes: min_rtt() x delivery_rate(); 0 until both are known.
  uint64_t bdp() const;

  uint64_t samples() const { return samples_; }

 private:
  struct Arrival {
    MonoTime received;
    MonoTime sent;       // of the call this reply answered
    uint64_t delivered;  // delivered_ after this reply
  };

  void UpdateRtt(MonoTime now, Duration rtt);
  void UpdateRate(MonoTime now, const PathSample& s);

  const Clock& clock_;
  const Duration rate_window_;
  WindowedExtremum<Duration, std::less<>> min_rtt_;
  WindowedExtremum<double, std::greater<>> max_rate_;
  std::optional<Duration> srtt_;
  Duration rttvar_{0};
  uint64_t delivered_ = 0;        // reply bytes received so far
  std::deque<Arrival> arrivals_;  // by `received`
  uint64_t samples_ = 0;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_PATH_ESTIMATOR_H_
