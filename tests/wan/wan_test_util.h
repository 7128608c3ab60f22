// Helpers for wan_test: an in-process relay with a local echo server running on a loop thread,
// blocking loopback clients with timeouts, and a child process runner for the nfsedge-wan binary.
//
// Thread safety: a RelayHarness is driven by the test thread (constructor, Stop(), stats());
// its event loop runs on a thread of its own and shares nothing else with the test thread until
// Stop() has joined it. The client helpers are thread-safe (they touch only their socket).

#ifndef NFSEDGE_TESTS_WAN_WAN_TEST_UTIL_H_
#define NFSEDGE_TESTS_WAN_WAN_TEST_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "clock.h"
#include "libevent_util.h"
#include "relay.h"
#include "status.h"
#include "wan_stats.h"

namespace nfsedge::wan::testing {

// Milliseconds on the monotonic clock, as a double.
double NowMillis();

// Echoes every byte back on each accepted connection, on a given event base; on EOF it
// finishes echoing, then closes.
// Not thread-safe: used on its base's loop only (constructed before the loop starts).
class EchoServer {
 public:
  explicit EchoServer(event_base* base);
  ~EchoServer();

  // Returns the bound "127.0.0.1:port", or "" iff listening failed.
  const std::string& address() const { return address_; }

 private:
  static void OnAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg);
  static void OnRead(bufferevent* bev, void* arg);
  static void OnEvent(bufferevent* bev, short what, void* arg);
  static void OnDrained(bufferevent* bev, void* arg);

  event_base* const base_;
  UniqueListener listener_;
  std::string address_;
  std::set<bufferevent*> connections_;
};

// A relay with one mapping to a local echo server, running on its own loop thread.
class RelayHarness {
 public:
  RelayHarness(const LinkConfig& up, const LinkConfig& down, bool rpc = true);
  ~RelayHarness();

  // Returns the relay's listen address for clients.
  const std::string& address() const { return relay_address_; }
  // Returns the echo server's address (to reach it without the relay).
  const std::string& echo_address() const { return echo_->address(); }
  const Status& start_status() const { return start_status_; }

  // Stops the loop and joins its thread. Idempotent.
  void Stop();

  // REQUIRES: Stop() has been called.
  const WanStats& stats() const { return stats_; }
  const Relay& relay() const { return *relay_; }

 private:
  UniqueEventBase base_;
  MonotonicClock clock_;
  WanStats stats_;
  std::unique_ptr<EchoServer> echo_;
  std::unique_ptr<Relay> relay_;
  Status start_status_;
  std::string relay_address_;
  std::thread loop_;
};

// Returns a connected blocking TCP socket (TCP_NODELAY) to "host:port", or -1.
int ConnectTo(const std::string& address);

// Returns true iff all bytes were written.
bool WriteAll(int fd, const void* data, size_t n);

// Reads exactly n bytes, waiting at most timeout_ms in total. Returns true iff all arrived.
bool ReadExactly(int fd, void* data, size_t n, int timeout_ms);

// A child process running the nfsedge-wan binary with stdout piped to the test.
class WanProcess {
 public:
  // Starts `binary` with `args`; returns nullptr if fork failed.
  static std::unique_ptr<WanProcess> Start(const std::string& binary,
                                           const std::vector<std::string>& args);
  ~WanProcess();

  // Reads the first stdout line, waiting at most timeout_ms. Returns "" on timeout or EOF.
  std::string ReadLine(int timeout_ms);

  // Waits for the process to exit, at most timeout_ms. Returns its exit status (0-255), 128+sig
  // if killed by a signal, or -1 on timeout.
  int Wait(int timeout_ms);

  void Signal(int sig);
  pid_t pid() const { return pid_; }

 private:
  WanProcess(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}

  pid_t pid_;
  int stdout_fd_;
  bool exited_ = false;
  std::string buffered_;
};

// Returns the whole content of a file, or "" if it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace nfsedge::wan::testing

#endif  // NFSEDGE_TESTS_WAN_WAN_TEST_UTIL_H_
