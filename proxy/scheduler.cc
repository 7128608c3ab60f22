#include "proxy/scheduler.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "rpc/auth_sys.h"

namespace nfsedge {

namespace {

// NFSv3 procedures the scheduler tells apart (RFC 1813).
constexpr uint32_t kProgNfs = 100003;
constexpr uint32_t kProcRead = 6;
constexpr uint32_t kProcWrite = 7;
constexpr uint32_t kProcReaddir = 16;
constexpr uint32_t kProcReaddirplus = 17;
constexpr uint32_t kProcCommit = 21;

// Bytes of RPC and NFS headers around a call and its reply.
constexpr uint64_t kCallOverhead = 200;

// An interactive call handed upstream this close to a data call's last
// byte met the same queue on the path.
constexpr Duration kMetaNear = std::chrono::milliseconds(60);

// Returns the big-endian uint32 that ends `args` (READ's count, READDIR's
// count, READDIRPLUS's maxcount), or 0.
uint64_t TrailingCount(std::string_view args) {
  if (args.size() < 4) return 0;
  const auto* p = reinterpret_cast<const unsigned char*>(args.data() + args.size() - 4);
  return (uint64_t{p[0]} << 24) | (uint64_t{p[1]} << 16) | (uint64_t{p[2]} << 8) | p[3];
}

// The bytes a call puts on the path: its arguments, and for calls whose
// reply carries data, the most the reply may carry, or what the caller
// expects it to carry when that is less (a READ to the end of a file whose
// size it knows: counted at its count, a tree walk's READs of small files
// would fill the window many times over with bytes that never come).
uint64_t CallBytes(uint32_t prog, uint32_t proc, std::string_view args,
                   std::optional<uint64_t> expected_reply) {
  uint64_t bytes = args.size() + kCallOverhead;
  if (prog == kProgNfs && (proc == kProcRead || proc == kProcReaddir || proc == kProcReaddirplus)) {
    uint64_t reply = std::min<uint64_t>(TrailingCount(args), 64u << 20);
    if (expected_reply) reply = std::min(reply, *expected_reply);
    bytes += reply;
  }
  return bytes;
}

bool IsWrite(uint32_t prog, uint32_t proc) { return prog == kProgNfs && proc == kProcWrite; }

// The client a call is made for: the machine name of an AUTH_SYS
// credential, else the credential's bytes.
std::string ClientKey(const OpaqueAuth& cred) {
  if (cred.flavor == kAuthSys) {
    if (std::optional<AuthSys> a = DecodeAuthSys(cred.body)) return "sys:" + a->machine;
  }
  return std::to_string(cred.flavor) + ":" + cred.body;
}

}  // namespace

const char* CallClassName(CallClass c) {
  switch (c) {
    case CallClass::kInteractive:
      return "interactive";
    case CallClass::kClientData:
      return "client_data";
    case CallClass::kBackground:
      return "background";
  }
  return "?";
}

class UpstreamScheduler::Facade : public RpcCaller {
 public:
  Facade(UpstreamScheduler* s, CallClass c) : s_(s), c_(c) {}
  Status Call(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
              std::string_view args, ReplyCallback done) override {
    return s_->Submit(Class(prog, proc), prog, vers, proc, cred, args, std::move(done));
  }
  Status CallExpecting(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
                       std::string_view args, uint64_t expected_reply,
                       ReplyCallback done) override {
    return s_->Submit(Class(prog, proc), prog, vers, proc, cred, args, std::move(done),
                      expected_reply);
  }

 private:
  // Data calls made on the interactive caller are client data.
  CallClass Class(uint32_t prog, uint32_t proc) const {
    if (c_ == CallClass::kInteractive && prog == kProgNfs &&
        (proc == kProcRead || proc == kProcWrite || proc == kProcCommit)) {
      return CallClass::kClientData;
    }
    return c_;
  }

