#include "rpc/event_loop.h"

namespace nfsedge {

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
