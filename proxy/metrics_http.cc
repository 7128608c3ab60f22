#include "proxy/metrics_http.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>


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

MetricsHttpServer::MetricsHttpServer(event_base* base, const MetricsRegistry& registry)
    : registry_(registry), http_(evhttp_new(base)) {
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                        EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
  evhttp_set_max_headers_size(http_, 16384);
  evhttp_set_max_body_size(http_, 0);
  evhttp_set_timeout(http_, 30);
  evhttp_set_gencb(http_, &MetricsHttpServer::OnRequest, this);
}

MetricsHttpServer::~MetricsHttpServer() {
  guards_.clear();
  evhttp_free(http_);
}

StatusOr<uint16_t> MetricsHttpServer::Listen(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  Status s = SplitHostPort(address, &host, &port);
  if (!s.ok()) return s;
  evhttp_bound_socket* bound = evhttp_bind_socket_with_handle(http_, host.c_str(), port);
  if (!bound) {
    return Status(StatusCode::kUnavailable,
                  "metrics: cannot listen on " + address + ": " + std::strerror(errno));
  }
  guards_.push_back(std::make_unique<AcceptGuard>(evhttp_bound_socket_get_listener(bound),
                                                  "metrics listener " + address));
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(evhttp_bound_socket_get_fd(bound), reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return Status(StatusCode::kInternal, "metrics: getsockname failed");
  }
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

void MetricsHttpServer::OnRequest(evhttp_request* req, void* arg) {
  auto* self = static_cast<MetricsHttpServer*>(arg);
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const char* path = uri ? evhttp_uri_get_path(uri) : nullptr;
  std::string p = path ? path : "";
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  evbuffer* body = evbuffer_new();
  if (p != "/metrics") {
    evhttp_add_header(headers, "Content-Type", "text/plain; charset=utf-8");
    evbuffer_add_printf(body, "not found: nfsedge serves /metrics\n");
    evhttp_send_reply(req, HTTP_NOTFOUND, "Not Found", body);
  } else if (evhttp_request_get_command(req) != EVHTTP_REQ_GET &&
             evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
    evhttp_add_header(headers, "Allow", "GET, HEAD");
    evhttp_send_reply(req, 405, "Method Not Allowed", body);
  } else {
    self->scrapes_++;
    std::string text = self->registry_.Scrape();
    evhttp_add_header(headers, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    evbuffer_add(body, text.data(), text.size());
    evhttp_send_reply(req, HTTP_OK, "OK", body);
  }
  evbuffer_free(body);
}

}  // namespace nfsedge
