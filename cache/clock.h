// Clock: the time sources the caches read, behind an interface so that tests
// drive time by hand (STYLE habit 9, 15).
//
// Two clocks, for two questions:
//  - MonoNow() (steady, never jumps) measures how long an entry has lived and
//    decides expiry;
//  - WallNow() (system time) is only compared with the upstream's own
//    timestamps (mtime, ctime) to estimate how long ago an object changed.
//
// Thread-safety: SystemClock is stateless and safe from any thread. FakeClock
// is not synchronized; tests use it from one thread.
#ifndef NFSEDGE_CACHE_CLOCK_H_
#define NFSEDGE_CACHE_CLOCK_H_

#include <chrono>

namespace nfsedge {

using Duration = std::chrono::nanoseconds;
using MonoTime = std::chrono::time_point<std::chrono::steady_clock, Duration>;
using WallTime = std::chrono::time_point<std::chrono::system_clock, Duration>;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual MonoTime MonoNow() const = 0;
  virtual WallTime WallNow() const = 0;
};

class SystemClock final : public Clock {
 public:
  MonoTime MonoNow() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
  }
  WallTime WallNow() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
};

// A clock that moves only when told to. Starts at a fixed, arbitrary instant
// (wall: 2024-01-01T00:00:00Z) so tests are reproducible.
class FakeClock final : public Clock {
 public:
  FakeClock() : mono_(Duration(std::chrono::hours(1))), wall_(std::chrono::seconds(1704067200)) {}

  MonoTime MonoNow() const override { return mono_; }
  WallTime WallNow() const override { return wall_; }

  // Moves both clocks forward by `d`.
  // REQUIRES: d >= 0 (a steady clock never goes back)
  void Advance(Duration d) {
    mono_ += d;
    wall_ += d;
  }
  // Sets the wall clock alone (a system clock may be stepped either way).
  void SetWall(WallTime t) { wall_ = t; }

 private:
  MonoTime mono_;
  WallTime wall_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_CLOCK_H_
