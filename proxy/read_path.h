// ReadPath: serves client READs from the data cache (memory blocks, then the
// disk tier), fetches what is missing from the upstream in large READs, and
// reads ahead of the sequential streams it sees in each file.
//
// A client READ is answered from cached blocks only when
//  - the file's attributes are fresh (within the export's lifetime; if they
//    are not, one GETATTR revalidates them first) and the blocks carry the
//    same ChangeId (DESIGN rule 5: data is tied to the file's version);
//  - the ACCESS cache proves that the upstream lets the credential read the
//    file (DESIGN rule 6); without that evidence the call is forwarded as is
//    (and the proxy asks ACCESS in the background for the next one).
// While the upstream is out, on an export with serve_stale_on_outage
// (MetadataCache::ServeStale), expired attributes and ACCESS results do
// instead, for blocks already cached (memory or disk) under the version
// those attributes name; a READ needing a fetch is forwarded and waits.
// Missing blocks are fetched with upstream READs of the server's preferred
// size (FSINFO rtpref, or the configured read_size; at most a quarter of
// the memory tier), whatever the client's rsize; concurrent readers of the same block share one fetch. A fetch whose
// reply shows another version than expected simply stores the new version:
// the read is attempted again against the fresh attributes. A read that
// cannot be served after a few attempts, or whose fetch fails, is forwarded
// as is, so errors, short reads and EOF come from the upstream itself.
//
// Read-ahead: every served READ feeds the ReadaheadTable (cursors, SlowDown);
// its advice is capped by min(max(2 x bdp, 2 x read_size), readahead_max,
// half the memory tier):
// twice the measured bandwidth-delay product of the upstream path
// (PathEstimator, fed by every fetch with the round trip from when the call
// left the transport, RpcReply::sent_at, so that waiting in the proxy's own
// scheduler queue is not taken for path delay), at least two upstream
// READs (so that a stream gets read-ahead before the path is measured), and
// at most the configured ceiling, which wins over that floor. It is fetched
// in the background (at most max_background read-ahead fetches in flight;
// a tree walk's PrefetchFile is bounded by the prefetcher) into blocks
// marked as prefetched, so that used and wasted read-ahead are counted by
// the BlockCache.
//
// Thread-safety: single-threaded, on the event loop.
#ifndef NFSEDGE_PROXY_READ_PATH_H_
#define NFSEDGE_PROXY_READ_PATH_H_

#include <rpc/xdr/nfs3.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache/block_cache.h"
#include "cache/change_marks.h"
#include "cache/clock.h"
#include "cache/disk_tier.h"
#include "cache/handle_registry.h"
#include "cache/path_estimator.h"
#include "cache/readahead.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "rpc/rpc_caller.h"

namespace nfsedge {

struct ReadPathOptions {
  // Upstream READ size; 0 = the server's FSINFO rtpref (until an FSINFO
  // reply is seen: 1 MiB). Clamped to max_transfer, rounded down to whole
  // blocks.
  uint32_t read_size = 0;
  // Largest payload the proxy carries in one record.
  uint32_t max_transfer = 1 << 20;
  // Read-ahead of one stream at most this many bytes beyond the client.
  uint64_t readahead_max = 16 << 20;
  // Read-ahead fetches in flight at most, over all files.
  uint32_t max_background = 16;
  // Every block fetched also goes to the disk tier (else only blocks evicted
  // from memory do, through the BlockCache's eviction handler).
  bool disk_write_through = true;
};

struct ReadPathStats {
  uint64_t reads = 0;          // client READs offered
  uint64_t served = 0;         // answered from blocks (possibly after fetching them)
  uint64_t memory_hits = 0;    // answered from memory without waiting
  uint64_t forwarded = 0;      // sent upstream as is
  uint64_t no_evidence = 0;    // forwarded: no ACCESS proof for the credential
  uint64_t revalidations = 0;  // GETATTRs sent to prove blocks fresh
  uint64_t fetches = 0;        // upstream READs sent for clients
  uint64_t fetch_bytes = 0;    // bytes they returned
  uint64_t readahead_fetches = 0;
  uint64_t readahead_bytes = 0;
  uint64_t tree_fetches = 0;  // whole small files fetched by tree-walk prefetch
  uint64_t fetch_errors = 0;  // fetches without a usable reply
  uint64_t disk_reads = 0;    // blocks asked of the disk tier
  uint64_t disk_hits = 0;     // ... and found there, intact and current
  uint64_t disk_misses = 0;   // ... and not (counted when the answer comes)
  // READ replies not stored (a write was answered after they left, or sent
  // twice); revalidating GETATTRs not used (the same write, or their reply
  // refused by the metadata cache)
  uint64_t overtaken = 0;
  uint64_t unconfirmed = 0;   // ... or they showed a version other than the one known before
};

class ReadPath {
 public:
  // READ3res XDR for the client.
  using ReplyFn = std::function<void(std::string results)>;
  // Sends the client's call upstream as is.
  using ForwardFn = std::function<void()>;

