#include "proxy/daemon.h"
#include "proxy/dir_listing.h"

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <sstream>

#include "proxy/config_reload.h"
#include "proxy/nfs_procs.h"
#include "proxy/rpcbind.h"
#include "proxy/service_notify.h"
#include "rpc/log.h"

namespace nfsedge {

void FitDescriptorLimit(size_t max_connections) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  constexpr rlim_t kOwnDescriptors = 256;
  if (rl.rlim_cur != RLIM_INFINITY && max_connections + kOwnDescriptors > rl.rlim_cur) {
    NFSEDGE_LOG(kWarn) << "server.max_connections is " << max_connections
                       << " but the process may open " << rl.rlim_cur
                       << " files (RLIMIT_NOFILE): past about "
                       << (rl.rlim_cur > kOwnDescriptors ? rl.rlim_cur - kOwnDescriptors : 0)
                       << " connections new ones wait; raise LimitNOFILE (ulimit -n) or lower "
                          "max_connections";
  }
}

Daemon::Daemon(Config config)
    : config_(std::move(config)),
      base_(NewPreciseEventBase()),
      exports_(config_.exports),
      handles_(config_.server.max_handles),
      cache_(clock_, config_.cache),
      shutdown_timer_(base_.get(), [this] { CheckShutdown(); }) {}

Daemon::~Daemon() {
  control_.reset();
  metrics_http_.reset();
  ops_.reset();
  sighup_.reset();
  if (registered_) {
    RpcbindUnregister(kNfsProgram, kNfsVersion);
    for (uint32_t v = kMountMinVersion; v <= kMountVersion; ++v) {
      RpcbindUnregister(kMountProgram, v);
    }
  }
  server_.reset();
  dispatcher_.reset();
  refresher_.reset();
  mount_.reset();
  prefetcher_.reset();
  if (nfs_) nfs_->SetWritePath(nullptr);  // the cache's hook into it goes first
  write_path_.reset();
  nfs_.reset();
  read_path_.reset();
  disk_.reset();  // finishes its pool's work; what it posts is dropped below
  journal_.reset();  // writes what is queued
  poster_.reset();
  mount_upstream_.reset();
  scheduler_.reset();
  nfs_bulk_upstream_.reset();
  nfs_upstream_.reset();
  sigterm_.reset();
  // Timers that never ran (a flush delay pending at exit): their closures.
  for (auto& [p, free] : pending_once_) free();
  pending_once_.clear();
  sigint_.reset();
  sigusr1_.reset();
}

