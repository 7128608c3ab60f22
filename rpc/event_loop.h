// RAII owners for libevent objects and a small timer helper.
//
// Thread-safety: an EventLoop and everything created on it belong to the one
// thread that runs it.
#ifndef NFSEDGE_RPC_EVENT_LOOP_H_
#define NFSEDGE_RPC_EVENT_LOOP_H_

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include <chrono>
#include <functional>
#include <memory>

namespace nfsedge {

struct EventBaseDeleter {
  void operator()(event_base* b) const { event_base_free(b); }
};
struct EventDeleter {
  void operator()(event* e) const { event_free(e); }
};
struct BuffereventDeleter {
  void operator()(bufferevent* b) const { bufferevent_free(b); }
};
struct ListenerDeleter {
  void operator()(evconnlistener* l) const { evconnlistener_free(l); }
};

using EventBasePtr = std::unique_ptr<event_base, EventBaseDeleter>;
using EventPtr = std::unique_ptr<event, EventDeleter>;
using BuffereventPtr = std::unique_ptr<bufferevent, BuffereventDeleter>;
using ListenerPtr = std::unique_ptr<evconnlistener, ListenerDeleter>;

using SteadyClock = std::chrono::steady_clock;
using Duration = std::chrono::steady_clock::duration;

// Returns a timeval for `d` (negative durations become zero).
timeval ToTimeval(Duration d);

// Returns a new event base whose timers keep sub-millisecond time
// (EVENT_BASE_FLAG_PRECISE_TIMER: CLOCK_MONOTONIC and a timerfd), or null.
// A plain event_base_new() reads CLOCK_MONOTONIC_COARSE, which on a 250 Hz
// kernel ticks every 4 ms: a 1.25 ms timer could fire 5 ms late.
EventBasePtr NewPreciseEventBase();

// libevent 2.1 moves a socket bufferevent's data 4 KiB per read (its
// EVBUFFER_MAX_READ) and 16 KiB per write, one of each per loop turn: a
// 1 MiB record takes 256 turns to come in. These two lift that for a plain
// socket bufferevent; for a filter (TLS) one they do nothing.
//
// TuneSocketBufferevent raises the bufferevent's write size to kSocketIoChunk.
// ReadMore reads what the socket holds (FIONREAD) into the input buffer, at
// most kSocketIoChunk per read, until the input holds `limit` bytes; returns
// the bytes read. End of file and errors are left in the socket for the
// bufferevent's own next read to report. Call it from the read callback.
// Not for a bufferevent with a read high-water mark or a rate limit (it
// would read past them) nor for bufferevent_openssl_socket_new's kind (it
// would read the ciphertext): the project uses neither.
inline constexpr size_t kSocketIoChunk = 256 * 1024;
void TuneSocketBufferevent(bufferevent* bev);
size_t ReadMore(bufferevent* bev, size_t limit);

// The socket under `bev`, or -1: a TLS filter's is its TCP bufferevent's
// (some libevent releases report -1 for a filter).
evutil_socket_t SocketOf(bufferevent* bev);

// A timer on an event loop that runs a callback once per Arm(), or
// periodically with ArmPeriodic(). Disarmed on destruction.
class Timer {
 public:
  Timer(event_base* base, std::function<void()> cb);
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  void Arm(Duration after);
  void ArmPeriodic(Duration every);
  void Cancel();
  bool armed() const;

 private:
  static void OnFire(evutil_socket_t, short, void* arg);
  std::function<void()> cb_;
  EventPtr ev_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_EVENT_LOOP_H_
