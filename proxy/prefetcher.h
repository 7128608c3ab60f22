// Prefetcher: tree-walk prefetch. When a client walks a directory tree
// (it lists a directory in full, then, within walk_idle, a directory right
// below it: as tar, cp -r, rsync, find or ls -R do), the proxy walks ahead of
// it in the background from the upper of the two: for every directory and
// regular file it asks ACCESS (all bits) for the client's credential, reads
// the data of small regular files into the data cache, reads each symlink's
// target (READLINK, when the link cache keeps any and the export's
// lifetimes allow answers), and lists the subdirectories in turn
// (READDIRPLUS, whole directory, cookie by cookie), down to a configured
// depth. When the client then reaches those entries (LOOKUP, GETATTR,
// ACCESS, READ, READLINK), the answers are local. A single listing (ls) starts nothing.
//
// The walk stops when the client's walk stops: every client call on a
// directory of the walk, or on an object listed in one, keeps it going;
// after walk_idle without one, the walk ends and its queued work is dropped
// (and forgotten, so a later walk does it). A client that comes back to a
// directory of its own ended walk and lists it starts a new walk there.
//
// A directory the walk reaches again (a second walk of the tree, or a
// client coming back to it) whose cached listing is no longer whole and fresh
// (its attributes, or an entry's, outlived their lifetime) is listed again,
// at most once a second, so that it is refreshed in parallel rather than by
// the client one directory at a time. A client READDIRPLUS of a page the
// prefetcher is fetching waits for that reply (AwaitListing) and is then
// answered from the cache, rather than asking the upstream a second time.
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
// in-flight bound; the upstream scheduler (when present) ranks its ACCESS,
// READLINK and READDIRPLUS calls as background work. Small files' data goes through
// the read path, whose calls are client data (proxy/scheduler.h): a client
// READ often waits on the very block being fetched.
//
// Thread-safety: single-threaded, on the event loop.
#ifndef NFSEDGE_PROXY_PREFETCHER_H_
#define NFSEDGE_PROXY_PREFETCHER_H_

#include <rpc/xdr/nfs3.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/clock.h"
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
  // Directory levels below the walk's root.
  uint32_t max_depth = 16;
  // Regular files up to this size have their data prefetched; 0 = none.
  uint64_t small_file_bytes = 256 << 10;
  // Objects remembered as prefetched (per credential).
  size_t max_seen = 200000;
  // A walk without a client call in it for this long has stopped.
  Duration walk_idle = std::chrono::seconds(5);
  // File data fetched through the prefetcher's own caller (`nfsedge warm`:
  // no client waits for it, so the background class), not the read path's
  // (client data: a client walking now reads the files next, as read-ahead).
  bool data_through_own_caller = false;
};

struct PrefetchStats {
  uint64_t queued = 0;
  uint64_t dropped = 0;        // queue full
  uint64_t lists = 0;          // READDIRPLUS calls sent
  uint64_t access = 0;         // ACCESS calls sent
  uint64_t files = 0;          // small files whose data was fetched
  uint64_t links = 0;          // READLINK calls sent (symlinks' targets)
  uint64_t errors = 0;         // calls without a usable reply
  uint64_t walks = 0;          // walks started
  uint64_t walks_stopped = 0;  // walks ended by the client's silence
  uint64_t discarded = 0;      // queued jobs of stopped walks dropped
  uint64_t relists = 0;        // listings asked again: the cached one was no longer fresh
  uint64_t awaited = 0;        // client listings that waited for the prefetcher's
  uint64_t deferred = 0;       // calls the upstream's full queue refused: kept, sent later
};

class Prefetcher {
 public:
  // Learns from a successful upstream reply to one of the prefetcher's
  // calls, exactly as from a client's (caches, handle registry).
  using LearnFn = std::function<void(const NfsProc& p, const void* args, RpcReply* reply,
                                     const Export& exp, const OpaqueAuth& cred)>;

