// The control socket: a local Unix stream socket through which the nfsedge
// subcommands (status, drop-cache, flush, warm, reload) reach the running
// daemon.
//
// Protocol (text, one request per connection): the client sends one line,
// "<command>[ <argument>]\n". The server answers with lines: "progress
// <done> <total>" while a long command runs, any number of text lines
// for the operator, then exactly one final line, "ok" or "error <reason>",
// and closes. A reason of several lines (a config with several problems)
// comes as "error+ <line>" lines before the final "error <last line>".
//
// Protection: the socket file is created with `socket_mode` (0600 by
// default) and owned by the daemon's user; in addition the peer's
// credentials (SO_PEERCRED) must be root or the daemon's own uid. At most
// kMaxControlConnections are open at once (more are told "error busy" and
// closed); a request line must come within 30 s of the connect; what a
// client sends after its request line is read and dropped.
//
// Thread-safety: ControlServer lives on the event loop's thread;
// RunControlCommand is a blocking client for the command line.
#ifndef NFSEDGE_PROXY_CONTROL_H_
#define NFSEDGE_PROXY_CONTROL_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "rpc/accept_guard.h"
#include "rpc/event_loop.h"
#include "rpc/status.h"

namespace nfsedge {

inline constexpr size_t kMaxControlConnections = 16;

// The answer to one control request. Line() and Progress() may be called
// any number of times, then Finish() once; calls after the client went
// away are ignored. Copies share the one connection.
class ControlReply {
 public:
  virtual ~ControlReply() = default;
  virtual void Line(const std::string& text) = 0;
  virtual void Progress(uint64_t done, uint64_t total) = 0;
  // Ends the answer with "ok" (status OK) or "error <message>" (each line
  // of a message of several but the last as "error+ <line>").
  virtual void Finish(const Status& status) = 0;
  // Returns true iff the client is still connected.
  virtual bool connected() const = 0;
};

// Runs a command: `command` and `argument` ("" if none) from the request.
using ControlHandler = std::function<void(const std::string& command, const std::string& argument,
                                          std::shared_ptr<ControlReply> reply)>;

class ControlServer {
 public:
  ControlServer(event_base* base, ControlHandler handler);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Creates the socket at `path` with permissions `mode` and listens; makes
  // its directory (mode 0700) if missing. A stale socket file is replaced;
  // one a live daemon answers on, or another kind of file, is an error. The
  // socket file is removed on destruction.
  Status Listen(const std::string& path, uint32_t mode);

  const std::string& path() const { return path_; }
  uint64_t refused() const { return refused_; }
  // Bytes read from clients and not yet taken, in all (for tests).
  size_t buffered_input() const;

 private:
  class Connection;
  static void OnAccept(evconnlistener* l, evutil_socket_t fd, sockaddr* addr, int len, void* arg);

  event_base* base_;
  ControlHandler handler_;
  ListenerPtr listener_;
  std::unique_ptr<AcceptGuard> guard_;  // of listener_
  std::string path_;
  uint64_t refused_ = 0;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;
};

// Client side: connects to `socket_path`, sends "command argument", writes
// text lines to stdout, progress as a bar on stderr (when stderr is a
// terminal; as plain lines otherwise), and returns the exit code: 0 for
// "ok", 1 for "error ..." (printed to stderr), 2 when the daemon cannot be
// reached.
int RunControlCommand(const std::string& socket_path, const std::string& command,
                      const std::string& argument);

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_CONTROL_H_
