#include "relay.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace nfsedge::wan {

namespace {

bool IsWildcard(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in&>(addr).sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (addr.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr;
    return IN6_IS_ADDR_UNSPECIFIED(&a);
  }
  return false;
}

}  // namespace

Status RelayConfig::Validate() const {
  if (mappings.empty()) return Status::InvalidArgument("at least one --map is required");
  for (const Mapping& m : mappings) {
    if (m.listen.ss_family != AF_INET && m.listen.ss_family != AF_INET6) {
      return Status::InvalidArgument("listen address must be IPv4 or IPv6");
    }
    if (IsWildcard(m.listen)) {
      return Status::InvalidArgument(
          "refusing to listen on a wildcard address (" +
          SockaddrToString(reinterpret_cast<const sockaddr*>(&m.listen)) +
          "); give a loopback or explicit address");
    }
    if (m.target.ss_family != AF_INET && m.target.ss_family != AF_INET6) {
      return Status::InvalidArgument("target address must be IPv4 or IPv6");
    }
  }
  if (Status s = up.Validate(); !s.ok()) return Status::InvalidArgument("up link: " + s.message());
  if (Status s = down.Validate(); !s.ok()) {
    return Status::InvalidArgument("down link: " + s.message());
  }
  if (!capture_dir.empty()) {
    struct stat st = {};
    if (stat(capture_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        access(capture_dir.c_str(), W_OK | X_OK) != 0) {
      return Status::InvalidArgument("capture directory '" + capture_dir +
                                     "' is not a writable directory");
    }
  }
  return Status::OK();
}

Relay::Relay(event_base* base, Clock* clock, RelayConfig config, WanStats* stats)
    : base_(base),
      config_(std::move(config)),
      stats_(stats),
      up_(base, clock, config_.up, &stats->up_link),
      down_(base, clock, config_.down, &stats->down_link),
      reaper_(event_new(base, -1, 0, &Relay::OnReap, this)),
      throttle_(event_new(base, -1, 0, &Relay::OnThrottle, this)) {
  context_.up = &up_;
  context_.down = &down_;
  context_.stats = stats_;
  context_.capture_dir = config_.capture_dir;
  context_.close = [this](uint64_t id) { CloseSession(id); };
  up_.set_deliver([this](uint64_t flow, evbuffer* data) { Deliver(true, flow, data); });
  down_.set_deliver([this](uint64_t flow, evbuffer* data) { Deliver(false, flow, data); });
  up_.set_on_accepting_changed([this](bool accepting) { OnAcceptingChanged(accepting); });
  down_.set_on_accepting_changed([this](bool accepting) { OnAcceptingChanged(accepting); });
}

Relay::~Relay() {
  listeners_.clear();
  sessions_.clear();
  closed_sessions_.clear();
}

Status Relay::Start() {
  if (Status s = config_.Validate(); !s.ok()) return s;
  if (reaper_ == nullptr || throttle_ == nullptr) return Status::IOError("event_new failed");
  for (const Mapping& mapping : config_.mappings) {
    auto listener = std::make_unique<Listener>();
    listener->relay = this;
    listener->mapping = &mapping;
    listener->listener.reset(evconnlistener_new_bind(
        base_, &Relay::OnAccept, listener.get(),
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, /*backlog=*/128,
        reinterpret_cast<const sockaddr*>(&mapping.listen), static_cast<int>(mapping.listen_len)));
    const std::string wanted = SockaddrToString(reinterpret_cast<const sockaddr*>(&mapping.listen));
    if (listener->listener == nullptr) {
      return Status::IOError("cannot listen on " + wanted + ": " + std::strerror(errno));
    }
    evconnlistener_set_error_cb(listener->listener.get(), &Relay::OnAcceptError);
    sockaddr_storage bound = {};
    socklen_t len = sizeof(bound);
    if (getsockname(evconnlistener_get_fd(listener->listener.get()),
                    reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      return Status::IOError("getsockname on " + wanted + ": " + std::strerror(errno));
    }
    bound_.push_back(SockaddrToString(reinterpret_cast<const sockaddr*>(&bound)));
    listeners_.push_back(std::move(listener));
  }
  return Status::OK();
}

std::string Relay::Describe() const {
  std::string out;
  for (size_t i = 0; i < bound_.size(); ++i) {
    if (i > 0) out.push_back(' ');
    out += bound_[i] + "=" + config_.mappings[i].target_name;
    if (!config_.mappings[i].rpc) out += ",rpc=0";
  }
  return out;
}

void Relay::OnAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
  auto* listener = static_cast<Listener*>(arg);
  listener->relay->Accept(*listener->mapping, fd);
}

void Relay::OnAcceptError(evconnlistener*, void*) {
  // Typically EMFILE; libevent keeps listening. Reported, not fatal.
  std::fprintf(stderr, "nfsedge-wan: accept: %s\n", std::strerror(errno));
}

void Relay::Accept(const Mapping& mapping, evutil_socket_t fd) {
  const uint64_t id = next_session_id_++;
  ++stats_->connections;
  auto owned = std::make_unique<RelaySession>(id, &context_, mapping.rpc);
  RelaySession* session = owned.get();
  sessions_.emplace(id, std::move(owned));
  Status status = session->Start(base_, fd, reinterpret_cast<const sockaddr*>(&mapping.target),
                                 mapping.target_len);
  if (!status.ok()) {
    std::fprintf(stderr, "nfsedge-wan: relaying to %s: %s\n", mapping.target_name.c_str(),
                 status.ToString().c_str());
  }
}

void Relay::Deliver(bool up, uint64_t flow, evbuffer* data) {
  auto it = sessions_.find(flow);
  if (it == sessions_.end()) return;  // The connection closed while its bytes were in flight.
  if (up) {
    it->second->DeliverToServer(data);
  } else {
    it->second->DeliverToClient(data);
  }
}

void Relay::OnAcceptingChanged(bool accepting) {
  if (accepting) {
    UpdateAllReading();
  } else {
    // Runs after the read callbacks already active in this loop iteration: see the header.
    event_active(throttle_.get(), EV_TIMEOUT, 1);
  }
}

void Relay::UpdateAllReading() {
  for (auto& [id, session] : sessions_) session->UpdateReading();
}

void Relay::OnThrottle(evutil_socket_t, short, void* arg) {
  static_cast<Relay*>(arg)->UpdateAllReading();
}

void Relay::CloseSession(uint64_t id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  closed_sessions_.push_back(std::move(it->second));
  sessions_.erase(it);
  event_active(reaper_.get(), EV_TIMEOUT, 1);
}

void Relay::OnReap(evutil_socket_t, short, void* arg) {
  static_cast<Relay*>(arg)->closed_sessions_.clear();
}

}  // namespace nfsedge::wan
