#include "event_loop.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace nfsedge::bench {
namespace {

std::atomic<bool> g_stop{false};  // Set by the signal handler only.

void OnStopSignal(int) { g_stop.store(true); }

}  // namespace

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool StopRequested() { return g_stop.load(); }

void EventLoop::Add(NfsConnection* conn) { conns_.push_back(conn); }

void EventLoop::Remove(NfsConnection* conn) {
  conns_.erase(std::remove(conns_.begin(), conns_.end(), conn), conns_.end());
}

void EventLoop::AddFd(int fd, std::function<void()> on_readable) {
  fds_.push_back({fd, std::move(on_readable)});
}

void EventLoop::RemoveFd(int fd) {
  fds_.erase(
      std::remove_if(fds_.begin(), fds_.end(), [fd](const Watched& w) { return w.fd == fd; }),
      fds_.end());
}

Status EventLoop::Run(const std::function<bool()>& done, Millis idle_timeout,
                      const std::function<Millis()>& tick) {
  using Clock = std::chrono::steady_clock;
  auto progress = [&] {
    uint64_t n = 0;
    for (NfsConnection* c : conns_) n += c->replies();
    return n;
  };
  uint64_t last_progress = progress();
  Clock::time_point last_change = Clock::now();
  std::vector<pollfd> pfds;
  while (!done()) {
    if (StopRequested()) return Status::Error("interrupted");
    Millis wait = tick ? tick() : Millis(100);
    if (done()) break;  // The tick may have finished the work.
    wait = std::clamp(wait, Millis(0), Millis(100));
    pfds.clear();
    for (NfsConnection* c : conns_) pfds.push_back({c->fd(), c->events(), 0});
    for (const Watched& w : fds_) pfds.push_back({w.fd, POLLIN, 0});
    int n = poll(pfds.data(), pfds.size(), static_cast<int>(wait.count()));
    if (n < 0 && errno != EINTR) return Status::Error(std::string("poll: ") + std::strerror(errno));
    // Copies: callbacks may add or remove registrations.
    std::vector<NfsConnection*> conns = conns_;
    std::vector<Watched> fds = fds_;
    for (size_t i = 0; i < conns.size(); ++i) {
      if (!conns[i]->Service(n > 0 ? pfds[i].revents : 0)) return Status::Error(conns[i]->error());
    }
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (pfds[conns.size() + i].revents != 0) fds[i].on_readable();
    }
    uint64_t now_progress = progress();
    bool waiting = false;
    for (NfsConnection* c : conns_) waiting |= c->in_flight() > 0;
    if (now_progress != last_progress || !waiting) {
      last_progress = now_progress;
      last_change = Clock::now();
    } else if (Clock::now() - last_change > idle_timeout) {
      return Status::Error("no reply for " + std::to_string(idle_timeout.count()) + " ms");
    }
  }
  return Status::OK();
}

}  // namespace nfsedge::bench
