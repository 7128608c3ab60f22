// HandleRegistry: the file handles the proxy has handed out, and the exports
// each was handed out for.
//
// A handle enters the registry when an upstream reply carries it to a client
// (MNT, LOOKUP, CREATE, MKDIR, SYMLINK, MKNOD, READDIRPLUS), tagged with the
// export of the call that produced it (MNT's answer is also marked as that
// export's root). A handle reached through two exports (nested exports, or
// two exports of one upstream file system) belongs to both. A call carrying
// a handle that is not here never reaches the upstream: the proxy cannot
// tell which exports (and so which access rules) it belongs to, and answers
// NFS3ERR_STALE. Handles go to clients as the upstream made them: nothing is
// added to them.
//
// Bounded (DESIGN rule 8): at `max_handles` the least recently used handle
// is forgotten, but never an export's root (its mark closes ".." out of the
// export) nor a directory MNT answered below an export (a client cannot look
// its own mount point up again; the kMaxMountPoints most recent are kept so,
// older ones go back to the least recently used order); a client that still holds a forgotten handle gets
// NFS3ERR_STALE and looks the name up again. Exports are numbered 0..kMaxExports-1.
//
// By default the registry lives in memory: after a proxy restart clients
// must remount. Persist() backs it with a HandleStore (handle_store.h) so
// that handles handed out before a restart stay valid after it.
//
// Thread-safety: not synchronized; used from the event loop's thread.
#ifndef NFSEDGE_CACHE_HANDLE_REGISTRY_H_
#define NFSEDGE_CACHE_HANDLE_REGISTRY_H_

#include <array>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/handle_store.h"
#include "rpc/status.h"

namespace nfsedge {

inline constexpr uint32_t kMaxExports = 64;
inline constexpr size_t kMaxMountPoints = 4096;

// The exports a handle belongs to, as bit sets over export ids.
struct ExportSet {
  uint64_t exports = 0;
  uint64_t roots = 0;  // subset of `exports`: the handle is that export's root
  bool mounted = false;  // MNT answered it (a mount point below an export)

  bool Has(uint32_t id) const { return id < kMaxExports && ((exports >> id) & 1) != 0; }
  bool IsRoot(uint32_t id) const { return id < kMaxExports && ((roots >> id) & 1) != 0; }
  // The lowest export id. REQUIRES: exports != 0.
  uint32_t First() const { return static_cast<uint32_t>(__builtin_ctzll(exports)); }
};

class HandleRegistry {
 public:
  explicit HandleRegistry(size_t max_handles);
  ~HandleRegistry();

  // Backs the registry with the store in `dir`: loads the handles stored
  // there whose exports are still configured (`export_paths[id]` is the
  // path of export `id`; handles of exports no longer configured are
  // forgotten), and writes every later change to it. Returns an error iff
  // the store cannot be used (see HandleStore::Open).
  // REQUIRES: called once, before any Add(); export_paths.size() <= kMaxExports.
  Status Persist(const std::string& dir, std::vector<std::string> export_paths);

  // Records that `handle` was handed out for export `export_id` (as its root
  // iff `root`; as a mount point, kept like a root, iff `mounted`). A handle
  // keeps the exports and marks it already had.
  // REQUIRES: export_id < kMaxExports.
  void Add(std::string_view handle, uint32_t export_id, bool root = false, bool mounted = false);

  // Returns the exports of `handle` iff it was handed out (and marks it used).
  std::optional<ExportSet> FindAll(std::string_view handle);
  // Returns the exports of `handle` iff it was handed out; not a use.
  std::optional<ExportSet> Peek(std::string_view handle) const;
  // Returns the lowest export of `handle` iff it was handed out.
  std::optional<uint32_t> Find(std::string_view handle);
  // Returns the handle last added as export `export_id`'s root, if any (from
  // the store: iff it holds one root for the export).
  std::optional<std::string> RootOf(uint32_t export_id) const;

  size_t size() const { return map_.size(); }
  uint64_t evictions() const { return evictions_; }
  // Null iff the registry is not persistent.
  HandleStore* store() { return store_.get(); }

 private:
  struct Entry {
    ExportSet set;
    std::list<std::string>::iterator lru;
  };
  // Inserts or merges without writing to the store; returns the entry iff
  // its export set changed.
  Entry* Merge(std::string_view handle, ExportSet add);
  void Save(std::string_view handle, const ExportSet& set);

  const size_t max_handles_;
  std::unordered_map<std::string, Entry> map_;
  std::list<std::string> lru_;  // front = most recently used
  uint64_t evictions_ = 0;
  std::vector<std::string> export_paths_;  // by id; set by Persist()
  std::unique_ptr<HandleStore> store_;
  bool loading_ = false;  // inside Persist()
  std::vector<std::string> evicted_while_loading_;
  std::array<std::string, kMaxExports> root_of_;  // by export id; "" if none
  std::deque<std::string> mount_points_;           // marked mounted, oldest first
  // Keeps at most kMaxMountPoints handles marked mounted: the oldest lose
  // the mark.
  void BoundMountPoints();
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_HANDLE_REGISTRY_H_
