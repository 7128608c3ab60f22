// Deadlines and bounded waiting. Nothing in the harness sleeps a fixed time
// to wait for something: it polls a condition until a deadline.
//
// Thread safety: Deadline is a value; the free functions are thread-safe.

#ifndef NFSEDGE_TESTS_HARNESS_WAIT_H_
#define NFSEDGE_TESTS_HARNESS_WAIT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace nfsedge::harness {

using Millis = std::chrono::milliseconds;

// A point in time on the monotonic clock.
class Deadline {
 public:
  explicit Deadline(Millis timeout) : end_(std::chrono::steady_clock::now() + timeout) {}

  bool Expired() const { return std::chrono::steady_clock::now() >= end_; }
  // Returns the time left, never negative.
  Millis Remaining() const;
  // Returns Remaining() as an int suitable for poll(2), capped at `cap`.
  int PollTimeoutMs(Millis cap = Millis(1000)) const;

 private:
  std::chrono::steady_clock::time_point end_;
};

// Calls `done` every `interval` until it returns true or `timeout` passes.
// Returns true iff `done` returned true.
bool WaitUntil(const std::function<bool()>& done, Millis timeout, Millis interval = Millis(5));

// Returns true iff a TCP connection to host:port succeeds now (IPv4 literal).
bool TcpConnectable(const std::string& host, uint16_t port);

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_WAIT_H_
