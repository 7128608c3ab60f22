// WanOptions: the command line of nfsedge-wan, parsed and validated.
//
//   nfsedge-wan --map LISTEN=TARGET[,rpc=0] [--map ...] --duration SECONDS
//               [--delay-ms MS | --up-delay-ms MS --down-delay-ms MS]
//               [--rate-bps BPS | --up-rate-bps BPS --down-rate-bps BPS]
//               [--queue-bytes N | --up-queue-bytes N --down-queue-bytes N]
//               [--max-inflight-bytes N] [--stats FILE] [--rt-priority N]
//               [--capture-dir DIR]
//
// Options also accept the --name=value form. The per-direction forms override the shared one,
// whatever their order. See kWanUsage for the meaning of each.
//
// Thread safety: ParseWanArgs() is thread-safe (it may resolve host names).

#ifndef NFSEDGE_TESTS_WAN_WAN_OPTIONS_H_
#define NFSEDGE_TESTS_WAN_WAN_OPTIONS_H_

#include <string>
#include <vector>

#include "relay.h"
#include "status.h"

namespace nfsedge::wan {

extern const char kWanUsage[];

struct WanOptions {
  RelayConfig relay;
  double duration_seconds = 0;  // Required: the emulator always stops by itself.
  std::string stats_path;       // Empty: no stats file.
  int rt_priority = 0;          // 1-99: run under SCHED_FIFO at this priority; 0: do not.
  bool help = false;            // --help was given; nothing else is meaningful.
};

// Parses `args` (without the program name). Returns the validated options, or
// InvalidArgument naming the offending argument.
StatusOr<WanOptions> ParseWanArgs(const std::vector<std::string>& args);

// Parses one --map value: "LISTEN_HOST:PORT=TARGET_HOST:PORT[,rpc=0|1]", where a host is an IPv4
// address, a bracketed IPv6 address or a name resolved once, now.
StatusOr<Mapping> ParseMapping(const std::string& spec);

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_WAN_OPTIONS_H_
