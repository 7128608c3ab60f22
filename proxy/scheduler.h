// UpstreamScheduler: every NFS call to the upstream passes here, in one of
// three classes, ahead of the transport (two RpcCallers: a metadata lane and
// a bulk lane, which the daemon makes as two RpcClients so that small calls
// never wait behind a large one's bytes on the same connection):
//
//  - kInteractive: metadata for a client that is waiting (GETATTR, LOOKUP,
//    ACCESS, READDIR*, mutations...). Sent at once on the metadata lane,
//    never held behind bulk data; counted as bytes in flight.
//  - kClientData: a client's READ, WRITE and COMMIT. Calls made through the
//    interactive facade with those procedures land here. The daemon also
//    hands this class to the read path (ReadPath), so every upstream call
//    the data cache makes is client data: fetches for a waiting client,
//    read-ahead (a client READ often waits on a block that read-ahead is
//    already fetching), the whole-file fetches of tree-walk prefetch, and
//    the GETATTRs that revalidate blocks.
//  - kBackground: write-behind flushes, the tree-walk prefetcher's metadata
//    calls, refresh-ahead.
//
// Client data and background calls go on the bulk lane when the congestion
// window (proxy/congestion.h) has room, client data first, except that
// background keeps `background_share_percent` of the bytes sent while both
// wait (what it could not use, held back, is kept up to 256 KiB; what it
// sends while all client data waiting is held by the write cap is not
// taken from client data's part). Within a class, clients (told apart by
// the AUTH_SYS machine name of the call's credential) share the bytes
// fairly: the next call is the one of the client that has been sent the
// fewest bytes while it had calls waiting that could go (a client whose
// calls are all WRITEs held by the cap banks nothing meanwhile).
// WRITEs in flight never exceed `max_writes_in_flight`, whatever the window.
//
// Every reply is a round-trip sample for the controller (from the moment
// the call's last byte left, RpcReply::sent_at, when the transport says so),
// normalized per procedure so that a server's own work (a FILE_SYNC write's
// fsync) is not taken for queueing: the procedure's least round trip above
// the least of any, bounded by what remains of a data call's round trip
// once the queue that an interactive call met at about the same moment is
// taken off (a standing queue that every WRITE meets is not server time);
// a procedure's first sample is all server time, but its transfer sample
// is not corrected. COMMIT gives no sample, nor does the reply to a call the
// transport sent more than once (RpcReply::transmissions; Karn's rule: which
// transmission it answers is not known), though its bytes count as
// delivered; nor that of a call whose bytes left the window while the
// server held it (Sweep), which delivers nothing either. A call waiting
// here longer than queue_timeout fails, unsent (Sweep). A reply delivers
// the call's own bytes (arguments and headers) and its size on the wire,
// at most what the call was counted at: a READ
// answered short (at end of file) delivers less than its count. Before each
// bulk call and after each reply the scheduler passes the controller's
// applied pacing rate (and after each reply the retransmission timeout) to
// the transport through SchedulerHooks.
//
// Thread-safety: none; everything runs on the event loop's thread. Callbacks
// are never run from inside Call().
#ifndef NFSEDGE_PROXY_SCHEDULER_H_
#define NFSEDGE_PROXY_SCHEDULER_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cache/clock.h"
#include "proxy/congestion.h"
#include "rpc/rpc_caller.h"

