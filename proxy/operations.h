// Operations: what the control socket's commands do inside the daemon.
//
//   status            upstream reachable (a NULL call) and its round trip,
//                     connections, cache use, top files by traffic
//   drop-cache [PATH] forget cached metadata and data: of the object at the
//                     client-visible PATH (an export path or below), or all
//   flush             have the write path send what it buffered upstream
//                     (FlushFn); without one, reports that nothing is
//                     buffered, which is the truth: every write is then
//                     answered only after the upstream has it
//   warm PATH         walk the directory tree at PATH through the proxy's own
//                     upstream path (a Prefetcher of its own in the
//                     scheduler's background class, with the
//                     [control] warm_* bounds), filling the metadata and data
//                     caches, with progress
//   reload            re-read the config (as SIGHUP)
//
// PATH is resolved across the WAN as a client would: MNT of the export's
// upstream path, then LOOKUP of each component, with the root credential
// mapped by the export's rules (root_squash applies).
//
// Thread-safety: runs on the event loop's thread.
#ifndef NFSEDGE_PROXY_OPERATIONS_H_
#define NFSEDGE_PROXY_OPERATIONS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/block_cache.h"
#include "cache/disk_tier.h"
#include "cache/handle_registry.h"
#include "proxy/call_meter.h"
#include "proxy/config.h"
#include "proxy/control.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/prefetcher.h"
#include "proxy/read_path.h"
#include "rpc/rpc_client.h"

namespace nfsedge {

// The write path's flush: sends every buffered write and journal entry
// upstream and makes it stable, then calls `done` once with the outcome and
// a one-line report ("flushed 3 files, 12 MiB").
using FlushDone = std::function<void(const Status& status, const std::string& report)>;
using FlushFn = std::function<void(FlushDone done)>;

// What a reload did: live keys whose value changed and were applied, and
// keys whose new value waits for a restart (proxy/config_reload.h).
struct ReloadOutcome {
  std::vector<std::string> applied;
  std::vector<std::string> restart;
};

struct OperationsDeps {
  event_base* base = nullptr;
  const Config* config = nullptr;  // the config in force (reload replaces it)
  const ExportTable* exports = nullptr;
  const Clock* clock = nullptr;
  MetadataCache* meta = nullptr;
  HandleRegistry* handles = nullptr;  // Resolve marks an export's root in it
  BlockCache* blocks = nullptr;  // null: no data cache
  DiskTier* disk = nullptr;      // null: no disk tier
  ReadPath* read_path = nullptr;
  // Upstream NFS through the scheduler: commands' own calls (interactive
  // class) and a warm's prefetcher (background class, as the tree walk's).
  RpcCaller* nfs = nullptr;
  RpcCaller* background = nullptr;
  RpcCaller* mount = nullptr;  // upstream MOUNT
  const RpcClient* nfs_client = nullptr;       // the metadata lane
  const RpcClient* nfs_bulk_client = nullptr;  // the bulk lane (READ, WRITE, COMMIT)
  const CallMeter* meter = nullptr;
  Prefetcher::LearnFn learn;
  std::function<Status(ReloadOutcome*)> reload;
};

// Warms at once, counting those whose command was interrupted (they go on
// to their end); another is refused until one is done.
inline constexpr size_t kMaxWarms = 4;

class Operations {
 public:
  explicit Operations(OperationsDeps deps);
  ~Operations();

  // The ControlHandler of the control socket.
  void Handle(const std::string& command, const std::string& argument,
              std::shared_ptr<ControlReply> reply);
  // Installs the write path's flush (null: nothing is ever buffered).
  void SetFlush(FlushFn flush) { flush_ = std::move(flush); }

 private:
  struct Resolved {
    const Export* exp = nullptr;
    OpaqueAuth cred;
    std::string fh;      // empty: the last name is not there (Resolve's `missing_ok`)
    std::string parent;  // the directory of the last name; empty for an export's root
  };
  using ResolveDone = std::function<void(StatusOr<Resolved>)>;
  struct Warm;

  void Status_(std::shared_ptr<ControlReply> reply);
  void DropCache(const std::string& path, std::shared_ptr<ControlReply> reply);
  void Flush(std::shared_ptr<ControlReply> reply);
  void StartWarm(const std::string& path, std::shared_ptr<ControlReply> reply);
  void WarmFrom(Resolved r, const fattr3& attr, std::shared_ptr<ControlReply> reply);
  void PollWarms();
  // Resolves the client-visible `path` to an upstream handle. With
  // `missing_ok`, a last name the upstream does not have (NOENT) resolves
  // to its directory only.
  void Resolve(const std::string& path, ResolveDone done, bool missing_ok = false);
  void LookupNext(std::shared_ptr<std::vector<std::string>> names, size_t i, Resolved r,
                  ResolveDone done, bool missing_ok);
  void Getattr(const Resolved& r, std::function<void(StatusOr<fattr3>)> done);

  OperationsDeps deps_;
  FlushFn flush_;
  std::vector<std::unique_ptr<Warm>> warms_;
  size_t warms_starting_ = 0;  // resolving their path, not yet in warms_
  Timer warm_timer_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_OPERATIONS_H_