void Daemon::LogStats() {
  std::ostringstream procs;
  for (uint32_t i = 0; i < kNfsProcCount; ++i) {
    const NfsProcStats& st = nfs_->stats(i);
    if (st.calls == 0) continue;
    procs << " " << FindNfsProc(i)->name << "=" << st.calls << "/" << st.cache_answers << "/"
          << st.local_errors << "/" << st.upstream_errors;
  }
  NFSEDGE_LOG_ASKED(kInfo) << "stats nfs calls/cache_answers/refused/upstream_errors:" << procs.str();
  const DrcStats d = nfs_->drc_stats();
  NFSEDGE_LOG_ASKED(kInfo) << "stats drc entries=" << d.entries << " recorded=" << d.recorded
                     << " replayed=" << d.replayed << " joined=" << d.joined
                     << " evicted=" << d.evicted;
  const AttrCacheStats& a = cache_.attrs().stats();
  const AccessCacheStats& x = cache_.access().stats();
  const NameCacheStats& n = cache_.names().stats();
  NFSEDGE_LOG_ASKED(kInfo) << "stats cache attr entries=" << cache_.attrs().size() << " hits=" << a.hits
                     << " misses=" << a.misses << " expired=" << a.expired
                     << " evictions=" << a.evictions << "; access entries="
                     << cache_.access().size() << " hits=" << x.hits << " misses=" << x.misses
                     << " stale=" << x.stale << "; names entries=" << cache_.names().size()
                     << " positive_hits=" << n.positive_hits
                     << " negative_hits=" << n.negative_hits << " misses=" << n.misses
                     << " dirs_dropped=" << n.dirs_dropped
                     << " overtaken=" << cache_.names_overtaken() << "; handles=" << handles_.size()
                     << "; refresh_ahead=" << refresher_->sent();
  const ClientStats& u = nfs_upstream_->stats();
  NFSEDGE_LOG_ASKED(kInfo) << "stats upstream calls=" << u.calls << " replies=" << u.replies
                     << " timeouts=" << u.timeouts << " resent=" << u.resent
                     << " reconnects=" << u.reconnects << " refused=" << u.refused;
  const ClientStats& b = nfs_bulk_upstream_->stats();
  NFSEDGE_LOG_ASKED(kInfo) << "stats upstream_bulk calls=" << b.calls << " replies=" << b.replies
                     << " timeouts=" << b.timeouts << " resent=" << b.resent
                     << " retransmits=" << b.retransmits << " reconnects=" << b.reconnects
                     << " refused=" << b.refused << "; nfs retransmits=" << u.retransmits;
  NFSEDGE_LOG_ASKED(kInfo) << scheduler_->StatsLine();
  const OutageStats& o = outage_->stats();
  NFSEDGE_LOG_ASKED(kInfo) << "stats outage out=" << outage_->out() << " outages=" << o.outages
                     << " probes=" << o.probes << " stale_answers getattr="
                     << cache_.stale_answers(NFSPROC3_GETATTR)
                     << " access=" << cache_.stale_answers(NFSPROC3_ACCESS)
                     << " lookup=" << cache_.stale_answers(NFSPROC3_LOOKUP)
                     << " readlink=" << cache_.stale_answers(NFSPROC3_READLINK)
                     << " read=" << cache_.stale_answers(NFSPROC3_READ);
  LogDataStats();
  LogWriteStats();
  if (prefetcher_) {
    const PrefetchStats& p = prefetcher_->stats();
    NFSEDGE_LOG_ASKED(kInfo) << "stats prefetch queued=" << p.queued << " dropped=" << p.dropped
                       << " lists=" << p.lists << " access=" << p.access << " files=" << p.files
                       << " links=" << p.links
                       << " errors=" << p.errors << " walks=" << p.walks
                       << " walks_stopped=" << p.walks_stopped << " discarded=" << p.discarded
                       << " relists=" << p.relists << " awaited=" << p.awaited
                       << " deferred=" << p.deferred;
  }
}

Status Daemon::StartDataCache(uint32_t max_transfer) {
  const CacheConfig& c = config_.cache;
  if (c.memory_bytes == 0) return Status::Ok();
  BlockCacheOptions bo;
  bo.max_bytes = c.memory_bytes;
  bo.block_size = static_cast<uint32_t>(c.block_size);
  blocks_ = std::make_unique<BlockCache>(bo);
  if (!c.disk_dir.empty()) {
    StatusOr<std::unique_ptr<LoopPoster>> poster = LoopPoster::Create(base_.get());
    if (!poster.ok()) return poster.status();
    poster_ = std::move(*poster);
    DiskTierOptions d;
    d.dir = c.disk_dir;
    d.max_bytes = c.disk_bytes;
    d.threads = static_cast<int>(c.disk_threads);
    d.block_size = bo.block_size;
    StatusOr<std::unique_ptr<DiskTier>> disk = DiskTier::Open(d, poster_->AsFunction());
    if (!disk.ok()) {
      return Status(disk.status().code(), "cache.disk_dir " + c.disk_dir + ": " +
                                              disk.status().message());
    }
    disk_ = std::move(*disk);
    if (c.disk_policy == "evicted") {
      blocks_->SetEvictionHandler([this](std::string_view fh, uint64_t index, Block&& b) {
        if (!b.unconfirmed && !disk_->MayContain(fh, index, b.version)) {
          disk_->Put(fh, index, std::move(b));
        }
      });
    }
  }
  ReadaheadOptions ra;
  ra.max_cursors = c.readahead_cursors;
  readahead_ = std::make_unique<ReadaheadTable>(clock_, ra);
  path_ = std::make_unique<PathEstimator>(clock_);
  ReadPathOptions ro;
  ro.read_size = static_cast<uint32_t>(c.read_size);
  ro.max_transfer = max_transfer;
  ro.readahead_max = c.readahead_max_bytes;
  ro.max_background = c.readahead_fetches;
  ro.disk_write_through = c.disk_policy == "all";
  read_path_ = std::make_unique<ReadPath>(clock_, cache_, *blocks_, disk_.get(), *readahead_,
                                          *path_, scheduler_->Caller(CallClass::kClientData),
                                          ro);
  NFSEDGE_LOG(kInfo) << "data cache: " << c.memory_bytes << " bytes in memory, blocks of "
                     << c.block_size << " bytes"
                     << (disk_ ? ", disk tier " + c.disk_dir + " (" +
                                     std::to_string(c.disk_bytes) + " bytes, " + c.disk_policy +
                                     ")"
                               : std::string(", no disk tier"));
  return Status::Ok();
}

