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

#include <memory>

#include "cache/clock.h"
#include "cache/handle_registry.h"
#include "proxy/config.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/mount_service.h"
#include "proxy/nfs_service.h"
#include "proxy/read_path.h"
#include "proxy/refresher.h"
#include "rpc/event_loop.h"
#include "rpc/loop_poster.h"
#include "rpc/rpc_client.h"
#include "rpc/rpc_server.h"

namespace nfsedge {

class Daemon {
 public:
  explicit Daemon(Config config);
  ~Daemon();

  // Resolves the upstream (asking its rpcbind for ports set to 0), listens,
  // and registers with the local rpcbind as configured.
  Status Start();
  // Runs until shut down by a signal. Returns the process exit code.
  int Run();

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

  Config config_;
  EventBasePtr base_;
  ExportTable exports_;
  HandleRegistry handles_;
  SystemClock clock_;
  MetadataCache cache_;
  std::unique_ptr<RpcClient> nfs_upstream_;
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
  std::unique_ptr<MountService> mount_;
  std::unique_ptr<Refresher> refresher_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<RpcServer> server_;
  EventPtr sigterm_, sigint_, sigusr1_;
  Timer shutdown_timer_;
  SteadyClock::time_point shutdown_deadline_{};
  bool shutting_down_ = false;
  bool registered_ = false;
  uint16_t nfs_port_ = 0, mount_port_ = 0;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_DAEMON_H_
