// Config reload: which keys change in a running daemon and which need a
// restart, and the config in force after a reload.
//
// Every key outside [[export]] is listed in ReloadKeys() as live (the
// daemon applies it at once, see Daemon::Reload) or restart (listen
// addresses, ports, the upstream's address, TLS files, store paths, sizes
// fixed when a component is built). [[export]] tables change in place as a
// whole (ExportTable::Update), except their paths. A unit test checks that
// the list covers every key the parser accepts and that docs/config.md
// ("## Reload") names the same restart keys.
//
// Thread-safety: plain functions over values.
#ifndef NFSEDGE_PROXY_CONFIG_RELOAD_H_
#define NFSEDGE_PROXY_CONFIG_RELOAD_H_

#include <string>
#include <vector>

#include "proxy/config.h"
#include "proxy/scheduler.h"
#include "proxy/write_path.h"
#include "rpc/rpc_client.h"
#include "rpc/rpc_server.h"

namespace nfsedge {

enum class KeyReload {
  kLive,     // applied by a reload
  kRestart,  // a reload keeps the value in force and logs the key
  // cache.memory_bytes: live between non-zero values; turning the data
  // cache on (from 0) or off (to 0) needs a restart.
  kLiveWhileNonZero,
};

struct ReloadKey {
  const char* name;  // "table.key", as in the file
  KeyReload reload;
  bool (*same)(const Config& a, const Config& b);
  void (*take)(const Config& from, Config* to);  // copies the key's value
};

// Every key outside [[export]].
const std::vector<ReloadKey>& ReloadKeys();

struct ReloadPlan {
  // The config in force after the reload: the one in force with the loaded
  // file's [[export]] tables and live keys.
  Config next;
  std::vector<std::string> applied;  // live keys whose value changed
  std::vector<std::string> restart;  // keys whose new value waits for a restart
};

// Compares the config in force with `loaded` (the file just read), for a
// daemon whose edge journal is open iff `journal_open`. The plan's exports
// are what ExportTable::Update is to be given.
ReloadPlan PlanReload(const Config& in_force, const Config& loaded, bool journal_open = false);

// The options of the live limits, as the daemon builds its components with
// (and hands them again to the setters on a reload).
ServerOptions ServerLimitsOf(const ServerConfig& s);
ClientOptions ClientLimitsOf(const UpstreamConfig& u);
SchedulerOptions SchedulerOptionsOf(const SchedulerConfig& c, const UpstreamConfig& u);
// The buffer bounds and timings of [write] (no journal, verifier or
// transfer size: the daemon adds those at start).
WritePathOptions WritePathOptionsOf(const WriteConfig& w);
// How often the outage detector is polled: a fifth of outage_after_ms,
// within 10 ms..1 s.
Duration OutagePollOf(const UpstreamConfig& u);

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_CONFIG_RELOAD_H_
