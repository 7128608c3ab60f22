#include "rpc/rpc_client.h"

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/tcp.h>
#include <rpc/rpc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

// Binds `fd` to local `port` (any address of `family`). Returns true iff done.
bool BindPort(int fd, int family, uint16_t port) {
  SockAddr local;
  if (family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&local.ss);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    local.len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&local.ss);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    local.len = sizeof(sockaddr_in);
  }
  local.set_port(port);
  return bind(fd, local.get(), local.len) == 0;
}

// Sends RST instead of FIN on close, so the port leaves no TIME_WAIT behind
// and the next connection can reuse it.
void AbortOnClose(bufferevent* bev) {
  evutil_socket_t fd = SocketOf(bev);
  if (fd < 0) return;
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

// SO_REUSEADDR: the next connection may bind the port again while this
// one's remains (TIME_WAIT, a close not yet finished) are in the kernel.
void SharePort(int fd) {
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
}

// Keepalive for idle connections (dead_path_timeout; busy ones: CheckPaths).
void WatchPath(int fd, Duration timeout) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
  if (ms <= 0) return;
  int one = 1;
  const int idle = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(ms / 1000, 32767)));
  const int interval = std::max(1, std::min(idle, 5));
  const int count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

}  // namespace

RpcClient::RpcClient(event_base* base, ClientOptions options)
    : base_(base),
      options_(std::move(options)),
      conns_(std::max(1, options_.connections)),
      next_xid_(std::random_device{}()),
      sweep_(base, [this] { SweepDeadlines(); }),
      pace_timer_(base, [this] { PaceOut(); }) {
  for (int i = 0; i < static_cast<int>(conns_.size()); ++i) {
    conn_args_.push_back(std::make_unique<ConnArg>(ConnArg{this, i}));
    conns_[i].retry = std::make_unique<Timer>(base_, [this, i] { Connect(i); });
    conns_[i].setup = std::make_unique<Timer>(base_, [this, i] {
      const Conn& c = conns_[i];
      if (c.state == Conn::State::kConnecting) {
        ConnLost(i, "connect: no answer within " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           ConnectTimeout())
                                           .count()) +
                        " ms");
        return;
      }
      if (c.state == Conn::State::kProbing || c.state == Conn::State::kHandshaking) {
        TlsFailed(i, std::string(c.state == Conn::State::kProbing ? "no reply to the AUTH_TLS probe"
                                                                  : "handshake not finished") +
                         " within " +
                         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            TlsSetupTimeout())
                                            .count()) +
                         " ms");
      }
    });
    conns_[i].backoff = options_.reconnect_min;
  }
}

RpcClient::~RpcClient() {
  sweep_.Cancel();
  pace_timer_.Cancel();
  for (auto& c : conns_) {
    c.retry->Cancel();
    c.setup->Cancel();
    c.bev.reset();
  }
}

Duration RpcClient::TlsSetupTimeout() const {
  return std::min<Duration>(options_.timeout, std::chrono::seconds(30));
}

Duration RpcClient::ConnectTimeout() const {
  // Not the call deadline: a reconnect from the old source port may wait
  // for a SYN retransmission (1 s) while the server holds the old one.
  return options_.connect_timeout;
}

void RpcClient::Start() {
  sweep_.ArmPeriodic(std::chrono::milliseconds(50));
  for (int i = 0; i < static_cast<int>(conns_.size()); ++i) Connect(i);
}

int RpcClient::connections_up() const {
  int n = 0;
  for (const auto& c : conns_) n += c.state == Conn::State::kUp;
  return n;
}

void RpcClient::OwnedFd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

