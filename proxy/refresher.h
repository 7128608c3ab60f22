// Refresher: refresh-ahead for the attribute cache. Entries that clients
// used since their last fill and that expire within `window` are revalidated
// in the background with a GETATTR, so a client that keeps using a file or
// directory is answered from cache without waiting for a revalidation.
// Revalidation that finds the same change attributes keeps everything that
// depends on them (names, data); only attributes cross the WAN.
//
// The GETATTR goes with the export's anonymous AUTH_SYS credential: NFSv3
// servers answer GETATTR to any credential that holds the handle.
// At most `max_in_flight` refreshes are in flight (DESIGN rule 8).
//
// Thread-safety: single-threaded, on the event loop.
#ifndef NFSEDGE_PROXY_REFRESHER_H_
#define NFSEDGE_PROXY_REFRESHER_H_

#include <cstdint>

#include "cache/handle_registry.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "rpc/event_loop.h"
#include "rpc/rpc_caller.h"

namespace nfsedge {

struct RefresherOptions {
  Duration window = std::chrono::seconds(1);  // 0 = refresh-ahead off
  Duration period = std::chrono::milliseconds(200);
  uint32_t max_in_flight = 16;
};

class Refresher {
 public:
  Refresher(event_base* base, MetadataCache& cache, HandleRegistry& handles,
            const ExportTable& exports, RpcCaller& upstream, RefresherOptions options);
  void Start();
  // Sets the window (config reload); zero stops refresh-ahead, a window
  // after zero starts it. REQUIRES: Start() was called.
  void SetWindow(Duration window);
  uint64_t sent() const { return sent_; }

 private:
  void Tick();

  MetadataCache& cache_;
  HandleRegistry& handles_;
  const ExportTable& exports_;
  RpcCaller& upstream_;
  RefresherOptions options_;
  Timer timer_;
  uint32_t in_flight_ = 0;
  uint64_t sent_ = 0;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_REFRESHER_H_
