#include "proxy/service_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace nfsedge {

Status NotifySocket(const std::string& socket_path, const std::string& state) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() < 2 || socket_path.size() >= sizeof(addr.sun_path) ||
      (socket_path[0] != '/' && socket_path[0] != '@')) {
    return InvalidArgument("NOTIFY_SOCKET '" + socket_path + "' is not a socket path");
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path.size());
  // Never waits (it runs on the event loop): a receiver whose queue is
  // full (a service manager or relay that stopped reading) is an error.
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return IoError(std::string("notify: socket: ") + std::strerror(errno));
  ssize_t n = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL | MSG_DONTWAIT,
                       reinterpret_cast<sockaddr*>(&addr), len);
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(state.size())) {
    return IoError("notify " + socket_path + ": " + std::strerror(e));
  }
  return Status::Ok();
}

std::string ReloadingNotice() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // cannot fail for this clock
  const uint64_t usec =
      static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  return "RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec);
}

Status NotifyServiceManager(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return Status::Ok();
  return NotifySocket(path, state);
}

}  // namespace nfsedge
