#include "proxy/rpcbind.h"

#include <netinet/in.h>
#include <rpc/pmap_clnt.h>
#include <rpc/rpc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nfsedge {

bool LocalRpcbindRunning() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(111);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

Status RpcbindRegister(uint32_t prog, uint32_t vers, uint16_t port) {
  pmap_unset(prog, vers);
  if (!pmap_set(prog, vers, IPPROTO_TCP, port)) {
    return Unavailable("rpcbind refused to register program " + std::to_string(prog) +
                       " version " + std::to_string(vers) + " on port " + std::to_string(port));
  }
  return Status::Ok();
}

void RpcbindUnregister(uint32_t prog, uint32_t vers) { pmap_unset(prog, vers); }

StatusOr<uint16_t> RpcbindGetPort(const SockAddr& server, uint32_t prog, uint32_t vers) {
  if (server.family() != AF_INET) {
    return InvalidArgument("asking rpcbind works for IPv4 upstreams only: set the ports");
  }
  sockaddr_in a;
  std::memcpy(&a, &server.ss, sizeof(a));
  a.sin_port = htons(111);
  u_short port = pmap_getport(&a, prog, vers, IPPROTO_TCP);
  if (port == 0) {
    return Unavailable("rpcbind at " + server.HostString() + " has no TCP port for program " +
                       std::to_string(prog) + " version " + std::to_string(vers));
  }
  return static_cast<uint16_t>(port);
}

}  // namespace nfsedge
