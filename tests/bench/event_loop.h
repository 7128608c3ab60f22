// EventLoop: poll(2) over the NfsConnections of a workload (and a few plain
// descriptors, e.g. an echo probe's socket) until a condition holds.
//
// StopRequested(): SIGINT / SIGTERM (after InstallStopHandlers()) make every
// running loop fail with "interrupted", so the programs unwind and stop the
// servers they started.
//
// Thread safety: an EventLoop is not thread-safe. InstallStopHandlers() and
// StopRequested() are (an atomic flag set from the signal handler).

#ifndef NFSEDGE_TESTS_BENCH_EVENT_LOOP_H_
#define NFSEDGE_TESTS_BENCH_EVENT_LOOP_H_

#include <functional>
#include <vector>

#include "harness/wait.h"
#include "nfs_connection.h"

namespace nfsedge::bench {

using harness::Millis;

void InstallStopHandlers();
bool StopRequested();

class EventLoop {
 public:
  // REQUIRES: `conn` outlives its registration.
  void Add(NfsConnection* conn);
  void Remove(NfsConnection* conn);
  // Watches `fd` for POLLIN; `on_readable` runs when it is readable.
  void AddFd(int fd, std::function<void()> on_readable);
  void RemoveFd(int fd);

  // Services the connections until `done()` returns true (checked after every
  // round). `tick`, if set, runs every round and returns how long the loop
  // may wait before the next round. Returns an error iff a connection fails,
  // a stop signal arrives, or calls are in flight and no reply arrives on any
  // connection for `idle_timeout`.
  Status Run(const std::function<bool()>& done, Millis idle_timeout,
             const std::function<Millis()>& tick = {});

 private:
  struct Watched {
    int fd;
    std::function<void()> on_readable;
  };
  std::vector<NfsConnection*> conns_;
  std::vector<Watched> fds_;
};

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_EVENT_LOOP_H_