void Daemon::LogDataStats() {
  if (!read_path_) return;
  const ReadPathStats& r = read_path_->stats();
  const BlockCacheStats& b = blocks_->stats();
  std::ostringstream line;
  line << "stats data reads=" << r.reads << " served=" << r.served
       << " memory_hits=" << r.memory_hits << " forwarded=" << r.forwarded
       << " no_evidence=" << r.no_evidence << " revalidations=" << r.revalidations
       << " fetches=" << r.fetches << " fetch_bytes=" << r.fetch_bytes
       << " readahead_fetches=" << r.readahead_fetches << " readahead_bytes=" << r.readahead_bytes
       << " fetch_errors=" << r.fetch_errors << " read_size=" << read_path_->read_size(0)
       << "; memory bytes=" << b.bytes << " hits=" << b.hits << " misses=" << b.misses
       << " stale=" << b.stale << " evictions=" << b.evictions
       << " readahead_used=" << b.readahead_used << " readahead_wasted=" << b.readahead_wasted;
  if (disk_) {
    const DiskTierStats d = disk_->stats();
    line << "; disk_reads=" << r.disk_reads << " disk_hits=" << r.disk_hits << " bytes=" << d.bytes
         << " entries=" << d.entries << " puts=" << d.puts << " dropped_puts=" << d.dropped_puts
         << " evictions=" << d.evictions << " errors=" << d.errors;
  }
  line << " tree_fetches=" << r.tree_fetches;
  const ReadaheadStats& ra = readahead_->stats();
  line << "; readahead cursors=" << readahead_->cursors()
       << " cursor_files=" << readahead_->files() << " new_cursors=" << ra.new_cursors
       << " cursor_replacements=" << ra.cursor_replacements
       << " cursor_evictions=" << ra.cursor_evictions << " slowdowns=" << ra.slowdowns
       << " advised=" << ra.advised << " advised_bytes=" << ra.advised_bytes;
  const std::optional<Duration> rtt = path_->min_rtt();
  line << "; path min_rtt_us="
       << (rtt ? std::chrono::duration_cast<std::chrono::microseconds>(*rtt).count() : -1)
       << " delivery_rate=" << static_cast<uint64_t>(path_->delivery_rate())
       << " bdp=" << path_->bdp();
  NFSEDGE_LOG_ASKED(kInfo) << line.str();
}

