// RpcServer: the client-facing side of ONC RPC over TCP on a libevent loop.
//
// It accepts connections, reassembles records (with a size limit), parses
// call headers, answers what is wrong with the header itself (RPC version,
// credential) and hands every well-formed call to a CallHandler. Many calls
// may be in flight per connection and their replies may leave in any order.
// At `max_calls_per_connection` calls in flight, or with more than
// `max_record_size` bytes of replies the client has not taken, the
// connection stops being read until replies go out (back-pressure, DESIGN
// rule 8); likewise, with a call in flight, while the bytes held for calls
// over all connections add up to `max_held_call_bytes`: the records of
// calls not answered yet, the room kept for their replies
// (IncomingCall::HoldForReply) and replies the clients have not taken. An oversized or
// malformed record closes that connection only. Limits against abuse: at
// most `max_connections` connections in all and `max_connections_per_client`
// from one client address (more are closed at accept, with a log line), and
// a connection with no call in flight and no traffic for `idle_timeout` is
// closed (as knfsd closes idle TCP connections).
//
// Thread-safety: everything runs on the thread of the event loop.
#ifndef NFSEDGE_RPC_RPC_SERVER_H_
#define NFSEDGE_RPC_RPC_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rpc/accept_guard.h"
#include "rpc/event_loop.h"
#include "rpc/rpc_message.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"
#include "rpc/tls.h"

namespace nfsedge {

class ServerConnection;

// One call received from a client. Reply() sends the answer (at most once);
// if the connection is gone by then the reply is dropped. Destroying a call
// that was never answered frees its slot without a reply (the client will
// retransmit).
// Calls of closed connections not answered yet (orphaned: the proxy still
// works on them, and holds their records), in all, and the bytes held for
// calls (ServerOptions::max_held_call_bytes), with the
// connections that wait for either to be fewer (ServerConnection::
// HeldByOrphans, OverHeldBytes).
struct OrphanedCalls {
  size_t total = 0;
  size_t held_bytes = 0;
  size_t max_held_bytes = SIZE_MAX;
  std::vector<std::weak_ptr<ServerConnection>> waiting;
};

// Lets every connection waiting for `orphaned` look again.
void WakeWaiting(OrphanedCalls& orphaned);

// One client address across its connections: open connections and
// orphaned calls.
struct ClientCalls {
  size_t connections = 0;
  size_t orphaned = 0;
  std::shared_ptr<OrphanedCalls> all;  // the server's
};

class IncomingCall {
 public:
  // `client`: its address's ClientCalls (null for a call made by a test).
  IncomingCall(std::weak_ptr<ServerConnection> conn, std::string record, const ParsedCall& parsed,
               const SockAddr& peer, std::shared_ptr<ClientCalls> client = nullptr);
  ~IncomingCall();
  IncomingCall(const IncomingCall&) = delete;
  IncomingCall& operator=(const IncomingCall&) = delete;

  const CallHeader& header() const { return header_; }
  uint32_t xid() const { return header_.xid; }
  // The procedure's arguments (bytes after the call header).
  std::string_view args() const { return std::string_view(record_).substr(args_offset_); }
  const SockAddr& peer() const { return peer_; }
  SteadyClock::time_point received() const { return received_; }
  // Returns true iff the call came over TLS (RFC 9289).
  bool tls() const { return tls_; }
  void set_tls(bool tls) { tls_ = tls; }

  // Sends `reply`, a complete RPC reply message (header and results).
  void Reply(std::string reply);
  // Convenience: accepted reply with `stat` (PROG_MISMATCH takes low/high).
  void ReplyAccepted(AcceptStat stat, uint32_t low = 0, uint32_t high = 0);
  // Convenience: SUCCESS header followed by `results`.
  void ReplySuccess(std::string_view results);
  bool replied() const { return replied_; }
  // Counts `bytes` more held for this call until it is answered (or
  // dropped): the room its reply may take (a READ's count), so that calls
  // whose replies would pass the bound are not read (max_held_call_bytes).
  void HoldForReply(size_t bytes);
  // `hook` runs once: with the reply message when Reply() is called (even if
  // the connection is gone), or with an empty view if the call is destroyed
  // unanswered; after the hooks added before it. Used by the duplicate
  // request cache, and to count answered mutations.
  void AddReplyHook(std::function<void(std::string_view reply)> hook) {
    if (!reply_hook_) {
      reply_hook_ = std::move(hook);
      return;
    }
    reply_hook_ = [first = std::move(reply_hook_), then = std::move(hook)](std::string_view r) {
      first(r);
      then(r);
    };
  }

 private:
  void Release();
  void ReleaseReplyRoom();
  // After the reply or release: an orphaned call no longer counts.
  void Answered(const std::shared_ptr<ServerConnection>& conn);

