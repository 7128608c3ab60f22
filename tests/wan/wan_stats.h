// WanStats: the cumulative counters of one WAN emulator run, and their JSON stats file.
//
// The file written by WriteStatsFile() looks like
//   {"up_bytes":N,"down_bytes":N,"connections":N,"replies":N,
//    "calls":{"100003":{"1":N,...},"100005":{...}},
//    "calls_by_name":{"NFS3.GETATTR":N,"MOUNT3.MNT":N,...},
//    "connect_failures":N,"non_rpc_streams":N,"malformed_records":N,
//    "up_link":{"bytes":N,"pauses":N,"max_backlog_bytes":N},"down_link":{...}}
// "calls" is keyed by program then procedure number (summed over versions); "calls_by_name"
// holds the calls whose program, version and procedure have a name in rpc_names.h.
//
// Thread safety: a plain value; the relay updates it from its loop thread only.

#ifndef NFSEDGE_TESTS_WAN_WAN_STATS_H_
#define NFSEDGE_TESTS_WAN_WAN_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "link_pipe.h"
#include "rpc_record_parser.h"
#include "status.h"

namespace nfsedge::wan {

struct WanStats {
  uint64_t up_bytes = 0;          // Bytes read from clients (toward the servers).
  uint64_t down_bytes = 0;        // Bytes read from servers (toward the clients).
  uint64_t connections = 0;       // Client connections accepted.
  uint64_t connect_failures = 0;  // Of those, whose connection to the target failed.
  uint64_t replies = 0;           // RPC replies seen toward the clients.
  uint64_t non_rpc_streams = 0;   // Streams of rpc=1 mappings given up as not RPC.
  uint64_t malformed_records = 0;
  // RPC calls seen toward the servers, by (program, version, procedure).
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint64_t> calls;
  LinkCounters up_link;
  LinkCounters down_link;

  void CountCall(const RpcMessageHeader& call) { ++calls[{call.prog, call.vers, call.proc}]; }

  // Returns the number of calls counted for `prog` / `proc`, all versions.
  uint64_t CallCount(uint32_t prog, uint32_t proc) const;
};

// Returns the stats as one line of JSON (no trailing newline).
std::string StatsToJson(const WanStats& stats);

// Writes StatsToJson() and a newline to `path` atomically: to a temporary file in the same
// directory, then rename(2) over `path`. Returns OK iff the file was replaced.
Status WriteStatsFile(const WanStats& stats, const std::string& path);

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_WAN_STATS_H_
