#include "harness/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nfsedge::harness {
namespace {

Status Errno(const std::string& what, int err) {
  return Status::Error(what + ": " + std::strerror(err));
}

// Connects `fd` (blocking) to `addr` within the deadline. Returns 0 or errno.
int ConnectWithDeadline(int fd, const sockaddr_in& addr, const Deadline& deadline) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  int err = rc == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    pollfd pfd{fd, POLLOUT, 0};
    while (true) {
      int n = poll(&pfd, 1, deadline.PollTimeoutMs());
      if (n > 0) break;
      if (n < 0 && errno != EINTR) return errno;
      if (deadline.Expired()) return ETIMEDOUT;
    }
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  }
  fcntl(fd, F_SETFL, flags);
  return err;
}

}  // namespace

void UniqueFd::Reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

uint16_t LocalPort(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  return ntohs(a.sin_port);
}

StatusOr<int> ConnectTcp(const TcpEndpoint& ep, Millis timeout) {
  Deadline deadline(timeout);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(ep.port);
  if (inet_pton(AF_INET, ep.host.c_str(), &dst.sin_addr) != 1) {
    return Status::Error("not an IPv4 address: " + ep.host);
  }
  sockaddr_in src{};
  src.sin_family = AF_INET;
  src.sin_addr.s_addr = htonl(INADDR_ANY);
  if (!ep.source_address.empty() &&
      inet_pton(AF_INET, ep.source_address.c_str(), &src.sin_addr) != 1) {
    return Status::Error("not an IPv4 address: " + ep.source_address);
  }
  // Privileged: walk down from 1023 past ports in use (or in TIME_WAIT for
  // this destination). Ordinary: port 0, an ephemeral port >= 32768.
  int port = ep.privileged_port ? 1023 : 0;
  const std::string target = ep.host + ":" + std::to_string(ep.port);
  while (true) {
    if (ep.privileged_port && port < 512) {
      return Status::Error("no free privileged source port for " + target);
    }
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return Errno("socket", errno);
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (ep.privileged_port) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    src.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0) {
      int err = errno;
      if (ep.privileged_port && err == EADDRINUSE) {
        --port;
        continue;
      }
      return Errno("bind source " + ep.source_address + ":" + std::to_string(port), err);
    }
    int err = ConnectWithDeadline(fd.get(), dst, deadline);
    if (err == 0) return fd.Release();
    if (ep.privileged_port && (err == EADDRNOTAVAIL || err == EADDRINUSE)) {
      --port;
      continue;
    }
    return Errno("connect " + target, err);
  }
}

}  // namespace nfsedge::harness