int RpcClient::NewSocket(bool shared) const {
  int fd = socket(options_.server.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (shared) SharePort(fd);
  return fd;
}

int RpcClient::MakeSocket(Conn& c) {
  if (c.local_port != 0 && c.held.valid()) return c.held.release();
  int family = options_.server.family();
  int fd = NewSocket(/*shared=*/c.local_port != 0);
  if (fd < 0) return -1;
  if (c.local_port != 0) {
    if (BindPort(fd, family, c.local_port)) return fd;
    // Taken by another socket meanwhile: this counts as a failed connect
    // from that port, tried again after the backoff.
    NFSEDGE_LOG(kDebug) << options_.name << ": cannot reuse source port " << c.local_port
                        << " yet (" << std::strerror(errno) << ")";
    close(fd);
    return kPortBusy;
  }
  if (options_.privileged_port) {
    if (bindresvport_sa(fd, nullptr) == 0) {
      SharePort(fd);
      return fd;
    }
    NFSEDGE_LOG(kWarn) << options_.name << ": no privileged port available ("
                       << std::strerror(errno) << "); connecting from an ordinary port";
  }
  // Bound before the connect, not by it: a port that connect() picks may
  // also be picked by other sockets of the machine connecting elsewhere
  // (Linux shares such ports among destinations), and then cannot be bound
  // again at the reconnect; a port taken by bind() is never handed out so.
  if (!BindPort(fd, family, 0)) {
    NFSEDGE_LOG(kDebug) << options_.name << ": cannot bind a source port ("
                        << std::strerror(errno) << "); connect() picks one";
  }
  SharePort(fd);
  return fd;
}

void RpcClient::Connect(int i) {
  if (shut_down_) return;
  Conn& c = conns_[i];
  int fd = MakeSocket(c);
  if (fd == kPortBusy) {
    c.state = Conn::State::kConnecting;
    ConnLost(i, "source port busy", true, /*port_busy=*/true);
    return;
  }
  c.bev.reset(bufferevent_socket_new(base_, fd, BEV_OPT_CLOSE_ON_FREE));
  TuneSocketBufferevent(c.bev.get());
  c.reader = std::make_unique<RecordReader>(options_.max_record_size);
  c.state = Conn::State::kConnecting;
  SetCallbacks(i);
  if (bufferevent_socket_connect(c.bev.get(), options_.server.get(),
                                 static_cast<int>(options_.server.len)) != 0) {
    // libevent may have told OnConnEvent already (a connect that failed at
    // once): the loss is handled once.
    if (c.state == Conn::State::kConnecting) {
      ConnLost(i, std::string("connect: ") + std::strerror(errno));
    }
    return;
  }
  if (c.state == Conn::State::kConnecting) c.setup->Arm(ConnectTimeout());
}

void RpcClient::SetCallbacks(int i) {
  Conn& c = conns_[i];
  bufferevent_setcb(
      c.bev.get(),
      [](bufferevent*, void* arg) {
        auto* a = static_cast<ConnArg*>(arg);
        a->client->OnConnRead(a->index);
      },
      nullptr,
      [](bufferevent*, short what, void* arg) {
        auto* a = static_cast<ConnArg*>(arg);
        a->client->OnConnEvent(a->index, what);
      },
      conn_args_[i].get());
  bufferevent_enable(c.bev.get(), EV_READ | EV_WRITE);
}

void RpcClient::OnConnEvent(int i, short what) {
  Conn& c = conns_[i];
  if ((what & BEV_EVENT_CONNECTED) && c.state == Conn::State::kConnecting) {
    int one = 1;
    evutil_socket_t fd = bufferevent_getfd(c.bev.get());
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    WatchPath(fd, options_.dead_path_timeout);
    if (!options_.tls) {
      ConnUp(i);
      return;
    }
    c.state = Conn::State::kProbing;
    c.setup->Arm(TlsSetupTimeout());
    c.probe_xid = next_xid_++;
    std::string probe =
        EncodeRecord(EncodeTlsProbe(c.probe_xid, options_.tls_probe_prog, options_.tls_probe_vers));
    bufferevent_write(c.bev.get(), probe.data(), probe.size());
    return;
  }
  if ((what & BEV_EVENT_CONNECTED) && c.state == Conn::State::kHandshaking) {
    if (!AlpnAcceptable(bufferevent_openssl_get_ssl(c.bev.get()))) {
      TlsFailed(i, "the server chose an ALPN protocol other than \"sunrpc\"");
      return;
    }
    ConnUp(i);
    return;
  }
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
    int err = EVUTIL_SOCKET_ERROR();
    if (c.state == Conn::State::kProbing || c.state == Conn::State::kHandshaking) {
      std::string why = c.state == Conn::State::kProbing
                            ? std::string("closed during the AUTH_TLS probe")
                            : TlsBuffereventError(c.bev.get());
      TlsFailed(i, why);
      return;
    }
    // In TLS 1.3 a server checks the client's certificate after the client
    // has finished its handshake: a refusal is a close before any reply.
    const bool at_once = !c.answered && SteadyClock::now() - c.up_since < options_.reconnect_max;
    const char* closed = !at_once || !options_.tls
                             ? "closed by server"
                             : "closed by server before its first reply; a TLS server may have "
                               "refused this client's certificate";
    // Keepalive found the path silent: not a loss of the server's making,
    // nor of its calls'.
    const bool dead_path = c.state == Conn::State::kUp && !(what & BEV_EVENT_EOF) &&
                           err == ETIMEDOUT;
    std::string why =
        dead_path                ? "keepalive unanswered (the path dropped the connection?)"
        : (what & BEV_EVENT_EOF) ? std::string(closed)
        : options_.tls           ? TlsBuffereventError(c.bev.get())
                                 : std::string(evutil_socket_error_to_string(err));
    ConnLost(i, why, /*counts=*/!dead_path);
  }
}

