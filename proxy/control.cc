#include "proxy/control.h"

#include <event2/buffer.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "rpc/log.h"

namespace nfsedge {

namespace {

constexpr size_t kMaxRequest = 4096;
constexpr time_t kRequestTimeoutS = 30;

// `text` with each control character (and DEL) written as \xHH, and a
// backslash as two, so that no name reads as an escaped one.
std::string Printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c != 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

Status FillUnixAddress(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) {
    return InvalidArgument("control socket path '" + path + "' is empty or too long");
  }
  std::memcpy(addr->sun_path, path.data(), path.size());
  return Status::Ok();
}

}  // namespace

// One client of the control socket.
class ControlServer::Connection : public ControlReply,
                                  public std::enable_shared_from_this<Connection> {
 public:
  Connection(ControlServer* server, BuffereventPtr bev)
      : server_(server), bev_(std::move(bev)), deadline_(server->base_, [this] {
          if (!started_ && !finished_) Close();
        }) {}

  void Start() {
    bufferevent_setcb(bev_.get(), &Connection::OnRead, &Connection::OnWrite, &Connection::OnEvent,
                      this);
    // A client that sends no request line in time (from its connect, however
    // slowly its bytes come) is closed.
    deadline_.Arm(std::chrono::seconds(kRequestTimeoutS));
    bufferevent_enable(bev_.get(), EV_READ | EV_WRITE);
  }
  size_t buffered_input() const {
    return bev_ ? evbuffer_get_length(bufferevent_get_input(bev_.get())) : 0;
  }

  // A line of the answer; control characters in it (a file name with a
  // newline in `status`) are written as \xHH, so that no name can end the
  // answer or forge a line of it.
  void Line(const std::string& text) override { Write(Printable(text) + "\n"); }
  void Progress(uint64_t done, uint64_t total) override {
    Write("progress " + std::to_string(done) + " " + std::to_string(total) + "\n");
  }
  void Finish(const Status& status) override {
    if (finished_) return;
    if (status.ok()) {
      Write("ok\n");
    } else {
      std::string_view rest = status.message();
      for (size_t nl; (nl = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(nl + 1)) {
        Write("error+ " + Printable(std::string(rest.substr(0, nl))) + "\n");
      }
      Write("error " + Printable(std::string(rest)) + "\n");
    }
    finished_ = true;
    if (closed_) return;
    bufferevent_disable(bev_.get(), EV_READ);
    MaybeClose();
  }
  bool connected() const override { return !closed_; }

 private:
  void Write(const std::string& s) {
    if (closed_ || finished_) return;
    bufferevent_write(bev_.get(), s.data(), s.size());
  }
  static void OnRead(bufferevent* bev, void* arg) {
    auto* self = static_cast<Connection*>(arg);
    evbuffer* in = bufferevent_get_input(bev);
    if (self->started_ || self->finished_) {
      // Read on to see the client go; what it sends is dropped.
      evbuffer_drain(in, evbuffer_get_length(in));
      return;
    }
    size_t len = 0;
    char* line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);
    if (!line) {
      if (evbuffer_get_length(in) > kMaxRequest) {
        // What was read goes (the rest stays in the socket; a Unix socket
        // still delivers the answer before the reset that closing brings).
        evbuffer_drain(in, evbuffer_get_length(in));
        self->Finish(InvalidArgument("request line too long"));
      }
      return;
    }
    std::string request(line, len);
    free(line);
    if (len > kMaxRequest) {  // its newline came in the read after the limit
      evbuffer_drain(in, evbuffer_get_length(in));
      self->Finish(InvalidArgument("request line too long"));
      return;
    }
    self->Run(std::move(request));
  }
  void Run(std::string request) {
    started_ = true;
    deadline_.Cancel();  // a command may take long
    if (!request.empty() && request.back() == '\r') request.pop_back();
    NFSEDGE_LOG(kInfo) << "control: " << Printable(request);
    // A path with a NUL or a newline in it is not what the operator typed
    // (and a NUL would cut the name sent upstream short of its check).
    if (std::any_of(request.begin(), request.end(),
                    [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
      Finish(InvalidArgument("the request holds a control character"));
      return;
    }
    std::string command = request, argument;
    size_t space = request.find(' ');
    if (space != std::string::npos) {
      command = request.substr(0, space);
      argument = request.substr(space + 1);
      if (argument.empty()) {  // "drop-cache " is not "drop-cache" (all of it)
        Finish(InvalidArgument("'" + command + "' with an empty argument"));
        return;
      }
    }
    server_->handler_(command, argument, shared_from_this());
  }
  static void OnWrite(bufferevent*, void* arg) { static_cast<Connection*>(arg)->MaybeClose(); }
  static void OnEvent(bufferevent* bev, short what, void* arg) {
    auto* self = static_cast<Connection*>(arg);
    if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
      self->Close();
      return;
    }
    if (!(what & BEV_EVENT_EOF)) return;
    // The client closed its side (socat, nc -N): a request without its
    // newline is still one, and a request taken still gets its answer.
    evbuffer* in = bufferevent_get_input(bev);
    if (!self->started_ && evbuffer_get_length(in) > 0) {
      std::string request(evbuffer_get_length(in), '\0');
      evbuffer_remove(in, request.data(), request.size());
      self->Run(std::move(request));
      return;
    }
    if (!self->started_ || self->finished_) self->Close();
  }
  void MaybeClose() {
    if (!closed_ && finished_ && evbuffer_get_length(bufferevent_get_output(bev_.get())) == 0) {
      Close();
    }
  }
  void Close() {
    if (closed_) return;
    closed_ = true;
    // The socket goes now: a command still running (a warm the operator
    // left with Ctrl-C) holds this object, not the descriptor. libevent
    // frees a bufferevent inside its own callback once that returns.
    bev_.reset();
    // Removing from the map may destroy this object: keep it alive until
    // the callback returns.
    std::shared_ptr<Connection> keep = shared_from_this();
    server_->connections_.erase(this);
  }

  ControlServer* server_;
  BuffereventPtr bev_;
  Timer deadline_;  // for the request line
  bool started_ = false;
  bool finished_ = false;
  bool closed_ = false;
};

ControlServer::ControlServer(event_base* base, ControlHandler handler)
    : base_(base), handler_(std::move(handler)) {}

ControlServer::~ControlServer() {
  guard_.reset();
  listener_.reset();
  connections_.clear();
  if (!path_.empty()) ::unlink(path_.c_str());
}

Status ControlServer::Listen(const std::string& path, uint32_t mode) {
  sockaddr_un addr;
  Status s = FillUnixAddress(path, &addr);
  if (!s.ok()) return s;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return InvalidArgument("control socket " + path + " exists and is not a socket");
    }
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&addr),
                                        sizeof(addr)) == 0;
    if (probe >= 0) ::close(probe);
    if (live) return IoError("control socket " + path + " is in use by another nfsedge");
    ::unlink(path.c_str());  // stale socket of an earlier run
  } else {
    // The directory, as systemd's RuntimeDirectory= would make it.
    size_t slash = path.rfind('/');
    if (slash > 0 && slash != std::string::npos) ::mkdir(path.substr(0, slash).c_str(), 0700);
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return IoError(std::string("control socket: ") + std::strerror(errno));
  // Created with no permissions at all, then set to `mode`: there is no
  // moment at which a wider mode applies. Linux makes the file with the
  // socket's own mode (less the umask); the process's umask is left alone,
  // as other threads (RocksDB's) create files meanwhile.
  int rc = ::fchmod(fd, 0) == 0 ? ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) : -1;
  int bind_errno = errno;
  if (rc != 0) {
    ::close(fd);
    return IoError("control socket " + path + ": " + std::strerror(bind_errno));
  }
  if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0 || ::listen(fd, 16) != 0) {
    int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return IoError("control socket " + path + ": " + std::strerror(e));
  }
  listener_.reset(evconnlistener_new(base_, &ControlServer::OnAccept, this,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd));
  if (!listener_) {
    ::close(fd);
    ::unlink(path.c_str());
    return IoError("control socket " + path + ": cannot listen");
  }
  guard_ = std::make_unique<AcceptGuard>(listener_.get(), "control socket " + path);
  path_ = path;
  return Status::Ok();
}