  // `disk` may be null (no disk tier).
  ReadPath(const Clock& clock, MetadataCache& meta, BlockCache& blocks, DiskTier* disk,
           ReadaheadTable& readahead, PathEstimator& path, RpcCaller& upstream,
           const ReadPathOptions& options);
  ReadPath(const ReadPath&) = delete;
  ReadPath& operator=(const ReadPath&) = delete;

  // Serves an admitted client READ `a` for `cred` (as sent upstream) on
  // `exp`. Calls exactly one of `reply` and `forward`, now or later.
  void Serve(const READ3args& a, const Export& exp, const OpaqueAuth& cred, ReplyFn reply,
             ForwardFn forward);

  // What PrefetchFile sent: the end of the first block it fetches.
  struct PrefetchPart {
    uint64_t first_end = 0;
    bool refused = false;  // nothing sent: the upstream refused it now (its queue full)
  };
  // Tree-walk prefetch: fetches a file `fh` of `size` bytes and `version`
  // (from a listing) into blocks, for `cred`: one upstream read (read_size()
  // at most) from the first block at or after `offset` that is neither
  // cached nor on its way (looked for over 4096 blocks at most). Returns
  // true iff a fetch was sent (*part then says what); `done` then runs when
  // it ends. Sent through `via` if given (`nfsedge warm`: the background
  // class), else the read path's own caller (client data).
  bool PrefetchFile(const std::string& fh, uint64_t size, const ChangeId& version,
                    const Export& exp, const OpaqueAuth& cred, std::function<void()> done,
                    uint64_t offset = 0, PrefetchPart* part = nullptr, RpcCaller* via = nullptr);
  // Returns true iff the block holding byte `offset` of `fh` is cached in
  // memory under `version`.
  bool HasBlockAt(const std::string& fh, uint64_t offset, const ChangeId& version) const;

  // Learns from the upstream's reply to a READ forwarded as is: the data it
  // carries is stored as blocks, unless the READ left (`sent_at`, the
  // transport's clock) before the upstream answered a write of the file, or
  // was sent more than once (`transmissions`: the reply may answer the
  // first, and `sent_at` is the last one's), or its attributes are not
  // `before`, the version the proxy knew when the READ left (a server takes
  // them after reading the data: a write between the two leaves old bytes
  // under the new version, which another reply may teach the cache first).
  // The version of `fh` the metadata cache holds (fresh or not), if any:
  // `before` for LearnForwarded, taken as the READ leaves.
  std::optional<ChangeId> KnownVersion(std::string_view fh);
  void LearnForwarded(const READ3args& a, std::string_view results, uint32_t transmissions,
                      std::chrono::steady_clock::time_point sent_at,
                      const std::optional<ChangeId>& before);
  // The upstream answered a WRITE or SETATTR of `fh`. A server's timestamps
  // are coarser than its writes, so blocks cached under the version the
  // write leaves may hold what it replaced, and a READ the upstream
  // answered before the write may still be on its way: drops the file's
  // blocks (memory and disk) and refuses the data of every READ of the file
  // sent before now. Also for `nfsedge drop-cache PATH`: a READ on its way
  // may carry what was dropped, under an unchanged version.
  void NoteWrite(std::string_view fh);
  // The same for every file (`nfsedge drop-cache`): drops every block and
  // refuses the data of every READ sent before now.
  void NoteDropAll();
  // Learns the server's largest and preferred read sizes for export
  // `export_id` from an FSINFO reply of it. Per export: a server may read
  // less at once on one export than on another (nfs-ganesha's MaxRead).
  void LearnFsinfo(std::string_view results, uint32_t export_id);

  // Whether an FSINFO reply told the upstream's largest read on the export.
  bool fsinfo_known(uint32_t export_id) const { return Sizes(export_id).rtmax != 0; }
  // Upstream READ size now in use on the export.
  uint32_t read_size(uint32_t export_id) const { return Sizes(export_id).read_size; }
  const ReadPathStats& stats() const { return stats_; }

 private:
  // Blocks one fetch on the export asks for: read_size(), but no more
  // than a quarter of the memory tier (a smaller `cache.memory_bytes`
  // would evict a fetch's first blocks with its last ones).
  uint64_t FetchBlocks(uint32_t export_id) const;
  struct Op;
  using OpPtr = std::shared_ptr<Op>;

