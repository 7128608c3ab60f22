// OutageDetector: tells whether the upstream is "out", from the calls the
// proxy makes to it.
//
// Definition: the upstream is out when at least one call has been waiting
// for `after` (on the wire, or queued in the transport because no connection
// can be made), no reply at all has come from the upstream in that time,
// and a NULL call sent then (the probe, if one is set) has not been answered
// within kProbeWait (or `after`, if shorter) or ended without a reply. The
// outage is over at the next reply, whatever it says (an NFS error is a
// reply; a local time-out or a lost connection is not). So a slow upstream
// that still answers something every `after` is never out, nor one that
// answers the NULL at once while one call of it is slow (a long COMMIT, a
// 1 MiB READ on a slow link), and an idle one is never out either: nothing
// waits for it.
//
// Calls are seen through Watch(): a decorator of an RpcCaller (the daemon
// wraps both upstream lanes) that counts every call in and every outcome
// out. Poll(), run from a periodic timer (the daemon's, or a test's), sends
// the probe and starts the outage; a reply ends it at once. While out,
// Poll() sends a NULL call through the probe caller (one at a time), so that
// the end is seen even when every client call is answered from the cache.
// Start and end are logged, with how long the outage lasted; listeners
// (SetListener) run after each change, on the same thread.
//
// Thread-safety: none; used on the event loop's thread.
#ifndef NFSEDGE_PROXY_OUTAGE_H_
#define NFSEDGE_PROXY_OUTAGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/clock.h"
#include "rpc/rpc_caller.h"

namespace nfsedge {

struct OutageStats {
  uint64_t outages = 0;  // outages started
  uint64_t probes = 0;   // NULL calls sent (before declaring an outage, and while out)
  Duration total_out{};  // time out, ended outages only
};

class OutageDetector {
 public:
  // REQUIRES: after > 0.
  OutageDetector(const Clock& clock, Duration after);
  ~OutageDetector();
  OutageDetector(const OutageDetector&) = delete;
  OutageDetector& operator=(const OutageDetector&) = delete;

  // Returns a caller that forwards to `inner` and reports to this detector.
  // It lives as long as the detector; `inner` must outlive it.
  RpcCaller& Watch(RpcCaller& inner);
  // The caller Poll() sends its NULL probes through (a watched one); null =
  // no probes.
  void SetProbe(RpcCaller* probe) { probe_ = probe; }
  // `fn(out)` runs after the state changes.
  void SetListener(std::function<void(bool out)> fn) { listener_ = std::move(fn); }
  // Sets how long calls wait without a reply before the upstream is out
  // (config reload); applies from the next Poll().
  void SetAfter(Duration after) { after_ = after; }

  // What a watched caller reports; public for tests of the rule itself.
  void CallStarted();
  // `replied`: an RPC reply came (any status); false for local errors.
  void CallEnded(bool replied);

  // Starts an outage if the rule says so; sends a probe if out and idle.
  // Returns true iff the state changed.
  bool Poll();

  bool out() const { return out_; }
  size_t waiting() const { return waiting_; }
  const OutageStats& stats() const { return stats_; }

 private:
  class Watched;
  void SetOut(bool out, const std::string& why);

  const Clock& clock_;
  Duration after_;
  std::vector<std::unique_ptr<Watched>> watched_;
  RpcCaller* probe_ = nullptr;
  std::function<void(bool)> listener_;
  size_t waiting_ = 0;      // calls started and not ended
  MonoTime quiet_since_{};  // last reply, or when a call began waiting with none waiting
  MonoTime out_since_{};
  bool out_ = false;
  // The latest probe: `probe_gen_` tells its answer from an older one's
  // (one sent in an earlier outage may still be waiting).
  uint64_t probe_gen_ = 0;
  bool probing_ = false;     // it is waiting
  MonoTime probe_at_{};      // when it was sent
  bool probe_lost_ = false;  // it ended without a reply
  static constexpr Duration kProbeWait = std::chrono::seconds(1);
  void SendProbe();
  OutageStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_OUTAGE_H_
