#include "rpc/accept_guard.h"

#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "rpc/log.h"

namespace nfsedge {

namespace {

// The guards by listener: libevent hands the error callback the listener's
// own argument (its owner's), not the guard. Listeners of several loops
// (threads) may come and go at once.
std::mutex guards_mu;
std::unordered_map<evconnlistener*, AcceptGuard*>& Guards() {
  static auto* guards = new std::unordered_map<evconnlistener*, AcceptGuard*>();
  return *guards;
}

}  // namespace

AcceptGuard::AcceptGuard(evconnlistener* listener, std::string what, uint64_t* paused,
                         Duration pause)
    : listener_(listener),
      what_(std::move(what)),
      paused_(paused),
      pause_(pause),
      resume_(evconnlistener_get_base(listener), [this] { evconnlistener_enable(listener_); }) {
  {
    std::lock_guard<std::mutex> lock(guards_mu);
    Guards()[listener_] = this;
  }
  evconnlistener_set_error_cb(listener_, &AcceptGuard::OnError);
}

AcceptGuard::~AcceptGuard() {
  std::lock_guard<std::mutex> lock(guards_mu);
  auto it = Guards().find(listener_);
  if (it != Guards().end() && it->second == this) Guards().erase(it);
}

void AcceptGuard::OnError(evconnlistener* listener, void*) {
  const int err = EVUTIL_SOCKET_ERROR();
  AcceptGuard* self = nullptr;
  {
    std::lock_guard<std::mutex> lock(guards_mu);
    auto it = Guards().find(listener);
    if (it != Guards().end()) self = it->second;
  }
  if (self == nullptr) return;
  if (self->paused_ != nullptr) ++*self->paused_;
  evconnlistener_disable(listener);
  self->resume_.Arm(self->pause_);
  NFSEDGE_LOG(kWarn) << self->what_ << ": cannot accept a connection ("
                     << evutil_socket_error_to_string(err) << "); not accepting for "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(self->pause_).count()
                     << " ms";
}

}  // namespace nfsedge