void RpcClient::ConnUp(int i) {
  Conn& c = conns_[i];
  c.state = Conn::State::kUp;
  c.setup->Cancel();
  c.answered = false;
  c.up_since = SteadyClock::now();
  SockAddr local;
  local.len = sizeof(local.ss);
  if (getsockname(SocketOf(c.bev.get()), local.get(), &local.len) == 0) {
    c.local_port = local.port();
  }
  c.port_failures = 0;
  NFSEDGE_LOG(kInfo) << options_.name << ": connection " << i << " to "
                     << options_.server.ToString() << " up" << (options_.tls ? " (TLS)" : "");
  Pump();
}

void RpcClient::ConnLost(int i, const std::string& why, bool counts, bool port_busy) {
  Conn& c = conns_[i];
  bool was_up = c.state == Conn::State::kUp;
  if (was_up && (c.answered || SteadyClock::now() - c.up_since >= options_.reconnect_max)) {
    c.backoff = options_.reconnect_min;
  }
  // A connect that failed from the old source port may have met that port's
  // TIME_WAIT at the server: after a few such, the next attempt takes any
  // port, unless calls that may not run twice wait to go again on this
  // connection: from another port the server's duplicate request cache
  // would not know them (a link down for minutes fails every connect, not
  // only the port's), and the server's TIME_WAIT ends by itself: then the
  // port is kept for kSourcePortPatience failed connects (a firewall that
  // still holds the old connection would refuse it for ever), but for a
  // port that cannot be bound here.
  const int limit =
      port_busy || c.resend.empty() ? kSourcePortAttempts : kSourcePortPatience;
  if (!was_up && counts && c.local_port != 0 && ++c.port_failures >= limit) {
    if (limit == kSourcePortPatience) {
      NFSEDGE_LOG(kWarn) << options_.name << ": " << limit << " connects from source port "
                         << c.local_port << " failed; calls that may not run twice go again "
                         << "from another port, unknown to the server's duplicate request cache";
    } else {
      NFSEDGE_LOG(kDebug) << options_.name << ": giving up source port " << c.local_port;
    }
    c.local_port = 0;
  }
  // The port is bound anew before the old socket goes (both share it:
  // SO_REUSEADDR), so that it is still this client's at the reconnect.
  if (c.local_port == 0 || shut_down_) {
    c.held.reset();
  } else if (!c.held.valid()) {
    const int fd = NewSocket(/*shared=*/true);
    if (fd >= 0 && BindPort(fd, options_.server.family(), c.local_port)) {
      c.held.reset(fd);
    } else if (fd >= 0) {
      close(fd);
    }
  }
  c.state = Conn::State::kDown;
  c.setup->Cancel();
  AbortOnClose(c.bev.get());
  c.bev.reset();
  c.outstanding = 0;
  // Bytes the pacer still held for this connection go nowhere: their calls
  // are sent again whole below.
  paced_.erase(std::remove_if(paced_.begin(), paced_.end(),
                              [i](const PacedWrite& w) { return w.conn == i; }),
               paced_.end());
  // Calls that were on this connection are sent again with the same XID, in
  // XID order: a repeatable one from the head of the queue, on any
  // connection; any other on this connection once it is back (repeatable).
  // A call that lost its connection too often fails instead.
  std::vector<uint32_t> back, homed;
  std::vector<ReplyCallback> failed;
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& p = it->second;
    if (p.conn != i) {
      ++it;
      continue;
    }
    p.conn = -1;
    in_flight_--;
    if (counts && ++p.losses > kMaxConnectionLosses) {
      failed.push_back(std::move(p.done));
      it = pending_.erase(it);
      continue;
    }
    if (!p.repeatable) p.home = i;
    if (p.null_call) {
      null_queue_.push_front(it->first);  // past the limit again (Pump)
    } else {
      (p.repeatable ? back : homed).push_back(it->first);
    }
    ++it;
  }
  auto by_age = [this](uint32_t a, uint32_t b) { return a - next_xid_ < b - next_xid_; };
  std::sort(back.begin(), back.end(), by_age);
  std::sort(homed.begin(), homed.end(), by_age);
  queue_.insert(queue_.begin(), back.begin(), back.end());
  c.resend.insert(c.resend.end(), homed.begin(), homed.end());
  back.insert(back.end(), homed.begin(), homed.end());
  stats_.resent += back.size();
  if (shut_down_) {
    for (auto& done : failed) done(Status(StatusCode::kCancelled, options_.name + " shut down"));
    return;
  }
  if (was_up || !back.empty()) {
    NFSEDGE_LOG(kWarn) << options_.name << ": connection " << i << " to "
                       << options_.server.ToString() << " lost (" << why << "); " << back.size()
                       << " calls will be resent";
  } else {
    NFSEDGE_LOG(kDebug) << options_.name << ": connect " << i << " failed (" << why << ")";
  }
  stats_.reconnects++;
  c.retry->Arm(c.backoff);
  c.backoff = std::min(c.backoff * 2, options_.reconnect_max);
  if (!failed.empty()) {
    NFSEDGE_LOG(kWarn) << options_.name << ": " << failed.size()
                       << " calls failed: connection lost " << kMaxConnectionLosses + 1
                       << " times while they were outstanding";
  }
  for (auto& done : failed) {
    done(Unavailable(options_.name + ": connection lost repeatedly during this call"));
  }
  Pump();
}

