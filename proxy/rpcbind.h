// Talking to rpcbind (portmapper, RFC 1833): registering the proxy's NFS and
// MOUNT ports with a local rpcbind, and asking the upstream's rpcbind for its
// ports. These calls block (libtirpc), so they are made only at start-up and
// after the event loop stopped, never from it.
//
// Thread-safety: free functions; call from one thread.
#ifndef NFSEDGE_PROXY_RPCBIND_H_
#define NFSEDGE_PROXY_RPCBIND_H_

#include <cstdint>
#include <string>

#include "cache/clock.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"

namespace nfsedge {

// Returns true iff something accepts TCP connections on 127.0.0.1:111.
bool LocalRpcbindRunning();

// Registers (prog, vers) on TCP `port` with the local rpcbind, replacing an
// older registration of the same pair: for IPv4 clients (netid "tcp"), and
// iff `ipv6` for IPv6 clients too ("tcp6": a listener on "::" takes both).
Status RpcbindRegister(uint32_t prog, uint32_t vers, uint16_t port, bool ipv6 = false);
// Removes the registrations of (prog, vers), IPv4 and IPv6.
void RpcbindUnregister(uint32_t prog, uint32_t vers);

// Returns the TCP port of (prog, vers) from the rpcbind of `server` (IPv4),
// asked over UDP (again every 2 s); unavailable after `timeout` without an
// answer (libtirpc's pmap_getport would wait a minute: as long as a
// service manager gives a start).
StatusOr<uint16_t> RpcbindGetPort(const SockAddr& server, uint32_t prog, uint32_t vers,
                                  Duration timeout = std::chrono::seconds(10));

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_RPCBIND_H_