  UpstreamScheduler* const s_;
  const CallClass c_;
};

UpstreamScheduler::UpstreamScheduler(const Clock& clock, RpcCaller& metadata, RpcCaller& bulk,
                                     SchedulerOptions options, SchedulerHooks hooks)
    : clock_(clock),
      metadata_(metadata),
      bulk_(bulk),
      options_(options),
      hooks_(std::move(hooks)),
      cc_(options.congestion) {
  for (int i = 0; i < kCallClasses; ++i) {
    facades_[i] = std::make_unique<Facade>(this, static_cast<CallClass>(i));
  }
}

RpcCaller& UpstreamScheduler::Caller(CallClass c) { return *facades_[static_cast<int>(c)]; }

UpstreamScheduler::~UpstreamScheduler() { *alive_ = false; }

void UpstreamScheduler::Shutdown(const Status& why) {
  shut_down_ = true;
  std::vector<ReplyCallback> waiting;
  for (ClassQueue& q : queues_) {
    for (auto& [key, cq] : q.clients) {
      for (Queued& c : cq.calls) waiting.push_back(std::move(c.done));
    }
    q.clients.clear();
    q.size = 0;
  }
  queued_ = 0;
  for (ReplyCallback& done : waiting) done(why);
}

Status UpstreamScheduler::Submit(CallClass cls, uint32_t prog, uint32_t vers, uint32_t proc,
                                 const OpaqueAuth& cred, std::string_view args,
                                 ReplyCallback done, std::optional<uint64_t> expected_reply) {
  if (shut_down_) return Status(StatusCode::kCancelled, "upstream scheduler is shut down");
  const uint64_t bytes = CallBytes(prog, proc, args, expected_reply);
  if (cls == CallClass::kInteractive) {
    Status s = Send(cls, prog, vers, proc, cred, args, std::move(done), bytes);
    if (s.ok()) stats_.calls[0]++;
    return s;
  }
  ClassQueue& q = queues_[cls == CallClass::kClientData ? 0 : 1];
  const bool write = IsWrite(prog, proc);
  // Straight through when nothing waits in either class and there is room:
  // the transport then runs `done` later, never from in here. (A client
  // call that passed waiting background calls here would earn them no
  // share: small calls that fit the room a reply freed, one after the
  // other, would hold back a larger background call, a write-behind flush
  // a client COMMIT waits for, for as long as they came. Through Pump, it
  // still goes at once unless the background's share is due.)
  if (queues_[0].size == 0 && queues_[1].size == 0 && cc_.CanSend(bytes) &&
      !(write && WriteCapped())) {
    Status s = Send(cls, prog, vers, proc, cred, args, std::move(done), bytes);
    if (s.ok()) stats_.calls[static_cast<int>(cls)]++;
    return s;
  }
  if (queued_ >= options_.max_queued) {
    stats_.refused++;
    return ResourceExhausted("upstream scheduler: " + std::to_string(queued_) +
                             " calls waiting (scheduler.max_queued)");
  }
  if (write && WriteCapped() && cc_.CanSend(bytes)) stats_.write_cap_waits++;
  std::string key = ClientKey(cred);
  auto [it, fresh] = q.clients.try_emplace(std::move(key));
  if (fresh) it->second.served = q.vtime;
  const uint64_t id = ++next_id_;
  it->second.calls.push_back(
      Queued{cls, prog, vers, proc, cred, std::string(args), std::move(done), bytes, id,
             clock_.MonoNow()});
  q.size++;
  queued_++;
  // It may pass calls held by the write cap. A lane's refusal of it is this
  // call's status; other calls a lane refuses now wait for the next Pump (a
  // reply), rather than being answered from inside this Call.
  const bool nested = in_submit_;
  in_submit_ = true;
  submitted_id_ = id;
  submit_status_ = Status::Ok();
  submitted_sent_ = false;
  Pump();
  in_submit_ = nested;
  if (!submit_status_.ok()) {
    Status s = submit_status_;
    submit_status_ = Status::Ok();
    return s;
  }
  stats_.calls[static_cast<int>(cls)]++;
  // (One that Pump sent at once did not wait.)
  if (!submitted_sent_) stats_.waited[static_cast<int>(cls)]++;
  return Status::Ok();
}

std::map<std::string, UpstreamScheduler::ClientQueue>::iterator UpstreamScheduler::PickClient(
    ClassQueue& q, size_t* index) {
  auto best = q.clients.end();
  const bool capped = WriteCapped();
  for (auto it = q.clients.begin(); it != q.clients.end(); ++it) {
    const std::deque<Queued>& calls = it->second.calls;
    // A client's calls go in order, except that a WRITE held by the cap
    // does not hold back its other calls.
    size_t i = 0;
    while (i < calls.size() && capped && IsWrite(calls[i].prog, calls[i].proc)) ++i;
    if (i == calls.size()) {
      // Nothing it could send: it banks no share over the clients sent
      // meanwhile (it counts as one that just came).
      it->second.served = std::max(it->second.served, q.vtime);
      continue;
    }
    if (best == q.clients.end() || it->second.served < best->second.served) {
      best = it;
      *index = i;
    }
  }
  return best;
}

void UpstreamScheduler::SetOptions(const SchedulerOptions& options) {
  options_ = options;
  cc_.SetOptions(options.congestion);
  // Only once round trips were measured: before that the transport keeps
  // its own timeout, as at start.
  if (cc_.stats().samples > 0) PassTimeouts();
  Pump();
}

void UpstreamScheduler::Pump() {
  if (pumping_) {
    pump_again_ = true;
    return;
  }
  pumping_ = true;
  do {
    pump_again_ = false;
    for (;;) {
      // Client data first, unless background has credit left.
      size_t data_index = 0, background_index = 0;
      const auto data = PickClient(queues_[0], &data_index);
      const auto background = PickClient(queues_[1], &background_index);
      const bool data_sendable = data != queues_[0].clients.end();
      const bool background_sendable = background != queues_[1].clients.end();
      if (!data_sendable && !background_sendable) break;
      const bool take_background =
          background_sendable && (!data_sendable || background_credit_ > 0);
      ClassQueue* q = take_background ? &queues_[1] : &queues_[0];
      const auto client = take_background ? background : data;
      const size_t index = take_background ? background_index : data_index;
      Queued call = std::move(client->second.calls[index]);
      if (!cc_.CanSend(call.bytes)) {
        client->second.calls[index] = std::move(call);
        break;  // the window is full: wait for replies, in class order
      }
      client->second.calls.erase(client->second.calls.begin() + static_cast<long>(index));
      client->second.served += call.bytes;
      q->vtime = client->second.served;
      if (client->second.calls.empty()) q->clients.erase(client);
      q->size--;
      queued_--;
      const double credit_before = background_credit_;
      if (call.cls == CallClass::kBackground) {
        // It owes client data only what it took from calls that could go
        // (not from client data all held by the write cap).
        if (data_sendable) {
          background_credit_ -= call.bytes;
        } else if (queues_[0].size == 0) {
          background_credit_ = 0;
        }
      } else if (queues_[1].size > 0) {
        const double share = std::min(options_.background_share_percent, 99u) / 100.0;
        background_credit_ =
            std::min(background_credit_ + call.bytes * share / (1 - share), kMaxBackgroundCredit);
      } else {
        background_credit_ = 0;
      }
      ReplyCallback done = std::move(call.done);
      Status s = Send(call.cls, call.prog, call.vers, call.proc, call.cred, call.args,
                      [done](StatusOr<RpcReply> r) { done(std::move(r)); }, call.bytes);
      if (s.ok()) {
        if (call.id == submitted_id_) submitted_sent_ = true;
        continue;
      }
      // Refused by its lane (the transport's queue is full): the bytes it
      // was counted for are given back (its client's place among the
      // others, and the background's credit, as before it was taken).
      background_credit_ = credit_before;
      auto [cit, fresh] = q->clients.try_emplace(ClientKey(call.cred));
      ClientQueue& cq = cit->second;
      if (fresh) cq.served = q->vtime;  // what it had: q->vtime was set to it
      cq.served -= std::min(cq.served, call.bytes);
      if (in_submit_ && call.id == submitted_id_) {
        submit_status_ = s;  // refused to Submit's caller
        if (cq.calls.empty()) q->clients.erase(cit);
        continue;
      }
      // Back to the head of its client's queue, for the next Pump (a
      // reply, or the next sweep: the lane has room again once it has
      // written what it queued), not failed: no other call can go now.
      call.done = std::move(done);
      cq.calls.push_front(std::move(call));
      q->size++;
      queued_++;
      refused_waiting_ = true;
      pump_again_ = false;
      break;
    }
  } while (pump_again_);
  pumping_ = false;
  if (queues_[0].size == 0 && queues_[1].size == 0) cc_.SetAppLimited();
}

Status UpstreamScheduler::Send(CallClass cls, uint32_t prog, uint32_t vers, uint32_t proc,
                               const OpaqueAuth& cred, std::string_view args, ReplyCallback done,
                               uint64_t bytes) {
  const MonoTime now = clock_.MonoNow();
  CongestionController::Ticket t = cc_.OnSend(bytes, now, cls != CallClass::kInteractive);
  const bool write = IsWrite(prog, proc);
  if (write) {
    cc_.MarkOutbound(&t);
    writes_in_flight_++;
  }
  // Its own bytes, without the data its reply may carry (see CallBytes).
  const uint64_t own = args.size() + kCallOverhead;
  RpcCaller& lane = cls == CallClass::kInteractive ? metadata_ : bulk_;
  if (cls != CallClass::kInteractive && hooks_.set_pacing_rate) {
    hooks_.set_pacing_rate(cc_.applied_pacing_rate());
  }
  std::weak_ptr<bool> alive = alive_;
  const uint64_t flight = ++next_flight_;
  flights_.emplace(flight, Flight{t, now});
  Status s = lane.Call(prog, vers, proc, cred, args,
                       [this, alive, flight, own, now, proc, write, done = std::move(done)](
                           StatusOr<RpcReply> r) {
                         if (auto a = alive.lock(); a && *a) {
                           if (write) writes_in_flight_--;
                           auto it = flights_.find(flight);
                           if (it != flights_.end()) {
                             const CongestionController::Ticket ticket = it->second.ticket;
                             flights_.erase(it);
                             OnReply(proc, ticket, own, now, r);
                           }
                         }
                         done(std::move(r));
                       });
  if (!s.ok()) {
    if (write) writes_in_flight_--;
    flights_.erase(flight);
    cc_.OnFailure(t);
  }
  return s;
}

void UpstreamScheduler::OnReply(uint32_t proc, CongestionController::Ticket t, uint64_t own,
                                MonoTime submitted, const StatusOr<RpcReply>& r) {
  const MonoTime now = clock_.MonoNow();
  if (r.ok()) answered_handed_ = std::max(answered_handed_, submitted);
  if (r.ok()) {
    // A reply that carried less than the call was counted at (a READ
    // answered short, at end of file) answered the call's own bytes and its
    // size on the wire, not the count the call asked for.
    CongestionController::SetAnswered(&t, own + r->record.size());
  }
  if (t.released) {
    // Its bytes left the window while the server held it: its round trip
    // is the hold, and its bytes crossed the link long ago (counted now,
    // they would raise the next rate sample). Nothing for the controller.
  } else if (!r.ok() || proc == kProcCommit || proc >= proc_min_rtt_.size()) {
    cc_.OnFailure(t);
  } else if (r->transmissions > 1) {
    // Sent more than once: the reply may answer any of the transmissions,
    // so it times no round trip, for the controller or for the procedure's
    // least (Karn's rule).
    cc_.OnRetransmittedReply(t, now);
  } else {
    MonoTime sent = submitted;
    if (r->sent_at.time_since_epoch().count() != 0) {
      sent = std::max(submitted, std::chrono::time_point_cast<Duration>(r->sent_at));
    }
    sent = std::min(sent, now);
    // Normalize: this procedure's least round trip above the least of any.
    Duration rtt = now - sent;
    Duration& mine = proc_min_rtt_[proc];
    // A procedure's first round trip is all taken for server time: its
    // transfer sample is then measured without that correction (it would
    // leave nothing of it).
    const bool first = mine == Duration::zero();
    if (first || rtt < mine) mine = std::max(rtt, Duration(1));
    Duration least = mine;
    for (Duration d : proc_min_rtt_) {
      if (d != Duration::zero()) least = std::min(least, d);
    }
    Duration service = mine - least;
    if (!t.bulk) {
      meta_[next_meta_++ % kMetaSamples] = MetaSample{submitted, rtt - mine};
    } else {
      // When an interactive call met the path's queue at about the moment
      // this call's last byte joined it, the rest of its round trip is the
      // server's: the least of those bounds the correction.
      // None left (the queue drained between the two, or an outage held
      // the interactive call): no server time to learn, not none.
      if (std::optional<Duration> queue = MetaQueueNear(sent)) {
        const Duration server = rtt - least - *queue;
        Duration& known = proc_service_[proc];
        if (server > Duration::zero() && (known == Duration::zero() || server < known)) {
          known = server;
        }
      }
      if (proc_service_[proc] != Duration::zero()) {
        service = std::min(service, proc_service_[proc]);
      }
    }
    cc_.OnReply(t, sent, now, service,
                first ? std::optional<Duration>(Duration::zero()) : std::nullopt);
  }
  if (hooks_.set_pacing_rate) hooks_.set_pacing_rate(cc_.applied_pacing_rate());
  PassTimeouts();
  Pump();
}

void UpstreamScheduler::PassTimeouts() {
  Duration least = Duration::max(), most = Duration::zero();
  for (Duration d : proc_min_rtt_) {
    if (d == Duration::zero()) continue;
    least = std::min(least, d);
    most = std::max(most, d);
  }
  // At most the ceiling: one sample of a rare procedure taken while an
  // outage held its deadline must not put off every retransmission.
  const Duration own = most > least ? most - least : Duration::zero();
  transport_rto_ = cc_.rto() + std::min(own, options_.congestion.rto_ceiling);
  if (hooks_.set_retransmit_timeout) hooks_.set_retransmit_timeout(transport_rto_);
}

void UpstreamScheduler::Sweep() {
  if (held_ || shut_down_) return;
  const MonoTime now = clock_.MonoNow();
  const bool expired = ExpireWaiting(now);
  // (Also after expiries: the call that did not fit may have gone. And
  // after a lane refused a call: it may take it now.)
  const bool refused = std::exchange(refused_waiting_, false);
  if (ReleaseStalled(now) || expired || refused) Pump();
}

void UpstreamScheduler::HoldDeadlines(bool hold) {
  if (held_ && !hold) {
    const MonoTime now = clock_.MonoNow();
    for (ClassQueue& q : queues_) {
      for (auto& [key, cq] : q.clients) {
        for (Queued& c : cq.calls) c.since = std::max(c.since, now);
      }
    }
    // Calls in flight through the outage are timed again from its end.
    for (auto& [id, f] : flights_) f.handed = std::max(f.handed, now);
  }
  held_ = hold;
}

bool UpstreamScheduler::ExpireWaiting(MonoTime now) {
  const Duration limit = options_.queue_timeout;
  if (limit <= Duration::zero() || queued_ == 0) return false;
  std::vector<ReplyCallback> expired;
  for (ClassQueue& q : queues_) {
    for (auto it = q.clients.begin(); it != q.clients.end();) {
      std::deque<Queued>& calls = it->second.calls;
      for (auto c = calls.begin(); c != calls.end();) {
        if (now - c->since < limit) {
          ++c;
          continue;
        }
        expired.push_back(std::move(c->done));
        c = calls.erase(c);
        q.size--;
        queued_--;
      }
      it = calls.empty() ? q.clients.erase(it) : std::next(it);
    }
  }
  if (expired.empty()) return false;
  stats_.timeouts += expired.size();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(limit).count();
  const Status why = Timeout("upstream scheduler: no room to send the call within " +
                             std::to_string(ms) + " ms (upstream.call_timeout_ms)");
  // (Their callbacks may make calls: the queues are consistent by now.)
  for (ReplyCallback& done : expired) done(why);
  return true;
}

bool UpstreamScheduler::ReleaseStalled(MonoTime now) {
  // The lower of the rates known: a pacer probing above the link, or one
  // held below the rate measured after a drop, lets the bytes out slower.
  const CongestionStats c = cc_.stats();
  double rate = 0;
  for (double r : {c.delivery_rate, cc_.applied_pacing_rate()}) {
    if (r > 0) rate = rate > 0 ? std::min(rate, r) : r;
  }
  if (rate <= 0) rate = c.pacing_rate;  // the samples aged out during a long hold
  if (rate <= 0 || transport_rto_ <= Duration::zero()) return false;
  bool any = false, unproven = false;
  for (auto& [id, f] : flights_) {
    CongestionController::Ticket& t = f.ticket;
    if (t.released) continue;
    // When its bytes, and those ahead of it, were through the path at the
    // latest.
    const MonoTime through =
        f.handed + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(
                       static_cast<double>(t.ahead + t.bytes) / rate));
    if (now - through < transport_rto_) continue;
    // Only while the path and the server answer calls handed after that:
    // a silent path (not yet taken for an outage) holds every call, and
    // the window must hold too.
    if (answered_handed_ <= through) {
      unproven = true;
      continue;
    }
    cc_.OnStalled(&t);
    stats_.stalled++;
    any = true;
  }
  if (unproven) Probe(now);
  return any;
}