void RpcClient::OnConnRead(int i) {
  Conn& c = conns_[i];
  if (c.state == Conn::State::kProbing) {
    OnProbeReply(i);
    return;
  }
  if (c.state != Conn::State::kUp) return;
  ReadMore(c.bev.get(), std::max(kSocketIoChunk, options_.max_record_size + 4));
  evbuffer* in = bufferevent_get_input(c.bev.get());
  for (;;) {
    std::string record;
    RecordReader::Result r = c.reader->Next(in, &record);
    if (r == RecordReader::Result::kNeedMore) break;
    if (r == RecordReader::Result::kTooLarge) {
      ConnLost(i, "reply record larger than " + std::to_string(options_.max_record_size));
      return;
    }
    StatusOr<ReplyHeader> h = ParseReply(record);
    if (!h.ok()) {
      ConnLost(i, h.status().ToString());
      return;
    }
    auto it = pending_.find(h->xid);
    if (it == pending_.end() || it->second.conn != i) {
      NFSEDGE_LOG(kDebug) << options_.name << ": reply for unknown xid " << h->xid;
      continue;  // late reply to a call that timed out
    }
    c.answered = true;
    ReplyCallback done = std::move(it->second.done);
    const SteadyClock::time_point sent_at = it->second.sent_at;
    const uint32_t transmissions = it->second.transmissions;
    pending_.erase(it);
    in_flight_--;
    c.outstanding--;
    stats_.replies++;
    RpcReply reply{*h, std::move(record)};
    reply.sent_at = sent_at;
    reply.transmissions = transmissions;
    done(std::move(reply));
    if (c.state != Conn::State::kUp) return;  // the callback may have shut us down
  }
  Pump();
}

