// Testbed starts the usual stack in the current (private) network namespace:
// rpcbind, then ganesha serving one or more directories, then optionally
// nfsedge in front of it, all under one temporary directory. Destruction (or
// Stop()) stops them in reverse order.
//
// REQUIRES: PrivateNetwork::Enter() has succeeded.
//
// Thread safety: not thread-safe.

#ifndef NFSEDGE_TESTS_HARNESS_TESTBED_H_
#define NFSEDGE_TESTS_HARNESS_TESTBED_H_

#include <memory>
#include <string>

#include "harness/files.h"
#include "harness/ganesha.h"
#include "harness/proxy_process.h"
#include "harness/rpcbind.h"
#include "harness/status.h"

namespace nfsedge::harness {

class Testbed {
 public:
  struct Options {
    std::string name = "testbed";  // Prefix of the temporary directory.
    // work_dir is set by Start(). No exports: one at <tmp>/export. Relative
    // export paths are made absolute under the temporary directory.
    Ganesha::Options ganesha;
    bool start_proxy = true;
    // work_dir and upstream ports are set by Start(). If `exports` is empty,
    // each ganesha export is mirrored under the same path (rw, no squash,
    // clients 127.0.0.0/8). Relative upstream paths are resolved like
    // ganesha's export paths.
    ProxyProcess::Options proxy;
    // Puts a second nfsedge between the proxy and ganesha, reached over
    // RPC-over-TLS (certificates made by tests/tools/make_test_certs.sh),
    // its exports `tls = "required"`: the proxy under test is then a branch
    // edge in front of a head-office nfsedge. Also turned on by
    // NFSEDGE_TESTBED_TLS_CHAIN=1 in the environment, so that a whole test
    // binary runs through the chain.
    bool tls_chain = false;
  };

  static StatusOr<std::unique_ptr<Testbed>> Start(Options options);
  ~Testbed() { Stop(); }

  const TempDir& dir() const { return *dir_; }
  Rpcbind& rpcbind() { return *rpcbind_; }
  Ganesha& ganesha() { return *ganesha_; }
  // nullptr iff !start_proxy.
  ProxyProcess* proxy() { return proxy_.get(); }

  // Stops the proxy (SIGTERM) and starts it again with the same options, as
  // an administrator's restart does. REQUIRES: the bed started a proxy.
  Status RestartProxy();
  // Kills ganesha (SIGKILL, as a crash) and starts it again with the same
  // options: same ports, same export directories. Its previous log is kept
  // as ganesha.log.killed. It stays down for `down` (ganesha's write
  // verifier is its start time in seconds: a restart within the same second
  // keeps it).
  Status KillAndRestartGanesha(Millis down = Millis(0));

  // Tails of the proxy's and ganesha's logs, for failure messages.
  std::string LogTails(size_t max_lines = 60) const;
  // Stops the proxy, ganesha and rpcbind; returns the proxy's exit status
  // (success if no proxy ran). Idempotent.
  ExitStatus Stop();

 private:
  Testbed() = default;
  // Starts the TLS chain's head-office nfsedge in front of ganesha with the
  // exports of `edge`, and points `edge` at it.
  Status StartTlsInner(ProxyProcess::Options* edge);

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<Rpcbind> rpcbind_;
  std::unique_ptr<Ganesha> ganesha_;
  std::unique_ptr<ProxyProcess> inner_;  // the TLS chain's head-office nfsedge
  std::unique_ptr<ProxyProcess> proxy_;
  ProxyProcess::Options proxy_options_;
  ExitStatus proxy_exit_{true, 0, 0};
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_TESTBED_H_
