// RpcClient: the upstream side of ONC RPC over TCP on a libevent loop.
//
// Calls go over `connections` TCP connections to one server. Each call gets
// an XID from the client's own sequence and waits in a map of pending calls
// until its reply, its deadline, or shutdown. At most `max_in_flight` calls
// are on the wire; more wait in a queue of at most `max_queued` (beyond that
// Call() refuses: pressure goes back to the caller). A lost connection is
// re-established with exponential back-off and the calls that were on it are
// sent again with the same XID (the server's duplicate request cache then
// recognises them).
//
// A reconnect comes from the same source port when it can, as the Linux
// client does: servers key their duplicate request caches on the client's
// address and port. A call whose connection is lost more than
// kMaxConnectionLosses times fails (Unavailable) rather than poisoning the
// connection forever.
//
// Thread-safety: everything runs on the thread of the event loop. Callbacks
// are never run from inside Call().
#ifndef NFSEDGE_RPC_RPC_CLIENT_H_
#define NFSEDGE_RPC_RPC_CLIENT_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rpc/event_loop.h"
#include "rpc/rpc_caller.h"
#include "rpc/record_marking.h"
#include "rpc/rpc_message.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"
#include "rpc/tls.h"

namespace nfsedge {

inline constexpr int kMaxConnectionLosses = 3;
// Connects a lost connection tries from its old source port (so that the
// server's duplicate request cache knows the resent calls) before any port;
// while calls that may not run twice wait to go again on it, more
// (kSourcePortPatience), unless that port cannot be bound.
inline constexpr int kSourcePortAttempts = 3;
// ... while calls that may not run twice wait to go again on it.
inline constexpr int kSourcePortPatience = 60;  // 5 min at the default 5 s back-off
inline constexpr int kMaxRetransmits = 3;

struct ClientOptions {
  std::string name = "upstream";  // for logs
  SockAddr server;
  int connections = 1;
  size_t max_in_flight = 128;
  size_t max_queued = 4096;
  Duration timeout = std::chrono::seconds(60);
  Duration reconnect_min = std::chrono::milliseconds(100);
  Duration reconnect_max = std::chrono::seconds(5);
  // A connect the server has not answered within this (SYNs dropped: a
  // path down, a full accept queue) is abandoned and tried again after the
  // back-off, so that a path that comes back is found within about
  // connect_timeout + reconnect_max rather than at the kernel's next SYN
  // retransmission (up to a minute apart). Not below a few seconds: a
  // reconnect from the old source port may wait for a SYN retransmission.
  Duration connect_timeout = std::chrono::seconds(5);
  // A connection with a call on it written this long ago that has bytes in
  // flight the server has not acknowledged, and has had no acknowledgement
  // at all for this long
  // (TCP_INFO, looked at about once a second; an idle one is probed by TCP
  // keepalive after this long, then every 5 s, three times) is lost: a path
  // that drops its packets silently (a NAT or firewall that forgot the
  // connection) is found within it rather than after the kernel's
  // retransmissions (about 15 minutes), and the connection opened again.
  // A server that is alive acknowledges what it has not read yet, and
  // answers window probes when its window is full: it keeps its
  // connections however long it stalls. (Not TCP_USER_TIMEOUT: that also
  // ends a connection whose window stays shut.) Zero: the kernel's
  // defaults.
  Duration dead_path_timeout = std::chrono::seconds(20);
  bool privileged_port = false;
  size_t max_record_size = 4 << 20;
  // RPC-over-TLS (RFC 9289, rpc/tls.h): when set, every connection first
  // sends the AUTH_TLS probe (NULL of tls_probe_prog/vers), requires the
  // STARTTLS verifier and completes a TLS handshake that verifies the
  // server's certificate for tls_server_name; only then do calls flow. Any
  // failure counts as a failed connect (retried with back-off, never
  // plaintext).
  SslCtxPtr tls;
  std::string tls_server_name;
  uint32_t tls_probe_prog = 100003;
  uint32_t tls_probe_vers = 3;
  // Sees the outcome of every call that was queued (reply or error), with
  // the time since Call(); for metrics. May be empty.
  std::function<void(uint32_t prog, uint32_t proc, const StatusOr<RpcReply>& reply,
                     Duration elapsed)>
      on_done;
  // Whether the server may run a call of procedure `proc` of `prog` twice
  // with no harm. Empty: every call may. A call that is not (an NFS REMOVE,
  // CREATE or WRITE), once handed to a connection:
  // - is never sent again on that connection after the retransmission
  //   timeout (SetRetransmitTimeout): the server's duplicate request cache
  //   need not catch a copy that arrives while the first still runs;
  // - after the loss of that connection, is sent again with the same XID on
  //   the same connection once it is back (from its old source port, which
  //   a server's duplicate request cache keys on, through
  //   kSourcePortPatience failed connects, three if that port cannot be
  //   bound), never
  //   on another one; as any call, it fails after kMaxConnectionLosses
  //   losses (of the connection while up);
  // - at its deadline (`timeout`) is not failed, as the server may have run
  //   it and its result would be lost: its connection is closed and opened
  //   again, and the call sent again so, as a hard mount does; likewise
  //   while deadlines are held (HoldDeadlines).
  // A call not yet handed to a connection is failed at its deadline as any
  // other.
  std::function<bool(uint32_t prog, uint32_t proc)> repeatable;
  // Of the repeatable calls, whether one is sent again on its connection
  // after the retransmission timeout. Empty: every repeatable call is. One
  // that is not (an NFS COMMIT, whose server time is the flush of all the
  // file's unstable data, unbounded by the path's round trips: each copy
  // would hold another server thread in another flush) waits for its reply,
  // its deadline or a lost connection, after which it goes as a repeatable
  // call does.
  std::function<bool(uint32_t prog, uint32_t proc)> resent_after_timeout;
};

struct ClientStats {
  uint64_t calls = 0;
  uint64_t replies = 0;
  uint64_t timeouts = 0;
  uint64_t resent = 0;
  uint64_t reconnects = 0;
  uint64_t refused = 0;  // queue full
  uint64_t retransmits = 0;  // calls sent again after the retransmission timeout
};

class RpcClient : public RpcCaller {
 public:
  RpcClient(event_base* base, ClientOptions options);
  ~RpcClient() override;
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Opens the connections (asynchronously).
  void Start();

