// MetricsHttpServer: serves a MetricsRegistry over HTTP for Prometheus.
// GET (or HEAD) /metrics returns the text exposition; another path is 404,
// another method on /metrics 405, a request that is not HTTP/1.x 400, one
// whose head is larger than kMaxRequestBytes 431. One request per
// connection (the reply says `Connection: close`, as Prometheus accepts;
// the server ends its side after the reply and closes at the client's end
// of file, or at the deadline).
//
// It is a small server of its own rather than libevent's evhttp, whose 2.1
// has no bound on connections and an idle timeout that every byte restarts
// (a client sending a byte every few seconds held a descriptor for days):
// here at most `max_connections` are open (more are closed at accept), and a
// connection has `deadline` from its accept to its reply's last byte
// (checked every second, or every quarter of a shorter deadline).
//
// Thread-safety: lives on the event loop's thread; scrapes run there.
#ifndef NFSEDGE_PROXY_METRICS_HTTP_H_
#define NFSEDGE_PROXY_METRICS_HTTP_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/metrics.h"
#include "rpc/accept_guard.h"
#include "rpc/event_loop.h"
#include "rpc/status.h"

namespace nfsedge {

// What the endpoint saw; kept by its owner, so that they survive the
// endpoint (a reload that moves it makes a new one).
struct MetricsHttpStats {
  uint64_t scrapes = 0;        // GET/HEAD /metrics answered
  uint64_t accepted = 0;       // connections accepted
  uint64_t refused = 0;        // closed at accept: max_connections open, all answering
  uint64_t displaced = 0;      // closed for a newer one: head not whole, or answered
  uint64_t timed_out = 0;      // closed at the deadline
  uint64_t bad_requests = 0;   // answered 400 or 431
  uint64_t accept_paused = 0;  // accept() failed for want of descriptors or memory
};

struct MetricsHttpOptions {
  static constexpr size_t kMaxRequestBytes = 16384;
  size_t max_connections = 16;
  Duration deadline = std::chrono::seconds(10);
};

class MetricsHttpServer {
 public:
  // `registry` and `stats` must outlive the server.
  MetricsHttpServer(event_base* base, const MetricsRegistry& registry, MetricsHttpStats* stats,
                    MetricsHttpOptions options = {});
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Listens on `address`, "host:port" or "[v6]:port" with a numeric host
  // (port 0 picks one). Returns the bound port.
  StatusOr<uint16_t> Listen(const std::string& address);

  size_t connections() const { return conns_.size(); }

  // The whole HTTP response to the request head `head` (request line and
  // headers, without the blank line); `*bad` is set iff it was malformed.
  std::string Respond(std::string_view head, bool* bad);

 private:
  struct Conn;
  static void OnAccept(evconnlistener* l, evutil_socket_t fd, sockaddr* sa, int len, void* arg);
  static void OnRead(bufferevent* bev, void* arg);
  static void OnWritten(bufferevent* bev, void* arg);
  static void OnDrain(bufferevent* bev, void* arg);
  static void OnEvent(bufferevent* bev, short what, void* arg);
  void Close(Conn* c);
  void Sweep();  // closes the connections past their deadline

  event_base* base_;
  const MetricsRegistry& registry_;
  MetricsHttpStats* stats_;
  MetricsHttpOptions options_;
  std::vector<ListenerPtr> listeners_;
  std::vector<std::unique_ptr<AcceptGuard>> guards_;  // one per bound socket
  std::map<Conn*, std::unique_ptr<Conn>> conns_;
  Timer sweep_;  // armed while connections are open
};

// Splits "host:port" / "[v6]:port" into host and port. Returns an error
// naming the problem iff malformed.
Status SplitHostPort(const std::string& address, std::string* host, uint16_t* port);

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_METRICS_HTTP_H_
