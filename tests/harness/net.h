// TCP client sockets with a chosen source: address (e.g. 127.0.0.2 to be a
// client outside an export's networks) and privileged (< 1024) or ordinary
// port. Used by RawNfs (the socket is handed to libnfs) and RawConnection.
//
// Thread safety: thread-safe (no shared state).

#ifndef NFSEDGE_TESTS_HARNESS_NET_H_
#define NFSEDGE_TESTS_HARNESS_NET_H_

#include <cstdint>
#include <string>

#include "harness/status.h"
#include "harness/wait.h"

namespace nfsedge::harness {

struct TcpEndpoint {
  std::string host = "127.0.0.1";  // IPv4 literal.
  uint16_t port = 0;
  std::string source_address;    // Empty: any.
  bool privileged_port = false;  // Source port in [512, 1023] (needs root).
};

// Connects a blocking TCP socket (CLOEXEC, TCP_NODELAY) to `ep` within
// `timeout`. Returns the descriptor; the caller owns it.
StatusOr<int> ConnectTcp(const TcpEndpoint& ep, Millis timeout = Millis(10000));

// Returns the local port of socket `fd`, or 0.
uint16_t LocalPort(int fd);

// RAII owner of a file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.Release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset();

 private:
  int fd_ = -1;
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_NET_H_
