#include "clock.h"

#include <time.h>

namespace nfsedge::wan {

int64_t MonotonicClock::NowNanos() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // Cannot fail for CLOCK_MONOTONIC with a valid pointer.
  return static_cast<int64_t>(ts.tv_sec) * kNanosPerSecond + ts.tv_nsec;
}

}  // namespace nfsedge::wan
