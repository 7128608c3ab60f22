#include "proxy/metrics_http.h"

#include <event2/buffer.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>

#include "rpc/sockaddr.h"

namespace nfsedge {

Status SplitHostPort(const std::string& address, std::string* host, uint16_t* port) {
  std::string h, p;
  if (!address.empty() && address[0] == '[') {
    size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return InvalidArgument("'" + address + "': expected [address]:port");
    }
    h = address.substr(1, close - 1);
    p = address.substr(close + 2);
  } else {
    size_t colon = address.rfind(':');
    if (colon == std::string::npos || address.find(':') != colon) {
      return InvalidArgument("'" + address + "': expected host:port (IPv6 as [address]:port)");
    }
    h = address.substr(0, colon);
    p = address.substr(colon + 1);
  }
  if (h.empty() || p.empty() || p.size() > 5 ||
      p.find_first_not_of("0123456789") != std::string::npos || std::stoul(p) > 65535) {
    return InvalidArgument("'" + address + "': expected a numeric address and a port 0-65535");
  }
  in6_addr buf;
  if (inet_pton(AF_INET, h.c_str(), &buf) != 1 && inet_pton(AF_INET6, h.c_str(), &buf) != 1) {
    return InvalidArgument("'" + address + "': the address must be numeric IPv4 or IPv6");
  }
  *host = h;
  *port = static_cast<uint16_t>(std::stoul(p));
  return Status::Ok();
}

struct MetricsHttpServer::Conn {
  BuffereventPtr bev;
  SteadyClock::time_point accepted;
  MetricsHttpServer* server;
  bool answering = false;  // its request came whole
  bool written = false;    // and its reply is out (the client has yet to close)
};

MetricsHttpServer::MetricsHttpServer(event_base* base, const MetricsRegistry& registry,
                                     MetricsHttpStats* stats, MetricsHttpOptions options)
    : base_(base),
      registry_(registry),
      stats_(stats),
      options_(options),
      sweep_(base, [this] { Sweep(); }) {}

MetricsHttpServer::~MetricsHttpServer() {
  sweep_.Cancel();
  guards_.clear();
  listeners_.clear();
  conns_.clear();
}

StatusOr<uint16_t> MetricsHttpServer::Listen(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  Status s = SplitHostPort(address, &host, &port);
  if (!s.ok()) return s;
  StatusOr<SockAddr> addr = ResolveAddress(host, port);
  if (!addr.ok()) return addr.status();
  evconnlistener* l = evconnlistener_new_bind(
      base_, &MetricsHttpServer::OnAccept, this,
      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 16, addr->get(),
      static_cast<int>(addr->len));
  if (l == nullptr) {
    return Status(StatusCode::kUnavailable,
                  "metrics: cannot listen on " + address + ": " + std::strerror(errno));
  }
  listeners_.emplace_back(l);
  guards_.push_back(
      std::make_unique<AcceptGuard>(l, "metrics listener " + address, &stats_->accept_paused));
  SockAddr bound;
  bound.len = sizeof(bound.ss);
  if (getsockname(evconnlistener_get_fd(l), bound.get(), &bound.len) != 0) {
    return Status(StatusCode::kInternal, "metrics: getsockname failed");
  }
  return bound.port();
}

void MetricsHttpServer::OnAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
  auto* self = static_cast<MetricsHttpServer*>(arg);
  if (self->conns_.size() >= self->options_.max_connections) {
    // Connections that never sent a whole request (a scanner, a stuck
    // client), or were answered and do not close, do not shut the scraper
    // out: the oldest of them goes.
    auto oldest = self->conns_.end();
    for (auto it = self->conns_.begin(); it != self->conns_.end(); ++it) {
      if ((!it->second->answering || it->second->written) &&
          (oldest == self->conns_.end() || it->second->accepted < oldest->second->accepted)) {
        oldest = it;
      }
    }
    if (oldest == self->conns_.end()) {
      self->stats_->refused++;
      evutil_closesocket(fd);
      return;
    }
    self->stats_->displaced++;
    self->conns_.erase(oldest);
  }
  // (No deferred callbacks: a connection freed while one is queued, as at
  // shutdown, would keep its bufferevent for ever.)
  bufferevent* bev = bufferevent_socket_new(self->base_, fd, BEV_OPT_CLOSE_ON_FREE);
  if (bev == nullptr) {
    evutil_closesocket(fd);
    return;
  }
  self->stats_->accepted++;
  auto conn = std::make_unique<Conn>(Conn{BuffereventPtr(bev), SteadyClock::now(), self});
  Conn* c = conn.get();
  self->conns_.emplace(c, std::move(conn));
  bufferevent_setcb(bev, &MetricsHttpServer::OnRead, nullptr, &MetricsHttpServer::OnEvent, c);
  bufferevent_enable(bev, EV_READ);
  if (!self->sweep_.armed()) {
    self->sweep_.ArmPeriodic(std::min<Duration>(std::chrono::seconds(1), self->options_.deadline / 4));
  }
}