namespace nfsedge {

enum class CallClass : uint8_t { kInteractive = 0, kClientData = 1, kBackground = 2 };
inline constexpr int kCallClasses = 3;
const char* CallClassName(CallClass c);

struct SchedulerOptions {
  CongestionOptions congestion;
  // WRITE calls in flight upstream at most.
  uint32_t max_writes_in_flight = 4;
  // Share of the bulk bytes background work keeps while client data waits.
  uint32_t background_share_percent = 10;
  // Calls waiting in the scheduler at most (all classes); beyond that Call
  // refuses with ResourceExhausted.
  size_t max_queued = 4096;
  // A call that has waited this long in the scheduler (not counting time
  // while deadlines are held) fails with Timeout, never sent; 0 = never.
  // The daemon gives it upstream.call_timeout_ms.
  Duration queue_timeout{};
};

// What the scheduler tells the transport below; either may be empty.
struct SchedulerHooks {
  std::function<void(double bytes_per_second)> set_pacing_rate;
  std::function<void(Duration)> set_retransmit_timeout;
};

struct SchedulerStats {
  CongestionStats congestion;
  std::array<uint64_t, kCallClasses> calls{};   // accepted
  std::array<uint64_t, kCallClasses> queued{};  // waiting now
  std::array<uint64_t, kCallClasses> waited{};  // calls that had to wait
  uint64_t writes_in_flight = 0;
  uint64_t write_cap_waits = 0;  // times a WRITE waited for the cap alone
  uint64_t refused = 0;
  uint64_t timeouts = 0;  // waiting calls failed at queue_timeout
  uint64_t stalled = 0;   // calls whose bytes left the window before their reply
  uint64_t probes = 0;    // NULL calls sent to tell a held call from a dead path
};

class UpstreamScheduler {
 public:
  // `metadata` carries interactive metadata, `bulk` everything else; they
  // may be the same caller. Destroying the scheduler drops waiting calls
  // without running their callbacks (as RpcClient does): Shutdown first.
  UpstreamScheduler(const Clock& clock, RpcCaller& metadata, RpcCaller& bulk,
                    SchedulerOptions options, SchedulerHooks hooks = {});
  ~UpstreamScheduler();
  UpstreamScheduler(const UpstreamScheduler&) = delete;
  UpstreamScheduler& operator=(const UpstreamScheduler&) = delete;

  // The RpcCaller of class `c`: hand it to the component that makes calls
  // of that class. Lives as long as the scheduler.
  RpcCaller& Caller(CallClass c);

  // Fails every waiting call with `why`; calls made afterwards are refused
  // (Cancelled). Calls already sent are the transport's to end.
  void Shutdown(const Status& why);

  // Replaces the options (config reload): the congestion controller's
  // bounds, the write cap, the background share and the queue bound; calls
  // that a higher cap now admits are sent at once.
  void SetOptions(const SchedulerOptions& options);

  // Run about once a second (the daemon's outage poll): fails the waiting
  // calls that reached queue_timeout, and takes out of the window the bytes
  // of every call the server holds: one without a reply for the
  // retransmission timeout after its bytes and those ahead of it were
  // through the path at the link's rate (the lower of the rate measured
  // and the pacing rate applied; none before one is known), while a call
  // handed upstream after that was answered (a reply, or a NULL call the
  // scheduler sends on the metadata lane to find out), so that the path and
  // the server work. Such a call is in the server's hands, not on the path
  // (a frozen file system, a hung backend): without this, a few large
  // WRITEs the server holds would keep every READ waiting for as long as it
  // holds them. Its reply still ends it (and, for a WRITE, frees its place
  // under max_writes_in_flight: the cap is the server's, and holds), with
  // no sample for the controller (its round trip is the server's hold).
  // Does nothing while deadlines are held.
  void Sweep();
  // While held (the upstream is out), waiting calls do not reach their
  // deadline and no call leaves the window; released, every waiting call
  // has a whole queue_timeout from then on.
  void HoldDeadlines(bool hold);

  SchedulerStats stats() const;
  // Background calls waiting to be sent now.
  size_t background_waiting() const { return queues_[1].size; }
  // One line of counters for the log ("stats scheduler ...").
  std::string StatsLine() const;

 private:
  class Facade;
  struct Queued {
    CallClass cls;
    uint32_t prog, vers, proc;
    OpaqueAuth cred;
    std::string args;
    ReplyCallback done;
    uint64_t bytes;
    uint64_t id = 0;
    MonoTime since;  // queued, or the deadlines were last released
  };
  // A call handed to a lane and not answered yet.
  struct Flight {
    CongestionController::Ticket ticket;
    MonoTime handed;
  };
  struct ClientQueue {
    std::deque<Queued> calls;
    uint64_t served = 0;  // bytes sent while backlogged (fair-queueing tag)
  };
  struct ClassQueue {
    std::map<std::string, ClientQueue> clients;  // only clients with calls waiting
    uint64_t vtime = 0;  // tag of the last call sent
    size_t size = 0;
  };

