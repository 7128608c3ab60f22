#include "rpc/rpc_server.h"

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/tcp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "rpc/auth_sys.h"
#include "rpc/log.h"
#include "rpc/server_connection.h"

namespace nfsedge {

namespace {

// Counts `n` bytes less in `all.held_bytes`; connections that waited for
// the bound look again once under it.
void ReleaseHeld(OrphanedCalls& all, size_t n) {
  if (n == 0) return;
  const bool over = all.held_bytes >= all.max_held_bytes;
  all.held_bytes -= std::min(all.held_bytes, n);
  if (over && all.held_bytes < all.max_held_bytes) WakeWaiting(all);
}

}  // namespace

// ---- IncomingCall ----

IncomingCall::IncomingCall(std::weak_ptr<ServerConnection> conn, std::string record,
                           const ParsedCall& parsed, const SockAddr& peer,
                           std::shared_ptr<ClientCalls> client)
    : conn_(std::move(conn)),
      client_(std::move(client)),
      record_(std::move(record)),
      args_offset_(parsed.args_offset),
      header_(parsed.header),
      peer_(peer),
      received_(SteadyClock::now()) {
  if (client_ != nullptr) {
    held_bytes_ = record_.size();
    client_->all->held_bytes += held_bytes_;
  }
}

IncomingCall::~IncomingCall() {
  Release();
  if (held_bytes_ > 0) ReleaseHeld(*client_->all, held_bytes_);
}

void IncomingCall::HoldForReply(size_t bytes) {
  if (client_ == nullptr || replied_) return;
  reply_room_ += bytes;
  client_->all->held_bytes += bytes;
}

void IncomingCall::ReleaseReplyRoom() {
  if (reply_room_ > 0) ReleaseHeld(*client_->all, std::exchange(reply_room_, 0));
}

void IncomingCall::Release() {
  if (replied_) return;
  replied_ = true;
  ReleaseReplyRoom();
  if (reply_hook_) std::exchange(reply_hook_, nullptr)(std::string_view());
  auto c = conn_.lock();
  if (c) c->ReleaseSlot();
  Answered(c);
}

void IncomingCall::Reply(std::string reply) {
  if (replied_) return;
  replied_ = true;
  if (reply_hook_) std::exchange(reply_hook_, nullptr)(reply);
  auto c = conn_.lock();
  if (c) {
    c->ObserveReply(*this, reply);
    c->SendReply(reply);  // held there until the client takes it
  }
  ReleaseReplyRoom();
  Answered(c);
}

void IncomingCall::Answered(const std::shared_ptr<ServerConnection>& conn) {
  // Counted as orphaned when its connection closed (RpcServer::Remove).
  if (client_ == nullptr || (conn && !conn->closed()) || client_->orphaned == 0) return;
  client_->orphaned--;
  OrphanedCalls& all = *client_->all;
  if (all.total > 0) all.total--;
  WakeWaiting(all);
}

void WakeWaiting(OrphanedCalls& orphaned) {
  std::vector<std::weak_ptr<ServerConnection>> waiting = std::move(orphaned.waiting);
  orphaned.waiting.clear();
  for (auto& w : waiting) {
    if (auto c = w.lock()) c->Woken();  // waits again if still held
  }
}

void IncomingCall::ReplyAccepted(AcceptStat stat, uint32_t low, uint32_t high) {
  Reply(EncodeAcceptedReply(xid(), stat, low, high));
}

void IncomingCall::ReplySuccess(std::string_view results) {
  std::string r = EncodeAcceptedReply(xid(), kSuccess);
  r.append(results);
  Reply(std::move(r));
}

// ---- ServerConnection ----

ServerConnection::ServerConnection(RpcServer* server, BuffereventPtr bev, const SockAddr& peer,
                                   std::shared_ptr<ClientCalls> client)
    : server_(server),
      bev_(std::move(bev)),
      peer_(peer),
      client_(std::move(client)),
      reader_(server->options_.max_record_size),
      resume_(server->base_, [this] { ProcessInput(); }),
      idle_(server->base_, [this] { CheckIdle(); }) {}

void ServerConnection::Start() {
  bufferevent_setcb(bev_.get(), &ServerConnection::OnRead, &ServerConnection::OnWrite,
                    &ServerConnection::OnEvent, this);
  // Replies not taken by the client yet count as held bytes until they go.
  out_cb_ = evbuffer_add_cb(bufferevent_get_output(bev_.get()), &ServerConnection::OnOutput, this);
  // OnWrite runs once the replies waiting to be sent are down to this.
  bufferevent_setwatermark(bev_.get(), EV_WRITE, server_->options_.max_record_size, 0);
  bufferevent_enable(bev_.get(), EV_READ | EV_WRITE);
  Touch();
  const Duration timeout = server_->options_.idle_timeout;
  if (timeout > Duration::zero()) idle_.Arm(timeout);
}

void ServerConnection::OnRead(bufferevent* bev, void* arg) {
  auto* self = static_cast<ServerConnection*>(arg);
  ReadMore(bev, std::max(kSocketIoChunk, self->server_->options_.max_record_size + 4));
  // Only a whole record counts as activity (ProcessInput): bytes of one that
  // never completes would keep the connection, and them, for ever.
  self->ProcessInput();
}

void ServerConnection::OnOutput(evbuffer*, const evbuffer_cb_info* info, void* arg) {
  auto* self = static_cast<ServerConnection*>(arg);
  const size_t gone = std::min(info->n_deleted, self->out_held_);
  self->out_held_ -= gone;
  ReleaseHeld(*self->client_->all, gone);
}

void ServerConnection::ForgetOutput() {
  if (out_cb_ != nullptr) {
    evbuffer_remove_cb_entry(bufferevent_get_output(bev_.get()), std::exchange(out_cb_, nullptr));
  }
  ReleaseHeld(*client_->all, std::exchange(out_held_, 0));
}

void ServerConnection::OnWrite(bufferevent*, void* arg) {
  static_cast<ServerConnection*>(arg)->MaybeResume();
}

bool ServerConnection::Backlogged() const {
  const ServerOptions& opts = server_->options_;
  return server_->reading_stopped_ || in_flight_ >= opts.max_calls_per_connection ||
         HeldByOrphans() || OverHeldBytes() ||
         evbuffer_get_length(bufferevent_get_output(bev_.get())) > opts.max_record_size;
}

bool ServerConnection::HeldByOrphans() const {
  const ServerOptions& opts = server_->options_;
  return client_->orphaned >= opts.max_connections_per_client * opts.max_calls_per_connection ||
         client_->all->total >= opts.max_connections * opts.max_calls_per_connection;
}

bool ServerConnection::OverHeldBytes() const {
  const OrphanedCalls& all = *client_->all;
  return in_flight_ > 0 && all.held_bytes >= all.max_held_bytes;
}

void ServerConnection::WaitForOrphans() {
  // Once: a scan of the list for itself, by each of many connections
  // waiting again after every wake, cost the loop the square of their number.
  if (waiting_) return;
  waiting_ = true;
  client_->all->waiting.push_back(weak_from_this());
}

void ServerConnection::CheckIdle() {
  if (closed_) return;
  auto keep = shared_from_this();  // Close() below must not free us mid-call
  const Duration timeout = server_->options_.idle_timeout;
  if (timeout <= Duration::zero()) return;  // turned off by a reload
  const Duration idle = SteadyClock::now() - last_activity_;
  if (in_flight_ > 0) {
    idle_.Arm(timeout);  // busy: a reply will count as traffic
    return;
  }
  if (idle < timeout) {
    idle_.Arm(timeout - idle);
    return;
  }
  server_->stats_.idle_closed++;
  NFSEDGE_LOG(kInfo) << "client " << peer_.ToString() << ": idle for "
                     << std::chrono::duration_cast<std::chrono::seconds>(idle).count()
                     << " s; closing connection (server.idle_timeout_s)";
  Close();
}

void ServerConnection::IdleTimeoutChanged() {
  const Duration timeout = server_->options_.idle_timeout;
  if (closed_ || timeout <= Duration::zero()) return;
  // Checked within the new timeout (a lower one too), from the traffic.
  const Duration idle = SteadyClock::now() - last_activity_;
  idle_.Arm(idle < timeout ? timeout - idle : Duration::zero());
}

void ServerConnection::OnEvent(bufferevent*, short what, void* arg) {
  auto* self = static_cast<ServerConnection*>(arg);
  if ((what & BEV_EVENT_CONNECTED) && self->tls_) {
    self->tls_connected_ = true;
    self->Touch();
    NFSEDGE_LOG(kDebug) << "client " << self->peer_.ToString() << ": TLS established";
    return;
  }
  if (self->tls_ && !self->tls_connected_ && (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))) {
    self->server_->stats_.tls_failures++;
    NFSEDGE_LOG(kWarn) << "client " << self->peer_.ToString()
                       << ": TLS handshake failed: " << TlsBuffereventError(self->bev_.get());
    self->Close();
    return;
  }
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
    NFSEDGE_LOG(kDebug) << "client " << self->peer_.ToString() << " disconnected";
    self->Close();
  }
}

