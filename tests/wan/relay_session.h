// RelaySession: one relayed TCP connection, i.e. an accepted client socket and the socket the
// relay opened to the mapping's target.
//
// Bytes read from the client go into the shared up LinkPipe, bytes read from the server into the
// shared down LinkPipe; the relay hands each chunk back to its session when it leaves the link
// (DeliverToServer / DeliverToClient). End of stream travels the same way, so a FIN reaches the
// far side after the bytes sent before it and one propagation delay later (shutdown(SHUT_WR)).
// A socket error on either side closes both sockets at once and drops the session's bytes still
// in the link. Closing frees the sockets at once and asks the relay (SessionContext::close) to
// destroy the object later, outside any callback; a closed session ignores every call.
//
// A side is read only while all of these hold: it is connected, it has not sent EOF, the link in
// its direction is accepting (bottleneck back-pressure), and the other side's unsent output is
// below kMaxPeerOutputBytes (the receiver's own back-pressure).
//
// With parse_rpc, the client stream is parsed for RPC calls and the server stream for replies,
// and both are counted in the stats. With a capture directory, the bytes read from each side are
// appended to a file of their own as they are read (before the link delays them).
//
// Thread safety: not thread-safe; lives on the relay's event loop.

#ifndef NFSEDGE_TESTS_WAN_RELAY_SESSION_H_
#define NFSEDGE_TESTS_WAN_RELAY_SESSION_H_

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "libevent_util.h"
#include "link_pipe.h"
#include "rpc_record_parser.h"
#include "status.h"
#include "wan_stats.h"

namespace nfsedge::wan {

// What a session needs from the relay that owns it.
struct SessionContext {
  LinkPipe* up = nullptr;    // Client to server.
  LinkPipe* down = nullptr;  // Server to client.
  WanStats* stats = nullptr;
  std::string capture_dir;  // Empty: no capture (see RelayConfig::capture_dir).
  // Schedules the destruction of the session with this id (not from within the call).
  std::function<void(uint64_t id)> close;
};

class RelaySession {
 public:
  static constexpr size_t kMaxPeerOutputBytes = 4 << 20;

  // REQUIRES: context outlives the session.
  RelaySession(uint64_t id, const SessionContext* context, bool parse_rpc);
  ~RelaySession();

  RelaySession(const RelaySession&) = delete;
  RelaySession& operator=(const RelaySession&) = delete;

  // Takes ownership of the accepted `client_fd` and starts connecting to `target`.
  // Returns OK iff the connection attempt started; on error the session is closed.
  Status Start(event_base* base, evutil_socket_t client_fd, const sockaddr* target,
               socklen_t target_len);

  // A chunk of the up (down) direction left the link: writes it to the server (client).
  // `data` is null for the end of stream.
  void DeliverToServer(evbuffer* data) { Deliver(kServer, data); }
  void DeliverToClient(evbuffer* data) { Deliver(kClient, data); }

  // Re-evaluates which sides may be read, e.g. after a link changed accepting(). Without
  // `apply_link_pause`, a side being read is left on even if its link stopped accepting: the
  // relay applies link pauses fairly to all sessions (see relay.h).
  void UpdateReading(bool apply_link_pause = true);

 private:
  enum Role { kClient = 0, kServer = 1 };

  struct Side {
    UniqueBufferevent bev;
    std::unique_ptr<RpcRecordParser> parser;  // Null unless parse_rpc.
    int capture_fd = -1;                      // Bytes read from this side go here too.
    uint64_t malformed_seen = 0;
    bool connected = false;
    bool reading = false;
    bool eof_read = false;          // The peer of this socket sent FIN.
    bool shutdown_pending = false;  // EOF left the link; shut down once the output drains.
    bool shutdown_done = false;
  };

  static void OnClientRead(bufferevent*, void* arg);
  static void OnServerRead(bufferevent*, void* arg);
  static void OnClientWrite(bufferevent*, void* arg);
  static void OnServerWrite(bufferevent*, void* arg);
  static void OnClientEvent(bufferevent*, short what, void* arg);
  static void OnServerEvent(bufferevent*, short what, void* arg);

  void SetUpSide(Role role, bufferevent* bev);
  LinkPipe* PipeFrom(Role role) const { return role == kClient ? context_->up : context_->down; }
  void Read(Role from);
  void Parse(Role from, evbuffer* input);
  // Opens the capture files; returns OK iff both opened (or there is no capture).
  Status OpenCapture();
  void Capture(Role from, evbuffer* input);
  void Written(Role to);
  void Event(Role role, short what);
  void Deliver(Role to, evbuffer* data);
  // Shuts down `to` for writing if its EOF is due and its output drained.
  void MaybeShutdown(Role to);
  // Closes both sockets and schedules the session's destruction.
  void Close();

  // Constant after construction.
  const uint64_t id_;
  const SessionContext* const context_;

  Side sides_[2];
  bool closed_ = false;
};

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_RELAY_SESSION_H_
