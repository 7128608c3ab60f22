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
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return false;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  // Loopback connects complete (or are refused) at once: no timeout needed.
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace nfsedge::harness
