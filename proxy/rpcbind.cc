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

namespace {

// (prog, vers) for IPv6 clients: set at `port` iff `set`, else removed.
bool Tcp6Registration(uint32_t prog, uint32_t vers, uint16_t port, bool set) {
  netconfig* nc = getnetconfigent("tcp6");
  if (nc == nullptr) return false;
  rpcb_unset(prog, vers, nc);
  bool ok = true;
  if (set) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = in6addr_any;
    netbuf nb{sizeof(a), sizeof(a), &a};
    ok = rpcb_set(prog, vers, nc, &nb);
  }
  freenetconfigent(nc);
  return ok;
}

}  // namespace

Status RpcbindRegister(uint32_t prog, uint32_t vers, uint16_t port, bool ipv6) {
  pmap_unset(prog, vers);
  const std::string what = "program " + std::to_string(prog) + " version " +
                           std::to_string(vers) + " on port " + std::to_string(port);
  if (!pmap_set(prog, vers, IPPROTO_TCP, port)) {
    return Unavailable("rpcbind refused to register " + what);
  }
  // Without IPv6, an older run's tcp6 entry (a crash left it) goes.
  if (!Tcp6Registration(prog, vers, port, ipv6) && ipv6) {
    return Unavailable("rpcbind refused to register " + what + " for IPv6 (tcp6)");
  }
  return Status::Ok();
}

void RpcbindUnregister(uint32_t prog, uint32_t vers) {
  pmap_unset(prog, vers);
  Tcp6Registration(prog, vers, 0, false);
}

StatusOr<uint16_t> RpcbindGetPort(const SockAddr& server, uint32_t prog, uint32_t vers,
                                  Duration timeout) {
  if (server.family() != AF_INET) {
    return InvalidArgument("asking rpcbind works for IPv4 upstreams only: set the ports");
  }
  sockaddr_in a;
  std::memcpy(&a, &server.ss, sizeof(a));
  a.sin_port = htons(111);
  // pmap_getport's own call, with a bounded total time.
  int sock = RPC_ANYSOCK;
  timeval again{2, 0};
  CLIENT* c = clntudp_bufcreate(&a, PMAPPROG, PMAPVERS, again, &sock, RPCSMALLMSGSIZE,
                                RPCSMALLMSGSIZE);
  if (c == nullptr) {
    return Unavailable("cannot ask rpcbind at " + server.HostString() + ": " +
                       clnt_spcreateerror("clntudp_bufcreate"));
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
  timeval total{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
  pmap parms{prog, vers, IPPROTO_TCP, 0};
  u_short port = 0;
  const clnt_stat st = clnt_call(c, PMAPPROC_GETPORT, reinterpret_cast<xdrproc_t>(xdr_pmap),
                                 reinterpret_cast<char*>(&parms),
                                 reinterpret_cast<xdrproc_t>(xdr_u_short),
                                 reinterpret_cast<char*>(&port), total);
  clnt_destroy(c);
  if (st != RPC_SUCCESS) {
    return Unavailable("rpcbind at " + server.HostString() + " did not answer within " +
                       std::to_string(ms) + " ms (" + clnt_sperrno(st) + ")");
  }
  if (port == 0) {
    return Unavailable("rpcbind at " + server.HostString() + " has no TCP port for program " +
                       std::to_string(prog) + " version " + std::to_string(vers));
  }
  return static_cast<uint16_t>(port);
}

}  // namespace nfsedge