Status Daemon::StartWritePath(uint32_t max_transfer) {
  const WriteConfig& w = config_.write;
  bool write_back = false;
  for (const Export& e : exports_.all()) write_back |= e.config().write_back;
  // A journal left by a run whose exports had write_back is opened whatever
  // the exports say now: what it acknowledged must still go upstream (and
  // before anything newer, which a later replay would overwrite).
  // An empty journal_dir whose marker says a journal was made there (its
  // disk not mounted) is opened too: Open() refuses it, with the reason.
  std::error_code ec;
  const bool left = !w.journal_dir.empty() && WriteJournal::MayHoldJournal(w.journal_dir, ec);
  if (ec) {
    return IoError("[write] journal_dir " + w.journal_dir + ": " + ec.message() +
                   " (it may hold acknowledged writes, which must go upstream)");
  }
  if ((write_back || left) && !journal_) {
    if (!poster_) {
      StatusOr<std::unique_ptr<LoopPoster>> poster = LoopPoster::Create(base_.get());
      if (!poster.ok()) return poster.status();
      poster_ = std::move(*poster);
    }
    StatusOr<std::unique_ptr<WriteJournal>> j =
        WriteJournal::Open(w.journal_dir, poster_->AsFunction());
    if (!j.ok()) return Status(j.status().code(), "[write] journal_dir: " + j.status().message());
    journal_ = std::move(*j);
  }
  WritePathOptions wo = WritePathOptionsOf(w);
  wo.journal = journal_.get();
  wo.max_transfer = max_transfer;
  auto schedule = [this](Duration delay, std::function<void()> fn) {
    RunLater(delay, std::move(fn));
  };
  NfsService* nfs = nfs_.get();
  // Client writes and background flushes, each in its scheduler class.
  write_path_ = std::make_unique<WritePath>(
      clock_, scheduler_->Caller(CallClass::kInteractive),
      scheduler_->Caller(CallClass::kBackground), schedule,
      [nfs](const NfsProc& p, const void* args, RpcReply* reply, const Export& exp,
            const OpaqueAuth& cred) { nfs->LearnReply(p, args, reply, exp, cred); },
      wo);
  nfs_->SetWritePath(write_path_.get());
  if (!journal_) return Status::Ok();
  // What the last run acknowledged and had not made stable upstream goes
  // upstream first: the files' reads and attributes wait for it.
  std::vector<JournalRecord> recovered = journal_->TakeRecovered();
  for (JournalRecord& r : recovered) {
    const Export* exp = nullptr;
    for (const Export& e : exports_.all()) {
      if (e.config().path == r.export_path) exp = &e;
    }
    if (exp == nullptr) {
      exp = &exports_.all().front();
      NFSEDGE_LOG(kWarn) << "write journal: record " << r.seq << " came through export "
                         << r.export_path << ", which is no longer configured; sent through "
                         << exp->config().path;
    }
    write_path_->Recover(r, *exp);
    std::string().swap(r.data);  // in the buffer now: not held twice
  }
  write_path_->FlushAll();
  if (recovered.empty()) {
    NFSEDGE_LOG(kInfo) << "write journal " << w.journal_dir << ": empty";
  } else if (!write_back) {
    NFSEDGE_LOG(kWarn) << "write journal " << w.journal_dir << ": " << recovered.size()
                       << " acknowledged writes found, sent upstream now (no export has "
                          "write_back now; the journal takes no new writes but records "
                          "that order writes of those files after them)";
  } else {
    NFSEDGE_LOG(kWarn) << "write journal " << w.journal_dir << ": " << recovered.size()
                       << " acknowledged writes found, sent upstream now";
  }
  return Status::Ok();
}

void Daemon::LogWriteStats() {
  if (!write_path_) return;
  const WritePathStats& w = write_path_->stats();
  NFSEDGE_LOG_ASKED(kInfo) << "stats write stable=" << w.stable_writes
                     << " buffered=" << w.buffered_writes << " forwarded=" << w.forwarded
                     << " client_commits=" << w.client_commits
                     << " upstream_writes=" << w.upstream_writes
                     << " upstream_bytes=" << w.upstream_bytes << " max_write=" << w.max_write
                     << " sync_writes=" << w.sync_writes
                     << " upstream_commits=" << w.upstream_commits << " gathered=" << w.gathered
                     << " batches=" << w.batches << " windows=" << w.windows
                     << " lone=" << w.lone << " procrastination_us=" << w.procrastination_us
                     << " resent=" << w.resent << " errors=" << w.errors
                     << " verifier_changes=" << w.verifier_changes
                     << " blocked=" << w.blocked << " parked=" << w.parked
                     << " barriers=" << w.barriers
                     << " buffered_bytes=" << w.buffered_bytes
                     << " max_buffered_bytes=" << w.max_buffered_bytes
                     << " journaled=" << w.journaled << " journal_failed=" << w.journal_failed
                     << " recovered=" << w.recovered
                     << " write_size=" << write_path_->write_size();
  if (journal_) {
    const WriteJournalStats& j = journal_->stats();
    NFSEDGE_LOG_ASKED(kInfo) << "stats journal records=" << j.records << " bytes=" << j.bytes
                       << " appends=" << j.appends << " removes=" << j.removes
                       << " syncs=" << j.syncs << " errors=" << j.errors
                       << " recovered=" << j.recovered;
  }
}

