// CallMeter: counts and times RPC calls on both sides of the proxy, by
// program, procedure and result: replies to clients (latency from the
// call's arrival to its reply) and calls to the upstream across the WAN
// (latency from send to reply), and the READ/WRITE bytes per file for
// `nfsedge status` (top files by traffic). The daemon feeds it from the
// RpcServer's and the upstream RpcClients' observers, so every call is
// seen, whoever makes it.
//
// Results are named like the protocol's: "ok", NFS3ERR_x as "x" in lower
// case ("noent", "stale", "jukebox"), an RPC-level refusal as its accept or
// reject status ("garbage_args", "denied"), and for upstream calls without a
// reply the reason ("timeout", "unavailable", "error").
//
// Thread-safety: not synchronized; used on the event loop's thread.
#ifndef NFSEDGE_PROXY_CALL_METER_H_
#define NFSEDGE_PROXY_CALL_METER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "proxy/metrics.h"
#include "rpc/event_loop.h"
#include "rpc/rpc_caller.h"
#include "rpc/status.h"
#include "rpc/rpc_message.h"

namespace nfsedge {

struct FileTraffic {
  std::string fh;  // upstream file handle (raw bytes)
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
};

class CallMeter {
 public:
  // `max_files`: files whose traffic is tracked at most; beyond it the
  // quieter half is forgotten.
  explicit CallMeter(size_t max_files = 4096) : max_files_(max_files) {}

  // A reply (`reply`: the whole RPC reply message) to the client call with
  // header `h` and arguments `args`, `elapsed` after the call arrived.
  void ObserveClient(const CallHeader& h, std::string_view args, std::string_view reply,
                     Duration elapsed);
  // The outcome of an upstream call `elapsed` after it was sent.
  void ObserveUpstream(uint32_t prog, uint32_t proc, const StatusOr<RpcReply>& reply,
                       Duration elapsed);

  // Returns up to `n` files with the most READ+WRITE bytes, busiest first.
  std::vector<FileTraffic> TopFiles(size_t n) const;
  // Returns the number of upstream calls with result `result` (all procs).
  uint64_t UpstreamCalls(std::string_view result) const;

  // Writes nfsedge_client_calls_total, nfsedge_client_latency_seconds,
  // nfsedge_upstream_calls_total, nfsedge_upstream_latency_seconds,
  // nfsedge_client_bytes_total.
  void Collect(MetricsWriter& w) const;

  // The result name of an RPC reply message (see the file comment).
  static std::string ResultOf(uint32_t prog, uint32_t proc, std::string_view reply);

 private:
  using Key = std::tuple<uint32_t, uint32_t, std::string>;  // prog, proc, result
  struct Side {
    std::map<Key, uint64_t> calls;
    std::map<std::pair<uint32_t, uint32_t>, Histogram> latency;
    void Observe(uint32_t prog, uint32_t proc, std::string result, Duration elapsed);
    void Collect(MetricsWriter& w, const char* side, const char* calls_help,
                 const char* latency_help) const;
  };
  void CountFileBytes(uint32_t proc, std::string_view args);

  const size_t max_files_;
  Side client_, upstream_;
  std::unordered_map<std::string, FileTraffic> files_;
  uint64_t read_bytes_ = 0, write_bytes_ = 0;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_CALL_METER_H_
