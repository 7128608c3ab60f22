#include "tls_probe_relay.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/raw_rpc.h"
#include "rpc/record_marking.h"
#include "rpc/tls.h"

namespace nfsedge::itest {
namespace {

// How often the loops look at stop_.
constexpr int kPollMs = 100;

// Writes all of `data` to `fd`. Returns false iff the peer is gone.
bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

harness::StatusOr<std::unique_ptr<TlsProbeRelay>> TlsProbeRelay::Start(uint16_t target_port) {
  harness::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return harness::Status::Error(std::string("socket: ") + strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(fd.get(), 16) != 0) {
    return harness::Status::Error(std::string("relay listen: ") + strerror(errno));
  }
  const uint16_t port = harness::LocalPort(fd.get());
  std::unique_ptr<TlsProbeRelay> relay(new TlsProbeRelay(std::move(fd), port, target_port));
  relay->acceptor_ = std::thread([r = relay.get()] { r->AcceptLoop(); });
  return relay;
}

TlsProbeRelay::TlsProbeRelay(harness::UniqueFd listener, uint16_t port, uint16_t target_port)
    : listener_(std::move(listener)), port_(port), target_port_(target_port) {}

TlsProbeRelay::~TlsProbeRelay() {
  stop_ = true;
  acceptor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (std::thread& t : connections_) t.join();
}

std::vector<uint16_t> TlsProbeRelay::upgraded_ports() const {
  std::lock_guard<std::mutex> lock(mu_);
  return upgraded_ports_;
}

std::string TlsProbeRelay::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

void TlsProbeRelay::AcceptLoop() {
  while (!stop_) {
    pollfd p{listener_.get(), POLLIN, 0};
    if (poll(&p, 1, kPollMs) <= 0) continue;
    harness::UniqueFd client(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (client.get() < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    connections_.emplace_back([this, c = std::make_shared<harness::UniqueFd>(std::move(client))] {
      Serve(std::move(*c));
    });
  }
}

void TlsProbeRelay::Serve(harness::UniqueFd client) {
  auto fail = [this](const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    errors_ += why + "\n";
  };
  harness::TcpEndpoint ep;
  ep.port = target_port_;
  auto conn = harness::RawConnection::Connect(ep);
  if (!conn.ok()) return fail("connect: " + conn.status().message());
  const uint32_t xid = 0x7e1a0001;
  if (!(*conn)->Send(EncodeRecord(EncodeTlsProbe(xid, harness::kNfsProgram, 3))).ok()) {
    return fail("cannot send the AUTH_TLS probe");
  }
  std::string reply;
  if ((*conn)->ReadRecord(&reply) != harness::RawConnection::Outcome::kRecord) {
    return fail("no reply to the AUTH_TLS probe");
  }
  if (Status s = CheckStartTlsReply(reply, xid); !s.ok()) return fail(s.message());
  const int server = (*conn)->fd();
  {
    std::lock_guard<std::mutex> lock(mu_);
    upgraded_ports_.push_back(harness::LocalPort(server));
  }
  // Relay until either side closes (or the relay stops).
  pollfd p[2] = {{client.get(), POLLIN, 0}, {server, POLLIN, 0}};
  char buf[16384];
  while (!stop_) {
    int n = poll(p, 2, kPollMs);
    if (n < 0 && errno != EINTR) return;
    for (int i = 0; i < 2 && n > 0; ++i) {
      if (p[i].revents == 0) continue;
      ssize_t got = recv(p[i].fd, buf, sizeof(buf), 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0 || !WriteAll(p[1 - i].fd, buf, static_cast<size_t>(got))) return;
    }
  }
}

}  // namespace nfsedge::itest
