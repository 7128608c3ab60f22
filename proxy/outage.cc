#include "proxy/outage.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "proxy/nfs_procs.h"
#include "rpc/log.h"

namespace nfsedge {

namespace {

int64_t Millis(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

class OutageDetector::Watched final : public RpcCaller {
 public:
  Watched(OutageDetector& detector, RpcCaller& inner) : detector_(detector), inner_(inner) {}

  Status Call(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
              std::string_view args, ReplyCallback done) override {
    OutageDetector& d = detector_;
    d.CallStarted();
    Status s = inner_.Call(prog, vers, proc, cred, args,
                           [&d, done = std::move(done)](StatusOr<RpcReply> r) {
                             d.CallEnded(r.ok());
                             done(std::move(r));
                           });
    if (!s.ok()) d.CallEnded(false);  // never queued: `done` will not run
    return s;
  }

 private:
  OutageDetector& detector_;
  RpcCaller& inner_;
};

OutageDetector::OutageDetector(const Clock& clock, Duration after) : clock_(clock), after_(after) {}

OutageDetector::~OutageDetector() = default;

RpcCaller& OutageDetector::Watch(RpcCaller& inner) {
  watched_.push_back(std::make_unique<Watched>(*this, inner));
  return *watched_.back();
}

void OutageDetector::CallStarted() {
  if (waiting_ == 0) quiet_since_ = clock_.MonoNow();
  waiting_++;
}

void OutageDetector::CallEnded(bool replied) {
  if (waiting_ > 0) waiting_--;
  if (!replied) return;
  quiet_since_ = clock_.MonoNow();
  if (out_) SetOut(false, "a reply came");
}

bool OutageDetector::Poll() {
  const MonoTime now = clock_.MonoNow();
  if (!out_) {
    if (waiting_ == 0 || now - quiet_since_ < after_) return false;
    // The calls waiting may just be slow (a long COMMIT, a large READ on a
    // slow link): a server that answers a NULL at once is not out. A probe
    // of this quiet period, that is: one sent before it says nothing now.
    if (probe_ != nullptr) {
      const bool this_period = probe_at_ >= quiet_since_ && (probing_ || probe_lost_);
      if (!this_period) SendProbe();
      if (probing_ && now - probe_at_ < std::min(after_, kProbeWait)) return false;
      // Lost, or not answered in time: out.
    }
    SetOut(true, "calls waiting, no reply for " + std::to_string(Millis(now - quiet_since_)) +
                     " ms" + (probe_ != nullptr ? ", nor to a NULL call" : ""));
    return true;
  }
  // A probe whenever out, one at a time, so that the end is seen even when
  // nothing else is sent.
  if (probe_ != nullptr && !probing_) SendProbe();
  return false;
}

void OutageDetector::SendProbe() {
  const uint64_t gen = ++probe_gen_;
  probing_ = true;
  probe_lost_ = false;
  probe_at_ = clock_.MonoNow();
  stats_.probes++;
  Status s = probe_->Call(kNfsProgram, kNfsVersion, NFSPROC3_NULL, OpaqueAuth{}, "",
                          [this, gen](StatusOr<RpcReply> r) {
                            if (gen != probe_gen_) return;  // an older probe
                            probing_ = false;
                            probe_lost_ = !r.ok();
                          });
  if (!s.ok()) {
    probing_ = false;
    probe_lost_ = true;
  }
}

void OutageDetector::SetOut(bool out, const std::string& why) {
  out_ = out;
  const MonoTime now = clock_.MonoNow();
  if (out) {
    out_since_ = now;
    stats_.outages++;
    NFSEDGE_LOG(kWarn) << "upstream outage began: " << why << " (" << waiting_
                       << " calls waiting); exports with serve_stale_on_outage answer from "
                          "expired cache entries until it ends";
  } else {
    stats_.total_out += now - out_since_;
    NFSEDGE_LOG(kWarn) << "upstream outage ended after " << Millis(now - out_since_)
                       << " ms: " << why;
  }
  if (listener_) listener_(out);
}

}  // namespace nfsedge