  // `expected_reply`: see RpcCaller::CallExpecting.
  Status Submit(CallClass cls, uint32_t prog, uint32_t vers, uint32_t proc,
                const OpaqueAuth& cred, std::string_view args, ReplyCallback done,
                std::optional<uint64_t> expected_reply = std::nullopt);
  // Sends what the window, the write cap and the class order allow.
  void Pump();
  // Returns the client of `q` whose next sendable call comes first, or
  // clients.end(); `*index` is that call's place in the client's queue.
  std::map<std::string, ClientQueue>::iterator PickClient(ClassQueue& q, size_t* index);
  Status Send(CallClass cls, uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
              std::string_view args, ReplyCallback done, uint64_t bytes);
  // The call of `t` (whose own bytes, arguments and headers, are `own`),
  // handed upstream at `submitted`, ended with `r`.
  void OnReply(uint32_t proc, CongestionController::Ticket t, uint64_t own, MonoTime submitted,
               const StatusOr<RpcReply>& r);
  // Returns the queueing delay met by the interactive call handed upstream
  // nearest to `at` (within kMetaNear), if one was answered.
  std::optional<Duration> MetaQueueNear(MonoTime at) const;
  // Gives the transport the retransmission timeout: the controller's, made
  // of round trips without the procedures' own times, and the longest of
  // those (a 1 MiB READ's reply streaming for 4 s on a 2 Mbit/s link is not
  // late, nor a FILE_SYNC WRITE the server syncs), at most the ceiling.
  void PassTimeouts();
  // Fails the waiting calls that reached queue_timeout at `now`; returns
  // true iff any.
  bool ExpireWaiting(MonoTime now);
  // Takes the calls held past their time out of the window; returns true
  // iff any. Sends a NULL call (Probe) when one is past its time but no
  // call handed later was answered yet.
  bool ReleaseStalled(MonoTime now);
  void Probe(MonoTime now);
  bool WriteCapped() const { return writes_in_flight_ >= options_.max_writes_in_flight; }

  const Clock& clock_;
  RpcCaller& metadata_;
  RpcCaller& bulk_;
  SchedulerOptions options_;
  const SchedulerHooks hooks_;
  std::array<std::unique_ptr<Facade>, kCallClasses> facades_;
  CongestionController cc_;
  // Queues of client data [0] and background [1].
  std::array<ClassQueue, 2> queues_;
  size_t queued_ = 0;
  uint64_t writes_in_flight_ = 0;
  // Calls handed to a lane, by their number.
  std::map<uint64_t, Flight> flights_;
  uint64_t next_flight_ = 0;
  // The retransmission timeout last given to the transport (PassTimeouts).
  Duration transport_rto_{};
  bool held_ = false;  // HoldDeadlines
  // When the latest call answered (or NULL probe) was handed upstream.
  MonoTime answered_handed_{};
  bool probing_ = false;  // a NULL probe is on its way
  // Bytes background may send ahead of waiting client data. Earned while
  // client data goes and background waits, at most kMaxBackgroundCredit: a
  // background held back (its WRITEs by the write cap) banks no more, else
  // it would then go ahead of client data for as long as it had banked.
  double background_credit_ = 0;
  static constexpr double kMaxBackgroundCredit = 256 << 10;
  // Smallest round trip seen per NFS procedure, to normalize samples.
  std::array<Duration, 32> proc_min_rtt_{};
  // A data procedure's server time (its least round trip less the base
  // less the queue that an interactive call sent at about the same moment
  // met on the same path), once measured; 0 = not yet. Bounds the
  // correction above, which alone would take a standing queue that every
  // call of the procedure meets for server time.
  std::array<Duration, 32> proc_service_{};
  // Queueing delay met by recent interactive calls: when each was handed
  // upstream, and its round trip less its procedure's least.
  struct MetaSample {
    MonoTime sent;
    Duration queue{};
  };
  static constexpr size_t kMetaSamples = 16;
  std::array<MetaSample, kMetaSamples> meta_{};
  size_t next_meta_ = 0;
  bool pumping_ = false, pump_again_ = false;
  // While Submit runs Pump: the call it queued (a lane's refusal of it is
  // Submit's status, its callback never runs), and whether calls refused by
  // a lane go back to wait (their callbacks must not run inside Call).
  bool in_submit_ = false;
  // A lane refused a call Pump took; it waits at the head of its queue for
  // the next Pump, which the next Sweep makes if no reply does.
  bool refused_waiting_ = false;
  uint64_t submitted_id_ = 0, next_id_ = 0;
  Status submit_status_;
  bool submitted_sent_ = false;  // Submit's call left from within its Pump
  bool shut_down_ = false;
  SchedulerStats stats_;
  // Set to false when destroyed, for replies that arrive later.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_SCHEDULER_H_