void ServerConnection::ProcessInput() {
  if (closed_ || processing_) return;
  auto keep = shared_from_this();  // Close() below must not free us mid-call
  processing_ = true;
  evbuffer* in = bufferevent_get_input(bev_.get());
  const ServerOptions& opts = server_->options_;
  while (!closed_ && !Backlogged()) {
    std::string record;
    RecordReader::Result r = reader_.Next(in, &record);
    if (r == RecordReader::Result::kNeedMore) break;
    if (r == RecordReader::Result::kTooLarge) {
      NFSEDGE_LOG(kWarn) << "client " << peer_.ToString() << ": record exceeds "
                         << opts.max_record_size << " bytes; closing connection";
      server_->stats_.bad_records++;
      Close();
      break;
    }
    Touch();  // a whole record: the connection is in use
    ParsedCall parsed = ParseCall(record);
    switch (parsed.error) {
      case CallError::kMalformed:
        NFSEDGE_LOG(kWarn) << "client " << peer_.ToString() << ": malformed RPC call; closing";
        server_->stats_.bad_records++;
        Close();
        continue;
      case CallError::kRpcMismatch:
        in_flight_++;
        SendReply(EncodeRpcMismatchReply(parsed.header.xid));
        continue;
      case CallError::kBadAuth:
      case CallError::kBadVerf:
        in_flight_++;
        server_->stats_.auth_errors++;
        SendReply(EncodeAuthErrorReply(parsed.header.xid, parsed.error == CallError::kBadAuth
                                                              ? kAuthBadCred
                                                              : kAuthBadVerf));
        continue;
      case CallError::kNone:
        break;
    }
    if (IsTlsProbe(parsed.header) && opts.tls && !tls_) {
      StartTls(parsed.header.xid);
      if (closed_) break;
      in = bufferevent_get_input(bev_.get());
      continue;
    }
    AuthStat auth = CheckCallAuth(parsed.header);
    in_flight_++;
    if (auth != kAuthOk) {
      server_->stats_.auth_errors++;
      SendReply(EncodeAuthErrorReply(parsed.header.xid, auth));
      continue;
    }
    server_->stats_.calls++;
    auto call =
        std::make_unique<IncomingCall>(weak_from_this(), std::move(record), parsed, peer_, client_);
    call->set_tls(tls_);
    server_->handler_->HandleCall(std::move(call));
  }
  Pause();
  processing_ = false;
}

