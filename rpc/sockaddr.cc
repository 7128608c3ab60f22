#include "rpc/sockaddr.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <charconv>
#include <cstring>

namespace nfsedge {

namespace {

// Returns true iff the 16 bytes at `b` are an IPv4-mapped IPv6 address
// (::ffff:a.b.c.d).
bool IsV4Mapped(const unsigned char* b) {
  static constexpr unsigned char kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(b, kPrefix, sizeof(kPrefix)) == 0;
}

}  // namespace

uint16_t SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

void SockAddr::set_port(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(port);
}

std::string SockAddr::HostString() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

std::string SockAddr::HostKey() const {
  std::string key(1, static_cast<char>(family()));
  if (family() == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr;
    key.append(reinterpret_cast<const char*>(&a), sizeof(a));
  } else if (family() == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr;
    key.append(reinterpret_cast<const char*>(&a), sizeof(a));
  }
  return key;
}

std::string SockAddr::ToString() const {
  if (family() == AF_INET6) return "[" + HostString() + "]:" + std::to_string(port());
  return HostString() + ":" + std::to_string(port());
}

StatusOr<SockAddr> ResolveAddress(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return InvalidArgument("cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  SockAddr a;
  std::memcpy(&a.ss, res->ai_addr, res->ai_addrlen);
  a.len = res->ai_addrlen;
  freeaddrinfo(res);
  a.set_port(port);
  return a;
}

StatusOr<Network> Network::Parse(std::string_view text) {
  Network n;
  n.text_ = std::string(text);
  std::string addr(text);
  int max_prefix;
  size_t slash = addr.find('/');
  std::string_view prefix_text;
  if (slash != std::string::npos) {
    prefix_text = std::string_view(text).substr(slash + 1);
    addr.resize(slash);
  }
  if (inet_pton(AF_INET, addr.c_str(), n.bytes_) == 1) {
    n.family_ = AF_INET;
    max_prefix = 32;
  } else if (inet_pton(AF_INET6, addr.c_str(), n.bytes_) == 1) {
    n.family_ = AF_INET6;
    max_prefix = 128;
  } else {
    return InvalidArgument("'" + n.text_ + "' is not an IPv4 or IPv6 address or network");
  }
  n.prefix_ = max_prefix;
  if (slash != std::string::npos) {
    // Digits only: from_chars would take "-0" for 0, a network of every host.
    if (prefix_text.empty() || prefix_text.find_first_not_of("0123456789") != prefix_text.npos) {
      return InvalidArgument("'" + n.text_ + "' has a bad prefix length");
    }
    auto [p, ec] = std::from_chars(prefix_text.data(), prefix_text.data() + prefix_text.size(),
                                   n.prefix_);
    if (ec != std::errc() || p != prefix_text.data() + prefix_text.size() || n.prefix_ < 0 ||
        n.prefix_ > max_prefix) {
      return InvalidArgument("'" + n.text_ + "' has a bad prefix length");
    }
  }
  if (n.family_ == AF_INET6 && IsV4Mapped(n.bytes_)) {
    // ::ffff:a.b.c.d/n is the IPv4 network a.b.c.d/(n-96), so that it holds
    // a client whether it arrives over IPv4 or as an IPv4-mapped peer. A
    // shorter prefix would span other IPv6 addresses (and, at 80 or less,
    // every IPv4 client).
    if (n.prefix_ < 96) {
      return InvalidArgument("'" + n.text_ +
                             "' is an IPv4-mapped address with a prefix length below 96; write "
                             "::ffff:a.b.c.d/(96+n) or a.b.c.d/n");
    }
    std::memmove(n.bytes_, n.bytes_ + 12, 4);
    std::memset(n.bytes_ + 4, 0, sizeof(n.bytes_) - 4);
    n.family_ = AF_INET;
    n.prefix_ -= 96;
  }
  return n;
}

bool Network::Contains(const SockAddr& addr) const {
  const unsigned char* a;
  unsigned char mapped[4];
  if (addr.family() == AF_INET) {
    if (family_ != AF_INET) return false;
    a = reinterpret_cast<const unsigned char*>(
        &reinterpret_cast<const sockaddr_in*>(&addr.ss)->sin_addr);
  } else if (addr.family() == AF_INET6) {
    const auto* in6 = &reinterpret_cast<const sockaddr_in6*>(&addr.ss)->sin6_addr;
    if (family_ == AF_INET) {
      if (!IN6_IS_ADDR_V4MAPPED(in6)) return false;
      std::memcpy(mapped, in6->s6_addr + 12, 4);
      a = mapped;
    } else {
      // An IPv4 client arriving on an IPv6 socket is an IPv4 client: only
      // IPv4 networks hold it ("::/0" means every IPv6 client, as it does
      // with an IPv4 listener).
      if (IN6_IS_ADDR_V4MAPPED(in6)) return false;
      a = in6->s6_addr;
    }
  } else {
    return false;
  }
  int full = prefix_ / 8, rest = prefix_ % 8;
  if (std::memcmp(a, bytes_, full) != 0) return false;
  if (rest == 0) return true;
  unsigned char mask = static_cast<unsigned char>(0xff << (8 - rest));
  return (a[full] & mask) == (bytes_[full] & mask);
}

}  // namespace nfsedge
