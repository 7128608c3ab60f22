#include "rpc/event_loop.h"

#include <event2/buffer.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

#include <algorithm>

namespace nfsedge {

namespace {

// A filter (TLS) bufferevent has an underlying one; a socket one does not
// (its socket may come only with bufferevent_socket_connect).
bool IsSocketBufferevent(bufferevent* bev) { return bufferevent_get_underlying(bev) == nullptr; }

}  // namespace

EventBasePtr NewPreciseEventBase() {
  event_config* cfg = event_config_new();
  if (cfg == nullptr) return nullptr;
  event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
  EventBasePtr base(event_base_new_with_config(cfg));
  event_config_free(cfg);
  return base;
}

evutil_socket_t SocketOf(bufferevent* bev) {
  if (bev == nullptr) return -1;
  const evutil_socket_t fd = bufferevent_getfd(bev);
  bufferevent* under = fd < 0 ? bufferevent_get_underlying(bev) : nullptr;
  return under != nullptr ? bufferevent_getfd(under) : fd;
}

void TuneSocketBufferevent(bufferevent* bev) {
  if (IsSocketBufferevent(bev)) bufferevent_set_max_single_write(bev, kSocketIoChunk);
}

size_t ReadMore(bufferevent* bev, size_t limit) {
  const evutil_socket_t fd = bufferevent_getfd(bev);
  if (!IsSocketBufferevent(bev) || fd < 0 || !(bufferevent_get_enabled(bev) & EV_READ)) return 0;
  evbuffer* in = bufferevent_get_input(bev);
  // A socket bufferevent keeps its input frozen at the end but for its own
  // reads; this is one of them.
  evbuffer_unfreeze(in, 0);
  size_t total = 0;
  for (;;) {
    const size_t held = evbuffer_get_length(in);
    // Only what the socket holds: a read never meets the end of file or an
    // error (a reset behind the data), which stay for the bufferevent.
    int avail = 0;
    if (held >= limit || ioctl(fd, FIONREAD, &avail) != 0 || avail <= 0) break;
    const size_t want = std::min({limit - held, kSocketIoChunk, static_cast<size_t>(avail)});
    evbuffer_iovec vec[2];
    const int n = evbuffer_reserve_space(in, static_cast<ev_ssize_t>(want), vec, 2);
    if (n <= 0) break;
    iovec iov[2];
    size_t asked = 0;
    for (int i = 0; i < n; i++) {  // the space reserved may be larger than asked
      iov[i] = {vec[i].iov_base, std::min(vec[i].iov_len, want - asked)};
      asked += iov[i].iov_len;
    }
    const ssize_t got = readv(fd, iov, n);
    if (got <= 0) {
      evbuffer_commit_space(in, vec, 0);
      break;
    }
    size_t left = static_cast<size_t>(got);
    int used = 0;
    for (; used < n && left > 0; used++) {
      vec[used].iov_len = std::min(iov[used].iov_len, left);
      left -= vec[used].iov_len;
    }
    evbuffer_commit_space(in, vec, used);
    total += static_cast<size_t>(got);
  }
  evbuffer_freeze(in, 0);
  return total;
}

timeval ToTimeval(Duration d) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  if (us < 0) us = 0;
  timeval tv;
  tv.tv_sec = static_cast<time_t>(us / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
  return tv;
}

Timer::Timer(event_base* base, std::function<void()> cb)
    : cb_(std::move(cb)), ev_(event_new(base, -1, 0, &Timer::OnFire, this)) {}

void Timer::Arm(Duration after) {
  event_del(ev_.get());
  event_assign(ev_.get(), event_get_base(ev_.get()), -1, 0, &Timer::OnFire, this);
  timeval tv = ToTimeval(after);
  // From now, not from the loop turn's start (the callbacks' time since).
  event_base_update_cache_time(event_get_base(ev_.get()));
  event_add(ev_.get(), &tv);
}

void Timer::ArmPeriodic(Duration every) {
  event_del(ev_.get());
  event_assign(ev_.get(), event_get_base(ev_.get()), -1, EV_PERSIST, &Timer::OnFire, this);
  timeval tv = ToTimeval(every);
  event_add(ev_.get(), &tv);
}

void Timer::Cancel() { event_del(ev_.get()); }

bool Timer::armed() const { return event_pending(ev_.get(), EV_TIMEOUT, nullptr) != 0; }

void Timer::OnFire(evutil_socket_t, short, void* arg) { static_cast<Timer*>(arg)->cb_(); }

}  // namespace nfsedge
