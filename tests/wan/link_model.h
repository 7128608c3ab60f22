// LinkModel: the timing of one direction of an emulated bottleneck link, without any I/O.
//
// The link is a serializer followed by a delay line, as a real WAN path with one bottleneck:
// bytes are serialized at `rate_bps` in arrival order (first come, first served, whatever
// connection they belong to), then travel for `delay_nanos` of propagation delay. So a chunk that
// arrives at t leaves at
//     max(t, end of the previous chunk's serialization) + bytes * 8 / rate + delay
// and chunks are pipelined: the delay line holds any number of chunks at once.
//
// The bytes admitted but not yet serialized are the bottleneck queue ("backlog"). The model
// reports when the backlog exceeds `queue_bytes`; the relay then stops reading from the sending
// sockets (TCP back-pressure) until QueueDrainTime(). A real router would drop instead, but on
// loopback a drop only causes a TCP retransmission timeout (200 ms minimum on Linux), which no
// real path of the emulated RTT would show; pausing the reader keeps the queueing delay and lets
// the sender's own TCP buffers fill, as a sender behind a full bottleneck sees.
//
// All times are nanoseconds on the caller's monotonic clock; the model never reads a clock.
//
// Thread safety: not thread-safe; a LinkModel belongs to one event loop.

#ifndef NFSEDGE_TESTS_WAN_LINK_MODEL_H_
#define NFSEDGE_TESTS_WAN_LINK_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <limits>

#include "status.h"

namespace nfsedge::wan {

struct LinkConfig {
  // One-way propagation delay.
  int64_t delay_nanos = 0;
  // Serialization rate in bits per second; 0 means unlimited (no serialization time, no queue).
  uint64_t rate_bps = 0;
  // Bottleneck queue: bytes waiting for serialization beyond which reading pauses.
  uint64_t queue_bytes = 256 * 1024;
  // Bound on all bytes held by the link (queue plus delay line). With a rate this is normally
  // never reached (the delay line holds rate * delay bytes); without one it bounds memory.
  uint64_t max_in_flight_bytes = 64ull * 1024 * 1024;

  // Returns OK iff every field is in range.
  Status Validate() const;
};

class LinkModel {
 public:
  explicit LinkModel(const LinkConfig& config);

  LinkModel(const LinkModel&) = delete;
  LinkModel& operator=(const LinkModel&) = delete;

  const LinkConfig& config() const { return config_; }

  // Admits `bytes` arriving at `now` and returns the time its last byte leaves the link.
  // REQUIRES: now is not earlier than the `now` of any previous call.
  int64_t Admit(int64_t now, uint64_t bytes);

  // Returns the time needed to serialize `bytes` at the link rate (0 if unlimited).
  int64_t SerializationNanos(uint64_t bytes) const;

  // Returns the bytes admitted but not yet serialized at `now`.
  uint64_t BacklogBytes(int64_t now) const;

  // Returns true iff the backlog at `now` exceeds the queue size.
  bool QueueFull(int64_t now) const;

  // Returns the earliest time at which QueueFull() is false.
  int64_t QueueDrainTime() const;

  // Returns the largest chunk the relay should admit at once: about 1 ms of serialization (at
  // least one Ethernet frame), so a large read leaves the link progressively rather than in one
  // lump; unlimited without a rate.
  size_t SegmentBytes() const;

 private:
  const LinkConfig config_;
  // When the serializer finishes everything admitted so far.
  int64_t busy_until_ = std::numeric_limits<int64_t>::min();
};

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_LINK_MODEL_H_
