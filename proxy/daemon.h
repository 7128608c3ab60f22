// Daemon: nfsedge assembled from its config: the client-facing RPC server,
// the NFS and MOUNT programs, the upstream clients, rpcbind registration and
// signal handling, all on one event loop.
//
// Shutdown (SIGTERM or SIGINT): stop accepting, wait up to shutdown_grace
// seconds for calls in flight to be answered, then close everything and
// return from Run() with 0. A second signal cuts the wait short. SIGUSR1
// writes the counters to the log.
//
// Thread-safety: Start() and Run() are called from one thread, which then
// runs the event loop.
#ifndef NFSEDGE_PROXY_DAEMON_H_
#define NFSEDGE_PROXY_DAEMON_H_

#include <functional>
#include <memory>
#include <unordered_map>

#include "cache/clock.h"
#include "cache/handle_registry.h"
#include "proxy/call_meter.h"
#include "proxy/config.h"
#include "proxy/control.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/metrics.h"
#include "proxy/metrics_http.h"
#include "proxy/mount_service.h"
#include "proxy/nfs_service.h"
#include "proxy/operations.h"
#include "proxy/outage.h"
#include "proxy/read_path.h"
#include "proxy/write_path.h"
#include "proxy/refresher.h"
#include "proxy/scheduler.h"
#include "rpc/event_loop.h"
#include "rpc/loop_poster.h"
#include "rpc/rpc_client.h"
#include "rpc/rpc_server.h"

namespace nfsedge {

// Every client connection is a file descriptor, and so are the upstream
// connections, the listeners, the journal's and disk tier's files. Raises
// the soft RLIMIT_NOFILE to the hard one, and warns when `max_connections`
// does not fit below it: past it, accept() fails and the listeners pause.
// At start and at each reload.
void FitDescriptorLimit(size_t max_connections);

class Daemon {
 public:
  explicit Daemon(Config config);
  ~Daemon();

  // Resolves the upstream (asking its rpcbind for ports set to 0), listens,
  // and registers with the local rpcbind as configured.
  Status Start();
  // Runs until shut down by a signal. Returns the process exit code.
  int Run();

  // Re-reads the config file (SIGHUP, `nfsedge reload`): export rules and
  // lifetimes and the live keys of proxy/config_reload.h (limits, cache
  // sizes, timeouts, [log], [metrics]) change in place; a changed restart
  // key keeps its value in force and is logged (warn) and reported in
  // `outcome` (may be null). A config that does not load, or changes the
  // exports' paths, is rejected (the returned error, also logged) and the
  // one in force stays. Connections are kept either way.
  Status Reload(ReloadOutcome* outcome = nullptr);
  // The metrics registry: components add their collectors here.
  MetricsRegistry& metrics() { return metrics_; }
  // Runs `fn` once, `delay` from now, on the loop (freed at exit if it never
  // ran).
  void RunLater(Duration delay, std::function<void()> fn);
  // Installs the write path's flush for `nfsedge flush`.
  void SetFlush(FlushFn flush);
  // `nfsedge flush`: sends every buffered write upstream, then reports once
  // the buffer (and the edge journal) is empty, or what is left after
  // upstream.call_timeout_ms.
  void FlushWrites(FlushDone done);

  uint16_t nfs_port() const { return nfs_port_; }
  uint16_t mount_port() const { return mount_port_; }

 private:
  void BeginShutdown();
  // Logs the counters: per NFS procedure (calls, cache answers, errors),
  // caches (hits, misses, entries), upstream. On SIGUSR1 and at exit.
  void LogStats();
  void CheckShutdown();
  StatusOr<SockAddr> UpstreamAddress(uint16_t port, uint32_t prog, uint32_t vers);
  // Makes the data cache (memory blocks, disk tier, read-ahead) from the
  // config; leaves read_path_ null when memory_bytes is 0.
  Status StartDataCache(uint32_t max_transfer);
  void LogDataStats();
  // Makes scheduler_ over nfs_upstream_ and nfs_bulk_upstream_, both
  // watched by outage_.
  void StartScheduler();
  // Makes the write path (gathering, write-behind) and hands it to nfs_.
  // Opens the edge journal if an export has write_back or `journal_dir`
  // holds one (a previous run's) or its marker says one was made there
  // (WriteJournal::MarkerOf), and puts back what that run left in it.
  // Returns an error iff the journal cannot be used.
  Status StartWritePath(uint32_t max_transfer);
  void LogWriteStats();

  // Operating the daemon (proxy/daemon_ops.cc): metrics endpoint, control
  // socket, SIGHUP. Called by Start() before the NFS ports open.
  Status StartOperations();
  // Publishes the stats of every component to metrics_.
  void AddCollectors();
  Status StartMetricsEndpoint();
  // Hands the live limits of config_ to the running components (reload).
  void ApplyLimits();

  Config config_;
  EventBasePtr base_;
  // Constant after construction; outlives the upstream clients and server
  // that report to it.
  CallMeter meter_;
  MetricsRegistry metrics_;
  ExportTable exports_;
  HandleRegistry handles_;
  SystemClock clock_;
  MetadataCache cache_;
  std::unique_ptr<RpcClient> nfs_upstream_;
  // The bulk lane (paced) beside nfs_upstream_ (interactive metadata), and
  // the scheduler every NFS call to the upstream passes.
  std::unique_ptr<RpcClient> nfs_bulk_upstream_;
  // Watches both lanes for an upstream outage (polled by outage_timer_);
  // outlives the scheduler, which calls through it.
  std::unique_ptr<OutageDetector> outage_;
  std::unique_ptr<Timer> outage_timer_;
  std::unique_ptr<UpstreamScheduler> scheduler_;
  // Data cache: present iff cache.memory_bytes > 0.
  std::unique_ptr<LoopPoster> poster_;
  std::unique_ptr<BlockCache> blocks_;
  std::unique_ptr<DiskTier> disk_;
  std::unique_ptr<ReadaheadTable> readahead_;
  std::unique_ptr<PathEstimator> path_;
  std::unique_ptr<ReadPath> read_path_;
  std::unique_ptr<Prefetcher> prefetcher_;
  std::unique_ptr<RpcClient> mount_upstream_;
  std::unique_ptr<NfsService> nfs_;
  std::unordered_map<void*, std::function<void()>> pending_once_;  // RunLater()
  std::unique_ptr<WriteJournal> journal_;  // write_back exports only
  std::unique_ptr<WritePath> write_path_;
  std::unique_ptr<MountService> mount_;
  std::unique_ptr<Refresher> refresher_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<RpcServer> server_;
  EventPtr sigterm_, sigint_, sigusr1_;
  EventPtr sighup_;
  MetricsHttpStats metrics_http_stats_;  // across the endpoints a reload makes
  std::unique_ptr<MetricsHttpServer> metrics_http_;
  std::string metrics_listen_;  // what metrics_http_ listens on
  std::unique_ptr<Operations> ops_;
  std::unique_ptr<ControlServer> control_;
  uint64_t reloads_ = 0, reload_failures_ = 0;
  Timer shutdown_timer_;
  SteadyClock::time_point shutdown_deadline_{};
  bool shutting_down_ = false;
  bool registered_ = false;
  uint16_t nfs_port_ = 0, mount_port_ = 0;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_DAEMON_H_
