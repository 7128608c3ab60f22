// PrivateNetwork moves the test process into its own network and mount
// namespaces, so servers started by one test binary (rpcbind on port 111,
// ganesha, nfsedge on fixed ports) never meet those of another test or of the
// host, and /run (rpcbind's socket, ganesha's pid and state files) is private.
//
// Thread safety: Enter() must be called from main() before any thread exists
// (unshare(CLONE_NEWNS) fails in a multi-threaded process). The accessors are
// safe afterwards.

#ifndef NFSEDGE_TESTS_HARNESS_PRIVATE_NETWORK_H_
#define NFSEDGE_TESTS_HARNESS_PRIVATE_NETWORK_H_

#include <string>

#include "harness/status.h"

namespace nfsedge::harness {

class PrivateNetwork {
 public:
  // A second loopback address that Enter() configures (label lo:1). Tests use
  // it as a client address outside an export's `clients` networks. It also
  // gives the namespace a non-127.0.0.1 IPv4 address, without which
  // getaddrinfo(AI_ADDRCONFIG) in ganesha fails to resolve "127.0.0.1".
  static constexpr const char* kSecondaryAddress = "127.0.0.2";

  // Unshares the network and mount namespaces, makes all mounts private,
  // mounts a tmpfs over /run (with /run/rpcbind and /run/ganesha), brings
  // `lo` up, adds kSecondaryAddress and ignores SIGPIPE (sockets report
  // EPIPE instead). Returns OK iff all of that succeeded; the error says why
  // not (not root, no CAP_SYS_ADMIN, unshare refused), and the caller should
  // then skip its tests. Calling it again after success is a no-op.
  static Status Enter();

  // Returns true iff Enter() has succeeded in this process.
  static bool entered();
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_PRIVATE_NETWORK_H_