void Daemon::StartScheduler() {
  const SchedulerConfig& c = config_.scheduler;
  SchedulerOptions so = SchedulerOptionsOf(c, config_.upstream);
  RpcClient* meta = nfs_upstream_.get();
  RpcClient* bulk = nfs_bulk_upstream_.get();
  SchedulerHooks hooks;
  if (c.pacing) hooks.set_pacing_rate = [bulk](double rate) { bulk->SetPacingRate(rate); };
  hooks.set_retransmit_timeout = [meta, bulk](Duration rto) {
    meta->SetRetransmitTimeout(rto);
    bulk->SetRetransmitTimeout(rto);
  };
  outage_ = std::make_unique<OutageDetector>(
      clock_, std::chrono::milliseconds(config_.upstream.outage_after_ms));
  RpcCaller& watched_meta = outage_->Watch(*meta);
  outage_->SetProbe(&watched_meta);
  outage_->SetListener([this, meta, bulk](bool out) {
    meta->HoldDeadlines(out);
    bulk->HoldDeadlines(out);
    if (scheduler_) scheduler_->HoldDeadlines(out);
    if (nfs_) nfs_->OnOutage(out);
  });
  cache_.SetOutage(outage_.get());
  const Duration poll = OutagePollOf(config_.upstream);
  outage_timer_ = std::make_unique<Timer>(base_.get(), [this] {
    outage_->Poll();
    if (scheduler_) scheduler_->Sweep();
  });
  outage_timer_->ArmPeriodic(poll);
  scheduler_ = std::make_unique<UpstreamScheduler>(clock_, watched_meta, outage_->Watch(*bulk), so,
                                                   std::move(hooks));
}

StatusOr<SockAddr> Daemon::UpstreamAddress(uint16_t port, uint32_t prog, uint32_t vers) {
  StatusOr<SockAddr> addr = ResolveAddress(config_.upstream.host, port);
  if (!addr.ok() || port != 0) return addr;
  StatusOr<uint16_t> p = RpcbindGetPort(*addr, prog, vers);
  if (!p.ok()) return p.status();
  addr->set_port(*p);
  return addr;
}