Status RpcClient::Call(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
                       std::string_view args, ReplyCallback done) {
  if (shut_down_) return Status(StatusCode::kCancelled, options_.name + " is shut down");
  if (proc != 0 && queue_.size() >= options_.max_queued) {
    stats_.refused++;
    return ResourceExhausted(options_.name + ": " + std::to_string(queue_.size()) +
                             " calls queued (upstream.max_queued)");
  }
  uint32_t xid = next_xid_++;
  while (pending_.count(xid)) xid = next_xid_++;
  CallHeader h;
  h.xid = xid;
  h.prog = prog;
  h.vers = vers;
  h.proc = proc;
  h.cred = cred;
  Pending p;
  p.record = EncodeRecord(EncodeCallHeader(h), args);
  p.done = std::move(done);
  p.repeatable = !options_.repeatable || options_.repeatable(prog, proc);
  p.resent_after_timeout = p.repeatable && (!options_.resent_after_timeout ||
                                            options_.resent_after_timeout(prog, proc));
  if (options_.on_done) {
    p.done = [observe = options_.on_done, prog, proc, start = SteadyClock::now(),
              inner = std::move(p.done)](StatusOr<RpcReply> r) {
      observe(prog, proc, r, SteadyClock::now() - start);
      inner(std::move(r));
    };
  }
  p.deadline = SteadyClock::now() + options_.timeout;
  // A NULL call holds nothing on the server: it goes past max_in_flight
  // and max_queued (the outage probe must reach a server whose other calls
  // fill every slot, a frozen export's).
  p.null_call = proc == 0;
  pending_.emplace(xid, std::move(p));
  (proc == 0 ? null_queue_ : queue_).push_back(xid);
  stats_.calls++;
  Pump();
  return Status::Ok();
}

int RpcClient::PickConnection() const {
  int best = -1;
  for (int i = 0; i < static_cast<int>(conns_.size()); ++i) {
    if (conns_[i].state != Conn::State::kUp) continue;
    if (best < 0 || conns_[i].outstanding < conns_[best].outstanding) best = i;
  }
  return best;
}

void RpcClient::SetLimits(const ClientOptions& limits) {
  options_.max_in_flight = limits.max_in_flight;
  options_.max_queued = limits.max_queued;
  options_.timeout = limits.timeout;
  options_.reconnect_min = limits.reconnect_min;
  options_.reconnect_max = limits.reconnect_max;
  for (Conn& c : conns_) {
    c.backoff = std::clamp(c.backoff, limits.reconnect_min, limits.reconnect_max);
  }
  Pump();
}

void RpcClient::Pump() {
  // Calls lost with a connection that is back, on it, whatever the limit:
  // they were in flight before.
  for (int i = 0; i < static_cast<int>(conns_.size()); ++i) {
    Conn& c = conns_[i];
    while (c.state == Conn::State::kUp && !c.resend.empty()) {
      const uint32_t xid = c.resend.front();
      c.resend.pop_front();
      auto it = pending_.find(xid);
      if (it == pending_.end() || it->second.conn >= 0) continue;
      PutOn(i, xid, it->second);
    }
  }
  while (!null_queue_.empty()) {  // whatever the limit
    int i = PickConnection();
    if (i < 0) break;
    const uint32_t xid = null_queue_.front();
    null_queue_.pop_front();
    auto it = pending_.find(xid);
    if (it == pending_.end() || it->second.conn >= 0) continue;  // timed out
    PutOn(i, xid, it->second);
  }
  while (!queue_.empty() && in_flight_ < options_.max_in_flight) {
    int i = PickConnection();
    if (i < 0) return;
    uint32_t xid = queue_.front();
    queue_.pop_front();
    auto it = pending_.find(xid);
    if (it == pending_.end()) continue;  // timed out while queued
    PutOn(i, xid, it->second);
  }
}

void RpcClient::PutOn(int i, uint32_t xid, Pending& p) {
  p.conn = i;
  in_flight_++;
  conns_[i].outstanding++;
  WriteCall(i, xid, p);
}

void RpcClient::WriteCall(int i, uint32_t xid, Pending& p) {
  // Counted when handed to the connection, whether or not all its bytes
  // then leave (the connection may be lost first): a reply never answers a
  // transmission that was not counted.
  p.transmissions++;
  p.sent_at = {};
  if (pacing_rate_ <= 0 && paced_.empty()) {
    bufferevent_write(conns_[i].bev.get(), p.record.data(), p.record.size());
    p.Sent(SteadyClock::now(), options_.timeout);
    return;
  }
  paced_.push_back(PacedWrite{i, xid, p.record});
  PaceOut();
}

