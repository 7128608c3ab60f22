// LinkPipe: one direction of the emulated link, on a libevent loop.
//
// A LinkPipe is shared by every connection the relay carries in its direction, as one physical
// bottleneck is. Send() moves bytes into it; LinkModel decides when each chunk leaves, and one
// timer, driven by a FIFO of (release time, flow, bytes) chunks, hands each chunk to the deliver
// callback at that time. Because the model's release times never decrease, the FIFO head is
// always the next chunk due, whatever mix of flows is queued behind it.
//
// When the bottleneck queue is over its size (or the link holds more than max_in_flight_bytes)
// the pipe stops "accepting": it calls the accepting callback with false, and the relay stops
// reading the sending sockets of this direction. A second timer (or the next delivery) turns
// accepting back on. Bytes already handed to Send() are never refused or dropped; the queue
// limit is therefore exceeded by at most one socket read per connection.
//
// Thread safety: not thread-safe; a LinkPipe and its callbacks run on its event base's loop.

#ifndef NFSEDGE_TESTS_WAN_LINK_PIPE_H_
#define NFSEDGE_TESTS_WAN_LINK_PIPE_H_

#include <cstdint>
#include <deque>
#include <functional>

#include "clock.h"
#include "libevent_util.h"
#include "link_model.h"

namespace nfsedge::wan {

// Counters a LinkPipe keeps about itself, for the stats file.
struct LinkCounters {
  uint64_t bytes = 0;              // Bytes admitted.
  uint64_t pauses = 0;             // Times the pipe stopped accepting.
  uint64_t max_backlog_bytes = 0;  // Largest bottleneck queue seen, in bytes.
};

class LinkPipe {
 public:
  // Called when a chunk leaves the link: `data` holds its bytes (the callee may drain it) and is
  // null for the end-of-stream marker queued by SendEof().
  using DeliverFn = std::function<void(uint64_t flow, evbuffer* data)>;
  // Called when accepting() changes.
  using AcceptingFn = std::function<void(bool accepting)>;

  // REQUIRES: base, clock and counters outlive the pipe; config.Validate().ok()
  LinkPipe(event_base* base, Clock* clock, const LinkConfig& config, LinkCounters* counters);
  ~LinkPipe() = default;

  LinkPipe(const LinkPipe&) = delete;
  LinkPipe& operator=(const LinkPipe&) = delete;

  // REQUIRES: set before the first Send().
  void set_deliver(DeliverFn fn) { deliver_ = std::move(fn); }
  void set_on_accepting_changed(AcceptingFn fn) { on_accepting_changed_ = std::move(fn); }

  // Moves all bytes of `data` into the link on behalf of `flow`.
  void Send(uint64_t flow, evbuffer* data);

  // Queues the end of `flow`'s stream: delivered after every byte sent before it.
  void SendEof(uint64_t flow);

  // Returns true iff the senders of this direction may be read.
  bool accepting() const { return accepting_; }

  // Returns the bytes admitted and not yet delivered.
  uint64_t in_flight_bytes() const { return in_flight_bytes_; }

  const LinkModel& model() const { return model_; }

 private:
  struct Chunk {
    int64_t release_nanos;
    uint64_t flow;
    UniqueEvbuffer data;  // Null for an end-of-stream marker.
    size_t bytes;
  };

  static void OnReleaseTimer(evutil_socket_t, short, void* arg);
  static void OnResumeTimer(evutil_socket_t, short, void* arg);

  void Push(Chunk chunk, int64_t now);
  void ReleaseDue();
  void UpdateAccepting(int64_t now);

  // Constant after construction.
  Clock* const clock_;
  LinkCounters* const counters_;
  UniqueEvent release_timer_;
  UniqueEvent resume_timer_;
  DeliverFn deliver_;
  AcceptingFn on_accepting_changed_;

  LinkModel model_;
  std::deque<Chunk> chunks_;  // Release times never decrease from front to back.
  uint64_t in_flight_bytes_ = 0;
  bool accepting_ = true;
};

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_LINK_PIPE_H_