Status Daemon::Start() {
  const UpstreamConfig& u = config_.upstream;
  const ServerConfig& s = config_.server;
  if (base_ == nullptr) return ResourceExhausted("could not create the event loop");
  FitDescriptorLimit(s.max_connections);
  StatusOr<SockAddr> nfs_addr = UpstreamAddress(u.nfs_port, kNfsProgram, kNfsVersion);
  if (!nfs_addr.ok()) return nfs_addr.status();
  StatusOr<SockAddr> mount_addr = UpstreamAddress(u.mount_port, kMountProgram, kMountVersion);
  if (!mount_addr.ok()) return mount_addr.status();

  ClientOptions co = ClientLimitsOf(u);
  co.server = *nfs_addr;
  // Replies carry up to the transfer size the proxy advertises, or a
  // listing page of the proxy's own READDIRPLUS calls, plus headers.
  co.max_record_size = std::max<uint64_t>(s.max_record_size, kListingMaxcount) + 65536;
  co.name = "upstream nfs";
  co.on_done = [this](uint32_t prog, uint32_t proc, const StatusOr<RpcReply>& r, Duration d) {
    meter_.ObserveUpstream(prog, proc, r, d);
  };
  // Over TCP a call is lost only with its connection; the retransmission
  // timeout covers a server that dropped one. A mutation sent twice on one
  // connection may run twice (REMOVE answering NOENT to its own second run).
  co.repeatable = [](uint32_t prog, uint32_t proc) {
    return prog != kNfsProgram || NfsProcSafeToRepeat(proc);
  };
  co.resent_after_timeout = [](uint32_t prog, uint32_t proc) {
    return prog != kNfsProgram || proc != NFSPROC3_COMMIT;
  };
  if (u.tls) {
    TlsClientConfig tc{u.tls_ca_file, u.tls_server_name.empty() ? u.host : u.tls_server_name,
                       u.tls_cert_file, u.tls_key_file};
    StatusOr<SslCtxPtr> ctx = MakeClientTlsContext(tc);
    if (!ctx.ok()) return Status(ctx.status().code(), "upstream.tls: " + ctx.status().message());
    co.tls = *ctx;
    co.tls_server_name = tc.server_name;
  }
  nfs_upstream_ = std::make_unique<RpcClient>(base_.get(), co);
  co.name = "upstream nfs bulk";
  nfs_bulk_upstream_ = std::make_unique<RpcClient>(base_.get(), co);
  StartScheduler();
  co.server = *mount_addr;
  co.connections = 1;
  co.name = "upstream mount";
  co.tls_probe_prog = kMountProgram;
  co.tls_probe_vers = kMountVersion;
  mount_upstream_ = std::make_unique<RpcClient>(base_.get(), co);

  if (!s.handle_store.empty()) {
    std::vector<std::string> paths;
    for (const Export& e : exports_.all()) paths.push_back(e.StoreKey());
    Status hs = handles_.Persist(s.handle_store, std::move(paths));
    if (!hs.ok()) return Status(hs.code(), "server.handle_store: " + hs.message());
  }
  NfsServiceOptions no;
  // Leave room for RPC and NFS headers within one record.
  no.max_transfer = ((s.max_record_size - 4096) / 4096) * 4096;
  no.drc_entries = s.drc_entries;
  Status data = StartDataCache(no.max_transfer);
  if (!data.ok()) return data;
  nfs_ = std::make_unique<NfsService>(exports_, handles_,
                                      scheduler_->Caller(CallClass::kInteractive), no, &cache_,
                                      read_path_.get());
  if (config_.prefetch.enabled) {
    PrefetchOptions po;
    po.max_in_flight = config_.prefetch.max_in_flight;
    po.max_queue = config_.prefetch.max_queue;
    po.max_depth = config_.prefetch.depth;
    po.small_file_bytes = config_.prefetch.small_file_bytes;
    po.walk_idle = std::chrono::milliseconds(config_.prefetch.walk_idle_ms);
    NfsService* nfs = nfs_.get();
    prefetcher_ = std::make_unique<Prefetcher>(
        clock_, cache_, read_path_.get(), scheduler_->Caller(CallClass::kBackground),
        [nfs](const NfsProc& p, const void* args, RpcReply* reply, const Export& exp,
              const OpaqueAuth& cred) { nfs->LearnReply(p, args, reply, exp, cred); },
        po);
    UpstreamScheduler* scheduler = scheduler_.get();
    prefetcher_->SetBackgroundWaiting([scheduler] { return scheduler->background_waiting() > 0; });
    prefetcher_->SetRulesVersion([this] { return exports_.updates(); });
    nfs_->SetPrefetcher(prefetcher_.get());
  }
  if (Status js = StartWritePath(no.max_transfer); !js.ok()) return js;
  // A MNT below an export walks it with LOOKUPs, as interactive metadata.
  mount_ = std::make_unique<MountService>(exports_, handles_, *mount_upstream_,
                                          &scheduler_->Caller(CallClass::kInteractive));
  mount_->SetUpstreamOut([this] { return outage_->out(); });
  RefresherOptions ro;
  ro.window = std::chrono::milliseconds(config_.cache.refresh_ahead_ms);
  refresher_ = std::make_unique<Refresher>(base_.get(), cache_, handles_, exports_,
                                           scheduler_->Caller(CallClass::kBackground), ro);
  dispatcher_ = std::make_unique<Dispatcher>(std::vector<RpcProgram*>{nfs_.get(), mount_.get()});
  ServerOptions so = ServerLimitsOf(s);
  so.on_reply = [this](const IncomingCall& call, std::string_view reply, Duration d) {
    meter_.ObserveClient(call.header(), call.args(), reply, d);
  };
  if (!s.tls_cert_file.empty()) {
    StatusOr<SslCtxPtr> ctx =
        MakeServerTlsContext({s.tls_cert_file, s.tls_key_file, s.tls_client_ca_file});
    if (!ctx.ok()) return Status(ctx.status().code(), "server.tls: " + ctx.status().message());
    so.tls = *ctx;
  }
  server_ = std::make_unique<RpcServer>(base_.get(), so, dispatcher_.get());

  // Metrics and control before the NFS ports: once clients can connect,
  // the proxy can be watched and steered.
  Status ops = StartOperations();
  if (!ops.ok()) return ops;
  StatusOr<SockAddr> listen = ResolveAddress(s.listen, s.nfs_port);
  if (!listen.ok()) return listen.status();
  StatusOr<uint16_t> np = server_->Listen(*listen);
  if (!np.ok()) return np.status();
  nfs_port_ = *np;
  mount_port_ = nfs_port_;
  if (s.mount_port != s.nfs_port || s.nfs_port == 0) {
    listen->set_port(s.mount_port);
    StatusOr<uint16_t> mp = server_->Listen(*listen);
    if (!mp.ok()) return mp.status();
    mount_port_ = *mp;
  }

  if (s.rpcbind == RpcbindMode::kYes ||
      (s.rpcbind == RpcbindMode::kAuto && LocalRpcbindRunning())) {
    // An IPv6 listener ("::" takes IPv4 clients too) is registered for both.
    const bool ipv6 = listen->family() == AF_INET6;
    // Every version is tried, whatever failed before it (an IPv4 client
    // needs MOUNT v3 if tcp6 is refused); what was set goes at exit.
    Status bad = Status::Ok();
    auto note = [&](Status r) {
      if (r.ok()) return;
      if (s.rpcbind == RpcbindMode::kAuto) NFSEDGE_LOG(kWarn) << r.ToString();
      if (bad.ok()) bad = std::move(r);
    };
    note(RpcbindRegister(kNfsProgram, kNfsVersion, nfs_port_, ipv6));
    // MOUNT 1 and 2 too: showmount(8) asks version 1 (mount_service.h).
    for (uint32_t v = kMountMinVersion; v <= kMountVersion; ++v) {
      note(RpcbindRegister(kMountProgram, v, mount_port_, ipv6));
    }
    registered_ = true;
    if (!bad.ok()) {
      if (s.rpcbind == RpcbindMode::kYes) return bad;
    } else {
      NFSEDGE_LOG(kInfo) << "registered NFS v3 and MOUNT v1-v3 with the local rpcbind";
    }
  }

  auto on_signal = [](evutil_socket_t, short, void* arg) {
    static_cast<Daemon*>(arg)->BeginShutdown();
  };
  sigterm_.reset(evsignal_new(base_.get(), SIGTERM, on_signal, this));
  sigint_.reset(evsignal_new(base_.get(), SIGINT, on_signal, this));
  sigusr1_.reset(evsignal_new(
      base_.get(), SIGUSR1,
      [](evutil_socket_t, short, void* arg) { static_cast<Daemon*>(arg)->LogStats(); }, this));
  evsignal_add(sigterm_.get(), nullptr);
  evsignal_add(sigint_.get(), nullptr);
  evsignal_add(sigusr1_.get(), nullptr);

  nfs_upstream_->Start();
  nfs_bulk_upstream_->Start();
  mount_upstream_->Start();
  refresher_->Start();
  NFSEDGE_LOG(kInfo) << "nfsedge ready: listening on " << s.listen << " nfs port " << nfs_port_
                     << ", mount port " << mount_port_ << "; upstream " << nfs_addr->ToString()
                     << " (mount " << mount_addr->ToString() << "), " << exports_.all().size()
                     << " export(s)";
  Status notified = NotifyServiceManager("READY=1\nSTATUS=serving");
  if (!notified.ok()) NFSEDGE_LOG(kWarn) << notified.ToString();
  return Status::Ok();
}