  // `read_path` may be null (no data cache: no data prefetch).
  Prefetcher(const Clock& clock, MetadataCache& meta, ReadPath* read_path, RpcCaller& upstream,
             LearnFn learn, const PrefetchOptions& options);
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // A client with `cred` got a page of the listing of `dir` on `exp`
  // (READDIRPLUS results, from the upstream or the cache): continues the walk
  // `dir` belongs to, or starts one (see above).
  void OnClientListing(std::string_view dir, const READDIRPLUS3resok& ok, const Export& exp,
                       const OpaqueAuth& cred);
  // A client call on object `fh` (LOOKUP: its directory): keeps the walk it
  // belongs to going.
  void OnClientCall(std::string_view fh);
  // A client READDIRPLUS of `dir` at `cookie` with `cred` that the cache
  // could not answer: if the prefetcher is fetching that very page for that
  // credential, and it has left (no background call waits to be sent, see
  // SetBackgroundWaiting: a client listing must not wait behind bulk data
  // at background priority), `then` runs once its reply has been learned
  // (or the call failed) and true is returned; else false, and `then` is
  // not kept. Not on an export `exp` that keeps no listings (acdirmax 0):
  // the reply would be learned but not stored, and the client's call would
  // go upstream after it anyway.
  // `waiting`: whether background calls wait in the scheduler now.
  void SetBackgroundWaiting(std::function<bool()> waiting) {
    background_waiting_ = std::move(waiting);
  }
  bool AwaitListing(std::string_view dir, uint64_t cookie, const OpaqueAuth& cred,
                    const Export& exp, std::function<void()> then);
  // `version`: the export rules' version (ExportTable::updates()). Work
  // queued, and walks begun, under rules a reload has since changed stop:
  // their credential was mapped by the old rules (a walk begun as root
  // must not go on as root once root is squashed), and a reply to such a
  // call queues nothing more.
  void SetRulesVersion(std::function<uint64_t()> version) {
    rules_version_ = std::move(version);
  }

  // Queues work for the entries of a listing of `dir` (READDIRPLUS
  // results) `depth` levels below the walk's root, as part of `walk`
  // (0 = work that never stops: tests and callers that manage it).
  void OnListing(std::string_view dir, const READDIRPLUS3resok& ok, const Export& exp,
                 const OpaqueAuth& cred, uint32_t depth, uint64_t walk = 0);

  // Sends queued work again after the upstream refused it (its queue was
  // full) with nothing in flight to resume it.
  void Resume() { Pump(); }

  size_t queued() const { return queue_.size(); }
  uint32_t in_flight() const { return in_flight_; }
  // Walks going on (not yet found stopped).
  size_t walks() const { return walks_.size(); }
  const PrefetchStats& stats() const { return stats_; }

 private:
  enum class Kind { kList, kAccess, kData, kLink };
  struct Job {
    Kind kind = Kind::kAccess;
    std::string fh;
    const Export* exp = nullptr;
    OpaqueAuth cred;
    uint32_t depth = 0;
    uint64_t cookie = 0;  // kList: where to continue
    std::string verf;     // kList: cookie verifier (8 bytes) when cookie != 0
    uint32_t page = 0;    // kList: pages of the listing before this one
    uint64_t size = 0;    // kData
    uint64_t offset = 0;  // kData: from where (a file larger than one read goes on from there)
    ChangeId version;     // kData, kLink
    uint64_t walk = 0;    // 0 = part of no walk
    uint64_t rules = 0;   // Rules() when it was made (0: Queue stamps it)
  };
  struct Walk {
    MonoTime last;  // the client's latest call in it
    uint64_t rules = 0;  // Rules() when it began
  };
  struct SeenAt {
    MonoTime at;    // queued at
    uint64_t walk;  // by this walk (0: none)
  };
  // Where a directory stands in a walk.
  struct WalkDir {
    uint64_t walk = 0;
    uint32_t depth = 0;
    size_t walker = 0;  // hash of the walker's credential and export
  };