void ServerConnection::Pause() {
  if (!closed_ && !paused_ && Backlogged()) {
    paused_ = true;
    bufferevent_disable(bev_.get(), EV_READ);
    if (OverHeldBytes()) server_->stats_.held_bytes_waits++;
    if (HeldByOrphans() || OverHeldBytes()) WaitForOrphans();
  }
}

void ServerConnection::StartTls(uint32_t xid) {
  // Replies before STARTTLS are in the TCP bufferevent's output, which the
  // filter's bound keeps small (below): no longer counted.
  ForgetOutput();
  std::string reply = EncodeRecord(EncodeStartTlsReply(xid));
  bufferevent_write(bev_.get(), reply.data(), reply.size());
  SSL* ssl = SSL_new(server_->options_.tls.get());
  bufferevent* tcp = bev_.get();
  bufferevent* tls =
      ssl == nullptr ? nullptr : NewTlsFilter(server_->base_, tcp, ssl, BUFFEREVENT_SSL_ACCEPTING);
  if (tls == nullptr) {
    NFSEDGE_LOG(kWarn) << "client " << peer_.ToString()
                       << ": cannot start TLS: " << TlsErrorText();
    Close();
    return;
  }
  (void)bev_.release();  // the filter owns the TCP bufferevent now
  bev_.reset(tls);
  // The filter encrypts replies into the TCP bufferevent only up to this,
  // so those the client has not taken stay in the filter (Backlogged()).
  bufferevent_setwatermark(tcp, EV_WRITE, 0, server_->options_.max_record_size);
  bufferevent_openssl_set_allow_dirty_shutdown(tls, 1);
  tls_ = true;
  server_->stats_.tls_upgrades++;
  NFSEDGE_LOG(kDebug) << "client " << peer_.ToString() << ": STARTTLS";
  Start();
}

