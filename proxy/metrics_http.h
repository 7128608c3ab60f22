// MetricsHttpServer: serves a MetricsRegistry over HTTP (libevent evhttp) for
// Prometheus: GET /metrics returns the text exposition; anything else is 404
// (405 for another method on /metrics).
//
// Thread-safety: lives on the event loop's thread; scrapes run there.
#ifndef NFSEDGE_PROXY_METRICS_HTTP_H_
#define NFSEDGE_PROXY_METRICS_HTTP_H_

#include <event2/http.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proxy/metrics.h"
#include "rpc/accept_guard.h"
#include "rpc/status.h"

namespace nfsedge {

class MetricsHttpServer {
 public:
  // `registry` must outlive the server.
  MetricsHttpServer(event_base* base, const MetricsRegistry& registry);
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Listens on `address`, "host:port" or "[v6]:port" with a numeric host
  // (port 0 picks one). Returns the bound port.
  StatusOr<uint16_t> Listen(const std::string& address);

  uint64_t scrapes() const { return scrapes_; }

 private:
  static void OnRequest(evhttp_request* req, void* arg);

  const MetricsRegistry& registry_;
  evhttp* http_;
  std::vector<std::unique_ptr<AcceptGuard>> guards_;  // one per bound socket
  uint64_t scrapes_ = 0;
};

// Splits "host:port" / "[v6]:port" into host and port. Returns an error
// naming the problem iff malformed.
Status SplitHostPort(const std::string& address, std::string* host, uint16_t* port);

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_METRICS_HTTP_H_
