// The systemd notify protocol (sd_notify(3)) without libsystemd: one
// datagram with "KEY=value" lines to the Unix socket named by
// $NOTIFY_SOCKET (a path, or an abstract socket when it starts with '@').
// The daemon sends READY=1 once it serves, RELOADING=1 / READY=1 around a
// config reload, and STOPPING=1 at shutdown.
//
// Thread-safety: safe from any thread (one socket per call).
#ifndef NFSEDGE_PROXY_SERVICE_NOTIFY_H_
#define NFSEDGE_PROXY_SERVICE_NOTIFY_H_

#include <string>

#include "rpc/status.h"

namespace nfsedge {

// Sends `state` to `socket_path` (as $NOTIFY_SOCKET would name it).
Status NotifySocket(const std::string& socket_path, const std::string& state);

// The state that starts a reload: RELOADING=1 with MONOTONIC_USEC= (the
// time of CLOCK_MONOTONIC, which sd_notify(3) asks of RELOADING=1 so that
// the service manager can tell this reload from one it asked for before).
std::string ReloadingNotice();

// Sends `state` to $NOTIFY_SOCKET; does nothing (OK) when it is unset, i.e.
// not started by a service manager that asked for notifications.
Status NotifyServiceManager(const std::string& state);

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_SERVICE_NOTIFY_H_