void MetricsHttpServer::Sweep() {
  const SteadyClock::time_point now = SteadyClock::now();
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (now - it->second->accepted >= options_.deadline) {
      stats_->timed_out++;
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
  if (conns_.empty()) sweep_.Cancel();
}

void MetricsHttpServer::OnRead(bufferevent* bev, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  MetricsHttpServer* self = c->server;
  evbuffer* in = bufferevent_get_input(bev);
  const size_t n = evbuffer_get_length(in);
  const size_t limit = MetricsHttpOptions::kMaxRequestBytes;
  std::string data(std::min(n, limit + 4), '\0');
  evbuffer_copyout(in, data.data(), data.size());
  size_t end = data.find("\r\n\r\n");
  if (end == std::string::npos) end = data.find("\n\n");
  std::string response;
  bool bad = false;
  if (end != std::string::npos && end <= limit) {
    response = self->Respond(std::string_view(data).substr(0, end), &bad);
  } else if (n > limit) {
    bad = true;
    response =
        "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
        "Connection: close\r\n\r\n";
  } else {
    return;  // the head is not whole yet
  }
  if (bad) self->stats_->bad_requests++;
  c->answering = true;
  // One request per connection: nothing more is read, the connection
  // closes once the reply is written.
  bufferevent_disable(bev, EV_READ);
  evbuffer_drain(in, n);
  bufferevent_setcb(bev, nullptr, &MetricsHttpServer::OnWritten, &MetricsHttpServer::OnEvent, c);
  bufferevent_write(bev, response.data(), response.size());
}

void MetricsHttpServer::OnWritten(bufferevent* bev, void* arg) {
  // The reply is out: end the stream, and read (and drop) what the client
  // still sends until it closes (or the deadline). Closed with bytes unread
  // (a body, a second request), the socket would be reset, and the end of
  // the reply lost with it.
  shutdown(bufferevent_getfd(bev), SHUT_WR);
  static_cast<Conn*>(arg)->written = true;
  evbuffer* in = bufferevent_get_input(bev);
  evbuffer_drain(in, evbuffer_get_length(in));
  bufferevent_setcb(bev, &MetricsHttpServer::OnDrain, nullptr, &MetricsHttpServer::OnEvent, arg);
  bufferevent_enable(bev, EV_READ);
}

void MetricsHttpServer::OnDrain(bufferevent* bev, void*) {
  evbuffer* in = bufferevent_get_input(bev);
  evbuffer_drain(in, evbuffer_get_length(in));
}

void MetricsHttpServer::OnEvent(bufferevent*, short, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  c->server->Close(c);  // end of file or an error
}

void MetricsHttpServer::Close(Conn* c) { conns_.erase(c); }

std::string MetricsHttpServer::Respond(std::string_view head, bool* bad) {
  *bad = false;
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  std::string_view method, target, version;
  if (sp2 != std::string_view::npos) {
    method = line.substr(0, sp1);
    target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    version = line.substr(sp2 + 1);
  }
  auto reply = [](std::string_view status, std::string_view extra, std::string_view body,
                  bool with_body) {
    std::string r = "HTTP/1.1 " + std::string(status) + "\r\n" + std::string(extra) +
                    "Content-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n\r\n";
    if (with_body) r.append(body);
    return r;
  };
  if (method.empty() || target.empty() || target.find(' ') != std::string_view::npos ||
      !version.starts_with("HTTP/1.")) {
    *bad = true;
    return reply("400 Bad Request", "", "", false);
  }
  const bool head_only = method == "HEAD";
  target = target.substr(0, target.find('?'));
  if (target != "/metrics") {
    return reply("404 Not Found", "Content-Type: text/plain; charset=utf-8\r\n",
                 "not found: nfsedge serves /metrics\n", !head_only);
  }
  if (method != "GET" && !head_only) {
    return reply("405 Method Not Allowed", "Allow: GET, HEAD\r\n", "", false);
  }
  stats_->scrapes++;
  const std::string text = registry_.Scrape();
  return reply("200 OK", "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n", text,
               !head_only);
}

}  // namespace nfsedge
