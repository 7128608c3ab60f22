// Relay: the WAN emulator's TCP relay. For each mapping it listens on `listen` and, for every
// connection accepted, opens a connection to `target` and relays bytes both ways through ONE
// shared link per direction (LinkPipe "up": clients to servers, "down": servers to clients), so
// all connections of all mappings compete for the same bottleneck, as behind one WAN path.
//
// Usage:
//   Relay relay(base, &clock, config, &stats);
//   Status s = relay.Start();          // binds every listen address
//   ... event_base_dispatch(base) ...  // relays until the loop stops
//
// Fairness: when a link stops accepting, the relay stops reading its senders only after the
// socket reads already due in the current loop iteration have run (throttle_ is activated
// behind them). So each connection with data waiting gets one read per time the link resumes,
// and a small request on one connection is not starved by a bulk flow on another that happens
// to be served first. The queue limit is thus exceeded by at most one read per connection.
//
// Listen addresses must be explicit (a wildcard 0.0.0.0 / :: is refused by Start()); port 0
// binds an ephemeral port, reported by bound_addresses().
//
// Thread safety: not thread-safe. Construct, Start() and destroy on the thread that runs the
// event base; everything else happens in its callbacks. Stats are updated on that thread.

#ifndef NFSEDGE_TESTS_WAN_RELAY_H_
#define NFSEDGE_TESTS_WAN_RELAY_H_

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "clock.h"
#include "libevent_util.h"
#include "link_pipe.h"
#include "relay_session.h"
#include "status.h"
#include "wan_stats.h"

namespace nfsedge::wan {

struct Mapping {
  sockaddr_storage listen = {};
  socklen_t listen_len = 0;
  sockaddr_storage target = {};
  socklen_t target_len = 0;
  std::string target_name;  // As given on the command line, for messages.
  bool rpc = true;          // Count ONC RPC calls and replies on this mapping.
};

struct RelayConfig {
  std::vector<Mapping> mappings;
  LinkConfig up;    // Client to server.
  LinkConfig down;  // Server to client.
  // Non-empty: every byte each session reads is also written, as read, to
  // "<capture_dir>/session-<N>.up" (from the client) and ".down" (from the server).
  std::string capture_dir;

  // Returns OK iff there is at least one mapping, no listen address is a wildcard, both link
  // configurations are valid and capture_dir, if set, is a writable directory.
  Status Validate() const;
};

class Relay {
 public:
  // REQUIRES: base, clock and stats outlive the relay.
  Relay(event_base* base, Clock* clock, RelayConfig config, WanStats* stats);
  ~Relay();

  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Validates the configuration and listens on every mapping. Returns OK iff all listen.
  Status Start();

  // After Start(): the address each mapping listens on ("127.0.0.1:41234"), in mapping order.
  const std::vector<std::string>& bound_addresses() const { return bound_; }

  // After Start(): "127.0.0.1:41234=127.0.0.1:20490 ..." (one item per mapping).
  std::string Describe() const;

  // Returns the number of live relayed connections.
  size_t session_count() const { return sessions_.size(); }

 private:
  struct Listener {
    Relay* relay;
    const Mapping* mapping;
    UniqueListener listener;
  };

  static void OnAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg);
  static void OnAcceptError(evconnlistener* listener, void* arg);
  static void OnReap(evutil_socket_t, short, void* arg);
  static void OnThrottle(evutil_socket_t, short, void* arg);

  void Accept(const Mapping& mapping, evutil_socket_t fd);
  void Deliver(bool up, uint64_t flow, evbuffer* data);
  void OnAcceptingChanged(bool accepting);
  void UpdateAllReading();
  void CloseSession(uint64_t id);

  // Constant after construction.
  event_base* const base_;
  const RelayConfig config_;
  WanStats* const stats_;

  LinkPipe up_;
  LinkPipe down_;
  SessionContext context_;
  UniqueEvent reaper_;
  UniqueEvent throttle_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::string> bound_;
  std::unordered_map<uint64_t, std::unique_ptr<RelaySession>> sessions_;
  std::vector<std::unique_ptr<RelaySession>> closed_sessions_;  // Destroyed by reaper_.
  uint64_t next_session_id_ = 1;
};

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_RELAY_H_