void UpstreamScheduler::Probe(MonoTime now) {
  if (probing_) return;
  probing_ = true;
  stats_.probes++;
  std::weak_ptr<bool> alive = alive_;
  Status s = metadata_.Call(kProgNfs, 3, 0, OpaqueAuth{}, "",
                            [this, alive, now](StatusOr<RpcReply> r) {
                              auto a = alive.lock();
                              if (!a || !*a) return;
                              probing_ = false;
                              if (r.ok()) answered_handed_ = std::max(answered_handed_, now);
                            });
  if (!s.ok()) probing_ = false;
}

std::optional<Duration> UpstreamScheduler::MetaQueueNear(MonoTime at) const {
  std::optional<Duration> best;
  Duration best_gap = kMetaNear;
  for (const MetaSample& m : meta_) {
    if (m.sent == MonoTime{}) continue;
    Duration gap = m.sent > at ? m.sent - at : at - m.sent;
    if (gap <= best_gap) {
      best_gap = gap;
      best = m.queue;
    }
  }
  return best;
}

SchedulerStats UpstreamScheduler::stats() const {
  SchedulerStats s = stats_;
  s.congestion = cc_.stats();
  s.queued[1] = queues_[0].size;
  s.queued[2] = queues_[1].size;
  s.writes_in_flight = writes_in_flight_;
  return s;
}

