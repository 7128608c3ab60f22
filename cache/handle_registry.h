// HandleRegistry: the file handles the proxy has handed out, and the export
// each belongs to.
//
// A handle enters the registry when an upstream reply carries it to a client
// (MNT, LOOKUP, CREATE, MKDIR, SYMLINK, MKNOD, READDIRPLUS), tagged with the
// export of the call that produced it. A call carrying a handle that is not
// here never reaches the upstream: the proxy cannot tell which export (and so
// which access rules) it belongs to, and answers NFS3ERR_STALE.
//
// Bounded (DESIGN rule 8): at `max_handles` the least recently used handle is
// forgotten; a client that still holds it gets NFS3ERR_STALE and looks the
// name up again. The registry lives in memory: after a proxy restart clients
// must remount (a persistent registry is planned, see docs/architecture.md).
//
// Thread-safety: not synchronized; used from the event loop's thread.
#ifndef NFSEDGE_CACHE_HANDLE_REGISTRY_H_
#define NFSEDGE_CACHE_HANDLE_REGISTRY_H_

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace nfsedge {

class HandleRegistry {
 public:
  explicit HandleRegistry(size_t max_handles) : max_handles_(max_handles) {}

  // Records that `handle` belongs to export `export_id`. A handle already
  // known keeps its first export (a handle never moves between exports).
  void Add(std::string_view handle, uint32_t export_id);

  // Returns the export of `handle` iff it was handed out (and marks it used).
  std::optional<uint32_t> Find(std::string_view handle);

  size_t size() const { return map_.size(); }
  uint64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    uint32_t export_id;
    std::list<std::string>::iterator lru;
  };
  const size_t max_handles_;
  std::unordered_map<std::string, Entry> map_;
  std::list<std::string> lru_;  // front = most recently used
  uint64_t evictions_ = 0;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_HANDLE_REGISTRY_H_
