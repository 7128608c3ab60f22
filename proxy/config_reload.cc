#include "proxy/config_reload.h"

#include <algorithm>
#include <chrono>

namespace nfsedge {

namespace {

#define NFSEDGE_KEY(name, reload, field)                                                          \
  ReloadKey {                                                                                     \
    name, KeyReload::reload, [](const Config& a, const Config& b) { return a.field == b.field; }, \
        [](const Config& from, Config* to) { to->field = from.field; }                            \
  }

std::vector<ReloadKey> MakeReloadKeys() {
  return {
      NFSEDGE_KEY("server.listen", kRestart, server.listen),
      NFSEDGE_KEY("server.nfs_port", kRestart, server.nfs_port),
      NFSEDGE_KEY("server.mount_port", kRestart, server.mount_port),
      NFSEDGE_KEY("server.rpcbind", kRestart, server.rpcbind),
      NFSEDGE_KEY("server.max_connections", kLive, server.max_connections),
      NFSEDGE_KEY("server.max_connections_per_client", kLive, server.max_connections_per_client),
      NFSEDGE_KEY("server.max_calls_per_connection", kLive, server.max_calls_per_connection),
      NFSEDGE_KEY("server.max_held_call_bytes", kLive, server.max_held_call_bytes),
      NFSEDGE_KEY("server.idle_timeout_s", kLive, server.idle_timeout_s),
      NFSEDGE_KEY("server.drc_entries", kRestart, server.drc_entries),
      NFSEDGE_KEY("server.max_record_size", kRestart, server.max_record_size),
      NFSEDGE_KEY("server.max_handles", kRestart, server.max_handles),
      NFSEDGE_KEY("server.handle_store", kRestart, server.handle_store),
      NFSEDGE_KEY("server.shutdown_grace", kLive, server.shutdown_grace),
      NFSEDGE_KEY("server.tls_cert_file", kRestart, server.tls_cert_file),
      NFSEDGE_KEY("server.tls_key_file", kRestart, server.tls_key_file),
      NFSEDGE_KEY("server.tls_client_ca_file", kRestart, server.tls_client_ca_file),

      NFSEDGE_KEY("upstream.host", kRestart, upstream.host),
      NFSEDGE_KEY("upstream.nfs_port", kRestart, upstream.nfs_port),
      NFSEDGE_KEY("upstream.mount_port", kRestart, upstream.mount_port),
      NFSEDGE_KEY("upstream.connections", kRestart, upstream.connections),
      NFSEDGE_KEY("upstream.max_in_flight", kLive, upstream.max_in_flight),
      NFSEDGE_KEY("upstream.max_queued", kLive, upstream.max_queued),
      NFSEDGE_KEY("upstream.call_timeout_ms", kLive, upstream.call_timeout_ms),
      NFSEDGE_KEY("upstream.reconnect_min_ms", kLive, upstream.reconnect_min_ms),
      NFSEDGE_KEY("upstream.reconnect_max_ms", kLive, upstream.reconnect_max_ms),
      NFSEDGE_KEY("upstream.outage_after_ms", kLive, upstream.outage_after_ms),
      NFSEDGE_KEY("upstream.privileged_port", kRestart, upstream.privileged_port),
      NFSEDGE_KEY("upstream.tls", kRestart, upstream.tls),
      NFSEDGE_KEY("upstream.tls_ca_file", kRestart, upstream.tls_ca_file),
      NFSEDGE_KEY("upstream.tls_server_name", kRestart, upstream.tls_server_name),
      NFSEDGE_KEY("upstream.tls_cert_file", kRestart, upstream.tls_cert_file),
      NFSEDGE_KEY("upstream.tls_key_file", kRestart, upstream.tls_key_file),

      NFSEDGE_KEY("cache.max_attr_entries", kLive, cache.max_attr_entries),
      NFSEDGE_KEY("cache.max_access_entries", kLive, cache.max_access_entries),
      NFSEDGE_KEY("cache.max_name_entries", kLive, cache.max_name_entries),
      NFSEDGE_KEY("cache.max_dir_bytes", kLive, cache.max_dir_bytes),
      NFSEDGE_KEY("cache.max_link_bytes", kLive, cache.max_link_bytes),
      NFSEDGE_KEY("cache.refresh_ahead_ms", kLive, cache.refresh_ahead_ms),
      NFSEDGE_KEY("cache.memory_bytes", kLiveWhileNonZero, cache.memory_bytes),
      NFSEDGE_KEY("cache.block_size", kRestart, cache.block_size),
      NFSEDGE_KEY("cache.disk_dir", kRestart, cache.disk_dir),
      NFSEDGE_KEY("cache.disk_bytes", kLive, cache.disk_bytes),
      NFSEDGE_KEY("cache.disk_policy", kRestart, cache.disk_policy),
      NFSEDGE_KEY("cache.disk_threads", kRestart, cache.disk_threads),
      NFSEDGE_KEY("cache.read_size", kRestart, cache.read_size),
      NFSEDGE_KEY("cache.readahead_max_bytes", kRestart, cache.readahead_max_bytes),
      NFSEDGE_KEY("cache.readahead_fetches", kRestart, cache.readahead_fetches),
      NFSEDGE_KEY("cache.readahead_cursors", kRestart, cache.readahead_cursors),

      NFSEDGE_KEY("prefetch.enabled", kRestart, prefetch.enabled),
      NFSEDGE_KEY("prefetch.max_in_flight", kRestart, prefetch.max_in_flight),
      NFSEDGE_KEY("prefetch.max_queue", kRestart, prefetch.max_queue),
      NFSEDGE_KEY("prefetch.depth", kRestart, prefetch.depth),
      NFSEDGE_KEY("prefetch.small_file_bytes", kRestart, prefetch.small_file_bytes),
      NFSEDGE_KEY("prefetch.walk_idle_ms", kRestart, prefetch.walk_idle_ms),

      NFSEDGE_KEY("scheduler.queue_delay_target_ms", kLive, scheduler.queue_delay_target_ms),
      NFSEDGE_KEY("scheduler.base_rtt_window_s", kLive, scheduler.base_rtt_window_s),
      NFSEDGE_KEY("scheduler.max_writes_in_flight", kLive, scheduler.max_writes_in_flight),
      NFSEDGE_KEY("scheduler.background_share_percent", kLive, scheduler.background_share_percent),
      NFSEDGE_KEY("scheduler.max_queued", kLive, scheduler.max_queued),
      NFSEDGE_KEY("scheduler.timeout_floor_ms", kLive, scheduler.timeout_floor_ms),
      NFSEDGE_KEY("scheduler.timeout_ceiling_ms", kLive, scheduler.timeout_ceiling_ms),
      NFSEDGE_KEY("scheduler.pacing", kRestart, scheduler.pacing),

      NFSEDGE_KEY("write.buffer_bytes", kLive, write.buffer_bytes),
      NFSEDGE_KEY("write.file_buffer_bytes", kLive, write.file_buffer_bytes),
      // Learnt from FSINFO at start.
      NFSEDGE_KEY("write.write_size", kRestart, write.write_size),
      NFSEDGE_KEY("write.flush_delay_ms", kLive, write.flush_delay_ms),
      NFSEDGE_KEY("write.max_background", kLive, write.max_background),
      NFSEDGE_KEY("write.journal_dir", kRestart, write.journal_dir),
      NFSEDGE_KEY("write.journal_give_up_s", kLive, write.journal_give_up_s),

      NFSEDGE_KEY("log.level", kLive, log_level),
      NFSEDGE_KEY("log.format", kLive, log.format),
      NFSEDGE_KEY("log.output", kLive, log.output),
      NFSEDGE_KEY("log.repeat_burst", kLive, log.repeat_burst),
      NFSEDGE_KEY("log.repeat_window_s", kLive, log.repeat_window_s),

      NFSEDGE_KEY("metrics.listen", kLive, metrics.listen),

      NFSEDGE_KEY("control.socket", kRestart, control.socket),
      NFSEDGE_KEY("control.socket_mode", kRestart, control.socket_mode),
      NFSEDGE_KEY("control.warm_depth", kLive, control.warm_depth),
      NFSEDGE_KEY("control.warm_file_bytes", kLive, control.warm_file_bytes),
      NFSEDGE_KEY("control.warm_in_flight", kLive, control.warm_in_flight),
  };
}

#undef NFSEDGE_KEY

bool Live(const ReloadKey& k, const Config& in_force, const Config& loaded) {
  switch (k.reload) {
    case KeyReload::kLive:
      return true;
    case KeyReload::kRestart:
      return false;
    case KeyReload::kLiveWhileNonZero:
      return (in_force.cache.memory_bytes == 0) == (loaded.cache.memory_bytes == 0);
  }
  return false;
}

}  // namespace

const std::vector<ReloadKey>& ReloadKeys() {
  static const std::vector<ReloadKey> keys = MakeReloadKeys();
  return keys;
}

ReloadPlan PlanReload(const Config& in_force, const Config& loaded, bool journal_open) {
  ReloadPlan plan{in_force, {}, {}};
  plan.next.exports = loaded.exports;
  // An export's TLS takes effect with the certificate it needs: without one
  // in force (it waits for a restart), an export in force keeps its `tls`.
  if (in_force.server.tls_cert_file.empty()) {
    for (size_t i = 0; i < plan.next.exports.size(); ++i) {
      ExportConfig& e = plan.next.exports[i];
      if (e.tls == ExportTls::kOff) continue;
      auto was = std::find_if(in_force.exports.begin(), in_force.exports.end(),
                              [&](const ExportConfig& x) { return x.path == e.path; });
      if (was == in_force.exports.end()) continue;  // new: refused until the restart
      e.tls = was->tls;
      plan.restart.emplace_back("[[export]] #" + std::to_string(i + 1) + " tls");
    }
  }
  // The edge journal is opened at start only: without one open, an
  // export's write_back waits for the restart.
  for (size_t i = 0; i < plan.next.exports.size() && !journal_open; ++i) {
    ExportConfig& e = plan.next.exports[i];
    if (!e.write_back) continue;
    e.write_back = false;
    plan.restart.emplace_back("[[export]] #" + std::to_string(i + 1) + " write_back");
  }
  for (const ReloadKey& k : ReloadKeys()) {
    if (k.same(in_force, loaded)) continue;
    if (Live(k, in_force, loaded)) {
      k.take(loaded, &plan.next);
      plan.applied.emplace_back(k.name);
    } else {
      plan.restart.emplace_back(k.name);
    }
  }
  return plan;
}

ServerOptions ServerLimitsOf(const ServerConfig& s) {
  ServerOptions o;
  o.max_connections = s.max_connections;
  o.max_connections_per_client = s.max_connections_per_client;
  o.idle_timeout = std::chrono::seconds(s.idle_timeout_s);
  o.max_calls_per_connection = s.max_calls_per_connection;
  o.max_held_call_bytes = static_cast<size_t>(s.max_held_call_bytes);
  o.max_record_size = s.max_record_size;
  return o;
}

ClientOptions ClientLimitsOf(const UpstreamConfig& u) {
  ClientOptions o;
  o.connections = static_cast<int>(u.connections);
  o.max_in_flight = u.max_in_flight;
  o.max_queued = u.max_queued;
  o.timeout = std::chrono::milliseconds(u.call_timeout_ms);
  o.reconnect_min = std::chrono::milliseconds(u.reconnect_min_ms);
  o.reconnect_max = std::chrono::milliseconds(u.reconnect_max_ms);
  o.privileged_port = u.privileged_port;
  return o;
}

SchedulerOptions SchedulerOptionsOf(const SchedulerConfig& c, const UpstreamConfig& u) {
  SchedulerOptions so;
  so.queue_timeout = std::chrono::milliseconds(u.call_timeout_ms);
  so.congestion.queue_delay_target = std::chrono::milliseconds(c.queue_delay_target_ms);
  so.congestion.base_rtt_window = std::chrono::seconds(c.base_rtt_window_s);
  so.congestion.rto_floor = std::chrono::milliseconds(c.timeout_floor_ms);
  so.congestion.rto_ceiling = std::chrono::milliseconds(c.timeout_ceiling_ms);
  so.max_writes_in_flight = c.max_writes_in_flight;
  so.background_share_percent = c.background_share_percent;
  so.max_queued = c.max_queued;
  return so;
}

WritePathOptions WritePathOptionsOf(const WriteConfig& w) {
  WritePathOptions o;
  o.max_bytes = w.buffer_bytes;
  o.max_file_bytes = w.file_buffer_bytes;
  o.write_size = static_cast<uint32_t>(w.write_size);
  o.flush_delay = std::chrono::milliseconds(w.flush_delay_ms);
  o.max_background = w.max_background;
  o.journal_give_up = std::chrono::seconds(w.journal_give_up_s);
  return o;
}

Duration OutagePollOf(const UpstreamConfig& u) {
  return std::clamp<Duration>(std::chrono::milliseconds(u.outage_after_ms / 5),
                              std::chrono::milliseconds(10), std::chrono::seconds(1));
}

}  // namespace nfsedge
