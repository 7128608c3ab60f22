// Clock: the WAN emulator's source of time, in nanoseconds on a monotonic scale.
//
// Every timing decision of the link model (when a byte finishes serialization, when it leaves
// the delay line) is taken from a Clock, so the logic is testable with FakeClock and without
// sleeping. MonotonicClock reads CLOCK_MONOTONIC, the same clock libevent uses for its timers
// when the event base is created with EVENT_BASE_FLAG_PRECISE_TIMER.
//
// Thread safety: MonotonicClock is safe for concurrent use. FakeClock is not; it is meant to be
// driven by a single test thread.

#ifndef NFSEDGE_TESTS_WAN_CLOCK_H_
#define NFSEDGE_TESTS_WAN_CLOCK_H_

#include <cstdint>

namespace nfsedge::wan {

constexpr int64_t kNanosPerMicro = 1000;
constexpr int64_t kNanosPerMilli = 1000 * 1000;
constexpr int64_t kNanosPerSecond = 1000 * 1000 * 1000;

class Clock {
 public:
  virtual ~Clock() = default;

  // Returns the current time in nanoseconds. Never decreases.
  virtual int64_t NowNanos() = 0;
};

class MonotonicClock final : public Clock {
 public:
  int64_t NowNanos() override;
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_nanos = 0) : now_(start_nanos) {}

  int64_t NowNanos() override { return now_; }

  // REQUIRES: nanos >= 0
  void Advance(int64_t nanos) { now_ += nanos; }
  // REQUIRES: nanos >= NowNanos()
  void Set(int64_t nanos) { now_ = nanos; }

 private:
  int64_t now_;
};

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_CLOCK_H_