void RpcClient::SetPacingRate(double bytes_per_second) {
  pacing_rate_ = std::max(0.0, bytes_per_second);
  if (!paced_.empty()) PaceOut();
}

void RpcClient::PaceOut() {
  pace_timer_.Cancel();
  const auto now = SteadyClock::now();
  // Chunks of about 2 ms at the rate, one TCP segment at least.
  const double quantum = PacingQuantum(pacing_rate_);
  if (tokens_at_ != SteadyClock::time_point{}) {
    tokens_ += pacing_rate_ * std::chrono::duration<double>(now - tokens_at_).count();
  }
  // While calls wait, a timer that fired late does not cost the rate: up to
  // a second quantum of the time is made up.
  tokens_ = std::min(tokens_, paced_.empty() ? quantum : kPacerCreditQuanta * quantum);
  tokens_at_ = now;
  while (!paced_.empty()) {
    PacedWrite& w = paced_.front();
    Conn& c = conns_[w.conn];
    if (c.state != Conn::State::kUp) {  // cannot happen: ConnLost drops them
      paced_.pop_front();
      continue;
    }
    size_t n = w.bytes.size() - w.written;
    if (pacing_rate_ > 0) {
      if (tokens_ < 1) break;
      n = std::min(n, static_cast<size_t>(tokens_));
      tokens_ -= static_cast<double>(n);
    }
    bufferevent_write(c.bev.get(), w.bytes.data() + w.written, n);
    w.written += n;
    if (w.written < w.bytes.size()) continue;
    auto it = pending_.find(w.xid);
    if (it != pending_.end() && it->second.conn == w.conn) it->second.Sent(now, options_.timeout);
    paced_.pop_front();
  }
  if (!paced_.empty()) {
    double wait = (std::min(quantum, 4096.0) - tokens_) / pacing_rate_;
    pace_timer_.Arm(std::max<Duration>(
        std::chrono::milliseconds(1),
        std::chrono::duration_cast<Duration>(std::chrono::duration<double>(wait))));
  }
}

void RpcClient::RetransmitOverdue(SteadyClock::time_point now) {
  if (rto_ <= Duration::zero()) return;
  for (auto& [xid, p] : pending_) {
    if (p.conn < 0 || p.sent_at == SteadyClock::time_point{} || !p.resent_after_timeout ||
        p.retransmits >= kMaxRetransmits) {
      continue;
    }
    if (now - p.sent_at < rto_ * (1 << p.retransmits)) continue;
    p.retransmits++;
    stats_.retransmits++;
    NFSEDGE_LOG(kDebug) << options_.name << ": xid " << xid << " sent again (retransmission "
                        << p.retransmits << ")";
    WriteCall(p.conn, xid, p);
  }
}

void RpcClient::HoldDeadlines(bool hold) {
  if (hold_deadlines_ && !hold) {
    const auto from = SteadyClock::now() + options_.timeout;
    for (auto& [xid, p] : pending_) p.deadline = std::max(p.deadline, from);
  }
  hold_deadlines_ = hold;
}

