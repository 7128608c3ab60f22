// TlsProbeRelay: lets a plain TLS client (`openssl s_client`) reach an
// nfsedge that serves RPC-over-TLS (RFC 9289). It listens on a loopback port
// (chosen by the kernel); for each connection it accepts it connects to the
// target, sends the AUTH_TLS probe (NULL call of NFSv3) in plaintext RPC,
// checks the STARTTLS reply, then relays bytes both ways until either side
// closes, so the client's TLS handshake runs with nfsedge. A connection whose
// probe is not answered with STARTTLS is closed without relaying a byte.
//
// Thread safety: the accessors may be called from any thread while the
// relay runs; each connection is served by a thread of its own, all joined
// by the destructor.

#ifndef NFSEDGE_TESTS_INTEGRATION_TLS_PROBE_RELAY_H_
#define NFSEDGE_TESTS_INTEGRATION_TLS_PROBE_RELAY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/net.h"
#include "harness/status.h"

namespace nfsedge::itest {

class TlsProbeRelay {
 public:
  // Listens on 127.0.0.1 (any free port) and relays to 127.0.0.1:target_port.
  static harness::StatusOr<std::unique_ptr<TlsProbeRelay>> Start(uint16_t target_port);
  ~TlsProbeRelay();
  TlsProbeRelay(const TlsProbeRelay&) = delete;
  TlsProbeRelay& operator=(const TlsProbeRelay&) = delete;

  uint16_t port() const { return port_; }
  // Returns the local ports of the relay's connections to the target whose
  // probe was answered with STARTTLS, in order: nfsedge logs the client as
  // 127.0.0.1:<port>.
  std::vector<uint16_t> upgraded_ports() const;
  // Returns why probes failed (one line per failed connection), or "".
  std::string errors() const;

 private:
  TlsProbeRelay(harness::UniqueFd listener, uint16_t port, uint16_t target_port);
  void AcceptLoop();
  void Serve(harness::UniqueFd client);

  // Constant after construction.
  harness::UniqueFd listener_;
  const uint16_t port_;
  const uint16_t target_port_;

  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> connections_;  // guarded by mu_
  std::vector<uint16_t> upgraded_ports_;  // guarded by mu_
  std::string errors_;                    // guarded by mu_
};

}  // namespace nfsedge::itest

#endif  // NFSEDGE_TESTS_INTEGRATION_TLS_PROBE_RELAY_H_
