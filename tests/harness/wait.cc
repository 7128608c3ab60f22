#include "harness/wait.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace nfsedge::harness {

Millis Deadline::Remaining() const {
  auto left = std::chrono::duration_cast<Millis>(end_ - std::chrono::steady_clock::now());
  return std::max(left, Millis(0));
}

int Deadline::PollTimeoutMs(Millis cap) const {
  return static_cast<int>(std::min(Remaining(), cap).count());
}

bool WaitUntil(const std::function<bool()>& done, Millis timeout, Millis interval) {
  Deadline deadline(timeout);
  while (true) {
    if (done()) return true;
    if (deadline.Expired()) return false;
    std::this_thread::sleep_for(std::min(interval, deadline.Remaining()));
  }
}

bool TcpConnectable(const std::string& host, uint16_t port) {
  // A numeric IPv4 or IPv6 address ("::" connects to the loopback).
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(*v4);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(*v6);
  } else {
    return false;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  // Loopback connects complete (or are refused) at once: no timeout needed.
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0;
  close(fd);
  return ok;
}

}  // namespace nfsedge::harness
