// AcceptGuard: a listener that pauses instead of spinning when accept()
// fails for want of descriptors or memory.
//
// Thread-safety: a guard belongs to its listener's event loop thread;
// guards of several loops may be made and destroyed at once.
#ifndef NFSEDGE_RPC_ACCEPT_GUARD_H_
#define NFSEDGE_RPC_ACCEPT_GUARD_H_

#include <event2/listener.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "rpc/event_loop.h"

namespace nfsedge {

// Keeps a listener from spinning when accept() fails: libevent 2.1 logs a
// failure it cannot retry (EMFILE, ENFILE, ENOBUFS, ENOMEM: out of file
// descriptors or memory) and returns, the socket stays readable, and the
// loop calls the listener again at once, for as long as the shortage lasts.
// The guard stops accepting for `pause`, then accepts again; one warning per
// pause, naming `what`, and `*paused` (if given) counts the pauses. It must
// not outlive the listener (it does not own it); a listener that outlives
// it spins again on such failures.
class AcceptGuard {
 public:
  AcceptGuard(evconnlistener* listener, std::string what, uint64_t* paused = nullptr,
              Duration pause = std::chrono::milliseconds(250));
  ~AcceptGuard();
  AcceptGuard(const AcceptGuard&) = delete;
  AcceptGuard& operator=(const AcceptGuard&) = delete;

 private:
  static void OnError(evconnlistener* listener, void* arg);

  evconnlistener* listener_;
  std::string what_;
  uint64_t* paused_;
  Duration pause_;
  Timer resume_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_ACCEPT_GUARD_H_
