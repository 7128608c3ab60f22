#include "relay_session.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rpc/event_loop.h"

namespace nfsedge::wan {

namespace {

// Small writes must not wait for Nagle: the emulated latency is the relay's to add.
void SetNoDelay(evutil_socket_t fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Largest single socket read: small enough (relative to the bottleneck queue) that the queue
// limit is kept closely, large enough for an unlimited link to move bulk data cheaply.
size_t MaxSingleRead(const LinkConfig& link) {
  constexpr size_t kMin = 4 * 1024;
  constexpr size_t kMax = 64 * 1024;
  if (link.rate_bps == 0) return kMax;
  return std::clamp<size_t>(link.queue_bytes / 8, kMin, kMax);
}

// Runs fn(data, size) on each contiguous chunk of `input`, in order, without draining it, until
// fn returns false.
template <typename Fn>
void ForEachChunk(evbuffer* input, Fn fn) {
  int count = evbuffer_peek(input, -1, nullptr, nullptr, 0);
  if (count <= 0) return;
  std::vector<evbuffer_iovec> vec(static_cast<size_t>(count));
  count = evbuffer_peek(input, -1, nullptr, vec.data(), count);
  for (int i = 0; i < count; ++i) {
    if (!fn(static_cast<const uint8_t*>(vec[i].iov_base), vec[i].iov_len)) return;
  }
}

}  // namespace

RelaySession::RelaySession(uint64_t id, const SessionContext* context, bool parse_rpc)
    : id_(id), context_(context) {
  if (!parse_rpc) return;
  WanStats* stats = context_->stats;
  sides_[kClient].parser = std::make_unique<RpcRecordParser>([stats](const RpcMessageHeader& h) {
    if (h.msg_type == kRpcCall) stats->CountCall(h);
  });
  sides_[kServer].parser = std::make_unique<RpcRecordParser>([stats](const RpcMessageHeader& h) {
    if (h.msg_type == kRpcReply) ++stats->replies;
  });
}

RelaySession::~RelaySession() {
  for (Side& side : sides_) {
    if (side.capture_fd >= 0) close(side.capture_fd);
  }
}

Status RelaySession::OpenCapture() {
  if (context_->capture_dir.empty()) return Status::OK();
  for (Role role : {kClient, kServer}) {
    const std::string path = context_->capture_dir + "/session-" + std::to_string(id_) +
                             (role == kClient ? ".up" : ".down");
    sides_[role].capture_fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (sides_[role].capture_fd < 0) {
      return Status::IOError("capture file " + path + ": " + std::strerror(errno));
    }
  }
  return Status::OK();
}

void RelaySession::Capture(Role from, evbuffer* input) {
  int& fd = sides_[from].capture_fd;
  if (fd < 0) return;
  ForEachChunk(input, [&](const uint8_t* data, size_t n) {
    while (n > 0) {
      const ssize_t w = write(fd, data, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        std::fprintf(stderr, "nfsedge-wan: session %llu: capture stopped: %s\n",
                     static_cast<unsigned long long>(id_), std::strerror(errno));
        close(fd);
        fd = -1;
        return false;
      }
      data += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  });
}

Status RelaySession::Start(event_base* base, evutil_socket_t client_fd, const sockaddr* target,
                           socklen_t target_len) {
  if (Status s = OpenCapture(); !s.ok()) {
    evutil_closesocket(client_fd);
    Close();
    return s;
  }
  SetNoDelay(client_fd);
  bufferevent* client = bufferevent_socket_new(base, client_fd, BEV_OPT_CLOSE_ON_FREE);
  if (client == nullptr) {
    evutil_closesocket(client_fd);
    Close();
    return Status::IOError("bufferevent_socket_new failed");
  }
  SetUpSide(kClient, client);
  sides_[kClient].connected = true;

  evutil_socket_t fd = socket(target->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    Status status = Status::IOError(std::string("socket: ") + std::strerror(errno));
    Close();
    return status;
  }
  SetNoDelay(fd);
  bufferevent* server = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
  if (server == nullptr) {
    evutil_closesocket(fd);
    Close();
    return Status::IOError("bufferevent_socket_new failed");
  }
  SetUpSide(kServer, server);
  // An immediate failure runs OnServerEvent (which closes the session) from within this call.
  if (bufferevent_socket_connect(server, target, static_cast<int>(target_len)) != 0) {
    Close();
    return Status::IOError("connect to target failed");
  }
  UpdateReading();
  return Status::OK();
}

void RelaySession::SetUpSide(Role role, bufferevent* bev) {
  Side& side = sides_[role];
  side.bev.reset(bev);
  if (role == kClient) {
    bufferevent_setcb(bev, &OnClientRead, &OnClientWrite, &OnClientEvent, this);
    bufferevent_set_max_single_read(bev, MaxSingleRead(context_->up->model().config()));
  } else {
    bufferevent_setcb(bev, &OnServerRead, &OnServerWrite, &OnServerEvent, this);
    bufferevent_set_max_single_read(bev, MaxSingleRead(context_->down->model().config()));
  }
  nfsedge::TuneSocketBufferevent(bev);  // what leaves the link is written in large pieces
  // The write callback runs whenever the output falls to half the peer limit: time to resume
  // reading the other side, or to send a pending FIN once the output is empty.
  bufferevent_setwatermark(bev, EV_WRITE, kMaxPeerOutputBytes / 2, 0);
  bufferevent_disable(bev, EV_READ);
  bufferevent_enable(bev, EV_WRITE);
}

void RelaySession::OnClientRead(bufferevent*, void* arg) {
  static_cast<RelaySession*>(arg)->Read(kClient);
}
void RelaySession::OnServerRead(bufferevent*, void* arg) {
  static_cast<RelaySession*>(arg)->Read(kServer);
}
void RelaySession::OnClientWrite(bufferevent*, void* arg) {
  static_cast<RelaySession*>(arg)->Written(kClient);
}
void RelaySession::OnServerWrite(bufferevent*, void* arg) {
  static_cast<RelaySession*>(arg)->Written(kServer);
}
void RelaySession::OnClientEvent(bufferevent*, short what, void* arg) {
  static_cast<RelaySession*>(arg)->Event(kClient, what);
}
void RelaySession::OnServerEvent(bufferevent*, short what, void* arg) {
  static_cast<RelaySession*>(arg)->Event(kServer, what);
}

void RelaySession::Read(Role from) {
  if (closed_) return;
  // libevent 2.1 reads at most 4 KiB per turn whatever max_single_read says.
  bufferevent* bev = sides_[from].bev.get();
  nfsedge::ReadMore(bev, MaxSingleRead(PipeFrom(from)->model().config()));
  evbuffer* input = bufferevent_get_input(bev);
  const size_t n = evbuffer_get_length(input);
  if (n == 0) return;
  (from == kClient ? context_->stats->up_bytes : context_->stats->down_bytes) += n;
  Parse(from, input);
  Capture(from, input);
  PipeFrom(from)->Send(id_, input);
  UpdateReading();
}

void RelaySession::Parse(Role from, evbuffer* input) {
  Side& side = sides_[from];
  if (side.parser == nullptr || side.parser->failed()) return;
  ForEachChunk(input, [&](const uint8_t* data, size_t n) {
    side.parser->Feed(data, n);
    return !side.parser->failed();
  });
  WanStats* stats = context_->stats;
  stats->malformed_records += side.parser->malformed_records() - side.malformed_seen;
  side.malformed_seen = side.parser->malformed_records();
  if (side.parser->failed()) ++stats->non_rpc_streams;
}

void RelaySession::Written(Role to) {
  if (closed_) return;
  UpdateReading(/*apply_link_pause=*/false);
  MaybeShutdown(to);
}

void RelaySession::Event(Role role, short what) {
  if (closed_) return;
  Side& side = sides_[role];
  if (what & BEV_EVENT_CONNECTED) {
    side.connected = true;
    UpdateReading(/*apply_link_pause=*/false);
    MaybeShutdown(role);
    return;
  }
  if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
    side.eof_read = true;
    side.reading = false;
    bufferevent_disable(side.bev.get(), EV_READ);  // libevent did already; be explicit.
    Read(role);  // Whatever is left in the input buffer goes before the FIN.
    PipeFrom(role)->SendEof(id_);
    return;
  }
  // A socket error, or a failed connect to the target.
  if (role == kServer && !side.connected) ++context_->stats->connect_failures;
  Close();
}

void RelaySession::Deliver(Role to, evbuffer* data) {
  if (closed_) return;
  Side& side = sides_[to];
  if (data == nullptr) {
    side.shutdown_pending = true;
    MaybeShutdown(to);
    return;
  }
  bufferevent_write_buffer(side.bev.get(), data);
  UpdateReading(/*apply_link_pause=*/false);
}

void RelaySession::MaybeShutdown(Role to) {
  Side& side = sides_[to];
  if (closed_ || !side.shutdown_pending || side.shutdown_done || !side.connected) return;
  if (evbuffer_get_length(bufferevent_get_output(side.bev.get())) > 0) return;
  shutdown(bufferevent_getfd(side.bev.get()), SHUT_WR);
  side.shutdown_done = true;
  if (sides_[kClient].shutdown_done && sides_[kServer].shutdown_done) Close();
}

void RelaySession::UpdateReading(bool apply_link_pause) {
  if (closed_) return;
  for (Role role : {kClient, kServer}) {
    Side& side = sides_[role];
    const Side& peer = sides_[1 - role];
    const bool link_ok = PipeFrom(role)->accepting() || (!apply_link_pause && side.reading);
    const bool want =
        side.connected && !side.eof_read && link_ok &&
        evbuffer_get_length(bufferevent_get_output(peer.bev.get())) < kMaxPeerOutputBytes;
    if (want == side.reading) continue;
    side.reading = want;
    if (want) {
      bufferevent_enable(side.bev.get(), EV_READ);
    } else {
      bufferevent_disable(side.bev.get(), EV_READ);
    }
  }
}

void RelaySession::Close() {
  if (closed_) return;
  closed_ = true;
  sides_[kClient].bev.reset();
  sides_[kServer].bev.reset();
  context_->close(id_);
}

}  // namespace nfsedge::wan
