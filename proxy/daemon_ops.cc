// Daemon: the parts for operating it: metrics endpoint and collectors,
// control socket, config reload, service manager notifications.
#include <algorithm>
#include <csignal>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <utility>

#include "proxy/config_reload.h"
#include "proxy/daemon.h"
#include "proxy/service_notify.h"
#include "rpc/log.h"

namespace nfsedge {

namespace {

using Events = std::initializer_list<std::pair<const char*, uint64_t>>;

// Writes one counter sample per (label value, count) of `events`.
void CountEach(MetricsWriter& w, const char* name, const char* help, MetricLabels base,
               const char* label, Events events) {
  for (const auto& [value, n] : events) {
    MetricLabels l = base;
    l.emplace_back(label, value);
    w.Counter(name, help, l, static_cast<double>(n));
  }
}

constexpr const char* kLookups = "nfsedge_cache_lookups_total";
constexpr const char* kLookupsHelp = "Cache lookups by cache, tier and result.";
constexpr const char* kEntries = "nfsedge_cache_entries";
constexpr const char* kEntriesHelp = "Entries held, by cache and tier.";
constexpr const char* kEvictions = "nfsedge_cache_evictions_total";
constexpr const char* kEvictionsHelp = "Entries dropped for the size bound, by cache and tier.";

void CollectMetadata(MetricsWriter& w, const MetadataCache& cache, const HandleRegistry& handles) {
  const AttrCacheStats& a = cache.attrs().stats();
  const AccessCacheStats& x = cache.access().stats();
  const NameCacheStats& n = cache.names().stats();
  const DirCacheStats& d = cache.dirs().stats();
  const LinkCacheStats& k = cache.links().stats();
  CountEach(w, kLookups, kLookupsHelp, {{"cache", "attr"}, {"tier", "memory"}}, "result",
            {{"hit", a.hits}, {"miss", a.misses}, {"expired", a.expired}});
  CountEach(w, kLookups, kLookupsHelp, {{"cache", "access"}, {"tier", "memory"}}, "result",
            {{"hit", x.hits}, {"miss", x.misses}, {"expired", x.stale}});
  CountEach(w, kLookups, kLookupsHelp, {{"cache", "name"}, {"tier", "memory"}}, "result",
            {{"hit", n.positive_hits}, {"negative_hit", n.negative_hits}, {"miss", n.misses}});
  CountEach(w, kLookups, kLookupsHelp, {{"cache", "dir"}, {"tier", "memory"}}, "result",
            {{"hit", d.hits}, {"miss", d.misses}, {"expired", d.stale},
             {"continued", d.continued}});
  CountEach(w, kLookups, kLookupsHelp, {{"cache", "link"}, {"tier", "memory"}}, "result",
            {{"hit", k.hits}, {"miss", k.misses}});
  w.Gauge(kEntries, kEntriesHelp, {{"cache", "attr"}, {"tier", "memory"}},
          static_cast<double>(cache.attrs().size()));
  w.Gauge(kEntries, kEntriesHelp, {{"cache", "access"}, {"tier", "memory"}},
          static_cast<double>(cache.access().size()));
  w.Gauge(kEntries, kEntriesHelp, {{"cache", "name"}, {"tier", "memory"}},
          static_cast<double>(cache.names().size()));
  w.Gauge(kEntries, kEntriesHelp, {{"cache", "dir"}, {"tier", "memory"}},
          static_cast<double>(cache.dirs().size()));
  w.Gauge("nfsedge_cache_bytes", "Bytes held, by cache and tier.",
          {{"cache", "dir"}, {"tier", "memory"}}, static_cast<double>(cache.dirs().bytes()));
  w.Gauge(kEntries, kEntriesHelp, {{"cache", "link"}, {"tier", "memory"}},
          static_cast<double>(cache.links().size()));
  w.Gauge("nfsedge_cache_bytes", "Bytes held, by cache and tier.",
          {{"cache", "link"}, {"tier", "memory"}}, static_cast<double>(cache.links().bytes()));
  w.Gauge(kEntries, kEntriesHelp, {{"cache", "handle"}, {"tier", "memory"}},
          static_cast<double>(handles.size()));
  w.Counter(kEvictions, kEvictionsHelp, {{"cache", "attr"}, {"tier", "memory"}},
            static_cast<double>(a.evictions));
  w.Counter(kEvictions, kEvictionsHelp, {{"cache", "access"}, {"tier", "memory"}},
            static_cast<double>(x.evictions));
  w.Counter(kEvictions, kEvictionsHelp, {{"cache", "name"}, {"tier", "memory"}},
            static_cast<double>(n.evictions));
  w.Counter(kEvictions, kEvictionsHelp, {{"cache", "dir"}, {"tier", "memory"}},
            static_cast<double>(d.evictions));
  w.Counter(kEvictions, kEvictionsHelp, {{"cache", "link"}, {"tier", "memory"}},
            static_cast<double>(k.evictions));
  w.Counter(kEvictions, kEvictionsHelp, {{"cache", "handle"}, {"tier", "memory"}},
            static_cast<double>(handles.evictions()));
  CountEach(w, "nfsedge_attr_cache_events_total",
            "Attribute cache events: refresh-ahead candidates, invalidations, replies older "
            "than the fresh entry (ignored) or the expired one (kept, not served), replies that "
            "could not be ordered against it (same ctime), replies whose call left before a "
            "mutation that did not return the object's attributes (not learned), handles "
            "the upstream answered NFS3ERR_STALE for (forgotten), ACCESS entries of a handle and "
            "credential the upstream refused a call (dropped).",
            {}, "event",
            {{"refresh", a.refreshes},
             {"invalidation", a.invalidations},
             {"ignored_older", a.ignored_older},
             {"overtaken", a.overtaken},
             {"ambiguous", a.ambiguous},
             {"before_mutation", cache.attrs_overtaken()},
             {"stale_handle", cache.stale_handles()},
             {"refused_access", cache.refused_access()}});
  w.Counter("nfsedge_name_cache_dirs_dropped_total",
            "Directories whose cached names were dropped (changed behind the proxy).", {},
            static_cast<double>(n.dirs_dropped));
  w.Counter("nfsedge_name_cache_overtaken_total",
            "LOOKUP and listing replies not learned: their call left before a change of their "
            "directory through the proxy was answered.",
            {}, static_cast<double>(cache.names_overtaken()));
}

}  // namespace

void Daemon::AddCollectors() {
  metrics_.Add([](MetricsWriter& w) {
    w.Gauge("nfsedge_build_info", "nfsedge version.", {{"version", "0.1.0"}}, 1);
  });
  metrics_.Add([this](MetricsWriter& w) { meter_.Collect(w); });
  metrics_.Add([this](MetricsWriter& w) {
    const ServerStats& s = server_->stats();
    CountEach(w, "nfsedge_client_connection_events_total",
              "Client connections accepted, refused (max_connections), refused "
              "(max_connections_per_client), closed for a bad record, closed idle, accept() "
              "paused (out of file descriptors or memory), reading paused for "
              "max_held_call_bytes.",
              {}, "event",
              {{"accepted", s.connections_accepted},
               {"refused", s.connections_refused},
               {"refused_per_client", s.connections_refused_per_client},
               {"bad_record", s.bad_records},
               {"idle_closed", s.idle_closed},
               {"accept_paused", s.accept_paused},
               {"held_bytes_wait", s.held_bytes_waits}});
    w.Counter("nfsedge_client_auth_errors_total", "Calls refused for their credential.", {},
              static_cast<double>(s.auth_errors));
    w.Gauge("nfsedge_client_connections", "Client connections open.", {},
            static_cast<double>(server_->connection_count()));
    w.Gauge("nfsedge_client_calls_in_flight", "Client calls received and not yet answered.", {},
            static_cast<double>(server_->calls_in_flight()));
    w.Gauge("nfsedge_client_held_call_bytes",
            "Bytes held for client calls: records read and not yet answered, room kept for "
            "their replies, replies not yet taken (server.max_held_call_bytes).",
            {}, static_cast<double>(server_->held_call_bytes()));
    const DispatchStats& d = dispatcher_->stats();
    CountEach(w, "nfsedge_client_rpc_errors_total",
              "Calls for a program, version or procedure the proxy does not serve.", {}, "error",
              {{"prog_unavail", d.prog_unavail},
               {"prog_mismatch", d.prog_mismatch},
               {"proc_unavail", d.proc_unavail}});
    for (uint32_t i = 0; i < kNfsProcCount; ++i) {
      const NfsProcStats& st = nfs_->stats(i);
      CountEach(w, "nfsedge_nfs_proc_events_total",
                "Per NFS procedure: calls, answers from the metadata cache, refusals by the "
                "proxy, upstream failures (JUKEBOX), speculative calls, calls coalesced.",
                {{"proc", FindNfsProc(i)->name}}, "event",
                {{"calls", st.calls},
                 {"cache_answer", st.cache_answers},
                 {"local_error", st.local_errors},
                 {"upstream_error", st.upstream_errors},
                 {"speculative", st.speculative},
                 {"coalesced", st.coalesced}});
    }
  });
  metrics_.Add([this](MetricsWriter& w) {
    for (const auto& [name, client] :
         {std::pair<const char*, RpcClient*>{"nfs", nfs_upstream_.get()},
          {"nfs_bulk", nfs_bulk_upstream_.get()},
          {"mount", mount_upstream_.get()}}) {
      const ClientStats& u = client->stats();
      CountEach(w, "nfsedge_upstream_rpc_events_total",
                "Upstream RPC client: calls, replies, timeouts, resends, retransmissions on "
                "the same connection, reconnects, calls refused for a full queue (max_queued).",
                {{"client", name}}, "event",
                {{"call", u.calls},
                 {"reply", u.replies},
                 {"timeout", u.timeouts},
                 {"resent", u.resent},
                 {"retransmit", u.retransmits},
                 {"reconnect", u.reconnects},
                 {"refused", u.refused}});
      w.Gauge("nfsedge_upstream_connections_up", "Upstream connections established.",
              {{"client", name}}, client->connections_up());
      w.Gauge("nfsedge_upstream_calls_in_flight", "Upstream calls sent, not yet answered.",
              {{"client", name}}, static_cast<double>(client->in_flight()));
      w.Gauge("nfsedge_upstream_calls_queued", "Upstream calls waiting to be sent.",
              {{"client", name}}, static_cast<double>(client->queued()));
    }
    CollectMetadata(w, cache_, handles_);
    w.Gauge("nfsedge_upstream_outage",
            "1 while the upstream is out (calls waiting, no reply for upstream.outage_after_ms).",
            {}, outage_->out() ? 1 : 0);
    w.Counter("nfsedge_upstream_outages_total", "Upstream outages begun.", {},
              static_cast<double>(outage_->stats().outages));
    for (uint32_t proc :
         {NFSPROC3_GETATTR, NFSPROC3_ACCESS, NFSPROC3_LOOKUP, NFSPROC3_READLINK, NFSPROC3_READ}) {
      w.Counter("nfsedge_stale_answers_total",
                "Answers given from cache entries past their lifetime during an upstream "
                "outage (serve_stale_on_outage), by procedure.",
                {{"proc", FindNfsProc(proc)->name}},
                static_cast<double>(cache_.stale_answers(proc)));
    }
    w.Counter("nfsedge_refresh_ahead_total", "Attributes revalidated before they expired.", {},
              static_cast<double>(refresher_->sent()));
  });
  metrics_.Add([this](MetricsWriter& w) {
    if (!read_path_) return;
    const ReadPathStats& r = read_path_->stats();
    const BlockCacheStats& b = blocks_->stats();
    CountEach(w, kLookups, kLookupsHelp, {{"cache", "data"}, {"tier", "memory"}}, "result",
              {{"hit", b.hits}, {"miss", b.misses}, {"expired", b.stale}});
    w.Gauge("nfsedge_cache_bytes", "Bytes held, by cache and tier.",
            {{"cache", "data"}, {"tier", "memory"}}, static_cast<double>(b.bytes));
    w.Gauge(kEntries, kEntriesHelp, {{"cache", "data"}, {"tier", "memory"}},
            static_cast<double>(b.blocks));
    w.Counter(kEvictions, kEvictionsHelp, {{"cache", "data"}, {"tier", "memory"}},
              static_cast<double>(b.evictions));
    CountEach(w, "nfsedge_readahead_blocks_total",
              "Read-ahead blocks that a client then read (used) or that left the cache unread "
              "(wasted).",
              {}, "result", {{"used", b.readahead_used}, {"wasted", b.readahead_wasted}});
    CountEach(w, "nfsedge_read_path_events_total",
              "READ path: client reads, reads served from the data cache, memory hits, reads "
              "forwarded as is, reads without ACCESS evidence, revalidations, fetches.",
              {}, "event",
              {{"read", r.reads},
               {"served", r.served},
               {"memory_hit", r.memory_hits},
               {"forwarded", r.forwarded},
               {"no_evidence", r.no_evidence},
               {"revalidation", r.revalidations},
               {"fetch", r.fetches},
               {"readahead_fetch", r.readahead_fetches},
               {"tree_fetch", r.tree_fetches},
               {"fetch_error", r.fetch_errors},
               {"overtaken", r.overtaken},
               {"unconfirmed", r.unconfirmed}});
    CountEach(w, "nfsedge_upstream_read_bytes_total",
              "Bytes READ from the upstream by the data cache, on demand or ahead.", {}, "kind",
              {{"fetch", r.fetch_bytes}, {"readahead", r.readahead_bytes}});
    const ReadaheadStats& ra = readahead_->stats();
    w.Gauge("nfsedge_readahead_cursors", "Read-ahead cursors held in the shared pool.", {},
            static_cast<double>(readahead_->cursors()));
    CountEach(w, "nfsedge_readahead_cursor_events_total",
              "Read-ahead cursors started (new), re-used within their file (replaced), taken "
              "from another file at the pool's bound (evicted), and streams whose count was "
              "halved on a jump (slowdown).",
              {}, "event",
              {{"new", ra.new_cursors},
               {"replaced", ra.cursor_replacements},
               {"evicted", ra.cursor_evictions},
               {"slowdown", ra.slowdowns}});
    w.Counter("nfsedge_readahead_advised_total", "Client reads that got read-ahead advice.", {},
              static_cast<double>(ra.advised));
    w.Counter("nfsedge_readahead_advised_bytes_total",
              "Bytes of read-ahead advised (before what was cached or in flight is taken off).",
              {}, static_cast<double>(ra.advised_bytes));
    if (disk_) {
      const DiskTierStats d = disk_->stats();
      CountEach(w, kLookups, kLookupsHelp, {{"cache", "data"}, {"tier", "disk"}}, "result",
                {{"hit", r.disk_hits},
                 {"miss", r.disk_misses}});
      w.Gauge("nfsedge_cache_bytes", "Bytes held, by cache and tier.",
              {{"cache", "data"}, {"tier", "disk"}}, static_cast<double>(d.bytes));
      w.Gauge(kEntries, kEntriesHelp, {{"cache", "data"}, {"tier", "disk"}},
              static_cast<double>(d.entries));
      w.Counter(kEvictions, kEvictionsHelp, {{"cache", "data"}, {"tier", "disk"}},
                static_cast<double>(d.evictions));
      CountEach(w, "nfsedge_disk_tier_events_total",
                "Disk tier: blocks written, writes dropped (queue full), I/O errors, the store "
                "opened again after a failed write.",
                {}, "event",
                {{"put", d.puts},
                 {"dropped_put", d.dropped_puts},
                 {"error", d.errors},
                 {"reopen", d.reopened}});
    }
    const std::optional<Duration> rtt = path_->min_rtt();
    if (rtt) {
      w.Gauge("nfsedge_path_min_rtt_seconds", "Lowest upstream round trip seen (base RTT).", {},
              std::chrono::duration<double>(*rtt).count());
    }
    w.Gauge("nfsedge_path_delivery_rate_bytes", "Measured upstream delivery rate, bytes/s.", {},
            path_->delivery_rate());
    w.Gauge("nfsedge_path_bdp_bytes", "Bandwidth-delay product estimate, bytes.", {},
            static_cast<double>(path_->bdp()));
  });
  metrics_.Add([this](MetricsWriter& w) {
    if (!prefetcher_) return;
    const PrefetchStats& p = prefetcher_->stats();
    CountEach(w, "nfsedge_prefetch_events_total",
              "Tree-walk prefetch: jobs queued and dropped (queue full), listings, ACCESS calls, "
              "small files read, symlink targets read, failed calls, walks started and stopped, jobs of stopped walks "
              "discarded, listings asked again (no longer fresh), client listings that waited "
              "for the prefetcher's, calls kept for later (the upstream's queue full).",
              {}, "event",
              {{"queued", p.queued},
               {"dropped", p.dropped},
               {"list", p.lists},
               {"access", p.access},
               {"file", p.files},
               {"link", p.links},
               {"error", p.errors},
               {"walk", p.walks},
               {"walk_stopped", p.walks_stopped},
               {"discarded", p.discarded},
               {"relist", p.relists},
               {"awaited", p.awaited},
               {"deferred", p.deferred}});
    w.Gauge("nfsedge_prefetch_queue", "Prefetch jobs waiting.", {},
            static_cast<double>(prefetcher_->queued()));
    w.Gauge("nfsedge_prefetch_in_flight", "Prefetch calls in flight.", {},
            static_cast<double>(prefetcher_->in_flight()));
  });
  metrics_.Add([this](MetricsWriter& w) {
    if (!scheduler_) return;
    const SchedulerStats st = scheduler_->stats();
    const CongestionStats& c = st.congestion;
    auto seconds = [](Duration d) { return std::chrono::duration<double>(d).count(); };
    w.Gauge("nfsedge_congestion_base_rtt_seconds",
            "Upstream base round trip (windowed minimum), the congestion controller's reference.",
            {}, seconds(c.base_rtt));
    w.Gauge("nfsedge_congestion_rtt_seconds", "Upstream round trip, smoothed and latest.",
            {{"kind", "smoothed"}}, seconds(c.srtt));
    w.Gauge("nfsedge_congestion_rtt_seconds", "Upstream round trip, smoothed and latest.",
            {{"kind", "latest"}}, seconds(c.last_rtt));
    w.Gauge("nfsedge_congestion_timeout_seconds", "Upstream retransmission timeout in use.", {},
            seconds(c.rto));
    w.Gauge("nfsedge_congestion_window_bytes", "Congestion window for bytes in flight.", {},
            static_cast<double>(c.window));
    w.Gauge("nfsedge_congestion_in_flight_bytes", "Bytes in flight upstream.", {},
            static_cast<double>(c.in_flight));
    w.Gauge("nfsedge_congestion_delivery_rate_bytes", "Measured delivery rate, bytes/s.", {},
            c.delivery_rate);
    w.Gauge("nfsedge_congestion_pacing_rate_bytes", "Pacing rate, bytes/s (0: not paced).", {},
            c.pacing_rate);
    CountEach(w, "nfsedge_congestion_rounds_total",
              "Controller rounds by outcome: rate raised, lowered (queue above target).", {},
              "outcome", {{"increase", c.increases}, {"decrease", c.decreases}});
    for (int i = 0; i < kCallClasses; ++i) {
      const MetricLabels l{{"class", CallClassName(static_cast<CallClass>(i))}};
      w.Counter("nfsedge_scheduler_calls_total", "Upstream calls accepted, by class.", l,
                static_cast<double>(st.calls[i]));
      w.Gauge("nfsedge_scheduler_queued", "Upstream calls waiting to be sent, by class.", l,
              static_cast<double>(st.queued[i]));
      w.Counter("nfsedge_scheduler_waited_total", "Upstream calls that had to wait, by class.",
                l, static_cast<double>(st.waited[i]));
    }
    w.Gauge("nfsedge_scheduler_writes_in_flight", "Upstream WRITEs in flight (capped).", {},
            static_cast<double>(st.writes_in_flight));
    w.Counter("nfsedge_scheduler_write_cap_waits_total",
              "WRITEs that waited for the write cap alone.", {},
              static_cast<double>(st.write_cap_waits));
    CountEach(w, "nfsedge_scheduler_events_total",
              "Upstream calls failed after waiting upstream.call_timeout_ms unsent, calls "
              "whose bytes left the window while the server held them, and NULL probes sent "
              "to tell those from a silent path.",
              {}, "event",
              {{"timeout", st.timeouts}, {"stalled", st.stalled}, {"probe", st.probes}});
  });
  metrics_.Add([this](MetricsWriter& w) {
    if (!journal_) return;
    const WriteJournalStats& j = journal_->stats();
    w.Gauge("nfsedge_write_journal_records",
            "Edge journal depth: acknowledged writes not yet stable upstream (or waiting for "
            "older ones).",
            {}, static_cast<double>(j.records));
    w.Gauge("nfsedge_write_journal_bytes", "Data bytes in the edge journal's records.", {},
            static_cast<double>(j.bytes));
    CountEach(w, "nfsedge_write_journal_events_total",
              "Edge journal events: records appended and removed, synced batches, failed "
              "writes, records found at start.",
              {}, "event",
              {{"append", j.appends},
               {"remove", j.removes},
               {"sync", j.syncs},
               {"error", j.errors},
               {"recovered", j.recovered}});
  });
  metrics_.Add([this](MetricsWriter& w) {
    if (!write_path_) return;
    const WritePathStats& s = write_path_->stats();
    CountEach(w, "nfsedge_write_client_calls_total",
              "Client WRITE/COMMIT calls by how the write path answered them.", {}, "kind",
              {{"stable_gathered", s.gathered},
               {"unstable_buffered", s.buffered_writes},
               {"forwarded", s.forwarded},
               {"commit", s.client_commits}});
    CountEach(w, "nfsedge_write_upstream_calls_total",
              "Upstream calls the write path made: WRITEs, of which FILE_SYNC, and COMMITs.", {},
              "kind",
              {{"write", s.upstream_writes},
               {"file_sync_write", s.sync_writes},
               {"commit", s.upstream_commits}});
    w.Counter("nfsedge_write_upstream_bytes_total", "Bytes the write path wrote upstream.", {},
              static_cast<double>(s.upstream_bytes));
    w.Counter("nfsedge_write_batches_total",
              "Syncing upstream calls made for gathered stable writes (gathered writes per "
              "commit = stable_gathered / batches).",
              {}, static_cast<double>(s.batches));
    w.Counter("nfsedge_write_procrastination_seconds_total",
              "Time stable writes were held in gathering windows.", {},
              static_cast<double>(s.procrastination_us) / 1e6);
    w.Gauge("nfsedge_write_buffered_bytes", "Write-behind bytes buffered, not yet stable.", {},
            static_cast<double>(s.buffered_bytes));
    CountEach(w, "nfsedge_write_events_total",
              "Write path events: writes that waited for buffer room, writes that waited for "
              "another caller's bytes to leave the buffer, reads/getattrs/setattrs held for a "
              "flush, upstream errors kept for clients, bytes resent after a verifier change, "
              "new write verifiers after acknowledged data was lost.",
              {}, "event",
              {{"blocked", s.blocked},
               {"parked", s.parked},
               {"barrier", s.barriers},
               {"error", s.errors},
               {"resent_bytes", s.resent},
               {"verifier_change", s.verifier_changes}});
  });
  metrics_.Add([this](MetricsWriter& w) {
    const DrcStats d = nfs_->drc_stats();
    CountEach(w, "nfsedge_drc_events_total",
              "Duplicate request cache: calls recorded, retransmissions replayed or joined, "
              "entries evicted.",
              {}, "event",
              {{"recorded", d.recorded},
               {"replayed", d.replayed},
               {"joined", d.joined},
               {"evicted", d.evicted}});
    w.Gauge("nfsedge_drc_entries", "Duplicate request cache entries.", {},
            static_cast<double>(d.entries));
  });
  metrics_.Add([this](MetricsWriter& w) {
    CountEach(w, "nfsedge_config_reloads_total", "Config reloads, applied or rejected.", {},
              "result", {{"ok", reloads_}, {"rejected", reload_failures_}});
    const MetricsHttpStats& h = metrics_http_stats_;
    w.Counter("nfsedge_metrics_scrapes_total", "Scrapes of this endpoint.", {},
              static_cast<double>(h.scrapes));
    CountEach(w, "nfsedge_metrics_connection_events_total",
              "Connections to this endpoint: accepted, refused (16 open, all answering), "
              "closed for a newer one (request not whole, or answered), closed at their 10 s "
              "deadline, "
              "bad requests, accept() failures that paused the listener.",
              {}, "event",
              {{"accepted", h.accepted},
               {"refused", h.refused},
               {"displaced", h.displaced},
               {"timed_out", h.timed_out},
               {"bad_request", h.bad_requests},
               {"accept_paused", h.accept_paused}});
  });
}

Status Daemon::StartMetricsEndpoint() {
  const std::string& listen = config_.metrics.listen;
  if (listen == metrics_listen_ && (metrics_http_ || listen.empty())) return Status::Ok();
  if (listen.empty()) {
    metrics_http_.reset();
    metrics_listen_.clear();
    NFSEDGE_LOG(kInfo) << "metrics endpoint off";
    return Status::Ok();
  }
  auto http = std::make_unique<MetricsHttpServer>(base_.get(), metrics_, &metrics_http_stats_);
  StatusOr<uint16_t> port = http->Listen(listen);
  if (!port.ok()) return port.status();
  metrics_http_ = std::move(http);
  metrics_listen_ = listen;
  NFSEDGE_LOG(kInfo) << "metrics: http://" << listen << "/metrics (port " << *port << ")";
  return Status::Ok();
}

Status Daemon::StartOperations() {
  AddCollectors();
  // Serving NFS matters more than the metrics: a port that cannot be had is
  // an error in the log (a reload can move the endpoint), not a failed start.
  Status m = StartMetricsEndpoint();
  if (!m.ok()) {
    NFSEDGE_LOG(kError) << "metrics endpoint: " << m.ToString() << "; no metrics are served";
    config_.metrics.listen.clear();
  }
  OperationsDeps d;
  d.base = base_.get();
  d.config = &config_;
  d.exports = &exports_;
  d.clock = &clock_;
  d.meta = &cache_;
  d.handles = &handles_;
  d.blocks = blocks_.get();
  d.disk = disk_.get();
  d.read_path = read_path_.get();
  d.nfs = &scheduler_->Caller(CallClass::kInteractive);
  d.background = &scheduler_->Caller(CallClass::kBackground);
  d.mount = mount_upstream_.get();
  d.nfs_client = nfs_upstream_.get();
  d.nfs_bulk_client = nfs_bulk_upstream_.get();
  d.meter = &meter_;
  NfsService* nfs = nfs_.get();
  d.learn = [nfs](const NfsProc& p, const void* args, RpcReply* reply, const Export& exp,
                  const OpaqueAuth& cred) { nfs->LearnReply(p, args, reply, exp, cred); };
  d.reload = [this](ReloadOutcome* outcome) { return Reload(outcome); };
  ops_ = std::make_unique<Operations>(std::move(d));
  SetFlush([this](FlushDone done) { FlushWrites(std::move(done)); });
  if (!config_.control.socket.empty()) {
    Operations* ops = ops_.get();
    control_ = std::make_unique<ControlServer>(
        base_.get(), [ops](const std::string& c, const std::string& a,
                           std::shared_ptr<ControlReply> r) { ops->Handle(c, a, std::move(r)); });
    // Serving NFS matters more than the commands: a socket that cannot be
    // made is an error in the log, not a failed start.
    Status c = control_->Listen(config_.control.socket, config_.control.socket_mode);
    if (c.ok()) {
      NFSEDGE_LOG(kInfo) << "control socket " << config_.control.socket;
    } else {
      NFSEDGE_LOG(kError) << c.ToString() << "; the nfsedge commands will not reach this daemon";
      control_.reset();
    }
  }
  sighup_.reset(evsignal_new(
      base_.get(), SIGHUP,
      [](evutil_socket_t, short, void* arg) {
        Status ignored = static_cast<Daemon*>(arg)->Reload();  // logged by Reload()
        (void)ignored.ok();
      },
      this));
  evsignal_add(sighup_.get(), nullptr);
  return Status::Ok();
}

void Daemon::SetFlush(FlushFn flush) { ops_->SetFlush(std::move(flush)); }

void Daemon::FlushWrites(FlushDone done) {
  if (!write_path_) {
    done(Status::Ok(), "nothing buffered");
    return;
  }
  struct Flush {
    uint64_t bytes;
    size_t files;
    MonoTime start, deadline;
    FlushDone done;
  };
  const MonoTime now = clock_.MonoNow();
  auto f = std::make_shared<Flush>(
      Flush{write_path_->stats().buffered_bytes, write_path_->buffered_files(), now,
            now + std::chrono::milliseconds(config_.upstream.call_timeout_ms),
            std::move(done)});
  write_path_->FlushAll();
  // Polled: the write path calls nobody back when it becomes empty.
  auto check = std::make_shared<std::function<void()>>();
  *check = [this, f, check] {
    const uint64_t left = write_path_->stats().buffered_bytes;
    const uint64_t journal = journal_ ? journal_->stats().records : 0;
    const double secs =
        std::chrono::duration<double>(clock_.MonoNow() - f->start).count();
    std::ostringstream report;
    if (left == 0 && journal == 0) {
      report << "flushed " << f->files << " files, " << f->bytes << " bytes, in " << secs
             << " s: the upstream has every write made stable";
      f->done(Status::Ok(), report.str());
      *check = nullptr;  // breaks the cycle
      return;
    }
    if (clock_.MonoNow() >= f->deadline) {
      report << left << " bytes in " << write_path_->buffered_files()
             << " files still buffered after " << secs << " s (" << journal
             << " journal records); the upstream is slow or refusing them (see the log)";
      f->done(Status(StatusCode::kTimeout, report.str()), std::string());
      *check = nullptr;
      return;
    }
    RunLater(std::chrono::milliseconds(50), *check);
  };
  (*check)();
}

void Daemon::ApplyLimits() {
  const Config& c = config_;
  FitDescriptorLimit(c.server.max_connections);
  server_->SetLimits(ServerLimitsOf(c.server));
  const ClientOptions limits = ClientLimitsOf(c.upstream);
  nfs_upstream_->SetLimits(limits);
  nfs_bulk_upstream_->SetLimits(limits);
  mount_upstream_->SetLimits(limits);
  scheduler_->SetOptions(SchedulerOptionsOf(c.scheduler, c.upstream));
  outage_->SetAfter(std::chrono::milliseconds(c.upstream.outage_after_ms));
  outage_timer_->ArmPeriodic(OutagePollOf(c.upstream));
  cache_.SetLimits(c.cache);
  if (blocks_ && c.cache.memory_bytes > 0) blocks_->SetMaxBytes(c.cache.memory_bytes);
  if (disk_) disk_->SetMaxBytes(c.cache.disk_bytes);
  refresher_->SetWindow(std::chrono::milliseconds(c.cache.refresh_ahead_ms));
  if (write_path_) {
    write_path_->SetLimits(WritePathOptionsOf(c.write));
  }
}

Status Daemon::Reload(ReloadOutcome* outcome) {
  if (shutting_down_) {
    // The service manager was told STOPPING=1: no RELOADING=1 or READY=1
    // after it, and nothing moves (the metrics endpoint, the limits) while
    // the calls in flight finish.
    NFSEDGE_LOG(kWarn) << "config reload refused: shutting down";
    return Unavailable("shutting down: the config is not reloaded");
  }
  if (Status n = NotifyServiceManager(ReloadingNotice()); !n.ok()) {
    NFSEDGE_LOG(kWarn) << "service manager: " << n.message();
  }
  auto finish = [this](Status s) {
    if (s.ok()) {
      reloads_++;
      NFSEDGE_LOG(kInfo) << "config reloaded from " << config_.source;
    } else {
      reload_failures_++;
      // One log line per problem (a config may have several).
      std::string_view problems = s.message();
      for (size_t nl; (nl = problems.find('\n')) != std::string_view::npos;
           problems.remove_prefix(nl + 1)) {
        NFSEDGE_LOG(kError) << "config reload: " << problems.substr(0, nl);
      }
      NFSEDGE_LOG(kError) << "config reload rejected, the config in force stays: " << problems;
    }
    if (Status n = NotifyServiceManager("READY=1"); !n.ok()) {
      NFSEDGE_LOG(kWarn) << "service manager: " << n.message();
    }
    return s;
  };
  StatusOr<Config> next = LoadConfig(config_.source);
  if (!next.ok()) return finish(next.status());
  // Check first, then apply: a rejected reload changes nothing.
  if (next->metrics.listen != metrics_listen_ && !next->metrics.listen.empty()) {
    std::string host;
    uint16_t port = 0;
    Status hp = SplitHostPort(next->metrics.listen, &host, &port);
    if (!hp.ok()) return finish(hp);
  }
  // The exports take the plan's rules: a key that waits for a restart
  // (an export's tls or write_back) keeps its value there too.
  ReloadPlan plan = PlanReload(config_, *next, journal_ != nullptr);
  Status e = exports_.Update(plan.next.exports);
  if (!e.ok()) return finish(e);
  // Lifetimes lowered: cached ACCESS results live no longer than the new.
  std::optional<uint32_t> shortest;
  for (size_t i = 0; i < plan.next.exports.size() && i < config_.exports.size(); ++i) {
    const ExportConfig& was = config_.exports[i];
    const ExportConfig& now = plan.next.exports[i];
    if (now.acregmax < was.acregmax || now.acdirmax < was.acdirmax) {
      shortest = std::min(shortest.value_or(UINT32_MAX), std::min(now.acregmax, now.acdirmax));
    }
  }
  if (shortest) cache_.ShortenAccessLifetimes(std::chrono::seconds(*shortest));
  config_ = std::move(plan.next);
  SetLogLevel(config_.log_level);
  ConfigureLogging(config_.log);
  Status m = StartMetricsEndpoint();
  if (!m.ok()) {
    // The endpoint in force stays where it was (a port still taken, an
    // address the old listener holds): reported as not applied, and again
    // at later reloads, until a restart or a reload that works.
    NFSEDGE_LOG(kError) << "metrics endpoint: " << m.ToString();
    config_.metrics.listen = metrics_listen_;
    std::erase(plan.applied, std::string("metrics.listen"));
    plan.restart.push_back("metrics.listen");
  }
  ApplyLimits();
  std::string applied;
  for (const std::string& k : plan.applied) applied += " " + k;
  if (!applied.empty()) NFSEDGE_LOG(kInfo) << "config reload applied:" << applied;
  for (const std::string& k : plan.restart) {
    NFSEDGE_LOG(kWarn) << "config reload: " << k
                       << " changed in the file and needs a restart; the value in force stays";
  }
  if (outcome) *outcome = ReloadOutcome{std::move(plan.applied), std::move(plan.restart)};
  return finish(Status::Ok());
}

}  // namespace nfsedge
