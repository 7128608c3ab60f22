#include "link_pipe.h"

#include <algorithm>
#include <cstdlib>

namespace nfsedge::wan {

namespace {

// A chunk due within this much of now is delivered rather than waited for: libevent's and our
// reading of CLOCK_MONOTONIC differ by a few microseconds, and a 20 us early release is far
// below the emulator's 1 ms accuracy target.
constexpr int64_t kEarlySlackNanos = 20 * kNanosPerMicro;

UniqueEvent NewTimer(event_base* base, event_callback_fn fn, void* arg) {
  UniqueEvent ev(evtimer_new(base, fn, arg));
  if (ev == nullptr) std::abort();  // Out of memory at startup: cannot continue.
  return ev;
}

}  // namespace

LinkPipe::LinkPipe(event_base* base, Clock* clock, const LinkConfig& config, LinkCounters* counters)
    : clock_(clock),
      counters_(counters),
      release_timer_(NewTimer(base, &LinkPipe::OnReleaseTimer, this)),
      resume_timer_(NewTimer(base, &LinkPipe::OnResumeTimer, this)),
      model_(config) {}

void LinkPipe::Send(uint64_t flow, evbuffer* data) {
  int64_t now = clock_->NowNanos();
  const size_t segment = model_.SegmentBytes();
  size_t length;
  while ((length = evbuffer_get_length(data)) > 0) {
    size_t n = std::min(length, segment);
    UniqueEvbuffer bytes(evbuffer_new());
    if (bytes == nullptr) std::abort();  // Out of memory.
    int moved = evbuffer_remove_buffer(data, bytes.get(), n);
    if (moved <= 0) break;  // Cannot happen for n <= length; never spin on it.
    n = static_cast<size_t>(moved);
    int64_t release = model_.Admit(now, n);
    counters_->bytes += n;
    Push(Chunk{release, flow, std::move(bytes), n}, now);
  }
  counters_->max_backlog_bytes = std::max(counters_->max_backlog_bytes, model_.BacklogBytes(now));
  UpdateAccepting(now);
}

void LinkPipe::SendEof(uint64_t flow) {
  int64_t now = clock_->NowNanos();
  Push(Chunk{model_.Admit(now, 0), flow, nullptr, 0}, now);
}

void LinkPipe::Push(Chunk chunk, int64_t now) {
  bool was_empty = chunks_.empty();
  in_flight_bytes_ += chunk.bytes;
  int64_t release = chunk.release_nanos;
  chunks_.push_back(std::move(chunk));
  if (was_empty) ArmTimerNanos(release_timer_.get(), release - now);
}

void LinkPipe::OnReleaseTimer(evutil_socket_t, short, void* arg) {
  static_cast<LinkPipe*>(arg)->ReleaseDue();
}

void LinkPipe::OnResumeTimer(evutil_socket_t, short, void* arg) {
  auto* pipe = static_cast<LinkPipe*>(arg);
  pipe->UpdateAccepting(pipe->clock_->NowNanos());
}

void LinkPipe::ReleaseDue() {
  int64_t now = clock_->NowNanos();
  while (!chunks_.empty() && chunks_.front().release_nanos <= now + kEarlySlackNanos) {
    Chunk chunk = std::move(chunks_.front());
    chunks_.pop_front();
    in_flight_bytes_ -= chunk.bytes;
    deliver_(chunk.flow, chunk.data.get());
  }
  if (!chunks_.empty()) {
    now = clock_->NowNanos();
    ArmTimerNanos(release_timer_.get(), chunks_.front().release_nanos - now);
  }
  UpdateAccepting(now);
}

void LinkPipe::UpdateAccepting(int64_t now) {
  bool queue_full = model_.QueueFull(now);
  bool accepting = !queue_full && in_flight_bytes_ <= model_.config().max_in_flight_bytes;
  if (queue_full) {
    // The in-flight bound needs no timer: every delivery re-evaluates it.
    ArmTimerNanos(resume_timer_.get(), model_.QueueDrainTime() - now);
  }
  if (accepting == accepting_) return;
  accepting_ = accepting;
  if (!accepting) ++counters_->pauses;
  if (on_accepting_changed_) on_accepting_changed_(accepting);
}

}  // namespace nfsedge::wan