void ControlServer::OnAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
  auto* self = static_cast<ControlServer*>(arg);
  ucred peer{};
  socklen_t len = sizeof(peer);
  bool allowed = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 &&
                 (peer.uid == 0 || peer.uid == ::geteuid());
  BuffereventPtr bev(bufferevent_socket_new(self->base_, fd, BEV_OPT_CLOSE_ON_FREE));
  if (!bev) {
    ::close(fd);
    return;
  }
  if (self->connections_.size() >= kMaxControlConnections) {
    static constexpr char kBusy[] = "error busy: too many control connections\n";
    (void)::send(fd, kBusy, sizeof(kBusy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    NFSEDGE_LOG(kWarn) << "control: " << kMaxControlConnections
                       << " connections open; refused another";
    return;  // bev closes the descriptor
  }
  auto conn = std::make_shared<Connection>(self, std::move(bev));
  self->connections_[conn.get()] = conn;
  conn->Start();
  if (!allowed) {
    self->refused_++;
    NFSEDGE_LOG(kWarn) << "control: refused a client with uid " << peer.uid;
    conn->Finish(Status(StatusCode::kInvalidArgument, "permission denied"));
  }
}

size_t ControlServer::buffered_input() const {
  size_t n = 0;
  for (const auto& [c, conn] : connections_) n += conn->buffered_input();
  return n;
}

// ---- client ----

namespace {

void DrawProgress(uint64_t done, uint64_t total, bool tty) {
  if (!tty) {
    std::fprintf(stderr, "progress %llu/%llu\n", static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total));
    return;
  }
  constexpr int kWidth = 40;
  int filled = total == 0 ? 0 : static_cast<int>(kWidth * done / total);
  if (filled > kWidth) filled = kWidth;
  std::string bar(filled, '#');
  bar.append(kWidth - filled, ' ');
  std::fprintf(stderr, "\r[%s] %3d%% %llu/%llu", bar.c_str(),
               total == 0 ? 0 : static_cast<int>(100 * done / total),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  std::fflush(stderr);
}

}  // namespace

int RunControlCommand(const std::string& socket_path, const std::string& command,
                      const std::string& argument) {
  sockaddr_un addr;
  Status s = FillUnixAddress(socket_path, &addr);
  int fd = s.ok() ? ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::fprintf(stderr, "nfsedge: cannot reach the daemon at %s: %s\n", socket_path.c_str(),
                 s.ok() ? std::strerror(errno) : s.message().c_str());
    if (fd >= 0) ::close(fd);
    return 2;
  }
  std::string request = command + (argument.empty() ? "" : " " + argument) + "\n";
  if (::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    std::fprintf(stderr, "nfsedge: cannot send to %s: %s\n", socket_path.c_str(),
                 std::strerror(errno));
    ::close(fd);
    return 2;
  }
  FILE* in = ::fdopen(fd, "r");
  const bool tty = ::isatty(STDERR_FILENO);
  bool drew_bar = false;
  char* line = nullptr;
  size_t cap = 0;
  int code = 2;
  while (::getline(&line, &cap, in) > 0) {
    std::string l(line);
    if (!l.empty() && l.back() == '\n') l.pop_back();
    unsigned long long done = 0, total = 0;
    if (std::sscanf(l.c_str(), "progress %llu %llu", &done, &total) == 2) {
      DrawProgress(done, total, tty);
      drew_bar = tty;
      continue;
    }
    if (drew_bar) {
      std::fputc('\n', stderr);
      drew_bar = false;
    }
    if (l == "ok") {
      code = 0;
      break;
    }
    if (l.rfind("error+ ", 0) == 0) {  // a line of a longer reason
      std::fprintf(stderr, "nfsedge %s: %s\n", command.c_str(), l.c_str() + 7);
      continue;
    }
    if (l.rfind("error ", 0) == 0) {
      std::fprintf(stderr, "nfsedge %s: %s\n", command.c_str(), l.c_str() + 6);
      code = 1;
      break;
    }
    std::printf("%s\n", l.c_str());
  }
  if (code == 2) std::fprintf(stderr, "nfsedge: the daemon closed the connection\n");
  std::free(line);
  std::fclose(in);
  return code;
}

}  // namespace nfsedge
