#include "echo.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nfsedge::bench {
namespace {

constexpr size_t kMessage = 16;
constexpr char kMagic[] = "nfsedge!";  // 8 bytes after the sequence number.

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

harness::StatusOr<std::unique_ptr<EchoServer>> EchoServer::Start() {
  std::unique_ptr<EchoServer> s(new EchoServer());
  s->listen_ = harness::UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s->listen_.get() < 0) return harness::Status::Error(Errno("socket"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(s->listen_.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(s->listen_.get(), 16) != 0 ||
      getsockname(s->listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return harness::Status::Error(Errno("echo server listen"));
  }
  s->port_ = ntohs(addr.sin_port);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return harness::Status::Error(Errno("pipe"));
  s->wake_read_ = harness::UniqueFd(pipefd[0]);
  s->wake_write_ = harness::UniqueFd(pipefd[1]);
  s->thread_ = std::thread([p = s.get()] { p->Serve(); });
  return s;
}

EchoServer::~EchoServer() {
  wake_write_.Reset();  // Serve() sees EOF on the pipe.
  if (thread_.joinable()) thread_.join();
}

void EchoServer::Serve() {
  std::vector<harness::UniqueFd> clients;
  std::vector<pollfd> pfds;
  char buf[65536];
  while (true) {
    pfds.clear();
    pfds.push_back({wake_read_.get(), POLLIN, 0});
    pfds.push_back({listen_.get(), POLLIN, 0});
    for (const harness::UniqueFd& c : clients) pfds.push_back({c.get(), POLLIN, 0});
    if (poll(pfds.data(), pfds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (pfds[0].revents != 0) return;
    if (pfds[1].revents & POLLIN) {
      int fd = accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) clients.emplace_back(fd);
    }
    for (size_t i = 2; i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      harness::UniqueFd& c = clients[i - 2];
      ssize_t n = read(c.get(), buf, sizeof(buf));
      bool ok = n > 0;
      for (ssize_t done = 0; ok && done < n;) {
        ssize_t w = write(c.get(), buf + done, n - done);
        if (w <= 0) ok = false;
        done += w;
      }
      if (!ok) c.Reset();
    }
    std::erase_if(clients, [](const harness::UniqueFd& c) { return c.get() < 0; });
  }
}

harness::StatusOr<std::unique_ptr<EchoProbe>> EchoProbe::Connect(const harness::TcpEndpoint& ep) {
  auto fd = harness::ConnectTcp(ep);
  if (!fd.ok()) return fd.status();
  return std::unique_ptr<EchoProbe>(new EchoProbe(*fd));
}

harness::Status EchoProbe::Send() {
  char msg[kMessage];
  uint64_t seq = next_seq_++;
  std::memcpy(msg, &seq, 8);
  std::memcpy(msg + 8, kMagic, 8);
  sent_[seq] = Clock::now();
  // 16 bytes ten times a second never fill the socket buffer: a blocking
  // write returns at once.
  if (write(fd_.get(), msg, kMessage) != static_cast<ssize_t>(kMessage)) {
    return harness::Status::Error(Errno("echo probe write"));
  }
  return harness::Status::OK();
}

harness::Status EchoProbe::OnReadable() {
  char buf[4096];
  ssize_t n = recv(fd_.get(), buf, sizeof(buf), MSG_DONTWAIT);
  if (n == 0) return harness::Status::Error("echo probe: connection closed");
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return harness::Status::OK();
    return harness::Status::Error(Errno("echo probe read"));
  }
  Clock::time_point now = Clock::now();
  inbox_.append(buf, n);
  size_t pos = 0;
  for (; inbox_.size() - pos >= kMessage; pos += kMessage) {
    uint64_t seq;
    std::memcpy(&seq, inbox_.data() + pos, 8);
    auto it = sent_.find(seq);
    if (it == sent_.end() || std::memcmp(inbox_.data() + pos + 8, kMagic, 8) != 0) {
      return harness::Status::Error("echo probe: garbled echo");
    }
    done_.emplace_back(it->second,
                       std::chrono::duration<double, std::milli>(now - it->second).count());
    sent_.erase(it);
  }
  inbox_.erase(0, pos);
  return harness::Status::OK();
}

std::vector<double> EchoProbe::LatenciesMs(Clock::time_point from, Clock::time_point to) const {
  std::vector<double> out;
  for (const auto& [sent, ms] : done_) {
    if (sent >= from && sent < to) out.push_back(ms);
  }
  return out;
}

}  // namespace nfsedge::bench
