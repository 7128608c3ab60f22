// Socket addresses: parse "host", format for logs, and CIDR networks for
// export access rules.
//
// Thread-safety: plain values and free functions.
#ifndef NFSEDGE_RPC_SOCKADDR_H_
#define NFSEDGE_RPC_SOCKADDR_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "rpc/status.h"

namespace nfsedge {

struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&ss); }
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&ss); }
  int family() const { return ss.ss_family; }
  uint16_t port() const;
  void set_port(uint16_t port);
  // "1.2.3.4" or "::1" (no port).
  std::string HostString() const;
  // "1.2.3.4:port" or "[::1]:port".
  std::string ToString() const;
  // The family and the address's bytes, without the port: a key, not text
  // (cheaper than HostString on every call).
  std::string HostKey() const;
};

// Returns the address of numeric or named `host` with `port` (resolving names
// blocks: call at start-up only).
StatusOr<SockAddr> ResolveAddress(const std::string& host, uint16_t port);

// An IPv4 or IPv6 network, "10.0.0.0/8", "::1/128", or a single address.
// One written IPv4-mapped, "::ffff:10.1.0.0/112", is the IPv4 network
// (10.1.0.0/16); its prefix length must be at least 96.
class Network {
 public:
  // Returns the network written in `text` iff it parses.
  static StatusOr<Network> Parse(std::string_view text);
  // Returns true iff `addr` lies in this network (IPv4-mapped IPv6 addresses
  // match IPv4 networks, and so IPv4-mapped networks too).
  bool Contains(const SockAddr& addr) const;
  const std::string& text() const { return text_; }
  bool operator==(const Network&) const = default;

 private:
  int family_ = AF_INET;
  unsigned char bytes_[16] = {};
  int prefix_ = 0;
  std::string text_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_SOCKADDR_H_