  std::weak_ptr<ServerConnection> conn_;
  std::shared_ptr<ClientCalls> client_;
  std::string record_;
  size_t held_bytes_ = 0;  // counted in client_->all->held_bytes
  size_t reply_room_ = 0;  // HoldForReply, counted there too until answered
  size_t args_offset_;
  CallHeader header_;
  SockAddr peer_;
  SteadyClock::time_point received_;
  bool replied_ = false;
  bool tls_ = false;
  std::function<void(std::string_view)> reply_hook_;
};

class CallHandler {
 public:
  virtual ~CallHandler() = default;
  // Takes ownership of a well-formed call. May reply now or later.
  virtual void HandleCall(std::unique_ptr<IncomingCall> call) = 0;
};

// Sees every reply a program sends to a client (`reply`: the whole RPC
// reply message), with the time since the call arrived; for metrics.
using ReplyObserver =
    std::function<void(const IncomingCall& call, std::string_view reply, Duration elapsed)>;

struct ServerOptions {
  size_t max_connections = 1024;
  // Connections from one client address (any source port) at most.
  size_t max_connections_per_client = 64;
  // Calls in flight on one connection at most. The calls of closed
  // connections still being worked on are held to as many as the open
  // connections may have (per client address: max_connections_per_client
  // times this; in all: max_connections times this): beyond, the client's
  // (or every) connection is not read until one is answered.
  size_t max_calls_per_connection = 128;
  // Bytes held for calls over all connections at most: the records of
  // calls received and not yet answered or dropped, the room kept for their
  // replies (HoldForReply) and replies not yet taken by their clients.
  // Beyond, a connection that has a call in flight is not read until calls
  // are answered and replies taken (one with none may still bring one, so
  // that no client is shut out by others).
  size_t max_held_call_bytes = SIZE_MAX;
  size_t max_record_size = 1114112;
  // A connection with no call in flight that neither sent nor received a
  // byte for this long is closed; zero = never.
  Duration idle_timeout = Duration::zero();
  ReplyObserver on_reply;  // may be empty
  // RPC-over-TLS (RFC 9289): when set, an AUTH_TLS probe is answered with
  // STARTTLS and the connection continues inside TLS (server context from
  // MakeServerTlsContext); when empty, the probe gets AUTH_BADCRED.
  SslCtxPtr tls;
};

struct ServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;             // over max_connections
  uint64_t connections_refused_per_client = 0;  // over max_connections_per_client
  uint64_t idle_closed = 0;                     // idle for idle_timeout
  uint64_t accept_paused = 0;  // accept() failed (out of descriptors): paused
  uint64_t calls = 0;
  uint64_t bad_records = 0;  // oversized or malformed: connection closed
  uint64_t auth_errors = 0;
  uint64_t tls_upgrades = 0;  // STARTTLS answered
  uint64_t tls_failures = 0;  // handshakes that failed
  uint64_t held_bytes_waits = 0;  // connections paused for max_held_call_bytes
};

class RpcServer {
 public:
  RpcServer(event_base* base, ServerOptions options, CallHandler* handler);
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Listens on `addr` (port 0 picks one). Returns the bound port.
  StatusOr<uint16_t> Listen(const SockAddr& addr);
  // Stops accepting new connections; existing ones go on.
  void StopListening();
  // Stops reading calls from every connection (shutdown): the calls read
  // go on and are answered; those the clients send from now on are not
  // run (a client sends them again to the next server).
  void StopReading();
  // Replaces the limits (config reload) with those of `limits`:
  // max_connections and max_connections_per_client (for connections
  // accepted from now on), max_calls_per_connection and
  // max_held_call_bytes (at each connection's next read) and idle_timeout (new connections; open ones at their next
  // idle check; zero: never closed). Other fields of `limits` are ignored.
  void SetLimits(const ServerOptions& limits);
  // Closes every connection now.
  void CloseAll();

  size_t connection_count() const { return connections_.size(); }
  // Calls received and not yet answered, over all connections.
  size_t calls_in_flight() const;
  // Bytes held for calls now (max_held_call_bytes).
  size_t held_call_bytes() const { return orphaned_->held_bytes; }
  const ServerStats& stats() const { return stats_; }

 private:
  friend class ServerConnection;
  static void OnAccept(evconnlistener* l, evutil_socket_t fd, sockaddr* addr, int len, void* arg);
  void Accept(evutil_socket_t fd, const SockAddr& peer);
  void Remove(ServerConnection* conn);

  event_base* base_;
  ServerOptions options_;
  bool reading_stopped_ = false;  // StopReading()
  CallHandler* handler_;
  std::vector<ListenerPtr> listeners_;
  std::vector<std::unique_ptr<AcceptGuard>> guards_;  // one per listener
  std::unordered_map<ServerConnection*, std::shared_ptr<ServerConnection>> connections_;
  // By client address (SockAddr::HostString()): while it has connections
  // or orphaned calls.
  std::unordered_map<std::string, std::shared_ptr<ClientCalls>> clients_;
  std::shared_ptr<OrphanedCalls> orphaned_ = std::make_shared<OrphanedCalls>();
  ServerStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_RPC_SERVER_H_