  // Sends a call; `done` runs exactly once, later, with the reply or an error
  // (Timeout, Unavailable after Shutdown). Returns ResourceExhausted, without
  // ever running `done`, iff the queue is full.
  Status Call(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
              std::string_view args, ReplyCallback done) override;

  // Fails every pending call with `why` and closes the connections.
  void Shutdown(const Status& why);

  // Paces the bytes of calls onto the connections at `bytes_per_second`
  // (0, the default: calls are written whole at once), so that the path's
  // bottleneck queue, not this client's buffer, stays short. A reply's
  // sent_at is when the call's last byte was written (the last time, for a
  // call written more than once: see RpcReply::transmissions).
  void SetPacingRate(double bytes_per_second);
  // A call on the wire without a reply this long after its last byte was
  // written is sent again with the same XID, if ClientOptions::repeatable
  // says it may be, the timeout doubling each time, at most
  // kMaxRetransmits times; 0 (the default) = never. The overall deadline
  // (ClientOptions::timeout) still applies.
  void SetRetransmitTimeout(Duration rto) { rto_ = rto; }
  // While held (the upstream is out, proxy/outage.h), calls do not reach
  // their deadline: they wait for the upstream as a hard mount's calls do,
  // so that a call the upstream may still run once the link is back is not
  // answered as failed. Released, every waiting call has a whole timeout
  // from then on.
  void HoldDeadlines(bool hold);
  // Replaces the limits (config reload) with those of `limits`:
  // max_in_flight and max_queued (calls a higher max_in_flight admits are
  // sent at once), timeout (calls made from now on), reconnect_min and
  // reconnect_max (the next reconnect). Other fields of `limits` are ignored.
  void SetLimits(const ClientOptions& limits);

  size_t in_flight() const { return in_flight_; }
  size_t queued() const { return queue_.size(); }
  size_t pending() const { return pending_.size(); }
  int connections_up() const;
  const ClientStats& stats() const { return stats_; }

 private:
  struct Pending {
    std::string record;  // framed call, with our XID
    ReplyCallback done;
    SteadyClock::time_point deadline;
    int conn = -1;  // connection it was sent on; -1 = waiting in queue_
    int losses = 0;  // connections lost while this call was on them
    SteadyClock::time_point sent_at{};  // last byte written; epoch while unsent
    // Its last byte handed to the connection at `now`. One that may not run
    // twice waits a whole `timeout` for its reply from then, however long
    // it waited to go (its deadline only says when its connection is opened
    // again to send it again).
    void Sent(SteadyClock::time_point now, Duration timeout) {
      sent_at = now;
      if (!repeatable) deadline = std::max(deadline, now + timeout);
    }
    int retransmits = 0;
    bool null_call = false;  // procedure 0: goes past max_in_flight (null_queue_)
    bool repeatable = true;  // ClientOptions::repeatable
    bool resent_after_timeout = true;  // ClientOptions::resent_after_timeout
    int home = -1;  // not repeatable: the connection it was lost with
    // Times written to a connection (timeouts and reconnects included),
    // for RpcReply::transmissions.
    uint32_t transmissions = 0;
  };
  // A call's bytes waiting for the pacer.
  struct PacedWrite {
    int conn;
    uint32_t xid;
    std::string bytes;
    size_t written = 0;
  };
  // Closes the socket it owns when it goes.
  class OwnedFd {
   public:
    OwnedFd() = default;
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
    ~OwnedFd() { reset(); }
    void reset(int fd = -1);
    // Gives up ownership; returns the socket (-1 if none).
    int release() { return std::exchange(fd_, -1); }
    bool valid() const { return fd_ >= 0; }