std::string UpstreamScheduler::StatsLine() const {
  SchedulerStats s = stats();
  const CongestionStats& c = s.congestion;
  auto us = [](Duration d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); };
  std::ostringstream line;
  line << "stats scheduler base_rtt_us=" << us(c.base_rtt) << " rtt_us=" << us(c.last_rtt)
       << " srtt_us=" << us(c.srtt) << " rto_ms=" << us(c.rto) / 1000
       << " window=" << c.window << " in_flight=" << c.in_flight
       << " delivery_rate=" << static_cast<uint64_t>(c.delivery_rate)
       << " pacing_rate=" << static_cast<uint64_t>(c.pacing_rate) << " rounds=" << c.rounds
       << " increases=" << c.increases << " decreases=" << c.decreases
       << " base_resets=" << c.base_resets << " writes_in_flight=" << s.writes_in_flight
       << " write_cap_waits=" << s.write_cap_waits << " refused=" << s.refused
       << " timeouts=" << s.timeouts << " stalled=" << s.stalled << " probes=" << s.probes;
  for (int i = 0; i < kCallClasses; ++i) {
    const char* name = CallClassName(static_cast<CallClass>(i));
    line << " " << name << "=" << s.calls[i] << "/" << s.waited[i] << "/" << s.queued[i];
  }
  line << " (calls/waited/queued)";
  return line.str();
}

}  // namespace nfsedge