  void Attempt(const OpPtr& op);
  // Sends a GETATTR for the op's file; the op is attempted again on reply.
  void Revalidate(const OpPtr& op);
  // Answers the op from blocks [first, last] of `version`. Returns false if
  // the blocks do not make a consistent answer.
  bool Answer(const OpPtr& op, const fattr3& attr, uint64_t first, uint64_t last);
  void Forward(const OpPtr& op);
  void ReadAhead(const OpPtr& op, const fattr3& attr);
  // Sends an upstream READ of `count` blocks from block `first` of `fh`, a
  // file of `size` bytes as far as the proxy knows (its reply is expected to
  // carry no more than the bytes up to there). Returns false if it could not
  // be queued.
  // `expected`: the version the proxy knows the file at; the blocks are
  // kept only if the reply shows it (OnFetched).
  // `via`: the caller to send it through (null: upstream_). `*refused`, if
  // given, is set iff the caller refused the call.
  bool Fetch(const std::string& fh, uint64_t first, uint64_t count, uint64_t size,
             const ChangeId& expected, const Export& exp, const OpaqueAuth& cred, bool prefetch,
             std::function<void()> done = {}, RpcCaller* via = nullptr, bool* refused = nullptr);
  void OnFetched(const std::string& fh, uint64_t first, uint64_t count, const ChangeId& expected,
                 const Export& exp, const OpaqueAuth& cred, bool prefetch, MonoTime sent,
                 uint64_t write_seq, StatusOr<RpcReply> reply);
  // When the upstream last answered a write of the file (NoteWrite's count,
  // and the transport's clock), or a floor for every file.
  ChangeMarks::Mark LastWrite(std::string_view fh) const { return writes_.Last(fh); }
  // Reads block `index` of `fh` from the disk tier into memory.
  void ReadDisk(const std::string& fh, uint64_t index, const ChangeId& version);
  // Stores `data` read at block `first` under `version` as blocks: whole
  // blocks, and the last partial one if `eof`; to the disk tier too if
  // `keep` (else they are for the READs waiting only, OnFetched).
  // Returns the number of blocks stored.
  uint64_t Store(const std::string& fh, uint64_t first, std::string_view data, bool eof,
                 const ChangeId& version, bool prefetch, bool keep = true);
  // Pending work on a block (fetch or disk read); waiters run when it ends.
  static std::string BlockId(std::string_view fh, uint64_t index);
  bool Pending(std::string_view fh, uint64_t index) const;
  // `fn` gets true if the block may now be there (attempt again), false if
  // the fetch that was to bring it failed (forward the READ).
  void Wait(std::string_view fh, uint64_t index, std::function<void(bool)> fn);
  void MarkPending(std::string_view fh, uint64_t index);
  void Done(std::string_view fh, uint64_t index, bool ok);
  // Takes the closures waiting for the block out of pending_ (it is no
  // longer pending), without running them.
  std::vector<std::function<void(bool)>> TakeWaiters(std::string_view fh, uint64_t index);

  const Clock& clock_;
  MetadataCache& meta_;
  BlockCache& blocks_;
  DiskTier* disk_;
  ReadaheadTable& readahead_;
  PathEstimator& path_;
  RpcCaller& upstream_;
  const ReadPathOptions options_;
  const uint32_t block_size_;
  struct ServerReads {
    uint32_t read_size = 0;  // upstream READ size in use
    uint32_t rtmax = 0;      // FSINFO rtmax; 0 = not known yet
  };
  const ServerReads& Sizes(uint32_t export_id) const {
    return sizes_[export_id < kMaxExports ? export_id : 0];
  }
  std::array<ServerReads, kMaxExports> sizes_;  // by export id
  uint32_t background_ = 0;  // read-ahead fetches in flight
  // While a fetch whose reply is not kept wakes the READs waiting on it
  // (it showed another version than the one expected, or a write through
  // the proxy was answered while it was out): that reply's attributes, which
  // the READs that waited for the expected version, and came before any
  // write answered after the fetch left, are answered under (Attempt).
  struct Delivering {
    std::string fh;
    ChangeId expected;       // the version the fetch was made for
    fattr3 attr;             // the reply's
    uint64_t write_seq = 0;  // writes_.seq() when the fetch left
  };
  std::optional<Delivering> delivering_;
  // NoteWrite() calls: per file the latest, bounded.
  ChangeMarks writes_{4096};
  // Block id -> closures waiting for the pending fetch or disk read.
  std::unordered_map<std::string, std::vector<std::function<void(bool)>>> pending_;
  // File handle -> ops waiting for a revalidating GETATTR.
  std::unordered_map<std::string, std::vector<OpPtr>> revalidating_;
  ReadPathStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_READ_PATH_H_