  // Queues `job` unless it was seen already for its credential (and is not
  // to be asked again: Relist), or `again`. `front` puts it first (the next
  // page of a directory being listed).
  void Queue(Job job, bool front = false, bool again = false);
  // Queues the listing of walk `walk`'s start `dir` from its first page,
  // whether or not it was seen: the walk's way to the rest of the tree.
  void ListAgain(std::string_view dir, const Export& exp, const OpaqueAuth& cred, uint64_t walk);
  static std::string SeenKey(const Job& job);
  // The key of a listing page in flight: credential, cookie, directory.
  static std::string PageKey(std::string_view dir, uint64_t cookie, const OpaqueAuth& cred);
  // Whether a listing seen before is to be asked again (see above).
  bool Relist(const Job& job, const SeenAt& seen);
  // Forgets that `job`'s object was seen (for a listing: any of its pages
  // left unasked), so that a later listing of its parent queues it again.
  void Unsee(const Job& job);
  // Returns true iff `job` belongs to a walk that stopped: it is counted
  // and forgotten (a later walk may queue it again).
  bool Drop(const Job& job);
  // Returns true iff `walk` goes on; ends it (and counts it) if the client
  // has been silent in it for walk_idle.
  bool Active(uint64_t walk);
  // The export rules' version, never 0 (see SetRulesVersion).
  uint64_t Rules() const { return rules_version_ ? rules_version_() + 1 : 1; }
  uint64_t StartWalk(std::string_view root);
  void Pump();
  // Returns false iff the upstream refused the call now (its queue full).
  bool Send(const Job& job);
  // Fetches the part of a file from `job.offset` on that is not cached yet,
  // one upstream read; when it ends, the rest goes at the queue's front.
  // Each returns false iff the upstream refused the call now.
  bool SendData(const Job& job);
  bool SendList(const Job& job);
  bool SendAccess(const Job& job);
  bool SendLink(const Job& job);
  // Returns false iff the call could not be queued upstream. A nonzero
  // `expected_reply`: the bytes its reply is expected to bring (see
  // RpcCaller::CallExpecting).
  bool Call(const Job& job, uint32_t proc, std::string wire, std::shared_ptr<XdrBox> args,
            uint64_t expected_reply = 0);
  void Finished();
  // The listing page `page` (PageKey; empty: not a listing) has its reply
  // learned, or failed: the client calls waiting for it are served again.
  void ReleasePage(const std::string& page);

  const Clock& clock_;
  MetadataCache& meta_;
  ReadPath* read_path_;
  RpcCaller& upstream_;
  LearnFn learn_;
  const PrefetchOptions options_;
  std::deque<Job> queue_;
  uint32_t in_flight_ = 0;
  bool refused_ = false;  // the job at the head of queue_ was refused (Pump)
  uint64_t list_bytes_avg_ = 0;  // the size of listing replies, moving average
  LruMap<SeenAt> seen_;  // kind + credential + handle -> when and by which walk
  // When a full queue was last searched for the work of stopped walks.
  static constexpr Duration kPurgeEvery = std::chrono::milliseconds(250);
  MonoTime last_purge_{};
  // Listing pages in flight (PageKey) -> the client calls waiting for them.
  std::unordered_map<std::string, std::vector<std::function<void()>>> pages_in_flight_;
  std::unordered_map<uint64_t, Walk> walks_;
  uint64_t next_walk_ = 1;
  LruMap<WalkDir> walk_dirs_;  // directory handle -> its walk
  LruMap<MonoTime> listed_;    // credential + export + directory -> listed in full at
  PrefetchStats stats_;
  std::function<bool()> background_waiting_;  // empty: never
  std::function<uint64_t()> rules_version_;   // empty: the rules never change
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_PREFETCHER_H_
