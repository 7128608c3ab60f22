#include "wan_test_util.h"

#include <arpa/inet.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>

#include "wan_options.h"

namespace nfsedge::wan::testing {

double NowMillis() {
  MonotonicClock clock;
  return static_cast<double>(clock.NowNanos()) / kNanosPerMilli;
}

// ---------------------------------------------------------------------------------------------
// EchoServer

EchoServer::EchoServer(event_base* base) : base_(base) {
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  listener_.reset(evconnlistener_new_bind(base_, &EchoServer::OnAccept, this,
                                          LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
                                          reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
  if (listener_ == nullptr) return;
  sockaddr_storage bound = {};
  socklen_t len = sizeof(bound);
  getsockname(evconnlistener_get_fd(listener_.get()), reinterpret_cast<sockaddr*>(&bound), &len);
  address_ = SockaddrToString(reinterpret_cast<sockaddr*>(&bound));
}

EchoServer::~EchoServer() {
  for (bufferevent* bev : connections_) bufferevent_free(bev);
}

void EchoServer::OnAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
  auto* self = static_cast<EchoServer*>(arg);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  bufferevent* bev = bufferevent_socket_new(self->base_, fd, BEV_OPT_CLOSE_ON_FREE);
  if (bev == nullptr) {
    evutil_closesocket(fd);
    return;
  }
  self->connections_.insert(bev);
  bufferevent_setcb(bev, &EchoServer::OnRead, nullptr, &EchoServer::OnEvent, self);
  bufferevent_enable(bev, EV_READ | EV_WRITE);
}

void EchoServer::OnRead(bufferevent* bev, void*) {
  bufferevent_write_buffer(bev, bufferevent_get_input(bev));
}

void EchoServer::OnEvent(bufferevent* bev, short what, void* arg) {
  auto* self = static_cast<EchoServer*>(arg);
  if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) &&
      evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
    // Echo what is left, then close: the write callback runs once the output is empty.
    bufferevent_setcb(bev, nullptr, &EchoServer::OnDrained, &EchoServer::OnEvent, self);
    return;
  }
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
    self->connections_.erase(bev);
    bufferevent_free(bev);
  }
}

void EchoServer::OnDrained(bufferevent* bev, void* arg) {
  auto* self = static_cast<EchoServer*>(arg);
  self->connections_.erase(bev);
  bufferevent_free(bev);
}

// ---------------------------------------------------------------------------------------------
// RelayHarness

RelayHarness::RelayHarness(const LinkConfig& up, const LinkConfig& down, bool rpc) {
  static std::once_flag threads_once;
  std::call_once(threads_once, [] { evthread_use_pthreads(); });
  StatusOr<UniqueEventBase> base = NewPreciseEventBase();
  if (!base.ok()) {
    start_status_ = base.status();
    return;
  }
  base_ = std::move(base).value();
  echo_ = std::make_unique<EchoServer>(base_.get());
  StatusOr<Mapping> mapping =
      ParseMapping("127.0.0.1:0=" + echo_->address() + (rpc ? "" : ",rpc=0"));
  if (!mapping.ok()) {
    start_status_ = mapping.status();
    return;
  }
  RelayConfig config;
  config.mappings.push_back(std::move(mapping).value());
  config.up = up;
  config.down = down;
  relay_ = std::make_unique<Relay>(base_.get(), &clock_, std::move(config), &stats_);
  start_status_ = relay_->Start();
  if (!start_status_.ok()) return;
  relay_address_ = relay_->bound_addresses()[0];
  // Return only once the loop runs, so a client's first bytes are not timed from before it.
  std::promise<void> running;
  std::future<void> started = running.get_future();
  const timeval now = {0, 0};
  event_base_once(
      base_.get(), -1, EV_TIMEOUT,
      [](evutil_socket_t, short, void* arg) { static_cast<std::promise<void>*>(arg)->set_value(); },
      &running, &now);
  event_base* b = base_.get();
  loop_ = std::thread([b] { event_base_loop(b, EVLOOP_NO_EXIT_ON_EMPTY); });
  started.wait();
}

RelayHarness::~RelayHarness() {
  Stop();
  relay_.reset();
  echo_.reset();
}

void RelayHarness::Stop() {
  if (!loop_.joinable()) return;
  event_base_loopbreak(base_.get());
  loop_.join();
}

// ---------------------------------------------------------------------------------------------
// Client sockets

int ConnectTo(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr) != 1) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadExactly(int fd, void* data, size_t n, int timeout_ms) {
  char* p = static_cast<char*>(data);
  const double deadline = NowMillis() + timeout_ms;
  while (n > 0) {
    int left = static_cast<int>(deadline - NowMillis());
    if (left <= 0) return false;
    pollfd pfd = {fd, POLLIN, 0};
    int rc = poll(&pfd, 1, left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return false;
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// WanProcess

std::unique_ptr<WanProcess> WanProcess::Start(const std::string& binary,
                                              const std::vector<std::string>& args) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return nullptr;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  return std::unique_ptr<WanProcess>(new WanProcess(pid, fds[0]));
}

WanProcess::~WanProcess() {
  if (!exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  close(stdout_fd_);
}

std::string WanProcess::ReadLine(int timeout_ms) {
  const double deadline = NowMillis() + timeout_ms;
  while (buffered_.find('\n') == std::string::npos) {
    int left = static_cast<int>(deadline - NowMillis());
    if (left <= 0) return "";
    pollfd pfd = {stdout_fd_, POLLIN, 0};
    if (poll(&pfd, 1, left) <= 0) continue;
    char buf[512];
    ssize_t r = read(stdout_fd_, buf, sizeof(buf));
    if (r <= 0) return "";
    buffered_.append(buf, static_cast<size_t>(r));
  }
  size_t nl = buffered_.find('\n');
  std::string line = buffered_.substr(0, nl);
  buffered_.erase(0, nl + 1);
  return line;
}

int WanProcess::Wait(int timeout_ms) {
  const double deadline = NowMillis() + timeout_ms;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    if (NowMillis() > deadline) return -1;
    usleep(2000);  // Polling a child's exit: there is no fd to await it on.
  }
}

void WanProcess::Signal(int sig) { kill(pid_, sig); }

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace nfsedge::wan::testing
