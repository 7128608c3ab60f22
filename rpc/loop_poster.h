// LoopPoster: runs closures handed over from any thread on one event loop's
// thread, in the order they were posted.
//
// The pool threads of the disk tier post their results through it, so that
// everything the proxy owns stays on the loop's thread (STYLE habit 12). It
// wakes the loop through an eventfd, so it does not need libevent's own
// threading support.
//
// Thread-safety: Post() may be called from any thread; construction,
// destruction and the closures run on the loop's thread. Closures posted
// after destruction began are dropped (Post() returns false).
#ifndef NFSEDGE_RPC_LOOP_POSTER_H_
#define NFSEDGE_RPC_LOOP_POSTER_H_

#include <event2/event.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "rpc/event_loop.h"
#include "rpc/status.h"

namespace nfsedge {

class LoopPoster {
 public:
  // Returns a poster on `base`, or an error if no eventfd can be made.
  static StatusOr<std::unique_ptr<LoopPoster>> Create(event_base* base);
  ~LoopPoster();
  LoopPoster(const LoopPoster&) = delete;
  LoopPoster& operator=(const LoopPoster&) = delete;

  // Queues `fn` to run on the loop's thread. Returns false iff the poster is
  // shutting down (fn is dropped).
  bool Post(std::function<void()> fn);

  // Returns a function that posts through this poster (for APIs that take a
  // `post` callback). REQUIRES: the poster outlives every call of it.
  std::function<void(std::function<void()>)> AsFunction() {
    return [this](std::function<void()> fn) { Post(std::move(fn)); };
  }

 private:
  explicit LoopPoster(int fd);
  static void OnWake(evutil_socket_t fd, short, void* arg);
  void RunQueued();

  const int fd_;
  EventPtr ev_;
  std::mutex mu_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool closed_ = false;                      // guarded by mu_
};

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_LOOP_POSTER_H_
