// RAII owners for libevent objects and a few helpers shared by the WAN emulator.
//
// Each Unique* type frees its object with the matching libevent function. NewPreciseEventBase()
// creates the event base every WAN emulator component expects: EVENT_BASE_FLAG_PRECISE_TIMER
// makes libevent read CLOCK_MONOTONIC (not the coarse clock, which ticks every 1-4 ms) and use a
// timerfd for sub-millisecond timeouts.
//
// Thread safety: the helpers are thread-safe; the objects follow libevent's rules (an event base
// and its events are used by the one thread that runs the loop).

#ifndef NFSEDGE_TESTS_WAN_LIBEVENT_UTIL_H_
#define NFSEDGE_TESTS_WAN_LIBEVENT_UTIL_H_

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>

#include "status.h"

namespace nfsedge::wan {

struct EventBaseDeleter {
  void operator()(event_base* p) const { event_base_free(p); }
};
struct EventDeleter {
  void operator()(event* p) const { event_free(p); }
};
struct EvbufferDeleter {
  void operator()(evbuffer* p) const { evbuffer_free(p); }
};
struct BuffereventDeleter {
  void operator()(bufferevent* p) const { bufferevent_free(p); }
};
struct ListenerDeleter {
  void operator()(evconnlistener* p) const { evconnlistener_free(p); }
};

using UniqueEventBase = std::unique_ptr<event_base, EventBaseDeleter>;
using UniqueEvent = std::unique_ptr<event, EventDeleter>;
using UniqueEvbuffer = std::unique_ptr<evbuffer, EvbufferDeleter>;
using UniqueBufferevent = std::unique_ptr<bufferevent, BuffereventDeleter>;
using UniqueListener = std::unique_ptr<evconnlistener, ListenerDeleter>;

// Returns a new event base with precise (sub-millisecond, CLOCK_MONOTONIC) timers.
StatusOr<UniqueEventBase> NewPreciseEventBase();

// Adds (or re-adds) the timer `ev` to fire after `nanos` nanoseconds, rounded up to the next
// microsecond so it never fires early. Negative values fire at once.
void ArmTimerNanos(event* ev, int64_t nanos);

// Returns "a.b.c.d:port" or "[v6]:port" for an IPv4 or IPv6 socket address.
std::string SockaddrToString(const sockaddr* addr);

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_LIBEVENT_UTIL_H_