void RpcClient::CheckPaths(SteadyClock::time_point now) {
  const Duration limit = options_.dead_path_timeout;
  if (limit <= Duration::zero() ||
      now - paths_checked_ < std::min<Duration>(std::chrono::seconds(1), limit / 2)) {
    return;
  }
  paths_checked_ = now;
  const auto limit_ms = std::chrono::duration_cast<std::chrono::milliseconds>(limit).count();
  // Only with a call written longer ago than the limit: an idle one's last
  // acknowledgement may be that old when a call goes out, before its own.
  std::vector<bool> waited(conns_.size(), false);
  for (const auto& [xid, p] : pending_) {
    if (p.conn >= 0 && p.sent_at != SteadyClock::time_point{} && now - p.sent_at >= limit) {
      waited[static_cast<size_t>(p.conn)] = true;
    }
  }
  std::vector<int> dead;
  for (int i = 0; i < static_cast<int>(conns_.size()); ++i) {
    const Conn& c = conns_[i];
    if (c.state != Conn::State::kUp || !waited[static_cast<size_t>(i)] || !c.bev) continue;
    tcp_info ti{};
    socklen_t len = sizeof(ti);
    if (getsockopt(SocketOf(c.bev.get()), IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) {
      continue;
    }
    // Segments in flight (none with a shut window), nothing acknowledged.
    if (ti.tcpi_unacked > 0 && ti.tcpi_last_ack_recv >= limit_ms) dead.push_back(i);
  }
  for (int i : dead) {
    if (shut_down_) return;
    ConnLost(i,
             "no acknowledgement from the server for " + std::to_string(limit_ms) +
                 " ms with bytes in flight (the path dropped the connection?)",
             /*counts=*/false);
  }
}

void RpcClient::SweepDeadlines() {
  if (pending_.empty()) return;
  auto now = SteadyClock::now();
  CheckPaths(now);
  if (pending_.empty()) return;
  RetransmitOverdue(now);
  std::vector<ReplyCallback> expired;
  std::vector<int> reopen;  // connections of calls that must not fail
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& p = it->second;
    if (p.deadline > now) {
      ++it;
      continue;
    }
    if (!p.repeatable && p.transmissions > 0) {
      p.deadline = now + options_.timeout;
      // Its bytes still being let out by the pacer (its last not yet
      // handed to the connection): the server has not had it, and
      // starting the connection over would only throw away what was
      // paced out, deadline after deadline.
      if (p.conn >= 0 && p.sent_at == SteadyClock::time_point{}) {
        ++it;
        continue;
      }
      // It may have run: not failed but sent again (Conn::resend) on its
      // connection, opened again, even while deadlines are held. (Waiting
      // for its connection on its way up, it waits: the setup timer starts
      // a stuck connect, probe or handshake over, and a deadline that did
      // would abort connects in progress, each a failed connect from the
      // port the server's duplicate request cache knows.)
      const int c = p.conn;
      if (c >= 0 && std::find(reopen.begin(), reopen.end(), c) == reopen.end()) {
        reopen.push_back(c);
      }
      ++it;
      continue;
    }
    if (hold_deadlines_) {
      ++it;
      continue;
    }
    if (p.conn >= 0) {
      in_flight_--;
      conns_[it->second.conn].outstanding--;
    }
    expired.push_back(std::move(it->second.done));
    it = pending_.erase(it);
    stats_.timeouts++;
  }
  // Unsent calls that expired leave the queue too: it bounds calls waiting.
  if (!expired.empty()) {
    std::erase_if(queue_, [this](uint32_t xid) { return !pending_.contains(xid); });
    std::erase_if(null_queue_, [this](uint32_t xid) { return !pending_.contains(xid); });
  }
  for (int i : reopen) {
    if (shut_down_) break;  // a callback of the ConnLost before may have
    NFSEDGE_LOG(kWarn) << options_.name << ": a call that may not run twice has no reply after "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(options_.timeout)
                              .count()
                       << " ms; connection " << i << " is opened again to send it again";
    // (Not a loss of the server's making: it does not count against the
    // calls on it, which would otherwise fail after a few deadlines of a
    // server that holds them, even while the upstream is out and they wait
    // for it, as a hard mount's do.) Every such call on it goes again now,
    // so its deadline starts again now: calls sent at different times would
    // otherwise open the connection again one deadline after another.
    for (auto& [xid, p] : pending_) {
      if (p.conn == i && !p.repeatable) p.deadline = std::max(p.deadline, now + options_.timeout);
    }
    ConnLost(i, "a call unanswered before its deadline", /*counts=*/false);
  }
  if (expired.empty()) return;
  NFSEDGE_LOG(kWarn) << options_.name << ": " << expired.size() << " calls passed their deadline";
  for (auto& done : expired) done(Timeout(options_.name + ": no reply before the deadline"));
  Pump();
}

void RpcClient::Shutdown(const Status& why) {
  if (shut_down_) return;
  shut_down_ = true;
  sweep_.Cancel();
  for (auto& c : conns_) {
    c.retry->Cancel();
    c.setup->Cancel();
    c.bev.reset();
    c.held.reset();
    c.state = Conn::State::kDown;
  }
  auto pending = std::move(pending_);
  pending_.clear();
  queue_.clear();
  null_queue_.clear();
  for (auto& c : conns_) c.resend.clear();
  paced_.clear();
  pace_timer_.Cancel();
  in_flight_ = 0;
  for (auto& [xid, p] : pending) p.done(why);
}

}  // namespace nfsedge