int Daemon::Run() {
  event_base_dispatch(base_.get());
  LogStats();
  NFSEDGE_LOG(kInfo) << "nfsedge stopped";
  return 0;
}

void Daemon::RunLater(Duration delay, std::function<void()> fn) {
  struct Once {
    Daemon* daemon;
    std::function<void()> fn;
  };
  auto* once = new Once{this, std::move(fn)};
  timeval tv = ToTimeval(delay);
  // From now, not from the loop turn's start (the callbacks' time since).
  event_base_update_cache_time(base_.get());
  auto run = [](evutil_socket_t, short, void* arg) {
    std::unique_ptr<Once> o(static_cast<Once*>(arg));
    o->daemon->pending_once_.erase(arg);
    o->fn();
  };
  if (event_base_once(base_.get(), -1, EV_TIMEOUT, run, once, &tv) != 0) {
    delete once;
    NFSEDGE_LOG(kError) << "cannot arm a timer";
    return;
  }
  // Freed at the end if it never runs (a timer still pending at exit).
  pending_once_[once] = [once] { delete once; };
}

void Daemon::BeginShutdown() {
  if (shutting_down_) {
    NFSEDGE_LOG(kWarn) << "second signal: stopping now";
    shutdown_deadline_ = SteadyClock::now();
    CheckShutdown();
    return;
  }
  shutting_down_ = true;
  if (Status n = NotifyServiceManager("STOPPING=1"); !n.ok()) {
    NFSEDGE_LOG(kWarn) << "service manager: " << n.message();
  }
  server_->StopListening();
  // What is not read is not run: calls sent from now on go to the next
  // server (a write-behind WRITE taken now could only miss the flush).
  server_->StopReading();
  shutdown_deadline_ = SteadyClock::now() + std::chrono::seconds(config_.server.shutdown_grace);
  NFSEDGE_LOG(kInfo) << "shutting down: " << server_->calls_in_flight() << " calls in flight";
  if (write_path_ && write_path_->stats().buffered_bytes > 0) {
    // Buffered writes go upstream now, within the grace period.
    NFSEDGE_LOG(kInfo) << "shutting down: flushing " << write_path_->stats().buffered_bytes
                       << " bytes of buffered writes upstream";
    write_path_->FlushAll();
  }
  shutdown_timer_.ArmPeriodic(std::chrono::milliseconds(20));
  CheckShutdown();
}

void Daemon::CheckShutdown() {
  size_t left = server_->calls_in_flight();
  const uint64_t buffered = write_path_ ? write_path_->stats().buffered_bytes : 0;
  if ((left > 0 || buffered > 0) && SteadyClock::now() < shutdown_deadline_) return;
  if (left > 0) NFSEDGE_LOG(kWarn) << "giving up on " << left << " calls in flight";
  if (buffered > 0) {
    NFSEDGE_LOG(kWarn) << "stopping with " << buffered
                       << " bytes of buffered writes not yet stable upstream: write-behind "
                          "clients see a new verifier and send them again; journaled writes "
                          "are sent at the next start";
  }
  shutdown_timer_.Cancel();
  server_->CloseAll();
  scheduler_->Shutdown(Status(StatusCode::kCancelled, "shutting down"));
  nfs_upstream_->Shutdown(Status(StatusCode::kCancelled, "shutting down"));
  nfs_bulk_upstream_->Shutdown(Status(StatusCode::kCancelled, "shutting down"));
  mount_upstream_->Shutdown(Status(StatusCode::kCancelled, "shutting down"));
  event_base_loopexit(base_.get(), nullptr);
}

}  // namespace nfsedge