void ServerConnection::MaybeResume() {
  if (paused_ && !closed_ && (HeldByOrphans() || OverHeldBytes())) WaitForOrphans();
  if (paused_ && !closed_ && !Backlogged()) {
    paused_ = false;
    bufferevent_enable(bev_.get(), EV_READ);
    // Records may already wait in the input buffer: look at them from the
    // loop, not from inside whatever sent this reply.
    resume_.Arm(Duration::zero());
  }
}

void ServerConnection::ObserveReply(const IncomingCall& call, std::string_view reply) {
  const ReplyObserver& observe = server_->options_.on_reply;
  if (observe) observe(call, reply, SteadyClock::now() - call.received());
}

void ServerConnection::SendReply(std::string_view reply) {
  if (in_flight_ > 0) in_flight_--;
  if (closed_) return;
  Touch();
  char mark[4];
  EncodeRecordMark(reply.size(), mark);
  evbuffer* out = bufferevent_get_output(bev_.get());
  // Counted first: a TLS filter encrypts what is added at once, and the
  // drain's OnOutput releases it from inside evbuffer_add.
  out_held_ += 4 + reply.size();
  client_->all->held_bytes += 4 + reply.size();
  if (tls_) {
    // The filter seals each piece added as its own TLS record: the mark and
    // the reply go in one, as one record.
    const std::string framed = EncodeRecord(reply);
    evbuffer_add(out, framed.data(), framed.size());
  } else {
    evbuffer_add(out, mark, 4);
    evbuffer_add(out, reply.data(), reply.size());
  }
  MaybeResume();
}

void ServerConnection::ReleaseSlot() {
  if (in_flight_ > 0) in_flight_--;
  MaybeResume();
}

void ServerConnection::Close() {
  if (closed_) return;
  closed_ = true;
  resume_.Cancel();
  idle_.Cancel();
  bufferevent_disable(bev_.get(), EV_READ | EV_WRITE);
  ForgetOutput();  // the replies go with the connection
  bev_.reset();
  server_->Remove(this);
}

// ---- RpcServer ----

RpcServer::RpcServer(event_base* base, ServerOptions options, CallHandler* handler)
    : base_(base), options_(options), handler_(handler) {
  orphaned_->max_held_bytes = options_.max_held_call_bytes;
}

RpcServer::~RpcServer() {
  StopListening();
  CloseAll();
}

StatusOr<uint16_t> RpcServer::Listen(const SockAddr& addr) {
  evconnlistener* l = evconnlistener_new_bind(
      base_, &RpcServer::OnAccept, this,
      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128, addr.get(),
      static_cast<int>(addr.len));
  if (l == nullptr) return ErrnoError("listen on " + addr.ToString(), errno);
  SockAddr bound;
  bound.len = sizeof(bound.ss);
  getsockname(evconnlistener_get_fd(l), bound.get(), &bound.len);
  listeners_.emplace_back(l);
  guards_.push_back(
      std::make_unique<AcceptGuard>(l, "listener " + bound.ToString(), &stats_.accept_paused));
  return bound.port();
}

