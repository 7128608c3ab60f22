// ServerConnection: one client TCP connection of an RpcServer (internal).
//
// Thread-safety: lives on the event loop's thread.
#ifndef NFSEDGE_RPC_SERVER_CONNECTION_H_
#define NFSEDGE_RPC_SERVER_CONNECTION_H_

#include <event2/buffer.h>

#include <memory>
#include <string>

#include "rpc/event_loop.h"
#include "rpc/record_marking.h"
#include "rpc/rpc_server.h"

namespace nfsedge {

class ServerConnection : public std::enable_shared_from_this<ServerConnection> {
 public:
  ServerConnection(RpcServer* server, BuffereventPtr bev, const SockAddr& peer,
                   std::shared_ptr<ClientCalls> client);
  void Start();
  // Queues a reply record (without mark) and frees one in-flight slot.
  void SendReply(std::string_view reply);
  // Shows `reply` to `call` to the server's ReplyObserver, if any.
  void ObserveReply(const IncomingCall& call, std::string_view reply);
  // Frees one in-flight slot without a reply.
  void ReleaseSlot();
  void Close();
  size_t in_flight() const { return in_flight_; }
  bool closed() const { return closed_; }
  // Reads again iff it was paused and is no longer backlogged.
  void MaybeResume();
  // Taken from OrphanedCalls::waiting (WakeWaiting): MaybeResume, which
  // waits again if still held.
  void Woken() {
    waiting_ = false;
    MaybeResume();
  }
  // Stops reading iff it is backlogged (RpcServer::StopReading).
  void Pause();
  // The idle timeout changed (a reload): the next check is due within the
  // new one (a connection whose timeout was 0 had no timer).
  void IdleTimeoutChanged();
  const SockAddr& peer() const { return peer_; }

 private:
  static void OnRead(bufferevent* bev, void* arg);
  static void OnWrite(bufferevent* bev, void* arg);
  static void OnEvent(bufferevent* bev, short what, void* arg);
  // The output buffer changed: bytes the client took are no longer held.
  static void OnOutput(evbuffer* out, const evbuffer_cb_info* info, void* arg);
  // Stops counting the output (STARTTLS, close): what it holds is no longer
  // held bytes.
  void ForgetOutput();
  void ProcessInput();
  // Answers the AUTH_TLS probe `xid` with STARTTLS and puts a TLS filter
  // (server side of the handshake) on the connection.
  void StartTls(uint32_t xid);
  // Returns true iff the connection must not be read now: it has
  // max_calls_per_connection calls in flight, its client as many orphaned
  // calls (HeldByOrphans), the server max_held_call_bytes with one of its
  // calls among them (OverHeldBytes), or more than max_record_size bytes of replies
  // the client has not taken yet.
  bool Backlogged() const;
  bool HeldByOrphans() const;
  // Whether it has a call in flight while the server holds
  // max_held_call_bytes or more (RpcServer: what counts).
  bool OverHeldBytes() const;
  // Asks to be resumed when one of its client's orphaned calls is answered.
  void WaitForOrphans();
  // Notes traffic on the connection (it is not idle).
  void Touch() { last_activity_ = SteadyClock::now(); }
  // Closes the connection iff it has been idle for options.idle_timeout;
  // else looks again when it could be.
  void CheckIdle();

  RpcServer* server_;
  BuffereventPtr bev_;
  SockAddr peer_;
  std::shared_ptr<ClientCalls> client_;
  RecordReader reader_;
  size_t in_flight_ = 0;
  size_t out_held_ = 0;  // replies in the output, counted in client_->all->held_bytes
  evbuffer_cb_entry* out_cb_ = nullptr;
  bool paused_ = false;
  bool waiting_ = false;  // in client_->all->waiting (WaitForOrphans)
  bool processing_ = false;
  bool closed_ = false;
  bool tls_ = false;            // STARTTLS answered: records flow inside TLS
  bool tls_connected_ = false;  // the handshake completed
  Timer resume_;
  Timer idle_;  // armed iff options.idle_timeout is set
  SteadyClock::time_point last_activity_ = SteadyClock::now();
};

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_SERVER_CONNECTION_H_
