// nfsedge-wan: the WAN emulator program. See wan_options.h (or --help) for the command line and
// relay.h / link_model.h for what it emulates.
//
// Lifecycle: parse options, listen, print "nfsedge-wan ready ..." on stdout, relay until
// --duration elapses or SIGTERM / SIGINT arrives, write the stats file, exit 0. SIGUSR1 writes
// the stats file without stopping. Exit status 2: bad command line; 1: cannot listen, or the
// final stats file could not be written.

#include <sched.h>
#include <signal.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "clock.h"
#include "libevent_util.h"
#include "relay.h"
#include "wan_options.h"
#include "wan_stats.h"

namespace nfsedge::wan {
namespace {

struct Program {
  event_base* base;
  const WanStats* stats;
  std::string stats_path;
  const char* stop_reason = "loop ended";
};

Status WriteStats(const Program& p) {
  if (p.stats_path.empty()) return Status::OK();
  return WriteStatsFile(*p.stats, p.stats_path);
}

void OnStatsSignal(evutil_socket_t, short, void* arg) {
  const auto* p = static_cast<const Program*>(arg);
  if (Status s = WriteStats(*p); !s.ok()) {
    std::fprintf(stderr, "nfsedge-wan: stats: %s\n", s.ToString().c_str());
  }
}

void OnStopSignal(evutil_socket_t sig, short, void* arg) {
  auto* p = static_cast<Program*>(arg);
  p->stop_reason = sig == SIGINT ? "SIGINT" : "SIGTERM";
  event_base_loopbreak(p->base);
}

void OnDuration(evutil_socket_t, short, void* arg) {
  auto* p = static_cast<Program*>(arg);
  p->stop_reason = "duration elapsed";
  event_base_loopbreak(p->base);
}

int Run(const WanOptions& options) {
  StatusOr<UniqueEventBase> base_or = NewPreciseEventBase();
  if (!base_or.ok()) {
    std::fprintf(stderr, "nfsedge-wan: %s\n", base_or.status().ToString().c_str());
    return 1;
  }
  event_base* base = base_or.value().get();
  MonotonicClock clock;
  WanStats stats;
  Program program{base, &stats, options.stats_path};

  // Signals first: a harness may signal as soon as it has read the ready line.
  UniqueEvent usr1(evsignal_new(base, SIGUSR1, &OnStatsSignal, &program));
  UniqueEvent term(evsignal_new(base, SIGTERM, &OnStopSignal, &program));
  UniqueEvent intr(evsignal_new(base, SIGINT, &OnStopSignal, &program));
  UniqueEvent duration(evtimer_new(base, &OnDuration, &program));
  if (!usr1 || !term || !intr || !duration || evsignal_add(usr1.get(), nullptr) != 0 ||
      evsignal_add(term.get(), nullptr) != 0 || evsignal_add(intr.get(), nullptr) != 0) {
    std::fprintf(stderr, "nfsedge-wan: cannot install signal handlers\n");
    return 1;
  }

  if (options.rt_priority > 0) {
    sched_param param = {};
    param.sched_priority = options.rt_priority;
    if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
      std::fprintf(stderr, "nfsedge-wan: --rt-priority: %s\n", std::strerror(errno));
      return 1;
    }
  }

  Relay relay(base, &clock, options.relay, &stats);
  if (Status s = relay.Start(); !s.ok()) {
    std::fprintf(stderr, "nfsedge-wan: %s\n", s.ToString().c_str());
    return 1;
  }
  ArmTimerNanos(duration.get(), std::llround(options.duration_seconds * kNanosPerSecond));
  std::printf("nfsedge-wan ready %s\n", relay.Describe().c_str());
  std::fflush(stdout);

  event_base_dispatch(base);

  std::fprintf(stderr,
               "nfsedge-wan: stopping (%s): up %llu bytes, down %llu bytes, %llu connections\n",
               program.stop_reason, static_cast<unsigned long long>(stats.up_bytes),
               static_cast<unsigned long long>(stats.down_bytes),
               static_cast<unsigned long long>(stats.connections));
  if (Status s = WriteStats(program); !s.ok()) {
    std::fprintf(stderr, "nfsedge-wan: stats: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace nfsedge::wan

int main(int argc, char** argv) {
  using nfsedge::wan::kWanUsage;
  // A peer closing while we write must be an error value, not a fatal signal.
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  nfsedge::wan::StatusOr<nfsedge::wan::WanOptions> options = nfsedge::wan::ParseWanArgs(args);
  if (!options.ok()) {
    std::fprintf(stderr, "nfsedge-wan: %s (see --help)\n", options.status().ToString().c_str());
    return 2;
  }
  if (options.value().help) {
    std::fputs(kWanUsage, stdout);
    return 0;
  }
  return nfsedge::wan::Run(options.value());
}
