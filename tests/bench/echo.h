// A TCP echo service and its latency probe, for the congestion workload's
// second probe: a plain TCP flow crossing the same emulated link as the NFS
// traffic (the emulator relays it with rpc=0).
//
// Thread safety: EchoServer runs its own thread; its public methods are for
// the owning thread. EchoProbe is not thread-safe (one event loop drives it).

#ifndef NFSEDGE_TESTS_BENCH_ECHO_H_
#define NFSEDGE_TESTS_BENCH_ECHO_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness/net.h"
#include "harness/status.h"

namespace nfsedge::bench {

class EchoServer {
 public:
  // Listens on 127.0.0.1 (ephemeral port) and echoes on a thread of its own.
  static harness::StatusOr<std::unique_ptr<EchoServer>> Start();
  // Stops the thread and closes every socket.
  ~EchoServer();

  uint16_t port() const { return port_; }

 private:
  EchoServer() = default;
  void Serve();

  harness::UniqueFd listen_;
  harness::UniqueFd wake_read_, wake_write_;  // Closing wake_write_ stops Serve().
  uint16_t port_ = 0;
  std::thread thread_;
};

// Sends numbered 16-byte messages over one connection and times each echo.
class EchoProbe {
 public:
  using Clock = std::chrono::steady_clock;

  static harness::StatusOr<std::unique_ptr<EchoProbe>> Connect(const harness::TcpEndpoint& ep);

  int fd() const { return fd_.get(); }
  // Sends the next message now. Returns an error iff the socket failed.
  harness::Status Send();
  // Reads what has arrived (call when fd() is readable); records latencies.
  harness::Status OnReadable();
  size_t outstanding() const { return sent_.size(); }
  // Messages sent so far.
  uint64_t sent() const { return next_seq_; }
  // Every echo received: its message's send time, latency (ms).
  const std::vector<std::pair<Clock::time_point, double>>& samples() const { return done_; }
  // Latencies (ms) of echoes whose message was sent in [from, to).
  std::vector<double> LatenciesMs(Clock::time_point from, Clock::time_point to) const;

 private:
  explicit EchoProbe(int fd) : fd_(fd) {}

  harness::UniqueFd fd_;
  uint64_t next_seq_ = 0;
  std::map<uint64_t, Clock::time_point> sent_;
  std::vector<std::pair<Clock::time_point, double>> done_;  // Send time, ms.
  std::string inbox_;
};

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_ECHO_H_
