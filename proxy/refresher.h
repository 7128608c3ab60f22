// Refresher: refresh-ahead for the attribute cache. Entries that clients
// used since their last fill and that expire within `window` are revalidated
// in the background, so a client that keeps using a file or directory is
// answered from cache without waiting for a revalidation. Revalidation that
// finds the same change attributes keeps everything that depends on them
// (names, data, ACCESS results); only attributes cross the WAN.
//
// Bulk revalidation: candidates whose directory is known (the metadata
// cache remembers where each was last seen) and that share it with another
// candidate are revalidated together by one READDIRPLUS of that directory
// (all its pages), which also refreshes the directory's own attributes, its
// names and its cached listing; the others by one GETATTR each.
//
// The calls go with the export's anonymous AUTH_SYS credential: NFSv3
// servers answer GETATTR to any credential that holds the handle; a
// directory the anonymous user may not list simply is not refreshed that
// way (its entries expire and are revalidated when a client asks).
// At most `max_in_flight` refreshes are in flight (DESIGN rule 8).
//
// Thread-safety: single-threaded, on the event loop.
#ifndef NFSEDGE_PROXY_REFRESHER_H_
#define NFSEDGE_PROXY_REFRESHER_H_

#include <array>
#include <cstdint>
#include <string>

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
  uint64_t listings() const { return listings_; }

 private:
  void Tick();
  // Sends a GETATTR of `handle`. Returns false iff it could not be queued.
  bool SendGetattr(const std::string& handle, const Export& exp);
  // Sends READDIRPLUS of `dir` from `cookie`, and the next pages on reply.
  bool SendListing(const std::string& dir, const Export& exp, uint64_t cookie,
                   const std::array<char, 8>& verf, int page);
  static OpaqueAuth AnonCred(const Export& exp);

  MetadataCache& cache_;
  HandleRegistry& handles_;
  const ExportTable& exports_;
  RpcCaller& upstream_;
  RefresherOptions options_;
  Timer timer_;
  uint32_t in_flight_ = 0;
  uint64_t sent_ = 0;
  uint64_t listings_ = 0;  // READDIRPLUS pages sent for bulk revalidation
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_REFRESHER_H_