   private:
    int fd_ = -1;
  };
  struct Conn {
    // With TLS: kConnecting -> kProbing (AUTH_TLS probe sent) ->
    // kHandshaking -> kUp.
    enum class State { kDown, kConnecting, kProbing, kHandshaking, kUp } state = State::kDown;
    BuffereventPtr bev;
    std::unique_ptr<RecordReader> reader;
    std::unique_ptr<Timer> retry;
    // Bounds the AUTH_TLS probe and the TLS handshake: a peer that accepts
    // TCP and never answers (or a path that drops what follows) fails the
    // connection, which is then tried again, rather than holding it for ever.
    std::unique_ptr<Timer> setup;
    // The delay before the next reconnect. It goes back to reconnect_min
    // only once a connection has proved good: it carried a reply, or stayed
    // up reconnect_max. A server that drops each connection as soon as it
    // is made (one at its connection limit; in TLS 1.3 one refusing the
    // client's certificate after the client's handshake is done) is then
    // tried with a growing delay, not every reconnect_min.
    Duration backoff{};
    bool answered = false;  // a reply came on this connection
    SteadyClock::time_point up_since{};
    size_t outstanding = 0;
    uint16_t local_port = 0;  // source port of the last good connection
    int port_failures = 0;    // failed connects from local_port since it was up
    // A socket bound to local_port from the moment the connection was lost
    // (or a connect from it failed) until the next connect uses it: the
    // port cannot be bound meanwhile by another socket, ours or another
    // program's (which would leave the resent calls to come from another
    // port, unknown to the server's duplicate request cache).
    OwnedFd held;
    uint32_t probe_xid = 0;
    // Calls that are not repeatable, lost with this connection: sent again
    // on it, first, once it is back.
    std::deque<uint32_t> resend;
  };
  struct ConnArg {
    RpcClient* client;
    int index;
  };

  void Connect(int i);
  void OnConnEvent(int i, short what);
  void OnConnRead(int i);
  void ConnUp(int i);
  // How long the AUTH_TLS probe and the handshake may take together: the
  // call timeout, at most 30 s.
  Duration TlsSetupTimeout() const;
  Duration ConnectTimeout() const;
  // TLS steps: the probe's reply on connection `i`, then the handshake.
  void OnProbeReply(int i);
  void StartHandshake(int i);
  // Logs why TLS failed on connection `i` and treats it as lost.
  void TlsFailed(int i, const std::string& why);
  void SetCallbacks(int i);
  // Connection `i` is gone (or closed on purpose): its calls go again. A
  // loss that `counts` counts against each of its calls (one that lost its
  // connection too often fails); the proxy's own reopen for a call that
  // may not run twice does not. `port_busy`: a connect that could not bind
  // the connection's old source port.
  void ConnLost(int i, const std::string& why, bool counts = true, bool port_busy = false);
  void Pump();
  void SweepDeadlines();
  int PickConnection() const;
  // Makes `xid` in flight on connection `i` and writes it there.
  void PutOn(int i, uint32_t xid, Pending& p);
  // Writes the call `xid` on connection `i`, now or through the pacer.
  void WriteCall(int i, uint32_t xid, Pending& p);
  void PaceOut();
  void RetransmitOverdue(SteadyClock::time_point now);
  // Loses the connections whose path went silent (dead_path_timeout).
  void CheckPaths(SteadyClock::time_point now);
  // A TCP socket of the server's family, non-blocking; -1 on failure.
  // `shared`: SO_REUSEADDR set before it is bound, to bind again a port of
  // this client's that an earlier socket still has (its TIME_WAIT, a held
  // port). A socket taking a new port gets it only after its bind
  // (SharePort): bound with it, it could take a port another connection
  // holds for its resends (bindresvport binds ports by number).
  int NewSocket(bool shared) const;
  // Returns a non-blocking socket (SO_REUSEADDR) bound as the options and
  // `c` say (the held one, if `c` holds its port), -1 to let libevent make
  // one (no socket could be made), or kPortBusy when `c`'s old source port
  // cannot be bound yet.
  static constexpr int kPortBusy = -2;
  int MakeSocket(Conn& c);

  event_base* base_;
  ClientOptions options_;
  std::vector<Conn> conns_;
  std::vector<std::unique_ptr<ConnArg>> conn_args_;
  std::unordered_map<uint32_t, Pending> pending_;
  std::deque<uint32_t> queue_;  // XIDs waiting to be sent, in order
  // NULL calls waiting for a connection: they go past max_in_flight and
  // max_queued (an outage probe must reach a server whose calls fill every
  // slot), also after a lost connection.
  std::deque<uint32_t> null_queue_;
  size_t in_flight_ = 0;
  uint32_t next_xid_;
  bool shut_down_ = false;
  bool hold_deadlines_ = false;
  Timer sweep_;
  ClientStats stats_;
  // Pacing and retransmission (SetPacingRate, SetRetransmitTimeout).
  double pacing_rate_ = 0;
  double tokens_ = 0;
  SteadyClock::time_point tokens_at_{};
  SteadyClock::time_point paths_checked_{};
  std::deque<PacedWrite> paced_;
  Timer pace_timer_;
  Duration rto_{};
};

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_RPC_CLIENT_H_
