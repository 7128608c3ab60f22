// Prefetcher: tree-walk prefetch. When a client lists a directory
// (READDIRPLUS), the proxy walks ahead of it in the background: for every
// entry it asks ACCESS (all bits) for the client's credential, reads the
// data of small regular files into the data cache, and lists the
// subdirectories in turn (READDIRPLUS, whole directory, cookie by cookie),
// down to a configured depth. When the client then walks the tree (LOOKUP,
// GETATTR, ACCESS, READ of each entry, as tar, cp -r, rsync or find do), the
// answers are local.
//
// Everything the prefetcher learns goes through the same learning path as a
// client's reply (metadata cache, handle registry, data cache), so the same
// freshness and confinement rules hold (DESIGN rules 5, 6): prefetched
// data and names are served to a credential only with its own ACCESS
// evidence, and prefetch runs with the credential of the client whose
// listing started it, so the upstream decides what that credential may see.
//
// Bounded (DESIGN rule 8): at most max_in_flight upstream calls, a queue of
// max_queue jobs (jobs beyond it are dropped, not queued), and a bounded set
// of what was already prefetched (each object once per credential, until it
// falls out of that set). It yields to clients by staying within its
// in-flight bound; the upstream scheduler (when present) ranks its calls as
// background work.
//
// Thread-safety: single-threaded, on the event loop.
#ifndef NFSEDGE_PROXY_PREFETCHER_H_
#define NFSEDGE_PROXY_PREFETCHER_H_

#include <rpc/xdr/nfs3.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "cache/lru_map.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/nfs_procs.h"
#include "proxy/read_path.h"
#include "rpc/rpc_caller.h"

namespace nfsedge {

struct PrefetchOptions {
  bool enabled = true;
  uint32_t max_in_flight = 16;
  uint32_t max_queue = 16384;
  // Directory levels below the one a client listed.
  uint32_t max_depth = 16;
  // Regular files up to this size have their data prefetched; 0 = none.
  uint64_t small_file_bytes = 256 << 10;
  // Objects remembered as prefetched (per credential).
  size_t max_seen = 200000;
};

struct PrefetchStats {
  uint64_t queued = 0;
  uint64_t dropped = 0;  // queue full
  uint64_t lists = 0;    // READDIRPLUS calls sent
  uint64_t access = 0;   // ACCESS calls sent
  uint64_t files = 0;    // small files whose data was fetched
  uint64_t errors = 0;   // calls without a usable reply
};

class Prefetcher {
 public:
  // Learns from a successful upstream reply to one of the prefetcher's
  // calls, exactly as from a client's (caches, handle registry).
  using LearnFn = std::function<void(const NfsProc& p, const void* args, RpcReply* reply,
                                     const Export& exp, const OpaqueAuth& cred)>;

  // `read_path` may be null (no data cache: no data prefetch).
  Prefetcher(MetadataCache& meta, ReadPath* read_path, RpcCaller& upstream, LearnFn learn,
             const PrefetchOptions& options);
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // A listing of `dir` (READDIRPLUS results) reached `cred` on `exp` at
  // `depth` levels below the client's own listing (0 = the client's):
  // queues work for its entries.
  void OnListing(std::string_view dir, const READDIRPLUS3resok& ok, const Export& exp,
                 const OpaqueAuth& cred, uint32_t depth);

  size_t queued() const { return queue_.size(); }
  uint32_t in_flight() const { return in_flight_; }
  const PrefetchStats& stats() const { return stats_; }

 private:
  enum class Kind { kList, kAccess, kData };
  struct Job {
    Kind kind = Kind::kAccess;
    std::string fh;
    const Export* exp = nullptr;
    OpaqueAuth cred;
    uint32_t depth = 0;
    uint64_t cookie = 0;   // kList: where to continue
    std::string verf;      // kList: cookie verifier (8 bytes) when cookie != 0
    uint64_t size = 0;     // kData
    ChangeId version;      // kData
  };

  // Queues `job` unless it was seen already for its credential. `front`
  // puts it first (the next page of a directory being listed).
  void Queue(Job job, bool front = false);
  void Pump();
  void Send(Job job);
  void SendList(const Job& job);
  void SendAccess(const Job& job);
  // Returns false iff the call could not be queued upstream.
  bool Call(const Job& job, uint32_t proc, std::string wire, std::shared_ptr<XdrBox> args);
  void Finished();

  MetadataCache& meta_;
  ReadPath* read_path_;
  RpcCaller& upstream_;
  LearnFn learn_;
  const PrefetchOptions options_;
  std::deque<Job> queue_;
  uint32_t in_flight_ = 0;
  LruMap<bool> seen_;  // kind + credential + handle
  PrefetchStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_PREFETCHER_H_