void RpcServer::StopListening() {
  guards_.clear();
  listeners_.clear();
}

void RpcServer::StopReading() {
  reading_stopped_ = true;
  for (auto& [ptr, conn] : connections_) conn->Pause();
}

void RpcServer::SetLimits(const ServerOptions& limits) {
  options_.max_connections = limits.max_connections;
  options_.max_connections_per_client = limits.max_connections_per_client;
  options_.max_calls_per_connection = limits.max_calls_per_connection;
  options_.max_held_call_bytes = limits.max_held_call_bytes;
  orphaned_->max_held_bytes = limits.max_held_call_bytes;
  options_.idle_timeout = limits.idle_timeout;
  for (auto& [ptr, conn] : connections_) conn->IdleTimeoutChanged();
  WakeWaiting(*orphaned_);  // held connections look again under the new limits
}

void RpcServer::CloseAll() {
  auto conns = connections_;  // Close() erases from the map
  for (auto& [ptr, conn] : conns) conn->Close();
}

size_t RpcServer::calls_in_flight() const {
  size_t n = 0;
  for (const auto& [ptr, conn] : connections_) n += conn->in_flight();
  return n;
}

void RpcServer::OnAccept(evconnlistener*, evutil_socket_t fd, sockaddr* addr, int len, void* arg) {
  SockAddr peer;
  std::memcpy(&peer.ss, addr, std::min<size_t>(len, sizeof(peer.ss)));
  peer.len = static_cast<socklen_t>(len);
  static_cast<RpcServer*>(arg)->Accept(fd, peer);
}

void RpcServer::Accept(evutil_socket_t fd, const SockAddr& peer) {
  if (connections_.size() >= options_.max_connections) {
    stats_.connections_refused++;
    NFSEDGE_LOG(kWarn) << "refusing client " << peer.ToString() << ": " << options_.max_connections
                       << " connections open (server.max_connections)";
    evutil_closesocket(fd);
    return;
  }
  BuffereventPtr bev(bufferevent_socket_new(base_, fd, BEV_OPT_CLOSE_ON_FREE));
  if (bev == nullptr) {
    // Out of memory, as accept() itself may be (AcceptGuard): refused.
    stats_.connections_refused++;
    NFSEDGE_LOG(kWarn) << "refusing client " << peer.ToString() << ": out of memory";
    evutil_closesocket(fd);
    return;
  }
  std::string client = peer.HostString();
  std::shared_ptr<ClientCalls>& calls = clients_[client];
  if (calls == nullptr) {
    calls = std::make_shared<ClientCalls>();
    calls->all = orphaned_;
  }
  size_t& from_client = calls->connections;
  if (from_client >= options_.max_connections_per_client) {
    stats_.connections_refused_per_client++;
    NFSEDGE_LOG(kWarn) << "refusing client " << peer.ToString() << ": " << from_client
                       << " connections open from " << client
                       << " (server.max_connections_per_client)";
    return;  // the bufferevent closes the socket
  }
  from_client++;
  stats_.connections_accepted++;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  TuneSocketBufferevent(bev.get());
  auto conn = std::make_shared<ServerConnection>(this, std::move(bev), peer, calls);
  connections_[conn.get()] = conn;
  NFSEDGE_LOG(kDebug) << "client " << peer.ToString() << " connected";
  conn->Start();
}

void RpcServer::Remove(ServerConnection* conn) {
  auto it = clients_.find(conn->peer().HostString());
  if (it != clients_.end()) {
    ClientCalls& calls = *it->second;
    calls.connections--;
    // Its calls not answered yet: the proxy still works on them.
    calls.orphaned += conn->in_flight();
    orphaned_->total += conn->in_flight();
    std::erase_if(clients_, [](const auto& kv) {
      return kv.second->connections == 0 && kv.second->orphaned == 0;
    });
  }
  connections_.erase(conn);
}

}  // namespace nfsedge
